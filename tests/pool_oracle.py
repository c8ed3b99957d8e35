"""NumPy loop oracles for MaxPool-8/-14 and ONNX MaxPool (values and indices), independent of
jaxmax: plain loops over windows, geometry written out from the specifications.

The conformance tests check these oracles against OpenVINO, onnxruntime and PyTorch, and
jaxmax against the oracles.
"""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np


def _lowest(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return ml_dtypes.finfo(dtype).min


def _same(size, k, s, d, lower):
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


def _pads(spatial, kernel, strides, dilations, pads, auto_pad):
    if auto_pad in ("same_upper", "same_lower"):
        return [_same(n, k, s, d, auto_pad == "same_lower")
                for n, k, s, d in zip(spatial, kernel, strides, dilations, strict=True)]
    if auto_pad == "valid":
        return [(0, 0)] * len(spatial)
    return list(pads)


def _windows(x, kernel, strides, dilations, pads, rounding):
    """Empty (values, indices) outputs, and per window (its output position, the input
    positions of its in-range taps in window order, every (n, c) pair)."""
    spatial = x.shape[2:]
    out = [output_length(n, k, s, d, lo, hi, rounding)
           for n, k, s, d, (lo, hi) in zip(spatial, kernel, strides, dilations, pads, strict=True)]
    shape = x.shape[:2] + tuple(out)

    def each():
        for o in itertools.product(*map(range, out)):
            taps = []
            for j in itertools.product(*map(range, kernel)):
                pos = tuple(oo * s - lo + jj * d
                            for oo, s, (lo, _), jj, d in zip(o, strides, pads, j, dilations,
                                                             strict=True))
                if all(0 <= p < n for p, n in zip(pos, spatial, strict=True)):
                    taps.append(pos)
            yield o, taps, itertools.product(range(x.shape[0]), range(x.shape[1]))

    return np.empty(shape, x.dtype), np.empty(shape, np.int64), each()


def openvino(x, kernel, strides, pads, dilations=None, rounding="floor", auto_pad="explicit",
             axis=0):
    """MaxPool-8/-14: scan from lowest(T), take an element only if it is greater; indices are
    flat over the whole tensor, then modulo prod(shape[axis:])."""
    n_sp = x.ndim - 2
    dilations = dilations or [1] * n_sp
    spatial = x.shape[2:]
    pads = _pads(spatial, kernel, strides, dilations, pads, auto_pad)
    plane = math.prod(spatial)
    modulo = math.prod(x.shape[axis % x.ndim:])
    low = _lowest(x.dtype)
    values, indices, windows = _windows(x, kernel, strides, dilations, pads, rounding)
    for o, taps, planes in windows:
        for n, c in planes:
            acc, best = low, 0
            for pos in taps:
                v = x[(n, c) + pos]
                if v > acc:
                    acc, best = v, int(np.ravel_multi_index(pos, spatial))
            values[(n, c) + o] = acc
            indices[(n, c) + o] = ((n * x.shape[1] + c) * plane + best) % modulo
    return values, indices


def onnx(x, kernel, strides, pads, dilations=None, ceil_mode=0, auto_pad="NOTSET",
         storage_order=0):
    """ONNX MaxPool: NaN propagates (index of the first NaN), else the first maximum; a window
    with no input element gives -inf / iinfo.min and index -1. `pads` in ONNX layout."""
    n_sp = x.ndim - 2
    dilations = dilations or [1] * n_sp
    spatial = x.shape[2:]
    pairs = list(zip(pads[:n_sp], pads[n_sp:], strict=True))
    pairs = _pads(spatial, kernel, strides, dilations, pairs, auto_pad.lower())
    plane = math.prod(spatial)
    empty = -np.inf if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16 else \
        np.iinfo(x.dtype).min
    rounding = "onnx_ceil" if ceil_mode else "floor"
    values, indices, windows = _windows(x, kernel, strides, dilations, pairs, rounding)
    for o, taps, planes in windows:
        for n, c in planes:
            acc, best = None, None
            for pos in taps:
                v = x[(n, c) + pos]
                if acc is None or (not np.isnan(acc) and (np.isnan(v) or v > acc)):
                    acc, best = v, pos
            values[(n, c) + o] = empty if acc is None else acc
            if best is None:
                indices[(n, c) + o] = -1
            else:
                flat = (int(np.ravel_multi_index(best[::-1], spatial[::-1])) if storage_order
                        else int(np.ravel_multi_index(best, spatial)))
                indices[(n, c) + o] = (n * x.shape[1] + c) * plane + flat
    return values, indices
