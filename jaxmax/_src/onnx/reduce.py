"""ONNX ReduceMax: the version (:mod:`jaxmax._src.onnx.versions`) -> validation -> lowering."""

from __future__ import annotations

import jax

from jaxmax._src import validation
from jaxmax._src.lowering import reduce
from jaxmax._src.onnx import versions
from jaxmax._src.types import Data, Flag, Int, Ints

_OP = "ONNX ReduceMax"

def reduce_max(data: Data, axes: Ints | None = None, *, keepdims: Flag = 1,
               noop_with_empty_axes: Flag = 0, opset: Int = 20) -> jax.Array:
    """ONNX ``ReduceMax``, since-versions 1, 11, 12, 13, 18 and 20, selected by `opset`.

    NaN propagates (numpy semantics, as ``onnx.reference``); ``-inf`` stays ``-inf``; an empty
    set (a reduced dimension of size 0) gives ``-inf`` for floating types, ``iinfo.min`` for
    integers and ``False`` for bool. Bool data (opset >= 20) reduces with logical or.

    Args:
      data: array of a type the selected version allows: float16, float32, float64, int32,
        int64, uint32, uint64 (all versions), int8 and uint8 (12+), bfloat16 (13+), bool (20).
      axes: int, sequence or concrete 0-D/1-D integer array of unique axes in ``[-r, r-1]``
        (an attribute before opset 18, an input from 18; the same argument here). ``None`` or
        empty reduces all axes, unless ``noop_with_empty_axes`` makes it the identity. Static.
      keepdims: 1/True keeps reduced axes with size 1 (the default), 0/False drops them. Static.
      noop_with_empty_axes: opset 18+: with empty `axes`, return `data` unchanged. Static.
      opset: the model's ONNX opset (>= 1); the largest since-version <= `opset` applies. Static.

    Returns:
      A ``jax.Array`` of the data dtype.

    Raises:
      TypeError: a dtype the selected version does not allow, data that is not an array of
        numbers, non-integer or traced static arguments.
      ValueError: an axis out of range, a repeated axis, `keepdims` not 0/1, `opset` < 1,
        ``noop_with_empty_axes`` set with an opset below 18, a ragged list, concrete 64-bit
        data whose values 32 bits cannot hold while ``jax_enable_x64`` is off, an integer
        outside int64.

    jit contract: `axes`, `keepdims`, `noop_with_empty_axes` and `opset` must be static; `data`
    may be traced. Under ``jax.grad`` tied maxima share the cotangent evenly (as ``jnp.max``).

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> onnx.reduce_max(np.array([[5, 1], [20, 2]], np.float32), axes=[1], keepdims=0)
    Array([ 5., 20.], dtype=float32)
    """
    opset_, version = versions.TABLE.select(_OP, "ReduceMax", opset)
    data = validation.as_data(_OP, data)
    versions.TABLE.check_dtype(_OP, "data", data, "ReduceMax", version, opset_)
    keep = validation.static_bool(_OP, "keepdims", keepdims)
    noop = validation.static_bool(_OP, "noop_with_empty_axes", noop_with_empty_axes)
    versions.TABLE.require(_OP, "ReduceMax", version, opset_, {"noop_with_empty_axes": noop})
    reduced_axes = () if axes is None else validation.axes_tuple(_OP, "axes", axes, data.ndim)
    if not reduced_axes:
        if noop:
            return data
        reduced_axes = tuple(range(data.ndim))
    return reduce.reduce_max(data, reduced_axes, keep, nan="propagate")
