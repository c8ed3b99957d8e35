"""Tour cases of the detection operators: ONNX Hardmax, ONNX MaxRoiPool, OpenVINO ROIPooling-1.

The expected values are the contract's cases (docs/semantics.md §11),
hard-coded; each gradient's receivers are named per output (`winners`)."""

from __future__ import annotations

from functools import partial

import numpy as np

from jaxmax._src.check import roi_contract
from jaxmax._src.tour.references import Reference


def _hardmax_reference(opset: int, axis: int):
    """Hardmax's value (the 1 at the first NaN, else the first maximum) and its gradient: zero
    everywhere (no output routes a cotangent)."""
    def reference(data: np.ndarray) -> Reference:
        value = roi_contract.hardmax_at(data, axis, opset)
        return Reference(value, winners=np.full(value.size, -1))
    return reference


def _roi_reference(rois: np.ndarray, pooled: tuple[int, int], rule: str):
    """MaxRoiPool (`rule` "onnx") or ROIPooling-1's reference fold ("fold") by loops over each
    bin (docs/semantics.md §11.3), with the element each output's cotangent goes to."""
    def reference(data: np.ndarray) -> Reference:
        n, c, height, width = data.shape
        value = np.zeros((len(rois), c) + pooled, data.dtype)
        winners = np.full(value.shape, -1)
        lowest = np.finfo(data.dtype).min
        for r, roi in enumerate(rois.astype(np.float32)):
            xs, ys, xe, ye = (roi_contract.c_round(float(v)) for v in roi[1:])
            rows = list(roi_contract.bin_edges(max(ye - ys + 1, 1), pooled[0], ys, height))
            cols = list(roi_contract.bin_edges(max(xe - xs + 1, 1), pooled[1], xs, width))
            image = int(roi[0])
            for i, (h0, h1) in enumerate(rows):
                for j, (w0, w1) in enumerate(cols):
                    for ch in range(c):
                        at = [((image * c + ch) * height + h) * width + w
                              for h in range(h0, h1) for w in range(w0, w1)]
                        if not at:
                            continue
                        v = data.reshape(-1)[at]
                        if rule == "onnx":
                            k = int(np.argmax(np.isnan(v))) if np.isnan(v).any() else \
                                int(np.argmax(v == v.max()))
                            value[r, ch, i, j] = roi_contract.onnx_bin(v)
                        else:
                            acc, k = lowest, -1
                            for m, e in enumerate(v):
                                if not (e < acc):
                                    acc, k = e, m
                            value[r, ch, i, j] = acc
                        winners[r, ch, i, j] = at[k] if k >= 0 else -1
        return Reference(value, winners=winners)
    return reference


def detection_cases() -> list:
    from jaxmax import onnx
    from jaxmax import openvino as ov
    from jaxmax._src.tour.case import Case

    f32 = np.float32
    cases: list[Case] = []
    x = np.array([[1, 4, 3], [2, 5, 5], [-0.0, 0.0, -1]], f32)
    want = np.array([[0, 1, 0], [0, 1, 0], [1, 0, 0]], f32)
    cases.append(Case("onnx.hardmax", "Hardmax-13", "ties to the first; -0 ties +0; zero grad",
                      x, onnx.hardmax, _hardmax_reference(13, -1), expected=want))
    x = np.array([[1, np.nan, 3], [np.nan, 1, np.nan]], f32)
    want = np.array([[0, 1, 0], [1, 0, 0]], f32)
    cases.append(Case("onnx.hardmax", "Hardmax-13", "NaN is the maximum (its first NaN)",
                      x, onnx.hardmax, _hardmax_reference(13, -1), expected=want))
    x = np.array([[[0, 9, 1], [2, 3, 4]], [[5, 1, 1], [1, 7, 0]]], f32)
    want = np.zeros_like(x)
    want[0, 0, 1] = 1
    cases.append(Case("onnx.hardmax", "Hardmax-11", "axis 0 before 13: one 1 in the tensor",
                      x, partial(onnx.hardmax, axis=0, opset=11), _hardmax_reference(11, 0),
                      expected=want))
    x4 = np.arange(16, dtype=f32).reshape(1, 1, 4, 4)
    rois = np.array([[0, 0, 0, 3, 3], [0, 2.5, 0.5, 2.5, 2.5]], f32)
    want = np.array([[[[5, 7], [13, 15]]], [[[11, 11], [15, 15]]]], f32)
    cases.append(Case("onnx.max_roi_pool", "MaxRoiPool-22",
                      "M1 and M5: corners rounded half away from zero", x4,
                      partial(onnx.max_roi_pool, rois=rois, pooled_shape=(2, 2)),
                      _roi_reference(rois, (2, 2), "onnx"), expected=want))
    x = np.zeros((1, 1, 64, 4), f32)
    x[0, 0, 57, 0] = 9
    want = np.zeros((1, 1, 7, 1), f32)
    want[0, 0, 6, 0] = 9
    cases.append(Case("onnx.max_roi_pool", "MaxRoiPool-22",
                      "M13: float32 bin edges reach row 57 of a 57-row ROI", x,
                      partial(onnx.max_roi_pool, rois=np.array([[0, 0, 0, 3, 56]], f32),
                              pooled_shape=(7, 1)),
                      _roi_reference(np.array([[0, 0, 0, 3, 56]], f32), (7, 1), "onnx"),
                      expected=want))
    x = x4 - 20
    x[0, 0, 0, :2] = [-21.0, -21.0]
    x[0, 0, 1, :2] = [-22.0, -21.0]
    rois = np.array([[0, 0, 0, 1, 1], [0, 0, 0, 3, 3]], f32)
    want = np.array([[[[-21.0]]], [[[-5.0]]]], f32)
    cases.append(Case("openvino.roi_pooling", "ROIPooling-1",
                      "the reference fold: ties to the last element", x,
                      partial(ov.roi_pooling, rois=rois, pooled_h=1, pooled_w=1,
                              spatial_scale=1.0),
                      _roi_reference(rois, (1, 1), "fold"), expected=want))
    x = x4.copy()
    x[0, 0, 0, :2] = [0.0, -0.0]
    x[0, 0, 1, :2] = -1
    x[0, 0, 2:, :2] = -np.inf
    rois = np.array([[0, 0, 0, 1, 3]], f32)
    want = np.array([[[[-0.0], [np.finfo(f32).min]]]], f32)
    cases.append(Case("openvino.roi_pooling", "ROIPooling-1",
                      "the reference fold: the last tied zero; lowest(T) over -inf", x,
                      partial(ov.roi_pooling, rois=rois, pooled_h=2, pooled_w=1,
                              spatial_scale=1.0),
                      _roi_reference(rois, (2, 1), "fold"), expected=want))
    return cases
