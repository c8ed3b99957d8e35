"""ONNX adapter for MaxRoiPool (1, 22): the version (:mod:`jaxmax._src.onnx.versions`) ->
validation -> :mod:`jaxmax._src.lowering.roi.max_pool` with the ONNX values rule."""

from __future__ import annotations

import jax

from jaxmax._src import sizes, validation
from jaxmax._src.lowering.roi import max_pool
from jaxmax._src.lowering.roi import rois as rois_lowering
from jaxmax._src.onnx import versions
from jaxmax._src.types import Data, Int, Ints

_OP = "ONNX MaxRoiPool"


def max_roi_pool(X: Data, rois: Data, *, pooled_shape: Ints, spatial_scale: float = 1.0,  # noqa: N803
                 opset: Int = 22) -> jax.Array:
    """ONNX ``MaxRoiPool``, since-versions 1 and 22, selected by `opset`.

    Each ROI row ``[b, x1, y1, x2, y2]`` (input-image coordinates) reads image ``trunc(b)``;
    its corners are scaled by `spatial_scale` in float32 (float64 for float64 data) and rounded
    half away from zero (C ``round``); its extent is ``max(end - start + 1, 1)`` (a malformed
    ROI is 1x1) and bin ``p`` of ``P`` spans ``[floor(p*L/P), ceil((p+1)*L/P))`` from the start,
    with ``L/P`` a correctly rounded float32 division (so for some ``(L, P)``, e.g. ``57, 7``, the
    last bin reaches one row past the ROI, as onnxruntime, OpenVINO's reference and torchvision
    compute), clipped to the image (docs/semantics.md §11.3). A bin gives **NaN if it holds a
    NaN**, else its maximum (``+0`` over ``-0``; ``-inf`` for a ``-inf``-only bin); an empty bin
    gives ``+0.0`` (onnxruntime's fold differs on NaN and ``-inf``, §11.5).

    Args:
      X: (N, C, H, W) data: float16, float32, float64 (both versions), bfloat16 (22).
      rois: (num_rois, 5) ROIs of `X`'s dtype. May be traced.
      pooled_shape: ``(PH, PW)``, each >= 1. Static.
      spatial_scale: finite, > 0, rounded to float32 (default 1.0). Static.
      opset: the model's ONNX opset (>= 1). Static.

    Returns:
      ``(num_rois, C, PH, PW)`` of `X`'s dtype.

    Raises:
      TypeError: a dtype the version does not allow, `rois` of another dtype, a traced static
        argument.
      ValueError: `X` not 4-D, `rois` not (R, 5), `pooled_shape` not two ints >= 1,
        `spatial_scale` not finite and > 0, `opset` < 1; concrete `rois` with a non-finite
        value, a batch index naming no image, or a scaled corner outside int32 (traced: that
        ROI's output is all ``+0.0``).

    jit contract: `pooled_shape`, `spatial_scale` and `opset` are static; `X` and `rois` may be
    traced. Under ``jax.grad`` each bin's cotangent goes to its first maximal element
    (row-major; ``-0 == +0``; its first NaN), overlapping bins and ROIs adding up; `rois` get
    zero.

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> onnx.max_roi_pool(x, np.array([[0, 0, 0, 3, 3]], np.float32), pooled_shape=(2, 2))
    Array([[[[ 5.,  7.],
             [13., 15.]]]], dtype=float32)
    """
    opset_, version = versions.TABLE.select(_OP, "MaxRoiPool", opset)
    pooled = rois_lowering.pooled_pair(_OP, "pooled_shape", pooled_shape)
    X = validation.as_data(_OP, X, "X")
    versions.TABLE.check_dtype(_OP, "X", X, "MaxRoiPool", version, opset_)
    X, rois, scale = rois_lowering.pool_arguments(_OP, X, rois, spatial_scale)
    shape = (rois.shape[0], X.shape[1]) + pooled
    count = sizes.checked_elements(_OP, "the output", shape)
    out = max_pool.roi_max_pool(X, rois, pooled=pooled, spatial_scale=scale, rule="onnx")
    return sizes.settled(out, count * X.dtype.itemsize)
