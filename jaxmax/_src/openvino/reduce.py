"""OpenVINO ReduceMax-1 and ReduceLogicalOr-1: spec attribute names -> validation -> lowering.

Each public function validates and canonicalises its static arguments in Python, then calls a
jitted lowering from :mod:`jaxmax._src.lowering`.
"""

from __future__ import annotations

import jax

from jaxmax._src import dtypes, validation
from jaxmax._src.lowering import reduce
from jaxmax._src.types import Data, Flag, Ints

_REDUCE_MAX = "ReduceMax-1"
_REDUCE_OR = "ReduceLogicalOr-1"


def _reduction_axes(op: str, axes, ndim: int) -> tuple[int, ...] | None:
    """The axes to reduce, or None for empty `axes` (the identity).

    OpenVINO treats rank-0 data like rank 1 for the axis range: axes 0 and -1 are accepted and
    reduce nothing, but the max rule still applies.
    """
    normalised = validation.axes_tuple(op, "axes", axes, max(ndim, 1))
    if not normalised:
        return None
    return normalised if ndim else ()


def reduce_max(data: Data, axes: Ints, *, keep_dims: Flag = False) -> jax.Array:
    """OpenVINO ``ReduceMax-1``: the maximum of `data` over `axes`.

    Each output element is ``max(lowest(T), the non-NaN elements of its slice)`` (the rule of
    OpenVINO's reference kernel): NaN never wins, ``+inf`` wins, a slice of only ``-inf`` or only
    NaN, and an empty slice (a reduced dimension of size 0), give ``lowest(T)``. Empty `axes` is
    the identity (the data is returned unchanged, NaN included).

    Args:
      data: array of any real or integer dtype (float16, bfloat16, float32, float64, int8,
        uint8, int32, int64, uint32, uint64 as x64 allows). Bool is rejected.
      axes: int, sequence of ints, or a concrete 0-D/1-D integer array; values in ``[-r, r-1]``
        (for rank-0 data, ``0`` and ``-1``), unique. Static.
      keep_dims: keep each reduced axis with size 1. Static.

    Returns:
      A ``jax.Array`` of the data dtype.

    Raises:
      TypeError: bool, complex or non-numeric data, non-integer or traced `axes`.
      ValueError: an axis out of range, a repeated axis, `axes` of rank > 1 or ragged,
        concrete 64-bit data whose values 32 bits cannot hold while ``jax_enable_x64`` is
        off, an integer outside int64.

    jit contract: `axes` and `keep_dims` decide the output shape and must be static (Python
    values or concrete arrays); `data` may be traced. Under ``jax.grad`` tied maxima share the
    cotangent evenly (as ``jnp.max``); an output raised to lowest(T) passes none.

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> ov.reduce_max(np.array([[1.0, np.nan], [-np.inf, -np.inf]], np.float32), axes=1)
    Array([ 1.0000000e+00, -3.4028235e+38], dtype=float32)
    """
    data = validation.numeric_data(_REDUCE_MAX, data)
    reduced_axes = _reduction_axes(_REDUCE_MAX, axes, data.ndim)
    keep = validation.static_bool(_REDUCE_MAX, "keep_dims", keep_dims)
    if reduced_axes is None:
        return data
    return reduce.reduce_max(data, reduced_axes, keep, nan="skip")


def reduce_logical_or(data: Data, axes: Ints, *, keep_dims: Flag = False) -> jax.Array:
    """OpenVINO ``ReduceLogicalOr-1``: logical or of bool `data` over `axes`.

    An empty reduction (a reduced dimension of size 0) gives ``False``; empty `axes` is the
    identity.

    Args:
      data: bool array.
      axes: int, sequence of ints, or a concrete 0-D/1-D integer array; values in ``[-r, r-1]``
        (for rank-0 data, ``0`` and ``-1``), unique. Static.
      keep_dims: keep each reduced axis with size 1. Static.

    Returns:
      A bool ``jax.Array``.

    Raises:
      TypeError: non-bool data, non-integer or traced `axes`.
      ValueError: an axis out of range, a repeated axis, `axes` of rank > 1 or ragged, an
        integer outside int64.

    jit contract: `axes` and `keep_dims` must be static; `data` may be traced.

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> ov.reduce_logical_or(np.array([[True, False], [False, False]]), axes=[1], keep_dims=True)
    Array([[ True],
           [False]], dtype=bool)
    """
    data = validation.as_data(_REDUCE_OR, data)
    if not dtypes.is_bool(data.dtype):
        raise TypeError(f"{_REDUCE_OR}: `data` must be bool, got {data.dtype}")
    reduced_axes = _reduction_axes(_REDUCE_OR, axes, data.ndim)
    keep = validation.static_bool(_REDUCE_OR, "keep_dims", keep_dims)
    if reduced_axes is None:
        return data
    return reduce.reduce_max(data, reduced_axes, keep, nan="skip")
