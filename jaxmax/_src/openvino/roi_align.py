"""OpenVINO ROIAlign-3 and ROIAlign-9: spec attribute names -> validation -> lowering
(:mod:`jaxmax._src.lowering.roi.align`)."""

from __future__ import annotations

import jax
import numpy as np

from jaxmax._src import dtypes, roi_args, sizes, validation
from jaxmax._src.lowering.roi import align
from jaxmax._src.openvino import versions
from jaxmax._src.types import Data, Int

_MODES = ("avg", "max")
_ALIGNED = ("asymmetric", "half_pixel_for_nn", "half_pixel")


def roi_align(data: Data, rois: Data, batch_indices: Data, *, pooled_h: Int, pooled_w: Int,
              sampling_ratio: Int, spatial_scale: float, mode: str,
              aligned_mode: str = "asymmetric", opset: Int = 9) -> jax.Array:
    """OpenVINO ``ROIAlign-3`` (opsets 3-8) and ``ROIAlign-9`` (opset 9 on).

    Each ROI ``[x1, y1, x2, y2]`` of image ``batch_indices[r]`` is mapped to the feature map by
    `aligned_mode` (``asymmetric``: ``x*s``, clamped to at least 1x1; ``half_pixel_for_nn``:
    ``x*s - 0.5``, ONNX's half_pixel; ``half_pixel``: ``(x + 0.5)*s - 0.5``), divided into
    ``pooled_h x pooled_w`` bins with ``sampling_ratio`` (or ``ceil(bin size)`` when 0)
    samples per axis, each the bilinear interpolation of its four neighbours (``+0.0`` more
    than one pixel outside the map), in the reference kernel's arithmetic order, float32 for
    16-bit data. ``avg``: ``acc += sample / count`` per sample from ``+0.0``. ``max``: the
    fold ``acc = lowest(T); acc = v > acc ? v : acc`` over the samples in row-major order (NaN
    never wins; ties keep the first); a bin without samples is ``+0.0`` (docs/semantics.md
    §12).

    Deviation: the reference and the CPU plugin seed the max at 0 (every negative maximum is
    returned as 0) and read an out-of-image sample as ``0 * data[n, c, 0, 0]``; jaxmax follows
    the spec text. The CPU plugin uses fused multiply-adds (within a few ulps of this order).

    Args:
      data: ``(N, C, H, W)`` of a floating type.
      rois: ``(R, 4)`` boxes in data's dtype.
      batch_indices: ``(R,)`` of any integer type, each in ``[0, N)``.
      pooled_h: the pooled height, >= 1. Static.
      pooled_w: the pooled width, >= 1. Static.
      sampling_ratio: samples per bin and axis, >= 0 (0: adaptive). Static.
      spatial_scale: > 0, finite (a float32 attribute). Static.
      mode: ``"avg"`` or ``"max"`` (any case). Static.
      aligned_mode: ``"asymmetric"``, ``"half_pixel_for_nn"`` or ``"half_pixel"`` (any case);
        only ``"asymmetric"`` before opset 9. Static.
      opset: the model's OpenVINO opset (>= 3). Static.

    Returns:
      ``(R, C, pooled_h, pooled_w)`` of data's dtype.

    Raises:
      TypeError: a non-floating `data`, `rois` of another dtype, non-integer `batch_indices`,
        a traced or mistyped static argument.
      ValueError: `opset` < 3, `data` not 4-D, `rois` not (R, 4), `batch_indices` not (R,),
        pooled sizes < 1, `sampling_ratio` < 0, `spatial_scale` <= 0 or not finite, an unknown
        string, `aligned_mode` other than asymmetric before opset 9, concrete invalid ROIs.

    jit contract: every attribute and `opset` must be static; `data`, `rois` and
    `batch_indices` may be traced (a traced invalid ROI gives ``+0.0`` for that ROI only).

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> ov.roi_align(x, np.array([[0, 0, 3, 3]], np.float32), np.array([0]), pooled_h=2,
    ...              pooled_w=2, sampling_ratio=2, spatial_scale=1.0, mode="max")[0, 0]
    Array([[ 5.625,  7.125],
           [11.625, 13.125]], dtype=float32)
    """
    _, version = versions.TABLE.select("ROIAlign", "ROIAlign", opset)
    op = f"ROIAlign-{version}"
    ph = roi_args.static_count(op, "pooled_h", pooled_h, 1)
    pw = roi_args.static_count(op, "pooled_w", pooled_w, 1)
    ratio = roi_args.static_count(op, "sampling_ratio", sampling_ratio, 0)
    scale = roi_args.static_float32(op, "spatial_scale", spatial_scale)
    if scale <= 0:
        raise ValueError(f"{op}: `spatial_scale` must be > 0, got {spatial_scale!r}")
    mode_ = validation.choice(op, "mode", mode, _MODES)
    aligned = validation.choice(op, "aligned_mode", aligned_mode, _ALIGNED)
    if version < 9 and aligned != "asymmetric":
        raise ValueError(f"{op}: `aligned_mode` does not exist before opset 9 (ROIAlign-9); "
                         f"ROIAlign-3 is 'asymmetric', got {aligned_mode!r}")
    x = roi_args.data(op, data, "data")
    if not dtypes.is_floating(x.dtype):
        raise TypeError(f"{op}: `data` must have a floating dtype, got {x.dtype}")
    boxes, batch = roi_args.boxes_and_batch(op, rois, batch_indices, x, batch_kinds="any")
    count = sizes.checked_elements(op, "the output", (boxes.shape[0], x.shape[1], ph, pw))
    out = align.roi_align(x, boxes, batch, face="openvino", mode=mode_, corners=False,
                          pooled=(ph, pw), sampling_ratio=ratio, scale=scale,
                          geometry=(aligned,))
    return sizes.settled(out, count * 4 * np.dtype(x.dtype).itemsize)
