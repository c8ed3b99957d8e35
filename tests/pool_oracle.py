"""NumPy loop oracles for every MaxPool in jaxmax, independent of jaxmax: plain loops over
windows, the geometry written out from the specifications.

* the window geometry: auto_pad pads (``same_upper`` / ``same_lower`` / ``valid``), output
  lengths for each rounding rule (floor; OpenVINO ceil; ceil_torch; ONNX ceil_mode), and per
  output position the in-range input positions of its window, in row-major window order
  (padding is never a tap);
* :func:`openvino`: MaxPool-8/-14 values and indices (the OpenVINO max rule,
  max(lowest(T), non-NaN elements), scanning from lowest(T));
* :func:`max_pool_1`: MaxPool-1, which is MaxPool-8's values with floor/ceil rounding and no
  dilation, and :func:`max_pool_1_grad`, its hand-computed input cotangent;
* :func:`onnx`: ONNX MaxPool values and indices (NaN propagates, first maximum);
* :func:`lowest_rule`: the OpenVINO max rule over ``lax.reduce_window``-style windows (every
  axis windowed), for tests of the private pooling lowerings.

Values are folded as exact Python numbers (float64 holds every value of the floating types
here; integers, 64-bit ones included, become Python ints). The conformance tests check these
oracles against OpenVINO, onnxruntime and PyTorch, and jaxmax against the oracles.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from helpers import is_float, lowest, onnx_empty


def same_pads(size, k, s, d, lower):
    """(begin, end) pads of SAME_UPPER / SAME_LOWER: output ceil(size / s); an odd total puts
    the larger half at the end (upper) or at the start (lower)."""
    dk = (k - 1) * d + 1
    total = max(0, (math.ceil(size / s) - 1) * s + dk - size)
    small, big = total // 2, total - total // 2
    return (big, small) if lower else (small, big)


def output_length(size, k, s, d, lo, hi, rounding):
    """floor / ceil (OpenVINO, no correction) / ceil_torch / onnx_ceil."""
    ext = size + lo + hi - ((k - 1) * d + 1)
    if rounding == "floor":
        return ext // s + 1
    up = math.ceil(ext / s)
    if rounding == "ceil":
        return up + 1
    if rounding == "ceil_torch":
        return up + (1 if up * s <= size + lo - 1 else 0)
    n = up + 1
    return n - 1 if (n - 1) * s >= size + lo else n


def resolve_pads(spatial, kernel, strides, dilations, pads, auto_pad):
    """(begin, end) pads per spatial axis: `pads` (pairs) for explicit / notset, computed for
    same_upper / same_lower, zero for valid. `auto_pad` in lower case; None is explicit."""
    if auto_pad in ("same_upper", "same_lower"):
        return [same_pads(n, k, s, d, auto_pad == "same_lower")
                for n, k, s, d in zip(spatial, kernel, strides, dilations, strict=True)]
    if auto_pad == "valid":
        return [(0, 0)] * len(spatial)
    return [tuple(p) for p in pads]


def windows(spatial, kernel, strides, dilations, pads, rounding, padding_taps=False):
    """The output spatial shape, and per output position (row-major) the input positions of
    its in-range taps in row-major window order (an empty list: a window in padding only).
    With `padding_taps`, a tap in the padding is listed too, as None, in its place.

    `spatial` may be any shape, so this is also ``lax.reduce_window``'s geometry over every
    axis (rounding "floor", `pads` its (low, high) padding)."""
    out = tuple(output_length(n, k, s, d, lo, hi, rounding) for n, k, s, d, (lo, hi)
                in zip(spatial, kernel, strides, dilations, pads, strict=True))
    each = []
    for o in itertools.product(*map(range, out)):
        taps = []
        for j in itertools.product(*map(range, kernel)):
            pos = tuple(oo * s - lo + jj * d
                        for oo, s, (lo, _), jj, d in zip(o, strides, pads, j, dilations,
                                                         strict=True))
            if all(0 <= p < n for p, n in zip(pos, spatial, strict=True)):
                taps.append(pos)
            elif padding_taps:
                taps.append(None)
        each.append((o, taps))
    return out, each


def _number(value, dtype):
    """A 0-d array's value as an exact Python number."""
    return float(value) if is_float(dtype) else int(value)


