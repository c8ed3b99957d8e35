"""ONNX adapters for "where the maximum is": ArgMax (1, 11, 12, 13) and TopK (1, 10, 11, 24).

The version (:mod:`jaxmax._src.onnx.versions`) -> validation -> :mod:`jaxmax._src.lowering.arg_max`
and :mod:`jaxmax._src.lowering.top_k`. The NaN rule (NaN is the maximum, ``-0.0 == +0.0``, ties by
ascending index) is the ordering rule passed to them: NaN first in descending order, last in
ascending order (docs/semantics.md §6).
"""

from __future__ import annotations

import jax
import numpy as np

from jaxmax._src import validation
from jaxmax._src.lowering import arg_max as arg_max_lowering
from jaxmax._src.lowering import top_k as top_k_lowering
from jaxmax._src.onnx import versions
from jaxmax._src.types import Data, Flag, Int

_ARG_MAX = "ONNX ArgMax"
_TOP_K = "ONNX TopK"

def _data(label: str, name: str, data, op: str, version: int, opset: int) -> jax.Array:
    data = validation.as_data(label, data, name)
    versions.TABLE.check_dtype(label, name, data, op, version, opset)
    if data.ndim == 0:
        raise ValueError(f"{label}: `{name}` must have rank >= 1, got a rank-0 array")
    return data


def arg_max(data: Data, *, axis: Int = 0, keepdims: Flag = 1, select_last_index: Flag = 0,
            opset: Int = 13) -> jax.Array:
    """ONNX ``ArgMax``, since-versions 1, 11, 12 and 13, selected by `opset`.

    The index of the first maximal element along `axis` (the last with
    ``select_last_index=1``, from version 12). **NaN is the maximum**: a slice holding a NaN
    (either sign) gives its first NaN (last with `select_last_index`), as ``onnx.reference``,
    NumPy, PyTorch and ``jnp.argmax`` (onnxruntime and OpenVINO return the position of the
    largest number after the first element instead). ``-0.0`` and ``+0.0`` tie. Integers
    compare exactly in their own type.

    Args:
      data: array of rank >= 1: float16, float32, float64 or any integer type (all versions),
        bfloat16 (13+). Bool is rejected.
      axis: the reduced axis in ``[-r, r-1]``; it must have at least one element. Static.
      keepdims: 1/True (default) keeps the reduced axis with size 1, 0/False drops it. Static.
      select_last_index: (12+) 1/True selects the last maximal element. Static.
      opset: the model's ONNX opset (>= 1); the largest since-version <= `opset` applies. Static.

    Returns:
      int64 indices (int32 without ``jax_enable_x64``, with a warning, as JAX does when int64
      is asked for).

    Raises:
      TypeError: a dtype the version does not allow, non-numeric data, a traced or non-integer
        static argument.
      ValueError: rank-0 data, an axis out of range or of size 0, `keepdims` or
        `select_last_index` not 0/1, `select_last_index=1` before opset 12, `opset` < 1, an axis
        longer than int32 can index without ``jax_enable_x64``, concrete 64-bit data whose values
        32 bits cannot hold while ``jax_enable_x64`` is off.

    jit contract: every argument but `data` is static. The result is integer: ``jax.grad``
    through it raises, as for any integer output.

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> onnx.arg_max(np.array([[1.0, np.nan, 3.0], [2.0, 5.0, 5.0]], np.float32), axis=1)
    Array([[1],
           [1]], dtype=int32)
    >>> onnx.arg_max(np.array([2.0, 5.0, 5.0], np.float32), keepdims=0, select_last_index=1)
    Array(2, dtype=int32)
    """
    opset_, version = versions.TABLE.select(_ARG_MAX, "ArgMax", opset)
    keep = validation.static_bool(_ARG_MAX, "keepdims", keepdims)
    last = validation.static_bool(_ARG_MAX, "select_last_index", select_last_index)
    versions.TABLE.require(_ARG_MAX, "ArgMax", version, opset_, {"select_last_index": last})
    data = _data(_ARG_MAX, "data", data, "ArgMax", version, opset_)
    axis_ = validation.axes_tuple(_ARG_MAX, "axis", validation.static_int(_ARG_MAX, "axis", axis),
                                  data.ndim)[0]
    n = data.shape[axis_]
    if n == 0:
        raise ValueError(f"{_ARG_MAX}: `data` has no element along `axis` {axis_} (shape "
                         f"{data.shape}): an empty axis has no maximum")
    index_dtype = validation.index_dtype(_ARG_MAX, "reduced", np.int64, n)
    return arg_max_lowering.arg_max(data, axis=axis_, keepdims=keep, last=last,
                                    nan_order="first", index_dtype=index_dtype)


