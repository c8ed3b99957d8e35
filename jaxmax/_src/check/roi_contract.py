"""The detection operators' contract in NumPy, for the deviation rules of ``check``
(docs/semantics.md §11): Hardmax's winner, MaxRoiPool/ROIPooling bins (float32 edges, or the
OpenVINO CPU plugin's exact integers) and the three bin folds (the ONNX rule, the OpenVINO
reference fold, the CPU plugin's first-seeded fold). Loops over ROIs and bins; `check` runs
them only on nodes whose outputs differ."""

from __future__ import annotations

import math

import numpy as np

from jaxmax._src.node_binding import NodeFunction


def hardmax(binding: NodeFunction, x: np.ndarray) -> np.ndarray:
    """The contract's Hardmax output (1 at the first NaN, else the first maximum)."""
    opset = int(binding.attributes.get("opset", 13))
    default = 1 if opset < 13 else -1
    return hardmax_at(x, int(binding.attributes.get("axis", default)), opset)


def hardmax_at(x: np.ndarray, axis: int, opset: int) -> np.ndarray:
    """Hardmax of `x` along `axis` at `opset` (coerced to 2-D before 13)."""
    axis %= x.ndim
    if opset < 13:
        moved = x.reshape(math.prod(x.shape[:axis]), -1)
    else:
        moved = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])
    out = np.zeros(moved.shape, x.dtype)
    if moved.size:
        wide = moved.astype(np.float64)
        nan = np.isnan(wide)
        top = np.where(nan, np.inf, wide).max(axis=1, keepdims=True)
        hit = np.where(nan.any(axis=1, keepdims=True), nan, wide == top)
        out[np.arange(len(out)), hit.argmax(axis=1)] = 1
    if opset < 13:
        return out.reshape(x.shape)
    return np.moveaxis(out.reshape(np.moveaxis(x, axis, -1).shape), -1, axis)


def c_round(v: float) -> int:
    """C ``round`` (half away from zero) of a float32 or float64 value, exactly (``|v| + 0.5``
    is exact in float64 for float32 values; float64 ones go through ``math.floor`` of the
    exact sum as Python computes it)."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def bin_edges(extent: int, count: int, start: int, size: int, t=np.float32,
              exact: bool = False):
    """``(start, end)`` of each of `count` bins of an `extent`-long ROI from `start`, clipped to
    ``[0, size]``: float `t` edges, or the exact integers (`exact`)."""
    step = t(extent) / t(count)
    for p in range(count):
        if exact:
            lo, hi = (p * extent) // count, -((-(p + 1) * extent) // count)
        else:
            lo, hi = math.floor(t(p) * step), math.ceil(t(p + 1) * step)
        yield min(max(lo + start, 0), size), min(max(hi + start, 0), size)


def roi_pool(binding: NodeFunction, x: np.ndarray, rois: np.ndarray, fold: str,
             exact_edges: bool = False) -> np.ndarray | None:
    """(R, C, PH, PW) by `fold`: ``"onnx"`` (NaN if any, else the maximum, +0 over -0),
    ``"reference"`` (``acc = lowest; acc = x < acc ? acc : x``) or ``"cpu"`` (seeded by the
    bin's first element, replaced by a larger one). None for an invalid ROI (no claim)."""
    a = binding.attributes
    pooled = tuple(a["pooled_shape"]) if "pooled_shape" in a else (a["pooled_h"], a["pooled_w"])
    t = np.float64 if x.dtype == np.float64 else np.float32
    scale = t(np.float32(a.get("spatial_scale", 1.0)))
    n, c, height, width = x.shape
    out = np.zeros((len(rois), c) + tuple(pooled), x.dtype)
    lowest = np.finfo(x.dtype).min
    for r, roi in enumerate(rois.astype(t)):
        if not np.isfinite(roi).all() or not 0 <= math.trunc(float(roi[0])) < n:
            return None
        xs, ys, xe, ye = (c_round(float(t(v) * scale)) for v in roi[1:])
        rows = list(bin_edges(max(ye - ys + 1, 1), pooled[0], ys, height, t, exact_edges))
        cols = list(bin_edges(max(xe - xs + 1, 1), pooled[1], xs, width, t, exact_edges))
        image = x[math.trunc(float(roi[0]))]
        for i, (h0, h1) in enumerate(rows):
            for j, (w0, w1) in enumerate(cols):
                if h1 <= h0 or w1 <= w0:
                    continue
                block = image[:, h0:h1, w0:w1].reshape(c, -1)
                for ch in range(c):
                    out[r, ch, i, j] = _fold(block[ch], fold, lowest)
    return out


def onnx_bin(values: np.ndarray):
    """The ONNX MaxRoiPool value of a non-empty bin: NaN if any, else the maximum, +0 over -0."""
    if np.isnan(values).any():
        return np.nan
    top = values.max()
    if top == 0:
        return -0.0 if np.signbit(values[values == 0]).all() else 0.0
    return top


def _fold(values: np.ndarray, fold: str, lowest):
    if fold == "onnx":
        return onnx_bin(values)
    with np.errstate(invalid="ignore"):
        if fold == "reference":
            acc = lowest
            for v in values:
                acc = acc if v < acc else v
            return acc
        acc = values[0]
        for v in values[1:]:
            acc = v if acc < v else acc
        return acc
