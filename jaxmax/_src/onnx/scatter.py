"""ONNX ScatterElements and ScatterND (since-versions 11, 13, 16, 18) with ``reduction="max"``:
spec attribute names -> validation -> lowering."""

from __future__ import annotations

import jax
import numpy as np

from jaxmax._src import dtypes, validation
from jaxmax._src.lowering.scatter import call as scatter_call
from jaxmax._src.types import Data, Ints

_SE = "ONNX ScatterElements"
_SND = "ONNX ScatterND"

#: since-version -> the reductions it allows (both operators share the table).
REDUCTIONS: dict[int, tuple[str, ...]] = {
    11: ("none",),
    13: ("none",),
    16: ("none", "add", "mul"),
    18: ("none", "add", "mul", "max", "min"),
}
_ALL = REDUCTIONS[18]
_INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _version(op: str, opset, reduction) -> int:
    opset_ = validation.static_int(op, "opset", opset)
    if opset_ < 11:
        raise ValueError(f"{op}: exists from opset 11 (the older Scatter-9 is another "
                         f"operator), got `opset` {opset_}")
    version = max(v for v in REDUCTIONS if v <= opset_)
    if not isinstance(reduction, str):
        raise TypeError(f"{op}: `reduction` must be a string, one of {list(_ALL)}, got "
                        f"{reduction!r}")
    if reduction not in _ALL:
        raise ValueError(f"{op}: `reduction` must be one of {list(_ALL)} (exact spelling), got "
                         f"{reduction!r}")
    if reduction not in REDUCTIONS[version]:
        raise ValueError(f"{op}: `reduction` {reduction!r} needs opset 18 or later; version "
                         f"{version} (opset {opset_}) allows {list(REDUCTIONS[version])}")
    if reduction != "max":
        raise NotImplementedError(f"{op}: `reduction` {reduction!r} is not implemented: jaxmax "
                                  f"implements reduction='max' only")
    return version


def _allowed(version: int):
    def allowed(dtype: np.dtype) -> bool:
        if dtype == jax.dtypes.bfloat16:
            return version >= 13
        return dtypes.is_real_or_integer(dtype) or dtypes.is_bool(dtype)

    return allowed


def scatter_elements(data: Data, indices: Ints, updates: Data, *, axis=0,
                     reduction: str = "none", opset: int = 18) -> jax.Array:
    """ONNX ``ScatterElements`` (since-versions 11, 13, 16, 18) with ``reduction="max"``.

    ``output = data``; then for every position ``i`` of `indices`, the output element at ``i``
    with its `axis` coordinate replaced by ``indices[i]`` becomes the IEEE-754-2019
    ``maximum`` of itself and ``updates[i]``: any NaN gives NaN, ``+0`` beats ``-0`` in every
    order, so the result does not depend on the order of duplicates. Elements no update
    reaches keep `data` bit for bit. bool is logical OR. See ``docs/semantics.md §8``.

    Args:
      data: array of rank r >= 1: any real or integer dtype, or bool (bfloat16 from opset 13).
      indices: int32 or int64, rank r, ``indices.shape[d] <= data.shape[d]`` for ``d != axis``
        (any length along `axis`). Values in ``[-s, s-1]``, s = ``data.shape[axis]``; negative
        ones count from the end.
      updates: the shape of `indices`, the dtype of `data`.
      axis: the scatter axis in ``[-r, r-1]``. Static.
      reduction: ``"max"`` (the only one implemented; the spec default ``"none"`` and
        ``"add"``/``"mul"``/``"min"`` raise `NotImplementedError`). Static.
      opset: the model's ONNX opset (>= 11; max needs >= 18). Static.

    Returns:
      A ``jax.Array`` of `data`'s shape and dtype.

    Raises:
      TypeError: complex or string data, bfloat16 below opset 13, `data` and `updates` of
        different dtypes, indices other than int32/int64, a non-string or traced static
        argument.
      ValueError: opset < 11, ``"max"`` below opset 18, an unknown reduction, `axis` out of
        range, rank-0 data, mismatched ranks or shapes, a concrete index outside
        ``[-s, s-1]`` (the message names its position, value and s), concrete 64-bit values
        that 32 bits would change without ``jax_enable_x64``.
      NotImplementedError: a reduction the version allows other than max.

    jit contract: `axis`, `reduction` and `opset` are static; `data`, `indices`, `updates` may
    be traced. Traced indices cannot be checked: an out-of-range index drops its update
    (never wrapped, never clamped). When `indices` repeats one row index across every other
    axis (``index.view(-1, 1).expand_as(src)``) a row scatter is used, detected at run time
    under jit, with the same result. Under ``jax.grad`` a target's cotangent is shared evenly
    among the elements equal to the result (the NaN elements when it is NaN); dropped updates
    get 0.

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> onnx.scatter_elements(np.zeros(4, np.float32), np.array([1, 0, 0, 3]),
    ...                       np.array([5, -2, 7, -1], np.float32), reduction="max")
    Array([7., 5., 0., 0.], dtype=float32)
    """
    return scatter_call.along_axis(
        _SE, data, indices, updates, axis, allowed=_allowed(_version(_SE, opset, reduction)),
        index_ok=lambda d: d in _INDEX_TYPES, index_kinds="int32 or int64", rule="maximum",
        use_init=True)