def _k(op: str, K, version: int, n: int) -> int:
    """`K` as a Python int in ``[0 (10+) or 1, n]``."""
    if version < versions.TABLE.added_in("TopK", "K input"):
        k = validation.static_int(op, "K", K)
        low = 1
    else:
        if isinstance(K, (bool, np.bool_)):
            raise TypeError(f"{op}: `K` must be integer, got a bool")
        if isinstance(K, (int, np.integer)):
            k = validation.static_int(op, "K", K)
        else:
            arr = validation.static_int_array(op, "K", K)
            if arr.shape != (1,):
                raise ValueError(f"{op}: `K` must be an int or a 1-D array of one element, "
                                 f"got shape {arr.shape}")
            k = int(arr[0])
        low = 0
    if not low <= k <= n:
        raise ValueError(f"{op}: `K` must be in [{low}, {n}] (the length of `axis`), got {k}")
    return k


def top_k(X: Data, K: Int, *, axis: Int = -1, largest: Flag = 1, sorted: Flag = 1,  # noqa: N803,A002
          opset: Int = 24) -> tuple[jax.Array, jax.Array]:
    """ONNX ``TopK``, since-versions 1, 10, 11 and 24, selected by `opset`.

    The `K` largest (``largest=0``: smallest) elements along `axis` and their indices, ordered
    by the key "NaN (either sign) above every number, ``-0.0 == +0.0``", descending for
    ``largest=1`` and ascending for ``largest=0`` (so NaN comes last there, chosen only when
    fewer than `K` numbers remain); equal keys by ascending index in both modes (the
    reference's rule). Values are the input elements at the returned indices, zero signs and
    NaN payloads kept. ``sorted=0`` returns the sorted result (the spec leaves its order
    undefined).

    Args:
      X: array of rank >= 1: float16, float32, float64 (all versions), any integer type (11+),
        bfloat16 (24+). Bool is rejected.
      K: opset 1: the ``k`` attribute, an int >= 1; from 10 the ``K`` input: an int or a 1-D
        one-element integer array, in ``[0, n]`` (``K = 0`` gives empty outputs). Static.
      axis: the axis in ``[-r, r-1]`` (default -1). Static.
      largest: (11+) 1 (default) the largest, 0 the smallest. Static.
      sorted: (11+) 1 (default) or 0; both return the sorted result. Static.
      opset: the model's ONNX opset (>= 1); the largest since-version <= `opset` applies. Static.

    Returns:
      ``(Values, Indices)``: `X`'s dtype and int64 (int32 without ``jax_enable_x64``, with a
      warning), of `X`'s shape with `axis` of length `K`.

    Raises:
      TypeError: a dtype the version does not allow, non-numeric data, a traced or
        non-integer static argument.
      ValueError: rank-0 data, an axis out of range, `K` out of range or of the wrong shape,
        `largest`/`sorted` not 0/1 or not the default before opset 11, `opset` < 1, an axis
        longer than int32 can index without ``jax_enable_x64``, concrete 64-bit data whose
        values 32 bits cannot hold while ``jax_enable_x64`` is off.

    jit contract: `K` and every attribute are static; `X` may be traced. Under ``jax.grad``
    each value's cotangent goes to the element whose index was returned (ties and signed zeros
    follow the index rule).

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> onnx.top_k(np.array([1.0, np.nan, -0.0, 0.0, 3.0], np.float32), 4)
    (Array([nan,  3.,  1., -0.], dtype=float32), Array([1, 4, 0, 2], dtype=int32))
    >>> onnx.top_k(np.array([1.0, np.nan, -0.0, 0.0, 3.0], np.float32), 3, largest=0)
    (Array([-0.,  0.,  1.], dtype=float32), Array([2, 3, 0], dtype=int32))
    """
    opset_, version = versions.TABLE.select(_TOP_K, "TopK", opset)
    large = validation.static_bool(_TOP_K, "largest", largest)
    sort = validation.static_bool(_TOP_K, "sorted", sorted)
    versions.TABLE.require(_TOP_K, "TopK", version, opset_,
                           {"largest": not large, "sorted": not sort})
    X = _data(_TOP_K, "X", X, "TopK", version, opset_)
    axis_ = validation.axes_tuple(_TOP_K, "axis", validation.static_int(_TOP_K, "axis", axis),
                                  X.ndim)[0]
    n = X.shape[axis_]
    k = _k(_TOP_K, K, version, n)
    index_dtype = validation.index_dtype(_TOP_K, "Indices", np.int64, n)
    # NaN is the maximum: first in descending order, last in ascending order.
    return top_k_lowering.top_k(X, k, axis=axis_, descending=large,
                                nan_order="first" if large else "last", by_index=False,
                                index_dtype=index_dtype)
