"""ONNX adapter for Hardmax (1, 11, 13): the version (:mod:`jaxmax._src.onnx.versions`) ->
validation -> the 2-D coercion before 13 -> :mod:`jaxmax._src.lowering.hardmax`."""

from __future__ import annotations

import math

import jax

from jaxmax._src import validation
from jaxmax._src.lowering import hardmax as lowering
from jaxmax._src.onnx import versions
from jaxmax._src.types import Data, Int

_OP = "ONNX Hardmax"


def hardmax(input: Data, *, axis: Int | None = None, opset: Int = 13) -> jax.Array:  # noqa: A002
    """ONNX ``Hardmax``, since-versions 1, 11 and 13, selected by `opset`.

    ``1`` at the first maximal element of each slice and ``0`` elsewhere, in the input dtype.
    The winner is ONNX ArgMax's (docs/semantics.md §6.2): ties go to the **first** maximum,
    ``-0.0`` and ``+0.0`` tie, and **NaN is the maximum** (a slice holding a NaN gets its 1 at
    its first NaN; onnxruntime and OpenVINO differ there, §11.4). From 13 the slices run along
    `axis`. Before 13 (1, 11) the input is coerced to the matrix
    ``[a_0*...*a_{k-1}, a_k*...*a_{n-1}]`` (``k = axis``) and each row of it gets one 1, so
    ``axis=0`` puts a single 1 in the whole tensor (as onnxruntime and OpenVINO; the
    ``onnx.reference`` applies 13's rule at every version). An empty input gives an empty
    output of its shape.

    Args:
      input: array of rank >= 1: float16, float32, float64 (all versions), bfloat16 (13+).
      axis: in ``[-r, r-1]``; None (default) is the version's default: 1 before 13, -1 from 13.
        Static.
      opset: the model's ONNX opset (>= 1); the largest since-version <= `opset` applies. Static.

    Returns:
      An array of `input`'s shape and dtype holding ``0`` and ``1``.

    Raises:
      TypeError: a dtype the version does not allow (integers, bool, complex; bfloat16 before
        13), a traced or non-integer `axis` or `opset`.
      ValueError: rank-0 input, `axis` out of range, `opset` < 1.

    jit contract: `axis` and `opset` are static; `input` may be traced. ``jax.grad`` through it
    gives zeros (the output is piecewise constant).

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> onnx.hardmax(np.array([[3.0, 0.0, 3.0], [1.0, np.nan, 3.0]], np.float32))
    Array([[1., 0., 0.],
           [0., 1., 0.]], dtype=float32)
    >>> onnx.hardmax(np.array([[0.0, 9.0], [2.0, 3.0]], np.float32), axis=0, opset=11)
    Array([[0., 1.],
           [0., 0.]], dtype=float32)
    """
    opset_, version = versions.TABLE.select(_OP, "Hardmax", opset)
    coerce = version < versions.TABLE.added_in("Hardmax", "one axis, no 2-D coercion")
    axis_ = (1 if coerce else -1) if axis is None else validation.static_int(_OP, "axis", axis)
    x = validation.as_data(_OP, input, "input")
    versions.TABLE.check_dtype(_OP, "input", x, "Hardmax", version, opset_)
    if x.ndim == 0:
        raise ValueError(f"{_OP}: `input` must have rank >= 1, got a rank-0 array")
    k = validation.axes_tuple(_OP, "axis", axis_, x.ndim)[0]
    validation.positions_fit(_OP, "input", math.prod(x.shape[k:]) if coerce else x.shape[k])
    return lowering.hardmax(x, axis=k, flatten=coerce)
