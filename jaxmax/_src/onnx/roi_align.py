"""ONNX RoiAlign (since-versions 10, 16, 22): the version (:mod:`jaxmax._src.onnx.versions`),
spec attribute names -> validation -> lowering (:mod:`jaxmax._src.lowering.roi.align`)."""

from __future__ import annotations

import jax

from jaxmax._src import roi_args, sizes, validation
from jaxmax._src.lowering.roi import align
from jaxmax._src.onnx import versions
from jaxmax._src.types import Data, Int

_OP = "ONNX RoiAlign"
_MODES = ("avg", "max")
_CTM = ("half_pixel", "output_half_pixel")
_MAX_SAMPLING = ("interpolated", "weighted_corners")


def roi_align(X: Data, rois: Data, batch_indices: Data, *, mode: str = "avg",
              output_height: Int = 1, output_width: Int = 1, sampling_ratio: Int = 0,
              spatial_scale: float = 1.0, coordinate_transformation_mode: str | None = None,
              opset: Int = 22, max_sampling: str = "interpolated") -> jax.Array:
    """ONNX ``RoiAlign`` (since-versions 10, 16 and 22, selected by `opset`).

    Each ROI ``[x1, y1, x2, y2]`` of image ``batch_indices[r]`` is scaled by `spatial_scale`,
    shifted by 0.5 for ``half_pixel`` (the default from 16; opset 10 and
    ``output_half_pixel`` do not shift, and clamp the ROI to at least 1x1), and divided into
    ``output_height x output_width`` bins. Each bin holds a grid of ``sampling_ratio`` (or,
    when 0, ``ceil(bin size)``) samples per axis, each the bilinear interpolation of its four
    neighbouring pixels; a sample more than one pixel outside the map is ``+0.0``. ``avg``
    averages the samples (summed in row-major order from ``+0.0``); ``max`` is the spec text's
    interpolate-then-max: NaN if any sample is NaN, else the IEEE maximum. A bin without
    samples is ``+0.0``. The arithmetic is the reference's order in T (float32 for 16-bit data),
    every product and sum rounded, bit for bit on CPU (docs/semantics.md §12).

    Deviation: onnxruntime and ``onnx.reference`` compute ``max`` as the largest *weighted
    corner* of each sample (onnx/onnx#4764); ``max_sampling="weighted_corners"`` reproduces
    them (and the node case ``test_roialign_mode_max``). Every runtime turns an out-of-image
    sample into ``0 * X[n, c, 0, 0]`` (NaN when that pixel is NaN); jaxmax uses ``+0.0``.

    Args:
      X: ``(N, C, H, W)`` float16, float32, float64, and bfloat16 from opset 22.
      rois: ``(R, 4)`` boxes ``[x1, y1, x2, y2]`` in X's dtype, in image coordinates.
      batch_indices: ``(R,)`` int64 (int32 accepted), each in ``[0, N)``.
      mode: ``"avg"`` or ``"max"`` (any case). Static.
      output_height: the pooled height, >= 0 (0 gives an empty output). Static.
      output_width: the pooled width, >= 0 (0 gives an empty output). Static.
      sampling_ratio: samples per bin and axis, >= 0; 0 is adaptive. Static.
      spatial_scale: the factor from image to map coordinates (a float32 attribute), finite.
        Static.
      coordinate_transformation_mode: ``"half_pixel"`` or ``"output_half_pixel"`` (any case),
        from opset 16; None is the version's default. Static.
      opset: the model's ONNX opset (>= 10). Static.
      max_sampling: ``"interpolated"`` (the spec) or ``"weighted_corners"`` (onnxruntime's
        max mode). Not an ONNX attribute. Static.

    Returns:
      ``Y`` of shape ``(R, C, output_height, output_width)`` and X's dtype.

    Raises:
      TypeError: a dtype the version does not allow, `rois` of another dtype than X,
        `batch_indices` not int64/int32, a traced or mistyped static argument.
      ValueError: `opset` < 10, X not 4-D, `rois` not (R, 4), `batch_indices` not (R,), an
        unknown string, `coordinate_transformation_mode` before opset 16, negative output size
        or `sampling_ratio`, a non-finite `spatial_scale`, concrete invalid ROIs (a non-finite
        coordinate, a batch index outside ``[0, N)``).

    jit contract: every attribute, `opset` and `max_sampling` must be static; `X`, `rois` and
    `batch_indices` may be traced. A traced invalid ROI gives ``+0.0`` for that ROI only. With
    ``sampling_ratio=0`` and traced ROIs the samples are visited by a loop whose trip count is
    the largest grid, computed at run time (exact for every ROI). Under ``jax.grad``: avg
    passes each sample's bilinear weights over the count, max passes to the first maximal
    sample's corners; `rois` get the
    almost-everywhere derivative.

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4) + 1
    >>> onnx.roi_align(X, np.array([[0, 0, 4, 4]], np.float32), np.array([0]), mode="max",
    ...                output_height=2, output_width=2, sampling_ratio=1,
    ...                coordinate_transformation_mode="output_half_pixel")[0, 0]
    Array([[ 6.,  8.],
           [14., 16.]], dtype=float32)
    """
    opset_, version = versions.TABLE.select(_OP, "RoiAlign", opset)
    mode_ = validation.choice(_OP, "mode", mode, _MODES)
    oh = roi_args.static_count(_OP, "output_height", output_height, 0)
    ow = roi_args.static_count(_OP, "output_width", output_width, 0)
    ratio = roi_args.static_count(_OP, "sampling_ratio", sampling_ratio, 0)
    scale = roi_args.static_float32(_OP, "spatial_scale", spatial_scale)
    versions.TABLE.require(_OP, "RoiAlign", version, opset_, {
        "coordinate_transformation_mode": coordinate_transformation_mode is not None})
    if coordinate_transformation_mode is None:
        ctm = "half_pixel" if version >= 16 else "output_half_pixel"
    else:
        ctm = validation.choice(_OP, "coordinate_transformation_mode",
                                coordinate_transformation_mode, _CTM)
    if not isinstance(max_sampling, str) or max_sampling not in _MAX_SAMPLING:
        raise ValueError(f"{_OP}: `max_sampling` must be one of {list(_MAX_SAMPLING)} "
                         f"(exactly), got {max_sampling!r}")
    x = roi_args.data(_OP, X, "X")
    versions.TABLE.check_dtype(_OP, "X", x, "RoiAlign", version, opset_)
    boxes, batch = roi_args.boxes_and_batch(_OP, rois, batch_indices, x, batch_kinds="onnx")
    shape = (boxes.shape[0], x.shape[1], oh, ow)
    count = sizes.checked_elements(_OP, "the output", shape)
    half = ctm == "half_pixel"
    out = align.roi_align(x, boxes, batch, face="onnx", mode=mode_,
                          corners=mode_ == "max" and max_sampling == "weighted_corners",
                          pooled=(oh, ow), sampling_ratio=ratio, scale=scale,
                          geometry=(0.5 if half else 0.0, not half))
    return sizes.settled(out, count * 4 * x.dtype.itemsize)
