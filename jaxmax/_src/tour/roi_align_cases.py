"""Tour cases of ONNX RoiAlign and OpenVINO ROIAlign: ROIs whose samples fall on pixel
centres, so each output is one pixel (and its cotangent goes whole to that pixel)."""

from __future__ import annotations

from functools import partial

import numpy as np

from jaxmax._src.tour.case import Case, unique
from jaxmax._src.tour.references import Reference


def _on_pixels(data: np.ndarray) -> Reference:
    """ROI [0, 0, 4, 4] at scale 1, 2x2 bins of 2 pixels, one sample per bin (output_half_pixel
    / asymmetric): the sample of bin (i, j) is pixel (2i + 1, 2j + 1), weight 1."""
    n, c, h, w = data.shape
    rows = 2 * np.arange(2) + 1
    value = data[0][:, rows][:, :, rows][None]
    plane = (np.arange(c) * h * w)[:, None, None]
    winners = plane + (rows[:, None] * w + rows[None, :])[None]
    return Reference(value, winners=winners[None].astype(np.int64))


def roi_align_cases() -> list[Case]:
    """A1 of docs/semantics.md §12.8 on both faces, avg and max."""
    from jaxmax import onnx
    from jaxmax import openvino as ov

    box = np.array([[0, 0, 4, 4]], np.float32)
    first = np.array([0])
    x4p = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4) + 1
    def onnx_call(mode: str):
        return partial(onnx.roi_align, rois=box, batch_indices=first, mode=mode,
                       output_height=2, output_width=2, sampling_ratio=1,
                       coordinate_transformation_mode="output_half_pixel", opset=16)

    return [
        Case("onnx.roi_align", "RoiAlign-16", "A1: samples on pixels, max", x4p,
             onnx_call("max"),
             _on_pixels, expected=np.array([[[[6, 8], [14, 16]]]], np.float32)),
        Case("onnx.roi_align", "RoiAlign-16", "one sample per bin, avg",
             unique((1, 3, 4, 4), seed=43),
             onnx_call("avg"),
             _on_pixels),
        Case("openvino.roi_align", "ROIAlign-9", "one sample per bin, max (fold from lowest)",
             unique((1, 2, 4, 4), seed=44),
             partial(ov.roi_align, rois=box, batch_indices=first, pooled_h=2, pooled_w=2,
                     sampling_ratio=1, spatial_scale=1.0, mode="max"),
             _on_pixels),
    ]
