"""The tour's independent reference: NumPy folds over groups of input elements.

Each function returns a :class:`Reference`: the expected output of one operator call, computed
without jaxmax by folding the input elements of each output (its slice, window or segment) in
plain NumPy, and how a cotangent routes back to the input. ``python -m jaxmax`` checks every
result against these, and the tests check them against the specification examples.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from functools import partial

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
    to the first). An operator whose selection is not "the members equal to the result" names
    its receivers instead: ``winners[o]`` is the flat input index that receives output ``o``'s
    cotangent (-1: none), scaled by ``weights[o]`` when given. ``extra`` holds the outputs after
    the first (indices), compared exactly as well.
    """

    value: np.ndarray
    groups: tuple[np.ndarray, ...] = ()
    tie: str = "first"
    extra: tuple[np.ndarray, ...] = ()
    winners: np.ndarray | None = None
    weights: np.ndarray | None = None

    @property
    def outputs(self) -> tuple[np.ndarray, ...]:
        """Every output of the call, in order."""
        return (self.value, *self.extra)

    def vjp(self, data: np.ndarray, cotangent: np.ndarray) -> np.ndarray:
        """The gradient of ``sum(cotangent * output)`` with respect to `data`."""
        flat = data.reshape(-1)
        out = self.value.reshape(-1)
        cot = np.asarray(cotangent, np.float64).reshape(-1)
        grad = np.zeros(flat.size, np.float64)
        if self.winners is not None:
            winners = np.asarray(self.winners, np.int64).reshape(-1)
            scale = cot if self.weights is None else cot * np.reshape(self.weights, -1)
            chosen = winners >= 0
            np.add.at(grad, winners[chosen], scale[chosen])
            return grad.reshape(data.shape)
        for o, members in enumerate(self.groups):
            winners = members[flat[members] == out[o]]  # none if empty, clamped or NaN
            if winners.size == 0:
                continue
            if self.tie == "first":
                grad[winners[0]] += cot[o]
            else:
                grad[winners] += cot[o] / winners.size
        return grad.reshape(data.shape)


def index_type(x64: bool | None = None) -> type:
    """int64, or int32 when JAX runs without ``jax_enable_x64`` (what JAX stores int64 as)."""
    if x64 is None:
        import jax

        x64 = bool(jax.config.read("jax_enable_x64"))
    return np.int64 if x64 else np.int32


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


def _pool_pads(spatial, kernel, strides, dilations, pads_begin, pads_end, auto_pad):
    """Begin and end pads per spatial axis: explicit, valid, or same_upper / same_lower (the
    odd element at the end / start), from the dilated kernel."""
    if auto_pad in ("valid", "VALID"):
        return [0] * len(spatial), [0] * len(spatial)
    if auto_pad.lower() in ("same_upper", "same_lower"):
        begins, ends = [], []
        for size, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
            total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
            small, large = total // 2, total - total // 2
            upper = auto_pad.lower() == "same_upper"
            begins.append(small if upper else large)
            ends.append(large if upper else small)
        return begins, ends
    return list(pads_begin), list(pads_end)


def _pool_length(size: int, k: int, s: int, d: int, lo: int, hi: int, rounding: str) -> int:
    """Output length along one axis, by counting the windows that start at 0, s, 2s, ... of the
    padded axis: ``floor`` keeps those inside it; ``ceil`` (OpenVINO) one more where the last
    leaves a tail; ``ceil_torch`` (OpenVINO 14, and ONNX's ``ceil_mode``) then drops a last
    window that starts in the end padding."""
    # counted, not the closed form, so that it shares no arithmetic with the library's
    # (jaxmax/_src/shapes.py pooled_length), which the tour checks against it
    padded, extent = size + lo + hi, (k - 1) * d + 1
    n = 1
    while n * s + extent <= padded:
        n += 1
    if rounding == "floor":
        return n
    if (n - 1) * s + extent < padded:
        n += 1
    if rounding != "ceil" and (n - 1) * s >= size + lo:
        n -= 1
    return n


