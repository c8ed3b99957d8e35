"""OpenVINO ScatterElementsUpdate-3/-12 and ScatterNDUpdate-3/-15 with ``reduction="max"``:
spec attribute names -> validation -> lowering."""

from __future__ import annotations

import jax
import numpy as np

from jaxmax._src import dtypes, validation
from jaxmax._src.lowering.scatter import call as scatter_call
from jaxmax._src.types import Data, Ints

_SEU = "ScatterElementsUpdate"
_SNDU = "ScatterNDUpdate"

# operator -> (first opset holding it, {version: (first opset of the version, reductions)})
_VERSIONS: dict[str, tuple[int, dict[int, tuple[int, tuple[str, ...]]]]] = {
    _SEU: (3, {3: (3, ("none",)),
               12: (12, ("none", "sum", "prod", "min", "max", "mean"))}),
    _SNDU: (4, {3: (4, ("none",)),
                15: (15, ("none", "sum", "sub", "prod", "min", "max"))}),
}


def _gate(name: str, opset, reduction, use_init_val=True) -> tuple[str, int, bool]:
    """The versioned display name the `opset` selects, its version and `use_init_val`; the
    reduction checked (a gate the version lacks before an unimplemented reduction)."""
    opset_ = validation.static_int(name, "opset", opset)
    first, versions = _VERSIONS[name]
    if opset_ < first:
        raise ValueError(f"{name}: exists from opset {first}, got `opset` {opset_}")
    version = max(v for v, (since, _) in versions.items() if since <= opset_)
    op = f"{name}-{version}"
    known = sorted({r for _, allowed in versions.values() for r in allowed})
    reduction_ = validation.choice(op, "reduction", reduction, known)
    allowed = versions[version][1]
    if reduction_ not in allowed:
        newest = max(versions)
        raise ValueError(f"{op}: `reduction` {reduction!r} needs {name}-{newest} (opset "
                         f"{versions[newest][0]} or later); {op} allows {list(allowed)}")
    use_init = validation.static_bool(op, "use_init_val", use_init_val)
    if not use_init and version < 12:
        raise ValueError(f"{op}: `use_init_val` needs ScatterElementsUpdate-12 (opset 12 or "
                         f"later)")
    if reduction_ != "max":
        raise NotImplementedError(f"{op}: `reduction` {reduction!r} is not implemented: jaxmax "
                                  f"implements reduction='max' only")
    return op, version, use_init


def _allowed(dtype: np.dtype) -> bool:
    return dtypes.is_real_or_integer(dtype) or dtypes.is_bool(dtype)


