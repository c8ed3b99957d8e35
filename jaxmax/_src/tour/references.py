"""The tour's independent reference: NumPy folds over groups of input elements.

Each function returns a :class:`Reference`: the expected output of one operator call, computed
without jaxmax by folding the input elements of each output (its slice, window or segment) in
plain NumPy, and how a cotangent routes back to the input. ``python -m jaxmax`` checks every
result against these, and the tests check them against the specification examples.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np


def _lowest(dtype: np.dtype):
    """The most negative finite value of `dtype` (0 for unsigned integers)."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.floating):
        return np.finfo(dtype).min
    return np.iinfo(dtype).min


def _onnx_empty(dtype: np.dtype):
    """ONNX ReduceMax over an empty set: -inf, iinfo.min or False."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return False
    if np.issubdtype(dtype, np.floating):
        return -np.inf
    return np.iinfo(dtype).min


@dataclasses.dataclass(frozen=True)
class Reference:
    """Expected output of one call, and how its gradient routes back to the input.

    ``groups[o]`` holds the flat input indices that output element ``o`` reduces, in window
    order; ``tie`` says how tied maxima share a cotangent (``"share"`` evenly, ``"first"`` all
    to the first).
    """

    value: np.ndarray
    groups: tuple[np.ndarray, ...]
    tie: str

    def vjp(self, data: np.ndarray, cotangent: np.ndarray) -> np.ndarray:
        """The gradient of ``sum(cotangent * output)`` with respect to `data`."""
        flat = data.reshape(-1)
        out = self.value.reshape(-1)
        cot = np.asarray(cotangent, np.float64).reshape(-1)
        grad = np.zeros(flat.size, np.float64)
        for o, members in enumerate(self.groups):
            winners = members[flat[members] == out[o]]  # none if empty, clamped or NaN
            if winners.size == 0:
                continue
            if self.tie == "first":
                grad[winners[0]] += cot[o]
            else:
                grad[winners] += cot[o] / winners.size
        return grad.reshape(data.shape)


def _fold(data: np.ndarray, groups: Sequence[np.ndarray], out_shape: tuple[int, ...],
          rule: str, empty=None, tie: str = "share") -> Reference:
    """Reduce each group of `data` by `rule` (``"openvino"``, ``"onnx"`` or ``"or"``).

    openvino: ``max(lowest(T), the non-NaN members)``; an empty group gives `empty` if given,
    else lowest(T). onnx: NaN propagates, an empty group gives -inf / iinfo.min. or: any.
    """
    flat = data.reshape(-1)
    floating = np.issubdtype(data.dtype, np.floating)
    out = np.empty(len(groups), data.dtype)
    for o, members in enumerate(groups):
        values = flat[members]
        if rule == "or":
            out[o] = values.any()
        elif rule == "onnx":
            if values.size == 0:
                out[o] = _onnx_empty(data.dtype)
            elif floating and np.isnan(values).any():
                out[o] = np.nan
            else:
                out[o] = values.max()
        else:
            if values.size == 0 and empty is not None:
                out[o] = empty
                continue
            if floating:
                values = values[~np.isnan(values)]
            low = _lowest(data.dtype)
            out[o] = max(low, values.max()) if values.size else low
    return Reference(out.reshape(out_shape), tuple(groups), tie)


def reduce_reference(data: np.ndarray, axes: Sequence[int], keep: bool, rule: str) -> Reference:
    """Slices of a reduction over `axes` (empty `axes`: every element is its own slice)."""
    data = np.asarray(data)
    rank = data.ndim
    axes = sorted(a % rank for a in axes)
    kept = [a for a in range(rank) if a not in axes]
    index = np.arange(data.size).reshape(data.shape).transpose(kept + axes)
    n_out = int(np.prod([data.shape[a] for a in kept]))
    slices = index.reshape(n_out, -1) if n_out else index.reshape(0, 0)
    shape = tuple(1 if (a in axes and keep) else data.shape[a]
                  for a in range(rank) if keep or a not in axes)
    return _fold(data, list(slices), shape, rule)


def pool_reference(data: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
                   pads_begin: Sequence[int], pads_end: Sequence[int], rounding: str,
                   auto_pad: str) -> Reference:
    """Windows of OpenVINO MaxPool-1 over the spatial axes of ``(N, C, *spatial)`` data."""
    data = np.asarray(data)
    spatial = data.shape[2:]
    begins, ends = list(pads_begin), list(pads_end)
    if auto_pad == "valid":
        begins, ends = [0] * len(spatial), [0] * len(spatial)
    elif auto_pad in ("same_upper", "same_lower"):
        begins, ends = [], []
        for size, k, s in zip(spatial, kernel, strides, strict=True):
            total = max(0, (-(-size // s) - 1) * s + k - size)
            small, large = total // 2, total - total // 2
            begins.append(small if auto_pad == "same_upper" else large)
            ends.append(large if auto_pad == "same_upper" else small)
    lengths = []
    for size, k, s, lo, hi in zip(spatial, kernel, strides, begins, ends, strict=True):
        span = size + lo + hi - k
        lengths.append((-(-span // s) if rounding == "ceil" else span // s) + 1)
    index = np.arange(data.size).reshape(data.shape)
    groups = []
    for n in range(data.shape[0]):
        for c in range(data.shape[1]):
            for position in np.ndindex(*lengths):
                members = []
                for offset in np.ndindex(*kernel):
                    at = [p * s - lo + o for p, s, lo, o
                          in zip(position, strides, begins, offset, strict=True)]
                    if all(0 <= a < size for a, size in zip(at, spatial, strict=True)):
                        members.append(index[(n, c, *at)])
                groups.append(np.array(members, np.int64))
    shape = data.shape[:2] + tuple(lengths)
    return _fold(data, groups, shape, "openvino", tie="first")


def segment_reference(data: np.ndarray, segment_ids: Sequence[int], num_segments: int | None,
                      fill_mode: str) -> Reference:
    """Segments of OpenVINO SegmentMax-16: rows of `data` grouped by id."""
    data = np.asarray(data)
    ids = np.asarray(segment_ids)
    if num_segments is None:
        num_segments = int(ids.max()) + 1 if ids.size else 0
    row = int(np.prod(data.shape[1:]))
    groups = []
    for j in range(num_segments):
        rows = np.flatnonzero(ids == j)
        for m in range(row):
            groups.append(rows * row + m)
    empty = 0 if fill_mode == "ZERO" else _lowest(data.dtype)
    return _fold(data, groups, (num_segments,) + data.shape[1:], "openvino", empty=empty)