def _flat(pos, spatial):
    return int(np.ravel_multi_index(pos, spatial))


def openvino(x, kernel, strides, pads, dilations=None, rounding="floor", auto_pad="explicit",
             axis=0):
    """MaxPool-8/-14: scan from lowest(T), take an element only if it is greater; indices are
    flat over the whole tensor, then modulo prod(shape[axis:]). `pads`: (begin, end) pairs."""
    x = np.asarray(x)
    n_sp = x.ndim - 2
    dilations = dilations or [1] * n_sp
    spatial = x.shape[2:]
    pads = resolve_pads(spatial, kernel, strides, dilations, pads, auto_pad)
    plane = math.prod(spatial)
    modulo = math.prod(x.shape[axis % x.ndim:])
    low = _number(lowest(x.dtype), x.dtype)
    out, each = windows(spatial, kernel, strides, dilations, pads, rounding)
    values = np.empty(x.shape[:2] + out, x.dtype)
    indices = np.empty(x.shape[:2] + out, np.int64)
    planes = _planes(x)
    for o, taps in each:
        flat_taps = [_flat(pos, spatial) for pos in taps]
        for p, (n, c) in enumerate(itertools.product(range(x.shape[0]), range(x.shape[1]))):
            acc, best = low, 0
            for t in flat_taps:
                v = planes[p][t]
                if v > acc:  # NaN fails every comparison: never taken
                    acc, best = v, t
            values[(n, c) + o] = acc
            indices[(n, c) + o] = (p * plane + best) % modulo
    return values, indices


def _per_axis(value, n_sp, default=0):
    if value is None:
        value = default
    if np.ndim(value) == 0:
        return [int(value)] * n_sp
    return [int(v) for v in np.asarray(value).reshape(-1)]


def max_pool_1_geometry(shape, kernel, strides, pads_begin=None, pads_end=None,
                        rounding_type="floor", auto_pad="explicit"):
    """MaxPool-1 attributes (scalars broadcast, None pads 0, auto_pad None is explicit, case
    ignored) as (kernel, strides, dilations, pads, rounding) for :func:`windows`."""
    n_sp = len(shape) - 2
    kernel, strides = _per_axis(kernel, n_sp), _per_axis(strides, n_sp)
    pairs = list(zip(_per_axis(pads_begin, n_sp), _per_axis(pads_end, n_sp), strict=True))
    auto_pad = "explicit" if auto_pad is None else auto_pad.lower()
    dilations = [1] * n_sp
    pads = resolve_pads(shape[2:], kernel, strides, dilations, pairs, auto_pad)
    return kernel, strides, dilations, pads, rounding_type.lower()


def max_pool_1_shape(shape, **attrs) -> tuple[int, ...]:
    """MaxPool-1's output shape for data of `shape` (floor or OpenVINO's uncorrected ceil)."""
    kernel, strides, dilations, pads, rounding = max_pool_1_geometry(shape, **attrs)
    return tuple(shape[:2]) + tuple(
        output_length(n, k, s, d, lo, hi, rounding) for n, k, s, d, (lo, hi)
        in zip(shape[2:], kernel, strides, dilations, pads, strict=True))


def max_pool_1(x, kernel, strides, pads_begin=None, pads_end=None, rounding_type="floor",
               auto_pad="explicit"):
    """MaxPool-1: MaxPool-8's values, no dilation, floor or ceil (OpenVINO's, uncorrected)."""
    x = np.asarray(x)
    kernel, strides, dilations, pads, rounding = max_pool_1_geometry(
        x.shape, kernel, strides, pads_begin, pads_end, rounding_type, auto_pad)
    return openvino(x, kernel, strides, pads, dilations, rounding)[0]


def max_pool_1_empty_windows(shape, **attrs) -> int:
    """How many output positions of MaxPool-1 have a window with no input element."""
    kernel, strides, dilations, pads, rounding = max_pool_1_geometry(shape, **attrs)
    _, each = windows(shape[2:], kernel, strides, dilations, pads, rounding)
    return sum(not taps for _, taps in each)


