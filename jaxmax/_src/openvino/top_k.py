"""OpenVINO TopK-1, -3 and -11: spec attribute names -> validation -> lowering.

The NaN rule (NaN ranks after every number in both modes) is the ordering rule
``nan_order="last"`` passed to :mod:`jaxmax._src.lowering.top_k` (docs/semantics.md §6).
"""

from __future__ import annotations

import jax
import numpy as np

from jaxmax._src import dtypes, validation
from jaxmax._src.lowering import top_k as lowering
from jaxmax._src.openvino import versions
from jaxmax._src.types import Data, Flag, Int

_MODES = ("max", "min")
_SORTS = ("value", "index", "none")


def top_k(data: Data, k: Int, *, axis: Int, mode: str, sort: str,
          index_element_type: str | np.dtype | type = "i32", stable: Flag = False,
          opset: Int = 11) -> tuple[jax.Array, jax.Array]:
    """OpenVINO ``TopK-1``, ``TopK-3`` and ``TopK-11``: the `k` largest (``mode="max"``) or
    smallest (``"min"``) elements along `axis`, and their indices.

    `opset` is the model's OpenVINO opset and picks the version: 1-2 is TopK-1, 3-10 TopK-3,
    11 and above TopK-11 (which adds `stable`). The three compute the same thing here:

    * ties (``-0.0 == +0.0`` included) go to the lower index **whatever** `stable` **says**, as
      OpenVINO's reference kernel (only its CPU plugin needs ``stable=True`` for that);
    * **NaN ranks after every number in both modes**: it is chosen only when fewer than `k`
      numbers remain, then in index order (the face's "NaN never wins"; the spec calls NaN
      order implementation-defined);
    * ``sort="value"``: descending (max) or ascending (min) value, ties by index;
      ``sort="index"``: the same `k` elements by ascending index; ``sort="none"``: as
      ``"value"`` (the spec leaves the order undefined).

    Values are the input elements at the returned indices, zero signs and NaN payloads kept.

    Args:
      data: array of rank >= 1 of any real or integer dtype (bool is rejected).
      k: int (or concrete 0-D integer array) in ``[1, n]``, n the length of `axis`. Static.
      axis: the axis in ``[-r, r-1]``. Static.
      mode: ``"max"`` or ``"min"`` (any case). Static.
      sort: ``"value"``, ``"index"`` or ``"none"`` (any case). Static.
      index_element_type: ``"i32"`` (default) or ``"i64"`` (any case) or the NumPy dtype;
        i64 is int32 without ``jax_enable_x64``, with a warning. Static.
      stable: (TopK-11) bool or 0/1; changes nothing here (ties always go to the lower index),
        but ``stable=True`` with ``sort="none"`` is rejected as OpenVINO does. Static.
      opset: the model's opset, >= 1. Static.

    Returns:
      ``(values, indices)`` of `data`'s shape with `axis` of length `k`.

    Raises:
      TypeError: bool or non-numeric data, a traced or mistyped static argument.
      ValueError: rank-0 data, an axis out of range, `k` outside ``[1, n]``, an unknown `mode`,
        `sort` or `index_element_type`, `stable` set before TopK-11 or with ``sort="none"``,
        `opset` < 1, an axis longer than the index type can count, concrete 64-bit data whose
        values 32 bits cannot hold while ``jax_enable_x64`` is off.

    jit contract: `k` and every attribute are static; `data` may be traced. Under ``jax.grad``
    each value's cotangent goes to the element whose index was returned.

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> x = np.array([1.0, np.nan, 3.0, -0.0, 0.0], np.float32)
    >>> ov.top_k(x, 3, axis=0, mode="max", sort="value")
    (Array([ 3.,  1., -0.], dtype=float32), Array([2, 0, 3], dtype=int32))
    >>> ov.top_k(x, 3, axis=0, mode="max", sort="index")
    (Array([ 1.,  3., -0.], dtype=float32), Array([0, 2, 3], dtype=int32))
    """
    opset_, version = versions.TABLE.select("TopK", "TopK", opset)
    op = f"TopK-{version}"
    mode_ = validation.choice(op, "mode", mode, _MODES)
    sort_ = validation.choice(op, "sort", sort, _SORTS)
    index_type = validation.index_element_type(op, index_element_type)
    stable_ = validation.static_bool(op, "stable", stable)
    versions.TABLE.require(op, "TopK", version, opset_, {"stable": stable_})
    if stable_ and sort_ == "none":
        raise ValueError(f"{op}: `stable` must be False when `sort` is 'none'")
    data = validation.as_data(op, data)
    if not dtypes.is_real_or_integer(data.dtype):
        kind = "bool data is not allowed" if dtypes.is_bool(data.dtype) else f"got {data.dtype}"
        raise TypeError(f"{op}: `data` must have a real or integer dtype; {kind}")
    if data.ndim == 0:
        raise ValueError(f"{op}: `data` must have rank >= 1, got a rank-0 array")
    axis_ = validation.axes_tuple(op, "axis", validation.static_int(op, "axis", axis),
                                  data.ndim)[0]
    n = data.shape[axis_]
    k_ = validation.static_int(op, "k", k)
    if not 1 <= k_ <= n:
        raise ValueError(f"{op}: `k` must be in [1, {n}] (the length of `axis`), got {k_}")
    index_dtype = validation.index_dtype(op, "index_element_type", index_type, n)
    return lowering.top_k(data, k_, axis=axis_, descending=mode_ == "max", nan_order="last",
                          by_index=sort_ == "index", index_dtype=index_dtype)
