"""OpenVINO AdaptiveMaxPool-8: spec attribute names -> validation -> lowering."""

from __future__ import annotations

import math

import jax
import numpy as np

from jaxmax._src import sizes, validation
from jaxmax._src.lowering import adaptive_pool as lowering
from jaxmax._src.openvino import versions
from jaxmax._src.types import Data, Int, Ints

_OP = "AdaptiveMaxPool-8"


def adaptive_max_pool(data: Data, output_shape: Ints, *,
                      index_element_type: str | np.dtype | type = "i64",
                      opset: Int = 8) -> tuple[jax.Array, jax.Array]:
    """OpenVINO ``AdaptiveMaxPool-8`` over ``(N, C, *spatial)`` data: ``(values, indices)``.

    Each spatial axis of length ``L`` pooled to ``O`` outputs uses the windows
    ``[floor(i*L/O), ceil((i+1)*L/O))`` (exact integers): they overlap when ``O`` does not divide
    ``L`` and repeat elements when ``O > L``. Each output is a *seeded fold* over its window in
    row-major order: the window's first element, replaced by a later element only where
    ``acc < element``. Ties and ``±0`` keep the earlier element; NaN wins only as the window's
    first element (the OpenVINO CPU plugin's behaviour; the reference kernel also drops later
    rows that start with NaN, an artefact not copied). Each index is the flat position of the
    chosen element within its ``(n, c)`` plane, ``d*H*W + h*W + w`` (as PyTorch's
    ``adaptive_max_pool*d(return_indices=True)``).

    Integer data is computed exactly (OpenVINO's CPU plugin computes it in f32: large integers
    differ there). Every real and integer dtype is accepted; bool is not.

    Args:
      data: array of rank 3, 4 or 5, any real or integer dtype.
      output_shape: the output length per spatial axis, each >= 0 (an int applies to every
        axis). Static: a sequence of ints or a concrete integer array, as the graph's constant.
      index_element_type: ``"i32"`` or ``"i64"`` (any case, or the NumPy dtype). Without
        ``jax_enable_x64`` i64 indices are int32 (with a warning, as JAX gives). Static.
      opset: the model's OpenVINO opset, >= 8. Static.

    Returns:
      ``(values, indices)``, both of shape ``(N, C, *output_shape)``: values of the data dtype,
      indices of the index type.

    Raises:
      TypeError: bool or complex data, a non-integer, traced or non-string attribute.
      ValueError: `opset` < 8, data rank not 3-5, an `output_shape` of the wrong length or with a
        negative entry, a spatial axis of length 0 pooled to a non-zero length, an unknown
        `index_element_type`, a plane too large for the index type, an output of 2**60
        elements or more, a ragged list, concrete 64-bit data that 32 bits cannot hold while
        ``jax_enable_x64`` is off.

    jit contract: `output_shape`, `index_element_type` and `opset` must be static; `data` may be
    traced. Under ``jax.grad`` (of the values) each window's cotangent goes to the element its
    index names; overlapping windows that pick the same element add up there.

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> x = np.array([[[1, 5, 2, 5, 0]]], np.float32)
    >>> ov.adaptive_max_pool(x, [3], index_element_type="i32")
    (Array([[[5., 5., 5.]]], dtype=float32), Array([[[1, 1, 3]]], dtype=int32))
    """
    versions.TABLE.select(_OP, "AdaptiveMaxPool", opset)
    index_type = validation.index_element_type(_OP, index_element_type)
    data = validation.numeric_data(_OP, data)
    if data.ndim not in (3, 4, 5):
        raise ValueError(
            f"{_OP}: `data` must have rank 3, 4 or 5 (N, C, *spatial), got rank {data.ndim}")
    spatial = tuple(data.shape[2:])
    out_ = validation.static_int_array(_OP, "output_shape", output_shape)
    if out_.ndim == 1 and out_.shape[0] != len(spatial):
        raise ValueError(
            f"{_OP}: `output_shape` must have one entry per spatial axis ({len(spatial)}), got "
            f"{out_.shape[0]}: {out_.tolist()}")
    out = (int(out_),) * len(spatial) if out_.ndim == 0 else tuple(int(v) for v in out_)
    if min(out) < 0:
        raise ValueError(f"{_OP}: `output_shape` values must be >= 0, got {list(out)}")
    empty = [d for d, (n, o) in enumerate(zip(spatial, out, strict=True)) if n == 0 and o > 0]
    if empty:
        raise ValueError(
            f"{_OP}: spatial axis {2 + empty[0]} of `data` has length 0 and cannot be pooled to "
            f"`output_shape` {list(out)} (a window would be empty)")
    out_shape = tuple(data.shape[:2]) + out
    count = sizes.checked_elements(_OP, "the output", out_shape)
    taps = lowering.tap_count(spatial, out) if count else 0
    sizes.checked_elements(_OP, "the windows read", out_shape + (max(taps, 1),))
    index_dtype = validation.index_dtype(_OP, "index_element_type", index_type,
                                         math.prod(spatial))
    result = lowering.adaptive_max_pool(data, out, index_dtype)
    return sizes.settled(result, count * max(data.dtype.itemsize, index_dtype.itemsize))