def scatter_nd(data: Data, indices: Ints, updates: Data, *, reduction: str = "none",
               opset: int = 18) -> jax.Array:
    """ONNX ``ScatterND`` (since-versions 11, 13, 16, 18) with ``reduction="max"``.

    ``output = data``; then for every index tuple ``indices[i]`` (its last axis holds
    ``k <= r`` coordinates), the slice ``output[indices[i]]`` becomes the IEEE-754-2019
    ``maximum`` of itself and ``updates[i]`` element by element (any NaN gives NaN, ``+0``
    beats ``-0``). ``k = 0`` reduces every update into the whole tensor. bool is logical OR.
    See ``docs/semantics.md §8``.

    Args:
      data: array of rank r >= 1: any real or integer dtype, or bool (bfloat16 from opset 13).
      indices: int64 (int32 accepted: it is what int64 is without ``jax_enable_x64``), rank
        q >= 1, ``k = indices.shape[-1] <= r``. Each coordinate j in
        ``[-data.shape[j], data.shape[j]-1]``, negative ones counting from the end.
      updates: shape ``indices.shape[:-1] + data.shape[k:]``, the dtype of `data`.
      reduction: ``"max"`` only (others raise as in `scatter_elements`). Static.
      opset: the model's ONNX opset (>= 11; max needs >= 18). Static.

    Returns:
      A ``jax.Array`` of `data`'s shape and dtype.

    Raises:
      TypeError, ValueError, NotImplementedError: as `scatter_elements`; also ValueError for
        ``k > r`` or a wrong `updates` shape. Each coordinate is checked against its own
        dimension (``[0, 5]`` on (3, 4) raises although the flat offset fits).

    jit contract: `reduction` and `opset` are static; `data`, `indices`, `updates` may be
    traced. A traced index tuple with any coordinate out of range drops its whole slice (never
    wrapped, clamped or aliased to another element). Gradients as `scatter_elements`.

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> onnx.scatter_nd(np.zeros((2, 3), np.float32), np.array([[1], [1]]),
    ...                 np.array([[1, 5, 2], [4, 0, 3]], np.float32), reduction="max")
    Array([[0., 0., 0.],
           [4., 5., 3.]], dtype=float32)
    """
    return scatter_call.by_coordinates(
        _SND, data, indices, updates, allowed=_allowed(_version(_SND, opset, reduction)),
        index_ok=lambda d: d in _INDEX_TYPES, index_kinds="int64 (or int32)",
        scalar_as_one=False, rule="maximum")
