"""MaxPool's NumPy oracles (tests/pool_oracle.py) with the per-plane loop vectorised, for inputs
of hundreds of thousands of elements, where the pure-Python loops cost seconds.

The geometry is `pool_oracle.windows` itself (each output position's in-range taps, in
row-major window order); the scan is the same rule, tap after tap in that order, applied to
every (n, c) plane at once on exact float64 values: OpenVINO's (start from lowest(T), take an
element only if it is greater: NaN never) and ONNX's (the first tap, then an element that is
NaN or greater while the kept one is not NaN). Independent of jaxmax;
tests/test_max_pool_lowering_paths.py checks them against the loop oracles.
"""

from __future__ import annotations

import math

import numpy as np
import pool_oracle
from helpers import lowest, onnx_empty


def _taps(spatial, kernel, strides, dilations, pads):
    """The output spatial shape and an (outputs, taps) array of flat input positions, -1
    where a window has fewer in-range taps than the kernel (floor rounding)."""
    out, each = pool_oracle.windows(spatial, kernel, strides, dilations, pads, "floor")
    taps = np.full((len(each), math.prod(kernel)), -1, np.int64)
    for row, (_, positions) in enumerate(each):
        if positions:
            taps[row, :len(positions)] = np.ravel_multi_index(np.array(positions).T, spatial)
    return out, taps


def _scan(x, kernel, strides, dilations, pads, take, start):
    """Per plane and output: the kept value and its flat position after scanning the taps with
    `take(value, kept, has_kept)`, from `start` (value, flat position, has_kept)."""
    x = np.asarray(x)
    spatial = x.shape[2:]
    out, taps = _taps(spatial, kernel, strides, dilations, list(pads))
    planes = x.astype(np.float64).reshape(x.shape[0] * x.shape[1], -1)
    shape = (planes.shape[0], taps.shape[0])
    acc = np.full(shape, start[0], np.float64)
    best = np.full(shape, start[1], np.int64)
    has = np.full(shape, start[2])
    for t in range(taps.shape[1]):
        column = taps[:, t]
        v = planes[:, np.maximum(column, 0)]
        chosen = (column >= 0) & take(v, acc, has)
        acc = np.where(chosen, v, acc)
        best = np.where(chosen, column, best)
        has |= chosen
    plane = math.prod(spatial)
    offsets = (np.arange(planes.shape[0]) * plane)[:, None]
    full = x.shape[:2] + out
    return acc.reshape(full), (offsets + best).reshape(full), has.reshape(full)


def openvino(x, kernel, strides, pads, dilations):
    """`pool_oracle.openvino` (explicit pads as (begin, end) pairs, floor rounding, axis 0)."""
    low = float(lowest(np.asarray(x).dtype))
    acc, index, _ = _scan(x, kernel, strides, dilations, pads,
                          lambda v, kept, has: v > kept, (low, 0, True))
    return acc.astype(np.asarray(x).dtype), index


def onnx(x, kernel, strides, pads, dilations):
    """`pool_oracle.onnx` (pads in ONNX layout, floor rounding, storage order 0)."""
    n_sp = len(kernel)
    pairs = list(zip(pads[:n_sp], pads[n_sp:], strict=True))
    dtype = np.asarray(x).dtype
    acc, index, has = _scan(
        x, kernel, strides, dilations, pairs,
        lambda v, kept, has: ~has | (~np.isnan(kept) & (np.isnan(v) | (v > kept))),
        (0.0, 0, False))
    return (np.where(has, acc, float(onnx_empty(dtype))).astype(dtype),
            np.where(has, index, -1))