def windowed_reference(data: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
                       dilations: Sequence[int] | None, pads_begin: Sequence[int],
                       pads_end: Sequence[int], rounding: str, auto_pad: str, rule: str,
                       axis: int = 0, outputs: int = 2) -> Reference:
    """Max pooling with indices over the spatial axes of ``(N, C, *spatial)`` data.

    ``rule="openvino"`` (MaxPool-8/-14): scan from lowest(T), take an element only if it is
    greater; a window without one gives lowest(T) and the plane start; indices modulo
    ``prod(shape[axis:])``. ``rule="onnx"``: the first NaN wins, else the first maximal element;
    a window with no input element gives -inf (iinfo.min) and index -1. `outputs` is 2 (values,
    indices) or 1 (values only).
    """
    data = np.asarray(data)
    spatial = data.shape[2:]
    dilations = [1] * len(spatial) if dilations is None else list(dilations)
    begins, ends = _pool_pads(spatial, kernel, strides, dilations, pads_begin, pads_end,
                              auto_pad)
    lengths = [_pool_length(size, k, s, d, lo, hi, rounding) for size, k, s, d, lo, hi
               in zip(spatial, kernel, strides, dilations, begins, ends, strict=True)]
    flat = data.reshape(-1)
    index = np.arange(data.size).reshape(data.shape)
    plane = int(np.prod(spatial))
    floating = np.issubdtype(data.dtype, np.floating)
    values, indices, winners = [], [], []
    for n, c in np.ndindex(*data.shape[:2]):
        for position in np.ndindex(*lengths):
            members = []
            for offset in np.ndindex(*kernel):
                at = [p * s - lo + o * d for p, s, lo, o, d
                      in zip(position, strides, begins, offset, dilations, strict=True)]
                if all(0 <= a < size for a, size in zip(at, spatial, strict=True)):
                    members.append(int(index[(n, c, *at)]))
            if rule == "openvino":
                best, where = _lowest(data.dtype), None
                for m in members:
                    if flat[m] > best:  # NaN compares false: never taken
                        best, where = flat[m], m
                values.append(best)
                winners.append(-1 if where is None else where)
                indices.append((n * data.shape[1] + c) * plane if where is None else where)
            else:
                best, where = None, -1
                for m in members:
                    x = flat[m]
                    if (best is None or (floating and np.isnan(x) and not np.isnan(best))
                            or (not (floating and np.isnan(best)) and x > best)):
                        best, where = x, m
                values.append(_onnx_empty(data.dtype) if best is None else best)
                winners.append(where)
                indices.append(where)
    shape = data.shape[:2] + tuple(lengths)
    value = np.array(values, data.dtype).reshape(shape)
    found = np.array(indices, np.int64)
    if rule == "openvino":
        found = found % int(np.prod(data.shape[axis:]))
    extra: tuple[np.ndarray, ...] = (
        (found.astype(index_type()).reshape(shape),) if outputs == 2 else ())
    return Reference(value, extra=extra, winners=np.array(winners, np.int64))


