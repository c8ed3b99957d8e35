"""NumPy loop oracles for the reductions, independent of jaxmax: OpenVINO ReduceMax-1 and
ReduceLogicalOr-1, ONNX ReduceMax (1-20), and the hand-computed cotangent of a max reduction.

Every output element folds its reduced slice one element at a time, in row-major order, over
exact Python numbers (float64 holds every value of the floating types here; integers, 64-bit
ones included, become Python ints), so nothing is rounded and no NumPy reduction rule is
borrowed. Written from the specifications and docs/semantics.md only.
"""

from __future__ import annotations

import math

import numpy as np
from helpers import is_float, lowest, onnx_empty


def norm_axes(axes, rank: int) -> tuple[int, ...]:
    """Already-valid axes normalised the spec way (rank-0 data takes the range of rank 1),
    duplicates merged, sorted. An int, a sequence or an array; None or empty gives ()."""
    if axes is None:
        return ()
    bound = max(rank, 1)
    return tuple(sorted({int(a) + bound if int(a) < 0 else int(a)
                         for a in np.asarray(axes).reshape(-1).tolist()}))


def _rows(x: np.ndarray, axes: tuple[int, ...]):
    """The reduced slices as lists of exact Python numbers, one list per output element in
    row-major output order, and the output shape without the reduced axes."""
    values = x.astype(np.float64) if is_float(x.dtype) else x
    if x.ndim == 0:
        return [[values[()].item()]], ()
    kept = [d for d in range(x.ndim) if d not in axes]
    out_shape = tuple(x.shape[d] for d in kept)
    moved = np.transpose(values, kept + list(axes))
    size = int(np.prod(out_shape, dtype=np.int64))
    return moved.reshape(size, -1).tolist() if size else [], out_shape


def _fold(x: np.ndarray, axes: tuple[int, ...], keep_dims: bool, step, start) -> np.ndarray:
    """out[o] = step(...step(start, e1)..., en) over the slice of output index o."""
    rows, out_shape = _rows(x, axes)
    folded = []
    for row in rows:
        acc = start
        for value in row:
            acc = step(acc, value)
        folded.append(acc)
    out = np.array(folded, dtype=np.float64 if is_float(x.dtype) else object)
    out = out.reshape(out_shape).astype(x.dtype)
    if keep_dims and x.ndim:
        out = out.reshape(tuple(1 if d in axes else x.shape[d] for d in range(x.ndim)))
    return out


def _max_step(acc, value):
    # NaN fails every comparison, so it is skipped; the accumulator starts at the floor.
    return value if value > acc else acc


def _python(value, dtype):
    return float(value) if is_float(dtype) else int(value)


def openvino_reduce_max(x, axes, keep_dims=False, *, floor=None, empty_axes_identity=True):
    """ReduceMax-1 by the max rule: max(floor, non-NaN elements of each slice).

    `floor` defaults to lowest(T). ``empty_axes_identity=False`` models OpenVINO's reference
    kernel, which applies the rule element by element when `axes` is empty.
    """
    x = np.asarray(x)
    axes = norm_axes(axes, x.ndim)
    if not axes and empty_axes_identity:
        return x.copy()
    start = _python(lowest(x.dtype) if floor is None else floor, x.dtype)
    if not axes:  # the rule applied to every element on its own
        return _fold(x[..., None], (x.ndim,), False, _max_step, start)
    return _fold(x, axes, keep_dims, _max_step, start)


def openvino_reduce_max_wide(x, axes) -> np.ndarray:
    """ReduceMax-1 of float data over non-empty `axes` by NumPy's vectorised max of the float64
    widening, NaN masked: for inputs too large for the loop oracle (test_reduce_max_oracles checks
    the two agree)."""
    x = np.asarray(x)
    wide = x.astype(np.float64)
    out = np.max(np.where(np.isnan(wide), -np.inf, wide), axis=norm_axes(axes, x.ndim))
    return np.maximum(out, float(lowest(x.dtype))).astype(x.dtype)


def onnx_reduce_max_wide(x, axes) -> np.ndarray:
    """ONNX ReduceMax of float data over non-empty `axes` (keepdims=0) by NumPy's vectorised max
    of the float64 widening, which propagates NaN: for large inputs, as above."""
    x = np.asarray(x)
    return np.max(x.astype(np.float64), axis=norm_axes(axes, x.ndim)).astype(x.dtype)


def openvino_reduce_or(x, axes, keep_dims=False):
    """ReduceLogicalOr-1: any element of the slice; empty axes is the identity."""
    x = np.asarray(x)
    axes = norm_axes(axes, x.ndim)
    if not axes:
        return x.copy()
    return _fold(x, axes, keep_dims, lambda acc, v: bool(acc or v), False)


def onnx_reduce_max(x, axes=None, keepdims=1, noop_with_empty_axes=0):
    """ONNX ReduceMax: NaN propagates, the empty set gives -inf / iinfo.min / False, bool is
    or; no axes reduces all of them unless `noop_with_empty_axes`. Out-of-range and repeated
    axes are errors (ValueError)."""
    x = np.asarray(x)
    r = x.ndim
    given = [] if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
    reduced = []
    for a in given:
        if not -r <= a <= r - 1:
            raise ValueError(f"oracle: axis {a} out of range for rank {r}")
        a = a + r if a < 0 else a
        if a in reduced:
            raise ValueError(f"oracle: repeated axis {a}")
        reduced.append(a)
    if not reduced:
        if noop_with_empty_axes:
            return x.copy()
        reduced = list(range(r))
    if x.dtype == np.bool_:
        return _fold(x, tuple(sorted(reduced)), bool(keepdims), lambda acc, v: bool(acc or v),
                     False)

    def step(acc, value):
        if acc != acc or value != value:  # NaN (x != x) wins and stays
            return acc if acc != acc else value
        if value == acc == 0:  # +0.0 is above -0.0 (docs/semantics.md §4)
            return value if math.copysign(1.0, value) > 0 else acc
        return value if value > acc else acc

    if not r:
        return x.copy()
    return _fold(x, tuple(sorted(reduced)), bool(keepdims), step,
                 _python(onnx_empty(x.dtype), x.dtype))


def share_grad(x, axes, ct, skip_nan):
    """Hand-computed cotangent of a max reduction (keep_dims=False): the slice's cotangent is
    shared evenly by the elements equal to the maximum. With `skip_nan` (OpenVINO) NaN never
    wins and a slice whose non-NaN maximum is -inf (empty, all -inf, all NaN) passes none."""
    x = np.asarray(x, np.float64)
    axes = norm_axes(axes, x.ndim)
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + list(axes))
    flat = moved.reshape(int(np.prod([x.shape[a] for a in kept])), -1)
    g = np.zeros_like(flat)
    ctf = np.asarray(ct, np.float64).reshape(-1)
    for row in range(flat.shape[0]):
        vals = flat[row]
        if skip_nan:
            finite = vals[~np.isnan(vals)]
            m = finite.max() if finite.size else -np.inf
            if m == -np.inf:
                continue
        else:
            m = vals.max()
        hits = vals == m
        g[row, hits] = ctf[row] / hits.sum()
    g = g.reshape(moved.shape)
    return np.transpose(g, np.argsort(kept + list(axes)))