def max_pool_1_grad(x, ct, kernel, strides, pads_begin=None, pads_end=None,
                    rounding_type="floor", auto_pad="explicit"):
    """Hand-computed MaxPool-1 input cotangent (float64): each window's cotangent goes to its
    FIRST maximal (non-NaN) input element in row-major window order; a window without an
    input element, or whose output was raised to lowest(T) (only -inf/NaN inside), passes
    none."""
    x = np.asarray(x, np.float64)
    kernel, strides, dilations, pads, rounding = max_pool_1_geometry(
        x.shape, kernel, strides, pads_begin, pads_end, rounding_type, auto_pad)
    _, each = windows(x.shape[2:], kernel, strides, dilations, pads, rounding)
    ct = np.asarray(ct, np.float64)
    grad = np.zeros(x.shape, np.float64)
    for o, taps in each:
        for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
            best, where = -np.inf, None
            for pos in taps:
                value = x[(n, c) + pos]
                if value > best:  # NaN never wins, nor does -inf
                    best, where = value, pos
            if where is not None:
                grad[(n, c) + where] += ct[(n, c) + o]
    return grad


def onnx(x, kernel, strides, pads, dilations=None, ceil_mode=0, auto_pad="NOTSET",
         storage_order=0):
    """ONNX MaxPool: NaN propagates (index of the first NaN), else the first maximum; a window
    with no input element gives -inf / iinfo.min and index -1. `pads` in ONNX layout."""
    x = np.asarray(x)
    n_sp = x.ndim - 2
    dilations = dilations or [1] * n_sp
    spatial = x.shape[2:]
    pairs = list(zip(pads[:n_sp], pads[n_sp:], strict=True))
    pairs = resolve_pads(spatial, kernel, strides, dilations, pairs, auto_pad.lower())
    plane = math.prod(spatial)
    empty = _number(onnx_empty(x.dtype), x.dtype)
    rounding = "onnx_ceil" if ceil_mode else "floor"
    out, each = windows(spatial, kernel, strides, dilations, pairs, rounding)
    values = np.empty(x.shape[:2] + out, x.dtype)
    indices = np.empty(x.shape[:2] + out, np.int64)
    planes = _planes(x)
    for o, taps in each:
        for p, (n, c) in enumerate(itertools.product(range(x.shape[0]), range(x.shape[1]))):
            acc, best = None, None
            for pos in taps:
                v = planes[p][_flat(pos, spatial)]
                if acc is None or (acc == acc and (v != v or v > acc)):
                    acc, best = v, pos
            values[(n, c) + o] = empty if acc is None else acc
            if best is None:
                indices[(n, c) + o] = -1
            else:
                flat = (_flat(best[::-1], spatial[::-1]) if storage_order
                        else _flat(best, spatial))
                indices[(n, c) + o] = p * plane + flat
    return values, indices


def lowest_rule(x, window, strides, padding):
    """The OpenVINO max rule over ``lax.reduce_window`` windows (every axis windowed, floor
    rounding, `padding` as (low, high) pairs): max(lowest(T), non-NaN elements), padding never
    taken."""
    x = np.asarray(x)
    out, each = windows(x.shape, window, strides, [1] * x.ndim, padding, "floor")
    wide = (x.astype(np.float64) if is_float(x.dtype) else x).reshape(-1).tolist()
    low = _number(lowest(x.dtype), x.dtype)
    values = np.empty(out, x.dtype)
    for o, taps in each:
        acc = low
        for pos in taps:
            v = wide[_flat(pos, x.shape)]
            if v > acc:  # NaN fails every comparison: never taken
                acc = v
        values[o] = acc
    return values


def _planes(x):
    """Each (n, c) plane of `x` as a flat list of exact Python numbers, in (n, c) order."""
    wide = x.astype(np.float64) if is_float(x.dtype) else x
    return wide.reshape(x.shape[0] * x.shape[1], -1).tolist()
