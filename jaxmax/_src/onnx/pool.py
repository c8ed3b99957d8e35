"""ONNX pooling adapters: MaxPool (since-versions 1, 8, 10, 11, 12, 22) and GlobalMaxPool (1, 22).

Attributes are validated and canonicalised in Python, the sweep comes from
:mod:`jaxmax._src.shapes`, and the values and indices from
:mod:`jaxmax._src.lowering.pooling.max_pool`.
"""

from __future__ import annotations

import math
from typing import Literal, overload

import jax
import numpy as np

from jaxmax._src import shapes, sizes, validation
from jaxmax._src.lowering import reduce
from jaxmax._src.lowering.pooling import max_pool as pool
from jaxmax._src.onnx import versions
from jaxmax._src.types import Data, Flag, Int, Ints

_MAX_POOL = "ONNX MaxPool"
_GLOBAL = "ONNX GlobalMaxPool"

_AUTO_PADS = ("notset", "valid", "same_upper", "same_lower")


def checked_x(label: str, X, op: str, version: int, opset: int) -> jax.Array:
    """`X` as an array of a dtype `op`-`version` allows and rank >= 3 (N, C, D1, ...)."""
    X = validation.as_data(label, X, "X")
    versions.TABLE.check_dtype(label, "X", X, op, version, opset)
    if X.ndim < 3:
        raise ValueError(f"{label}: `X` must have rank >= 3 (N, C, D1, ...), got rank {X.ndim}")
    return X


def _positive(op: str, name: str, values: tuple[int, ...]) -> None:
    if min(values) < 1:
        raise ValueError(f"{op}: `{name}` values must be >= 1, got {list(values)}")


@overload
def max_pool(X: Data, *, kernel_shape: Ints, auto_pad: str = "NOTSET", ceil_mode: Flag = 0,
             dilations: Ints | None = None, pads: Ints | None = None, storage_order: Flag = 0,
             strides: Ints | None = None, opset: Int = 22,
             return_indices: Literal[False, 0] = False) -> jax.Array: ...


@overload
def max_pool(X: Data, *, kernel_shape: Ints, auto_pad: str = "NOTSET", ceil_mode: Flag = 0,
             dilations: Ints | None = None, pads: Ints | None = None, storage_order: Flag = 0,
             strides: Ints | None = None, opset: Int = 22,
             return_indices: Flag = False) -> tuple[jax.Array, jax.Array]: ...