def _rows(data: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """`data` with `axis` moved last, as (rows, n), and the flat input index of every entry."""
    moved = np.moveaxis(data, axis, -1)
    flat_index = np.moveaxis(np.arange(data.size).reshape(data.shape), axis, -1)
    n = data.shape[axis]
    return moved.reshape(-1, n), flat_index.reshape(-1, n)


def arg_max_reference(data: np.ndarray, axis: int, keepdims: bool,
                      select_last: bool = False) -> Reference:
    """ONNX ArgMax: the first (last) maximal element along `axis`; NaN is the maximum."""
    data = np.asarray(data)
    axis %= data.ndim
    rows, _ = _rows(data, axis)
    floating = np.issubdtype(data.dtype, np.floating)
    found = []
    for row in rows:
        order = range(len(row) - 1, -1, -1) if select_last else range(len(row))
        best = None
        for i in order:
            x = row[i]
            if best is None:
                best = i
            elif floating and np.isnan(row[best]):
                break
            elif (floating and np.isnan(x)) or x > row[best]:
                best = i
        found.append(best)
    shape = list(np.moveaxis(data, axis, -1).shape[:-1])
    value = np.array(found, np.int64).reshape(shape)
    if keepdims:
        value = np.expand_dims(value, axis)
    return Reference(value.astype(index_type()))


def top_k_reference(data: np.ndarray, k: int, axis: int, largest: bool, nan: str,
                    by_index: bool = False, index_dtype: type | None = None) -> Reference:
    """TopK by a sort key per row: NaN above every number (``nan="top"``, ONNX) or after every
    number in both modes (``nan="last"``, OpenVINO); ``-0 == +0``; ties by ascending index.
    `by_index` reorders the chosen k by index (OpenVINO ``sort=index``)."""
    data = np.asarray(data)
    axis %= data.ndim
    rows, flat_index = _rows(data, axis)
    floating = np.issubdtype(data.dtype, np.floating)

    def key(row: np.ndarray, i: int) -> tuple:
        x = row[i]
        if floating and np.isnan(x):
            return (0 if (nan == "top" and largest) else 2, 0, i)
        number = float(x) if floating else int(x)
        return (1, -number if largest else number, i)

    chosen, receivers = [], []
    for row, where in zip(rows, flat_index, strict=True):
        top = sorted(range(len(row)), key=partial(key, row))[:k]
        if by_index:
            top = sorted(top)
        chosen.append(top)
        receivers.append(where[top])
    chosen_a = np.array(chosen, np.int64).reshape(len(rows), k)
    moved_shape = np.moveaxis(data, axis, -1).shape[:-1] + (k,)
    values = np.take_along_axis(rows, chosen_a, axis=1).reshape(moved_shape)
    indices = chosen_a.reshape(moved_shape)
    winners = np.moveaxis(np.array(receivers, np.int64).reshape(moved_shape), -1, axis)
    return Reference(np.moveaxis(values, -1, axis),
                     extra=(np.moveaxis(indices, -1, axis).astype(index_dtype or index_type()),),
                     winners=winners.reshape(-1))


def adaptive_reference(data: np.ndarray, output_shape: Sequence[int],
                       index_dtype: type | None = None) -> Reference:
    """OpenVINO AdaptiveMaxPool-8: windows ``[floor(i*L/O), ceil((i+1)*L/O))``; the window's
    first element, replaced only by a strictly greater one; indices flat within the plane."""
    data = np.asarray(data)
    spatial = data.shape[2:]
    plane = int(np.prod(spatial))
    values, indices, winners = [], [], []
    for n, c in np.ndindex(*data.shape[:2]):
        start = (n * data.shape[1] + c) * plane
        block = data[n, c].reshape(-1)
        for position in np.ndindex(*output_shape):
            ranges = [range(i * size // o, -(-(i + 1) * size // o))
                      for i, size, o in zip(position, spatial, output_shape, strict=True)]
            members = [int(np.ravel_multi_index(at, spatial))
                       for at in itertools.product(*ranges)]  # row-major window order
            best = members[0]
            for m in members[1:]:
                if block[best] < block[m]:
                    best = m
            values.append(block[best])
            indices.append(best)
            winners.append(start + best)
    shape = data.shape[:2] + tuple(output_shape)
    return Reference(np.array(values, data.dtype).reshape(shape),
                     extra=(np.array(indices).astype(index_dtype or index_type()).reshape(shape),),
                     winners=np.array(winners, np.int64))


def unpool_reference(x: np.ndarray, indices: np.ndarray,
                     output_shape: Sequence[int]) -> Reference:
    """ONNX MaxUnpool: +0 everywhere, then ``out.flat[I] = X`` in X's row-major order (the last
    writer of a duplicate wins); output ``o``'s cotangent goes back to that writer."""
    x = np.asarray(x)
    out = np.zeros(int(np.prod(output_shape)), x.dtype)
    writer = np.full(out.size, -1, np.int64)
    for j, (value, target) in enumerate(zip(x.reshape(-1), np.reshape(indices, -1),
                                            strict=True)):
        out[target] = value
        writer[target] = j
    return Reference(out.reshape(tuple(output_shape)), winners=writer)


def maximum_reference(a: np.ndarray, b: np.ndarray, rule: str) -> Reference:
    """Elementwise maximum of `a` and a constant `b` (NumPy broadcasting), with gradient to `a`.

    ``rule="ieee"`` (ONNX Max): NaN propagates, ``max(-0, +0) = +0``, a tie gives `a` half the
    cotangent. ``rule="openvino"`` (Maximum-1): ``a < b ? b : a``.
    """
    a, b = np.asarray(a), np.asarray(b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    wide_a = np.broadcast_to(a, shape).reshape(-1)
    wide_b = np.broadcast_to(b, shape).reshape(-1)
    source = np.broadcast_to(np.arange(a.size).reshape(a.shape), shape).reshape(-1)
    out = np.empty(len(wide_a), a.dtype)
    weights = np.zeros(len(wide_a))
    for o, (x, y) in enumerate(zip(wide_a, wide_b, strict=True)):
        if rule == "openvino":
            out[o], weights[o] = (y, 0.0) if x < y else (x, 1.0)
        elif np.isnan(x) or np.isnan(y):
            out[o], weights[o] = np.nan, 0.0
        elif x == y:
            out[o] = x if (x != 0 or not np.signbit(x)) else y  # +0 wins a zero tie
            weights[o] = 0.5
        else:
            out[o], weights[o] = (x, 1.0) if x > y else (y, 0.0)
    return Reference(out.reshape(shape), winners=source, weights=weights)
