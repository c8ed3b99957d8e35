"""A NumPy oracle of ONNX RoiAlign and OpenVINO ROIAlign, written from docs/semantics.md §12
(never calling jaxmax): Python loops over ROIs, bins and samples, channels as a NumPy vector.

Every product, quotient and sum is a NumPy operation on scalars or vectors of the computation
type (float32 for 16-bit data), so each is rounded once and never fused.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np


def _ct(dtype) -> type:
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def _extent(face: str, c1, c2, s, how):
    """(start, length) along one axis."""
    T = type(s)
    if face == "onnx":
        off = T(0.5) if how == "half_pixel" else T(0)
        start = c1 * s - off
        end = c2 * s - off
        length = end - start
        if how != "half_pixel":
            length = max(length, T(1))
        return start, length
    if how == "asymmetric":
        start, end = c1 * s, c2 * s
        return start, max(end - start, T(1))
    if how == "half_pixel_for_nn":
        start, end = c1 * s - T(0.5), c2 * s - T(0.5)
    else:
        start, end = (c1 + T(0.5)) * s - T(0.5), (c2 + T(0.5)) * s - T(0.5)
    return start, end - start


def _grid(bin_, ratio: int) -> int:
    if ratio > 0:
        return ratio
    return int(math.ceil(bin_)) if bin_ > 0 else 0


def _position(face, start, bin_, grid, p, k):
    T = type(bin_)
    if face == "onnx":
        return (start + T(p) * bin_) + ((T(k) + T(0.5)) * bin_) / T(grid)
    step = bin_ / T(grid)
    return (start + T(p) * bin_) + step * (T(k) + T(0.5))


def _axis(pos, size):
    """(outside, low, high, l, h) of one coordinate (step 5)."""
    T = type(pos)
    if pos < -1 or pos > size:
        return True, 0, 0, T(0), T(0)
    if pos <= 0:
        pos = T(0)
    low = int(math.floor(pos))
    if low >= size - 1:
        low = high = size - 1
        pos = T(low)
    else:
        high = low + 1
    frac = pos - T(low)
    return False, low, high, frac, T(1) - frac


def _corners(plane, y, x):
    """The four weighted corners (vectors over channels), or None out of the image."""
    out_y, y0, y1, ly, hy = y
    out_x, x0, x1, lx, hx = x
    if out_y or out_x:
        return None
    return (hy * hx * plane[:, y0, x0], hy * lx * plane[:, y0, x1],
            ly * hx * plane[:, y1, x0], ly * lx * plane[:, y1, x1])


def _ieee_max(a, b):
    """Elementwise NaN-propagating maximum with +0 over -0."""
    out = np.where(b > a, b, a)
    out = np.where(np.isnan(a) | np.isnan(b), np.nan, out)
    zeros = (a == 0) & (b == 0)
    return np.where(zeros, np.where(np.signbit(a) & np.signbit(b), a, np.abs(a)), out)


def roi_align(x, rois, batch, *, face="onnx", mode="avg", pooled=(1, 1), sampling_ratio=0,
              spatial_scale=1.0, how="half_pixel", corners=False):
    """(R, C, P_h, P_w) of x's dtype. `how`: ONNX ``half_pixel``/``output_half_pixel``,
    OpenVINO ``asymmetric``/``half_pixel_for_nn``/``half_pixel``. Invalid ROIs give zeros."""
    with np.errstate(invalid="ignore", over="ignore"):
        return _roi_align(x, rois, batch, face, mode, pooled, sampling_ratio, spatial_scale,
                          how, corners)


def _roi_align(x, rois, batch, face, mode, pooled, sampling_ratio, spatial_scale, how,
               corners):
    x = np.asarray(x)
    T = _ct(x.dtype)
    data = x.astype(T)
    n_img, channels, height, width = x.shape
    ph, pw = pooled
    s = T(np.float32(spatial_scale))
    out = np.zeros((len(rois), channels, ph, pw), T)
    lowest = T(ml_dtypes.finfo(x.dtype).min)
    for r, (roi, b) in enumerate(zip(np.asarray(rois), np.asarray(batch), strict=True)):
        if not np.all(np.isfinite(roi.astype(np.float64))) or not 0 <= b < n_img:
            continue
        roi = roi.astype(T)
        xs, lw = _extent(face, roi[0], roi[2], s, how)
        ys, lh = _extent(face, roi[1], roi[3], s, how)
        bh, bw = lh / T(ph), lw / T(pw)
        gh, gw = _grid(bh, sampling_ratio), _grid(bw, sampling_ratio)
        plane = data[b]
        for i in range(ph):
            for j in range(pw):
                values = []
                for iy in range(gh):
                    y = _axis(_position(face, ys, bh, gh, i, iy), height)
                    for ix in range(gw):
                        xx = _axis(_position(face, xs, bw, gw, j, ix), width)
                        t = _corners(plane, y, xx)
                        if t is None:
                            values.append(np.zeros(channels, T))
                        elif corners:
                            values.append(_ieee_max(_ieee_max(_ieee_max(t[0], t[1]), t[2]),
                                                    t[3]))
                        else:
                            values.append(((t[0] + t[1]) + t[2]) + t[3])
                if not values:
                    continue
                if mode == "avg":
                    acc = np.zeros(channels, T)
                    for v in values:
                        acc = acc + v if face == "onnx" else acc + v / T(len(values))
                    if face == "onnx":
                        acc = acc / T(gh * gw)
                elif face == "onnx":
                    acc = values[0]
                    for v in values[1:]:
                        acc = _ieee_max(acc, v)
                else:
                    acc = np.full(channels, lowest, T)
                    for v in values:
                        acc = np.where(v > acc, v, acc)
                out[r, :, i, j] = acc
    return out.astype(x.dtype)
