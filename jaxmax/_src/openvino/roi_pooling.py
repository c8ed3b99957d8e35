"""OpenVINO ROIPooling-1 (first in opset2): spec attribute names -> validation ->
:mod:`jaxmax._src.lowering.roi.max_pool` with the reference fold."""

from __future__ import annotations

import jax

from jaxmax._src import dtypes, sizes, validation
from jaxmax._src.lowering.roi import max_pool
from jaxmax._src.lowering.roi import rois as rois_lowering
from jaxmax._src.openvino import versions
from jaxmax._src.types import Data, Int

_OP = "ROIPooling-1"


def roi_pooling(input: Data, rois: Data, *, pooled_h: Int, pooled_w: Int,  # noqa: A002
                spatial_scale: float, method: str = "max", opset: Int = 2) -> jax.Array:
    """OpenVINO ``ROIPooling-1`` with ``method="max"`` (first in opset2).

    The bins are MaxRoiPool's (docs/semantics.md §11.3: ``trunc`` batch index, C ``round``
    corners, inclusive extent, float32 bin edges, clipped; an empty bin gives ``+0.0``). Each
    bin's value is the reference kernel's fold ``acc = lowest(T); acc = (x < acc) ? acc : x``
    in row-major order: without NaN, ``max(lowest(T), bin)`` (a ``-inf``-only bin gives
    ``lowest(T)``); a trailing NaN gives NaN; otherwise the maximum of the elements after the
    last NaN (no ``lowest`` clamp); ties keep the **later** element (the sign of a zero
    result is that of the last zero). The CPU plugin seeds with the first element instead
    (§11.5).

    Args:
      input: (N, C, H, W) data of any floating type.
      rois: (num_rois, 5) rows ``[b, x1, y1, x2, y2]`` of `input`'s dtype. May be traced.
      pooled_h: the output height, >= 1. Static.
      pooled_w: the output width, >= 1. Static.
      spatial_scale: finite, > 0, rounded to float32. Static.
      method: ``"max"`` (any case); ``"bilinear"`` raises NotImplementedError. Static.
      opset: the model's OpenVINO opset, >= 2. Static.

    Returns:
      ``(num_rois, C, pooled_h, pooled_w)`` of `input`'s dtype.

    Raises:
      TypeError: non-floating data, `rois` of another dtype, a traced static argument.
      ValueError: `opset` < 2, data not 4-D, `rois` not (R, 5), a pooled size < 1,
        `spatial_scale` not finite and > 0, an unknown `method`; concrete `rois` with a
        non-finite value, a batch index naming no image, or a corner outside int32 (traced:
        that ROI's output is all ``+0.0``).
      NotImplementedError: ``method="bilinear"``.

    jit contract: every argument but `input` and `rois` is static. Under ``jax.grad`` each
    bin's cotangent goes to the element the fold kept (none when ``lowest(T)`` won);
    overlapping bins and ROIs add up; `rois` get zero.

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> x[0, 0, 0, 0] = -np.inf
    >>> ov.roi_pooling(x, np.array([[0, 0, 0, 0, 0]], np.float32), pooled_h=1, pooled_w=1,
    ...                spatial_scale=1.0)
    Array([[[[-3.4028235e+38]]]], dtype=float32)
    """
    versions.TABLE.select("ROIPooling", "ROIPooling", opset)
    ph = validation.static_int(_OP, "pooled_h", pooled_h)
    pw = validation.static_int(_OP, "pooled_w", pooled_w)
    if min(ph, pw) < 1:
        raise ValueError(f"{_OP}: `pooled_h` and `pooled_w` must be >= 1, got {ph} and {pw}")
    if not isinstance(method, str):
        raise TypeError(f"{_OP}: `method` must be a string, got {method!r}")
    if validation.choice(_OP, "method", method, ("max", "bilinear")) == "bilinear":
        raise NotImplementedError(f"{_OP}: `method` 'bilinear' is not implemented (a different "
                                  f"geometry; jaxmax implements method 'max')")
    x = validation.as_data(_OP, input, "input")
    if not dtypes.is_floating(x.dtype):
        raise TypeError(f"{_OP}: `input` must have a floating dtype, got {x.dtype}")
    x, rois, scale = rois_lowering.pool_arguments(_OP, x, rois, spatial_scale)
    shape = (rois.shape[0], x.shape[1], ph, pw)
    count = sizes.checked_elements(_OP, "the output", shape)
    out = max_pool.roi_max_pool(x, rois, pooled=(ph, pw), spatial_scale=scale, rule="openvino")
    return sizes.settled(out, count * x.dtype.itemsize)
