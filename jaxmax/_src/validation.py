"""Static-argument canonicalisers and error helpers.

Everything here runs in Python before anything is traced or computed. Each function takes the
operator's display name (``"ReduceMax-1"``) and the argument's spec name, and raises a
``TypeError`` (wrong kind) or ``ValueError`` (wrong value) whose message starts with the operator
name and names the argument.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from jaxmax._src import dtypes

TRACER_ERRORS = (
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.ConcretizationTypeError,
)


def as_data(op: str, data, name: str = "data") -> jax.Array:
    """`data` as a JAX array (tracers pass through unchanged)."""
    if isinstance(data, jax.Array):
        return data
    try:
        return jnp.asarray(data)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{op}: `{name}` must be an array of numbers, got "
                        f"{type(data).__name__}: {err}") from None


def numeric_data(op: str, data) -> jax.Array:
    """`data` as a JAX array of a real or integer dtype (the OpenVINO max operators' T)."""
    data = as_data(op, data)
    if not dtypes.is_real_or_integer(data.dtype):
        kind = "bool data is not allowed" if dtypes.is_bool(data.dtype) else f"got {data.dtype}"
        raise TypeError(f"{op}: `data` must have a real or integer dtype; {kind}")
    return data


def static_array(op: str, name: str, value, how: str) -> np.ndarray:
    """A static argument as a NumPy array; a traced value raises a `TypeError` that says `how`."""
    try:
        return np.asarray(value)
    except TRACER_ERRORS:
        raise TypeError(
            f"{op}: `{name}` must be static (a Python value or a concrete array) because it "
            f"decides the output shape, but it is traced; {how}") from None


def _static_how(name: str) -> str:
    return (f"pass it as a Python value, or mark it static with "
            f"jax.jit(..., static_argnames=('{name}',))")


def static_int_array(op: str, name: str, value, *, max_ndim: int = 1) -> np.ndarray:
    """An integer array of rank <= `max_ndim` (Python bools are rejected)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: `{name}` must be integer, got a bool")
    arr = static_array(op, name, value, _static_how(name))
    if arr.size == 0 and arr.dtype == np.float64 and not isinstance(value, np.ndarray):
        arr = arr.astype(np.int64)  # an empty Python list or tuple
    if not jnp.issubdtype(arr.dtype, jnp.integer):
        raise TypeError(f"{op}: `{name}` must be integer, got dtype {arr.dtype}")
    if arr.ndim > max_ndim:
        raise ValueError(f"{op}: `{name}` must have rank <= {max_ndim}, got shape {arr.shape}")
    return arr


def static_int(op: str, name: str, value) -> int:
    """A Python int from an int, a NumPy integer or a concrete 0-d integer array."""
    return int(static_int_array(op, name, value, max_ndim=0))


def static_bool(op: str, name: str, value) -> bool:
    """A flag given as bool or 0/1."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    arr = static_array(op, name, value, _static_how(name))
    if arr.ndim != 0 or not (arr.dtype == np.bool_ or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise TypeError(f"{op}: `{name}` must be a bool or 0/1, got {value!r}")
    if int(arr) not in (0, 1):
        raise ValueError(f"{op}: `{name}` must be 0 or 1, got {int(arr)}")
    return bool(arr)


def axes_tuple(op: str, name: str, axes, ndim: int) -> tuple[int, ...]:
    """Normalised axes (sorted is not implied): int, sequence or 0-d/1-D integer array.

    Raises `numpy.exceptions.AxisError` (a `ValueError`) for an axis outside ``[-ndim, ndim-1]``
    and `ValueError` for a repeated axis. A Python int or tuple of ints (the usual spelling) is
    normalised once per (axes, rank) and then looked up: ~0.2 against ~4 us per eager call.
    """
    if type(axes) is int or (type(axes) is tuple and all(type(a) is int for a in axes)):
        return _cached_axes_tuple(op, name, axes, ndim)
    return _axes_tuple(op, name, axes, ndim)


def _axes_tuple(op: str, name: str, axes, ndim: int) -> tuple[int, ...]:
    arr = static_int_array(op, name, axes)
    values = tuple(int(a) for a in arr.reshape(-1))
    try:
        return normalize_axis_tuple(values, ndim, argname=name)
    except np.exceptions.AxisError as err:
        raise np.exceptions.AxisError(
            f"{op}: `{name}` {values} out of range [-{ndim}, {ndim - 1}] for data of rank {ndim} "
            f"({err})") from None
    except ValueError:
        raise ValueError(
            f"{op}: `{name}` {values} has a repeated axis; axes must be unique") from None


# Errors are raised, never cached; bools are excluded by the exact type checks above.
_cached_axes_tuple = functools.lru_cache(maxsize=4096)(_axes_tuple)


def int_tuple(op: str, name: str, value, length: int) -> tuple[int, ...]:
    """One int per spatial axis: an int (broadcast) or a sequence/array of exactly `length`."""
    arr = static_int_array(op, name, value)
    if arr.ndim == 0:
        return (int(arr),) * length
    if arr.shape[0] != length:
        raise ValueError(
            f"{op}: `{name}` must have one entry per spatial axis ({length}), got {arr.shape[0]}: "
            f"{arr.tolist()}")
    return tuple(int(v) for v in arr)


def choice(op: str, name: str, value, choices: Sequence[str]) -> str:
    """A string attribute, case-insensitive, returned in lower case."""
    if not isinstance(value, str):
        raise TypeError(f"{op}: `{name}` must be a string, one of {list(choices)}, got {value!r}")
    lowered = value.lower()
    if lowered not in choices:
        raise ValueError(f"{op}: `{name}` must be one of {list(choices)}, got {value!r}")
    return lowered