def max_pool(X: Data, *, kernel_shape: Ints, auto_pad: str = "NOTSET", ceil_mode: Flag = 0,
             dilations: Ints | None = None, pads: Ints | None = None, storage_order: Flag = 0,
             strides: Ints | None = None, opset: Int = 22,
             return_indices: Flag = False) -> jax.Array | tuple[jax.Array, jax.Array]:
    """ONNX ``MaxPool``, since-versions 1, 8, 10, 11, 12 and 22, selected by `opset`.

    ``Y[n, c, o] = max`` of the window's input elements: NaN propagates (a window holding a
    NaN gives NaN), ``-inf`` stays, and a window with no input element (dilations, or pads as
    large as the kernel) gives the empty-set value of ONNX ReduceMax (``-inf``, ``iinfo.min``).
    Padding is never selected. ``Indices`` (``return_indices=True``, opset >= 8) holds the flat
    index ``(n * C + c) * prod(D) + spatial`` of each window's first NaN, else of its first
    maximal element (ties: the first in row-major window order), ``-1`` for a window with no
    input element; ``spatial`` is row-major, or column-major with ``storage_order=1``.

    Geometry per spatial axis (``dk = (k - 1) * d + 1``): ``auto_pad="NOTSET"`` uses `pads`
    (ONNX layout ``[x1_begin, x2_begin, ..., x1_end, x2_end]``), ``"VALID"`` no pads,
    ``"SAME_UPPER"``/``"SAME_LOWER"`` ``max(0, (ceil(D/s) - 1) * s + dk - D)`` in total, the odd
    element at the end/beginning. Output length ``floor((D + pb + pe - dk) / s) + 1``; with
    ``ceil_mode=1`` ``ceil(...) + 1``, less one when the last window would start in the end
    padding (as onnxruntime and the ONNX reference do at every version, and for VALID and SAME).

    Args:
      X: ``(N, C, D1, ..., Dn)`` data, n >= 1: float16/32/64 (every version), int8/uint8
        (12+), bfloat16 (22).
      kernel_shape: window per spatial axis (an int applies to every axis), each >= 1. Static.
      auto_pad: ``"NOTSET"``, ``"VALID"``, ``"SAME_UPPER"``, ``"SAME_LOWER"`` (any case).
      ceil_mode: 0 or 1 (opset >= 10). Static.
      dilations: per spatial axis, each >= 1; default 1 (opset >= 10). Static.
      pads: 2n non-negative ints; default zeros. Non-zero pads with an `auto_pad` other than
        NOTSET raise (the spec forbids using both). Static.
      storage_order: 0 (row-major) or 1 (column-major) Indices (opset >= 8). Static.
      strides: per spatial axis, each >= 1; default 1. Static.
      opset: the model's ONNX opset (>= 1); the largest since-version <= `opset` applies.
      return_indices: also return ``Indices`` (the node's second output; opset >= 8).

    Returns:
      ``Y``, or ``(Y, Indices)`` with int64 Indices (int32 without ``jax_enable_x64``).

    Raises:
      TypeError: a dtype the version does not allow, a non-integer, traced or non-string
        attribute.
      ValueError: rank < 3, attribute lengths, kernel/stride/dilation < 1, negative pads, pads
        beside an `auto_pad`, a kernel larger than the padded input, `ceil_mode` or
        `storage_order` not 0/1, an attribute the version lacks (`storage_order` and Indices
        before 8, `ceil_mode` and `dilations` before 10), `opset` < 1, Indices whose range does
        not fit the index type, integers outside int64.

    jit contract: every attribute and `return_indices` must be static; `X` may be traced.
    Under ``jax.grad`` each window's whole cotangent goes to the element its index names (the
    first NaN or first maximal element); a window with no input element passes none.

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> x = np.array([[[1, 3, 2, np.nan, 0]]], np.float32)
    >>> y, i = onnx.max_pool(x, kernel_shape=[2], strides=[2], ceil_mode=1, return_indices=True)
    >>> y, i
    (Array([[[ 3., nan,  0.]]], dtype=float32), Array([[[1, 3, 4]]], dtype=int32))
    """
    op = _MAX_POOL
    opset_, version = versions.TABLE.select(op, "MaxPool", opset)
    X = checked_x(op, X, "MaxPool", version, opset_)
    n_spatial = X.ndim - 2
    want_indices = validation.static_bool(op, "return_indices", return_indices)
    order = validation.static_bool(op, "storage_order", storage_order)
    ceil = validation.static_bool(op, "ceil_mode", ceil_mode)
    versions.TABLE.require(op, "MaxPool", version, opset_,
                           {"storage_order": order, "return_indices": want_indices})
    versions.TABLE.require(op, "MaxPool", version, opset_,
                           {"ceil_mode": ceil, "dilations": dilations is not None})
    kernel = validation.int_tuple(op, "kernel_shape", kernel_shape, n_spatial)
    strides_ = validation.int_tuple(op, "strides", 1 if strides is None else strides, n_spatial)
    dilations_ = validation.int_tuple(op, "dilations",
                                      1 if dilations is None else dilations, n_spatial)
    pads_ = validation.int_tuple(op, "pads",
                                 (0,) * (2 * n_spatial) if pads is None else pads, 2 * n_spatial)
    for name, values in (("kernel_shape", kernel), ("strides", strides_),
                         ("dilations", dilations_)):
        _positive(op, name, values)
    if min(pads_) < 0:
        raise ValueError(f"{op}: `pads` must be >= 0, got {list(pads_)}")
    mode = validation.choice(op, "auto_pad", auto_pad, _AUTO_PADS)
    if mode != "notset" and any(pads_):
        raise ValueError(f"{op}: `pads` {list(pads_)} cannot be used with auto_pad "
                         f"{auto_pad!r} (the spec forbids both at once)")
    sweep = shapes.sweep(op, "kernel_shape", tuple(X.shape), X.dtype.itemsize, kernel,
                         strides_, dilations_,
                         tuple(zip(pads_[:n_spatial], pads_[n_spatial:], strict=True)),
                         "explicit" if mode == "notset" else mode,
                         "ceil_torch" if ceil else "floor")
    index_dtype = None
    if want_indices:
        index_dtype = validation.index_dtype(op, "Indices", np.int64, math.prod(X.shape))
    out = pool.max_pool(X, sweep.window, sweep.strides, sweep.padding, sweep.dilation,
                        nan="propagate", index_dtype=index_dtype,
                        layout=pool.IndexLayout(first_axis=0, column_major=order,
                                                no_winner="minus_one"))
    sizes.settled(out, sweep.largest_bytes)
    return out


def global_max_pool(X: Data, *, opset: Int = 22) -> jax.Array:
    """ONNX ``GlobalMaxPool`` (since-versions 1 and 22): the maximum over every spatial axis.

    The ONNX ReduceMax rule over axes ``2, ..., r-1`` with the reduced axes kept: NaN
    propagates, ``-inf`` stays, a spatial axis of size 0 gives ``-inf`` (``iinfo.min``).

    Args:
      X: ``(N, C, D1, ..., Dn)`` data, n >= 1: float16/32/64, and bfloat16 from opset 22.
      opset: the model's ONNX opset (>= 1). Static.

    Returns:
      ``(N, C, 1, ..., 1)``, of the data dtype.

    Raises:
      TypeError: a dtype the version does not allow.
      ValueError: rank < 3, `opset` < 1.

    jit contract: `opset` must be static. Under ``jax.grad`` tied maxima share the cotangent
    evenly (as ``jnp.max`` and ONNX ReduceMax here).

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> onnx.global_max_pool(np.array([[[1.0, 5.0, -2.0]]], np.float32))
    Array([[[5.]]], dtype=float32)
    """
    opset_, version = versions.TABLE.select(_GLOBAL, "GlobalMaxPool", opset)
    X = checked_x(_GLOBAL, X, "GlobalMaxPool", version, opset_)
    return reduce.reduce_max(X, tuple(range(2, X.ndim)), True, nan="propagate")
