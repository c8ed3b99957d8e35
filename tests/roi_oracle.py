"""NumPy loops for MaxRoiPool / ROIPooling-1, written from docs/semantics.md §11.3 (never from
the lowering): the bin geometry, the ONNX values rule, the OpenVINO reference fold, the element
each gradient goes to, and the OpenVINO CPU plugin's documented behaviour (first-seeded fold,
exact-integer edges) for the deviation tests."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np


def c_round(v) -> int:
    """C ``round``: half away from zero, on the exact value of `v`."""
    f = Fraction(float(v))
    r = math.floor(abs(f) + Fraction(1, 2))
    return r if f >= 0 else -r


def wide(dtype) -> type:
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def roi_bins(roi, scale, pooled, height, width, exact_edges=False):
    """[(h0, h1, w0, w1)] per bin, row-major over (PH, PW), or None for an invalid corner.
    `exact_edges`: the integer edges floor(p*L/P), ceil((p+1)*L/P) (the CPU plugin)."""
    t = wide(roi.dtype)
    s = t(np.float32(scale))
    xs, ys, xe, ye = (c_round(t(roi[k]) * s) for k in (1, 2, 3, 4))
    lh, lw = max(ye - ys + 1, 1), max(xe - xs + 1, 1)

    def edges(extent, count, start, size):
        out = []
        step = t(extent) / t(count)  # NumPy's division is correctly rounded
        for p in range(count):
            if exact_edges:
                lo, hi = (p * extent) // count, -((-(p + 1) * extent) // count)
            else:
                lo, hi = math.floor(t(p) * step), math.ceil(t(p + 1) * step)
            out.append((min(max(lo + start, 0), size), min(max(hi + start, 0), size)))
        return out

    return [(h0, h1, w0, w1) for (h0, h1) in edges(lh, pooled[0], ys, height)
            for (w0, w1) in edges(lw, pooled[1], xs, width)]


def roi_valid(roi, images) -> bool:
    if not np.all(np.isfinite(roi.astype(np.float64))):
        return False
    return 0 <= math.trunc(float(roi[0])) < images


def onnx_value(elements, dtype):
    """NaN if any; else the maximum, +0 over -0; the contract's ONNX bin value."""
    e = [float(v) for v in elements]
    if any(math.isnan(v) for v in e):
        return np.array(np.nan, dtype)
    m = max(e)
    if m == 0:
        m = 0.0 if any(v == 0 and math.copysign(1, v) > 0 for v in e) else -0.0
    return np.array(m, dtype)


def fold(elements, dtype, seed):
    """``acc = seed; acc = (x < acc) ? acc : x``: (value, index of the winner or None)."""
    acc, at = seed, None
    with np.errstate(invalid="ignore"):
        for i, v in enumerate(elements):
            if not (v < acc):
                acc, at = v, i
    return acc, at


def lowest(dtype):
    info = ml_dtypes.finfo(dtype) if np.dtype(dtype) == ml_dtypes.bfloat16 else np.finfo(dtype)
    return np.array(info.min, dtype)


def _each_bin(x, rois, scale, pooled, exact_edges=False):
    n, c, height, width = x.shape
    for r, roi in enumerate(rois):
        if not roi_valid(roi, n):
            continue
        image = math.trunc(float(roi[0]))
        for b, (h0, h1, w0, w1) in enumerate(roi_bins(roi, scale, pooled, height, width,
                                                      exact_edges)):
            if h1 <= h0 or w1 <= w0:
                continue
            for ch in range(c):
                block = x[image, ch, h0:h1, w0:w1]
                hh, ww = np.meshgrid(np.arange(h0, h1), np.arange(w0, w1), indexing="ij")
                yield r, ch, divmod(b, pooled[1]), block.reshape(-1), (image, hh.reshape(-1),
                                                                      ww.reshape(-1))


def max_roi_pool(x, rois, scale, pooled, rule="onnx", exact_edges=False, seed="lowest"):
    """(R, C, PH, PW): ``rule`` "onnx" or "fold" (the OpenVINO reference; `seed` "lowest" or
    "first": the CPU plugin's fold seeded by the bin's first element)."""
    out = np.zeros((len(rois), x.shape[1]) + tuple(pooled), x.dtype)
    for r, ch, (i, j), elements, _ in _each_bin(x, rois, scale, pooled, exact_edges):
        if rule == "onnx":
            out[r, ch, i, j] = onnx_value(elements, x.dtype)
        elif seed == "lowest":
            out[r, ch, i, j] = fold(elements, x.dtype, lowest(x.dtype))[0]
        else:  # the CPU plugin: seeded by the first element, replaced only by a larger one
            acc = elements[0]
            with np.errstate(invalid="ignore"):
                for v in elements[1:]:
                    if acc < v:
                        acc = v
            out[r, ch, i, j] = acc
    return out


def gradient(x, rois, scale, pooled, cotangent, rule="onnx"):
    """dL/dX for ``L = sum(y * cotangent)``: ONNX to the first maximal element (first NaN),
    the fold to the element it kept (none for the seed)."""
    g = np.zeros(x.shape, np.float64)
    for r, ch, (i, j), elements, (image, hh, ww) in _each_bin(x, rois, scale, pooled):
        if rule == "onnx":
            e = elements.astype(np.float64)
            if np.isnan(e).any():
                at = int(np.argmax(np.isnan(e)))
            else:
                at = int(np.argmax(e == e.max()))
        else:
            at = fold(elements, x.dtype, lowest(x.dtype))[1]
            if at is None:
                continue
        g[image, ch, hh[at], ww[at]] += float(cotangent[r, ch, i, j])
    return g.astype(x.dtype)