def scatter_elements_update(data: Data, indices: Ints, updates: Data, axis, *,
                            reduction: str = "none", use_init_val=True,
                            opset: int = 12) -> jax.Array:
    """OpenVINO ``ScatterElementsUpdate-12`` with ``reduction="max"``.

    For each target element t the updates routed to it (``indices[i]`` along `axis`, the
    other coordinates ``i``'s own) are folded in row-major order of `indices` as the reference
    does, ``acc = acc > u ? acc : u`` starting from ``data[t]``. So a trailing NaN gives NaN, a
    NaN erases what came before it, and of equal values the last wins (data ``+0`` with update
    ``-0`` gives ``-0``). With ``use_init_val=False`` a touched target starts at lowest(T)
    (``finfo.min``, ``iinfo.min``, 0 for unsigned, False for bool); untouched targets keep
    `data` bit for bit. bool is logical OR. See ``docs/semantics.md §8``.

    Args:
      data: array of rank r >= 1: any real or integer dtype, or bool.
      indices: any integer dtype, rank r, ``indices.shape[d] <= data.shape[d]`` for
        ``d != axis``. Values in ``[-s, s-1]``, s = ``data.shape[axis]``; negative ones count
        from the end.
      updates: the shape of `indices`, the dtype of `data`.
      axis: an int or a 0-D / one-element 1-D concrete integer array in ``[-r, r-1]`` (an
        input in the IR). Static.
      reduction: ``"max"`` (any case; the only one implemented). Static.
      use_init_val: whether ``data[t]`` starts the fold (SEU-12 only). Static.
      opset: the OpenVINO opset: 3-11 select ScatterElementsUpdate-3 (no reductions), 12 and
        later ScatterElementsUpdate-12. Static.

    Returns:
      A ``jax.Array`` of `data`'s shape and dtype.

    Raises:
      TypeError: complex or string data, `data`/`updates` dtypes that differ, non-integer
        indices, a traced or non-string static argument.
      ValueError: opset < 3; max or ``use_init_val=False`` on ScatterElementsUpdate-3; an
        unknown reduction; `axis` out of range or not one element; rank-0 data; mismatched
        ranks or shapes; a concrete index outside ``[-s, s-1]`` (naming its position, value
        and s); concrete 64-bit values that 32 bits would change without
        ``jax_enable_x64``.
      NotImplementedError: a reduction the version allows other than max.

    jit contract: `axis`, `reduction`, `use_init_val` and `opset` are static; `data`,
    `indices`, `updates` may be traced. Traced out-of-range indices drop their update (never
    wrapped or clamped). Row-broadcast indices take a row scatter (detected at run time under
    jit) with the same result. Under ``jax.grad`` a target's cotangent goes whole to the
    element the fold selected (``data[t]`` of a touched target gets none with
    ``use_init_val=False``); dropped updates get 0.

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> ov.scatter_elements_update(np.array([5], np.float32), np.array([0, 0, 0]),
    ...                            np.array([1, np.nan, 0], np.float32), 0, reduction="max")
    Array([0.], dtype=float32)
    """
    op, _, use_init = _gate(_SEU, opset, reduction, use_init_val)
    return scatter_call.along_axis(
        op, data, indices, updates, axis, allowed=_allowed, index_ok=lambda d: True,
        index_kinds="of an integer dtype", rule="acc_gt", use_init=use_init)


def scatter_nd_update(data: Data, indices: Ints, updates: Data, *, reduction: str = "none",
                      opset: int = 15) -> jax.Array:
    """OpenVINO ``ScatterNDUpdate-15`` with ``reduction="max"``.

    For each index tuple (the last axis of `indices`, ``k <= r`` coordinates) in row-major
    order, ``out[idx] = max(out[idx], updates[i])`` as the spec's snippet (``acc < u ? u :
    acc``): a NaN ``data[t]`` sticks, NaN updates are skipped, and of equal values the earliest
    wins, data first (data ``-0`` with update ``+0`` stays ``-0``). ``k = 0`` reduces into the
    whole tensor. bool is logical OR. See ``docs/semantics.md §8``.

    Args:
      data: array of rank r >= 1: any real or integer dtype, or bool.
      indices: int32 or int64, rank >= 1, ``k = indices.shape[-1] <= r``; coordinate j in
        ``[-data.shape[j], data.shape[j]-1]``, negative ones counting from the end.
      updates: shape ``indices.shape[:-1] + data.shape[k:]`` (a one-element array stands for
        an expected scalar), the dtype of `data`.
      reduction: ``"max"`` (any case; the only one implemented). Static.
      opset: 4-14 select ScatterNDUpdate-3 (no reductions), 15 and later ScatterNDUpdate-15.
        Static.

    Returns:
      A ``jax.Array`` of `data`'s shape and dtype.

    Raises:
      TypeError, ValueError, NotImplementedError: as `scatter_elements_update` (opset < 4
        raises ValueError); also ValueError for ``k > r`` or a wrong `updates` shape. Each
        coordinate is checked against its own dimension.

    jit contract: `reduction` and `opset` are static; the arrays may be traced. A traced index
    tuple with any coordinate out of range drops its whole slice. Under ``jax.grad`` a
    target's cotangent goes whole to the earliest equal element, data first (``data[t]`` when
    it is NaN); dropped updates get 0.

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> ov.scatter_nd_update(np.array([0], np.float32), np.array([[0], [0]]),
    ...                      np.array([2, np.nan], np.float32), reduction="max")
    Array([2.], dtype=float32)
    """
    op, _, _ = _gate(_SNDU, opset, reduction)
    return scatter_call.by_coordinates(
        op, data, indices, updates, allowed=_allowed,
        index_ok=lambda d: d in (np.dtype(np.int32), np.dtype(np.int64)),
        index_kinds="int32 or int64", scalar_as_one=True, rule="acc_lt")
