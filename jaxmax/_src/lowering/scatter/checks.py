"""Argument checks shared by every max-scatter face: arrays, shapes and concrete index values.

Each function takes the operator's display name and raises the contract's `TypeError` or
`ValueError` (message starting with that name and naming the argument) before anything is
computed. What differs between faces (the allowed dtypes, the version gates) is passed in.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from jaxmax._src import dtypes, validation
from jaxmax._src.lowering.scatter.max_scatter import row_layout_possible


def _kind(dtype) -> str:
    return "bool" if dtypes.is_bool(dtype) else str(np.dtype(dtype))


def data_and_updates(op: str, data, updates,
                     allowed: Callable[[np.dtype], bool]) -> tuple[jax.Array, jax.Array]:
    """`data` and `updates` as JAX arrays of one dtype that `allowed` accepts; rank >= 1 data."""
    for name, value in (("data", data), ("updates", updates)):
        dtype = getattr(value, "dtype", None)
        if dtype is not None and np.dtype(dtype).kind in "cSUO":
            raise TypeError(f"{op}: `{name}` dtype {dtype} is not allowed with max (complex and "
                            f"string values have no order)")
    data = validation.host_data(op, data, "data")
    updates = validation.host_data(op, updates, "updates")
    for name, arr in (("data", data), ("updates", updates)):
        if not allowed(np.dtype(arr.dtype)):
            raise TypeError(f"{op}: `{name}` dtype {_kind(arr.dtype)} is not allowed here")
    if data.dtype != updates.dtype:  # compared before JAX narrows 64-bit types
        raise TypeError(f"{op}: `data` and `updates` must have one dtype, got {data.dtype} and "
                        f"{updates.dtype}")
    data = validation.as_data(op, data, "data")
    updates = validation.as_data(op, updates, "updates")
    if data.ndim < 1:
        raise ValueError(f"{op}: `data` must have rank >= 1, got a scalar")
    return data, updates


def host_indices(op: str, indices, allowed: Callable[[np.dtype], bool], what: str):
    """`indices` checked as an integer array of a dtype `allowed` accepts (`what` names them):
    a tracer or a JAX array as it is, anything else as a NumPy array of its own dtype (range
    checks come before JAX would narrow 64-bit values)."""
    arr: np.ndarray | jax.Array
    if isinstance(indices, jax.Array):
        arr = indices
    else:
        try:
            arr = np.asarray(indices)
        except validation.TRACER_ERRORS:
            arr = validation.host_data(op, indices, "indices")
        if isinstance(arr, np.ndarray) and arr.size == 0 and arr.dtype == np.float64 \
                and not isinstance(indices, np.ndarray):
            arr = arr.astype(np.int64)  # an empty Python list
    dtype = np.dtype(arr.dtype)
    if not (dtypes.is_integer(dtype) and allowed(dtype)):
        raise TypeError(f"{op}: `indices` must be {what}, got dtype {_kind(dtype)}")
    return arr


def concrete(arr) -> np.ndarray | None:
    """The values of `arr` when every process knows them now, else None
    (`validation.known_value`)."""
    return validation.known_value(arr)


def check_range(op: str, values: np.ndarray, sizes: np.ndarray,
                what: Callable[[tuple[int, ...]], str]) -> None:
    """`ValueError` naming the first position whose value lies outside ``[-s, s-1]``; `sizes`
    broadcasts against `values` (one size per coordinate for coordinate tuples); `what(pos)`
    names the axis the value indexes."""
    if values.size == 0:
        return
    wide = values.astype(np.int64) if values.dtype != np.uint64 else values
    bad = (wide >= sizes) if values.dtype.kind == "u" else (wide < -sizes) | (wide >= sizes)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        size = int(np.broadcast_to(sizes, values.shape)[pos])
        raise ValueError(
            f"{op}: `indices` holds {int(values[pos])} at position {list(pos)}, outside "
            f"[-{size}, {size - 1}] for {what(pos)} of size {size}; indices must name an element "
            f"(negative values count from the end)")


def device_indices(op: str, arr) -> jax.Array:
    """Checked indices as a JAX array (concrete 64-bit values 32 bits would change raise)."""
    return validation.as_data(op, validation.host_data(op, arr, "indices"), "indices")


def axis_along(op: str, axis, ndim: int) -> int:
    """`axis` (an int or a 0-D / one-element 1-D concrete integer array) in ``[0, ndim)``."""
    arr = validation.static_int_array(op, "axis", axis)
    if arr.size != 1:
        raise ValueError(f"{op}: `axis` must be a scalar or a one-element array, got shape "
                         f"{arr.shape}")
    value = int(arr.reshape(-1)[0])
    if not -ndim <= value < ndim:
        raise ValueError(f"{op}: `axis` {value} out of range [-{ndim}, {ndim - 1}] for data of "
                         f"rank {ndim}")
    return value % ndim


def along_axis_shapes(op: str, data, indices, updates, axis: int) -> None:
    """Same rank everywhere, `updates` shaped as `indices`, `indices` within `data` off `axis`."""
    if indices.ndim != data.ndim:
        raise ValueError(f"{op}: `indices` must have data's rank {data.ndim}, got shape "
                         f"{tuple(indices.shape)}")
    if tuple(updates.shape) != tuple(indices.shape):
        raise ValueError(f"{op}: `updates` must have the shape of `indices` "
                         f"{tuple(indices.shape)}, got {tuple(updates.shape)}")
    for d, (i, n) in enumerate(zip(indices.shape, data.shape, strict=True)):
        if d != axis and i > n:
            raise ValueError(
                f"{op}: `indices` shape {tuple(indices.shape)} exceeds `data` shape "
                f"{tuple(data.shape)} on axis {d} (only the scatter axis {axis} may be longer)")


def layout_of(values: np.ndarray | None, data_shape, axis: int) -> str:
    """``"rows"`` or ``"elements"`` for concrete indices, ``"detect"`` for traced ones."""
    if not row_layout_possible(data_shape, values.shape if values is not None else data_shape,
                               axis):
        return "elements"
    if values is None:
        return "detect"
    first = values[tuple(slice(None) if d == axis else slice(0, 1) for d in range(values.ndim))]
    return "rows" if np.array_equal(values, np.broadcast_to(first, values.shape)) else "elements"


def coordinate_shapes(op: str, data, indices, updates: jax.Array, *,
                      scalar_as_one: bool) -> jax.Array:
    """`indices` of rank >= 1 with ``k = indices.shape[-1] <= rank(data)`` and `updates` of
    shape ``indices.shape[:-1] + data.shape[k:]``; returns `updates` (reshaped when
    `scalar_as_one` lets a one-element array stand for an expected scalar)."""
    if indices.ndim < 1:
        raise ValueError(f"{op}: `indices` must have rank >= 1, got a scalar")
    k = indices.shape[-1]
    if k > data.ndim:
        raise ValueError(f"{op}: `indices.shape[-1]` {k} exceeds the rank {data.ndim} of `data`")
    expected = tuple(indices.shape[:-1]) + tuple(data.shape[k:])
    if tuple(updates.shape) != expected:
        if scalar_as_one and expected == () and updates.size == 1:
            return updates.reshape(())
        raise ValueError(f"{op}: `updates` must have shape indices.shape[:-1] + "
                         f"data.shape[k:] = {expected}, got {tuple(updates.shape)}")
    return updates
