"""Static-argument canonicalisers and error helpers.

Everything here runs in Python before anything is traced or computed. Each function takes the
operator's display name (``"ReduceMax-1"``) and the argument's spec name, and raises a
``TypeError`` (wrong kind) or ``ValueError`` (wrong value) whose message starts with the operator
name and names the argument.
"""

from __future__ import annotations

import functools
import math
import warnings
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

_INT64 = np.iinfo(np.int64)
_X64_HOW = "enable 64-bit mode with jax.config.update('jax_enable_x64', True)"


def holds_whole(x: jax.Array) -> bool:
    """Whether this process holds every element of the JAX array `x` (on its own devices).

    Decided from `x`'s sharding and shape alone, which every process of a multi-process job
    shares for a global array, so that all of them take the same branch: an array sharded over
    the devices of several processes is held whole by none (unless each holds a full replica),
    an array of one process's devices by that process.
    """
    if x.is_fully_addressable or x.is_fully_replicated:
        return True
    blocks = {tuple(s.indices(n) for s, n in zip(index, x.shape, strict=True))
              for index in x.sharding.addressable_devices_indices_map(x.shape).values()
              if index is not None}
    return sum(math.prod(len(range(*b)) for b in block) for block in blocks) == x.size


def known_value(x) -> np.ndarray | None:
    """The values of array argument `x` when every process can read them now, else None.

    The one rule for every concrete-value check (index and id ranges, sorted ids, the number of
    segments, the scatter layout): a tracer, or a global array that this process does not hold
    whole (`holds_whole`: sharded over other processes' devices), is not known, and the
    argument is treated as traced (docs/semantics.md §2, §9.1). Reading a part would give each
    process a different answer, and the processes would then compile different programs or
    raise in some of them only.
    """
    if isinstance(x, jax.core.Tracer) or (isinstance(x, jax.Array) and not holds_whole(x)):
        return None
    return np.asarray(x)


def _numpy(op: str, name: str, value, how: str) -> np.ndarray:
    """``np.asarray(value)`` with every failure turned into the contract's prefixed error."""
    unknown = (f"{op}: `{name}` must be static (a Python value or a concrete array) because it "
               f"decides the output shape, but it is traced")
    if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer) \
            and not holds_whole(value):
        raise TypeError(f"{unknown} (a global array sharded over other processes' devices, "
                        f"which this process cannot read); {how}")
    try:
        return np.asarray(value)
    except TRACER_ERRORS:
        raise TypeError(f"{unknown}; {how}") from None
    except OverflowError as err:  # Python ints NumPy cannot hold in any integer type
        raise ValueError(f"{op}: `{name}` holds an integer outside int64: {err}") from None
    except ValueError as err:  # ragged nesting
        raise ValueError(f"{op}: `{name}` must be a number or a rectangular (not ragged) "
                         f"sequence of numbers, got {_short(value)} ({err})") from None
    except TypeError as err:
        raise TypeError(f"{op}: `{name}` must be an array of numbers, got "
                        f"{type(value).__name__}: {err}") from None


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_survives_canonicalisation(op: str, name: str, arr: np.ndarray) -> None:
    """Raise when JAX would store concrete 64-bit `arr` in 32 bits with changed values.

    Without ``jax_enable_x64`` JAX keeps int64/uint64/float64 as int32/uint32/float32. Integers
    out of the 32-bit range would wrap and finite floats beyond float32's range would become
    infinite: both silently wrong, so they raise. Floats that only round follow JAX's policy.
    """
    stored = jax.dtypes.canonicalize_dtype(arr.dtype)
    if stored == arr.dtype or arr.size == 0:
        return
    if arr.dtype.kind in "iu":
        info = np.iinfo(stored)
        low, high = arr.min(), arr.max()
        if low < info.min or high > info.max:
            bad = low if low < info.min else high
            raise ValueError(
                f"{op}: `{name}` holds {arr.dtype} value {bad} outside the {stored} range "
                f"[{info.min}, {info.max}], and JAX stores {arr.dtype} as {stored} unless "
                f"64-bit mode is on; {_X64_HOW}")
    elif arr.dtype.kind == "f":
        with np.errstate(over="ignore"):
            overflow = np.isinf(arr.astype(stored)) & np.isfinite(arr)
        if overflow.any():
            bad = arr[overflow].flat[0]
            raise ValueError(
                f"{op}: `{name}` holds {arr.dtype} value {bad} beyond the {stored} range, "
                f"which JAX would store as infinity ({arr.dtype} is kept as {stored} unless "
                f"64-bit mode is on); {_X64_HOW}")


def host_data(op: str, data, name: str = "data", empty_dtype=None) -> np.ndarray | jax.Array:
    """`data` checked as an array argument: JAX arrays and tracers are returned unchanged, the
    rest as a NumPy array.

    NumPy reads the value first, so that a ragged list or an object raises the contract's
    `TypeError`, and 64-bit values that JAX would silently change raise `ValueError`. An empty
    Python list or tuple gets `empty_dtype` when given (NumPy would make it float64). A list
    that holds tracers (``[x, y]`` under ``jit``) is stacked by JAX as before; its values
    cannot be checked.
    """
    if isinstance(data, jax.Array):
        return data
    try:
        arr = np.asarray(data)
    except TRACER_ERRORS:
        try:
            return jnp.asarray(data)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{op}: `{name}` must be an array of numbers, got "
                            f"{_short(data)}: {err}") from None
    except ValueError as err:  # ragged nesting: not an array at all
        raise TypeError(f"{op}: `{name}` must be an array of numbers (a rectangular nesting), "
                        f"got {_short(data)} ({err})") from None
    except (OverflowError, TypeError):
        arr = _numpy(op, name, data, "")  # raises the contract's error
    if (empty_dtype is not None and arr.size == 0 and arr.dtype == np.float64
            and not isinstance(data, np.ndarray)):
        arr = arr.astype(empty_dtype)
    if not (jnp.issubdtype(arr.dtype, jnp.number) or arr.dtype == np.bool_):
        raise TypeError(f"{op}: `{name}` must be an array of numbers, got dtype {arr.dtype}: "
                        f"{_short(data)}")
    _check_survives_canonicalisation(op, name, arr)
    return arr


def on_device(data: np.ndarray | jax.Array) -> jax.Array:
    """A checked host array as a JAX array: a transfer (``jnp.asarray`` of a NumPy array compiles
    an identity program for every new shape, a second compilation on each eager call)."""
    return jax.device_put(data) if isinstance(data, np.ndarray) else jnp.asarray(data)


def as_data(op: str, data, name: str = "data") -> jax.Array:
    """`data` as a JAX array, checked as `host_data` does."""
    data = host_data(op, data, name)
    if isinstance(data, jax.Array):
        return data
    try:
        return on_device(data)
    except (TypeError, ValueError) as err:  # a NumPy dtype JAX has no type for (longdouble)
        raise TypeError(f"{op}: `{name}` dtype {data.dtype} is not a JAX type: "
                        f"{_short(str(err))}") from None


def numeric_data(op: str, data, name: str = "data") -> jax.Array:
    """`data` as a JAX array of a real or integer dtype (the OpenVINO max operators' T)."""
    data = as_data(op, data, name)
    if not dtypes.is_real_or_integer(data.dtype):
        kind = "bool data is not allowed" if dtypes.is_bool(data.dtype) else f"got {data.dtype}"
        raise TypeError(f"{op}: `{name}` must have a real or integer dtype; {kind}")
    return data


def _static_how(name: str) -> str:
    return (f"pass it as a Python value, or mark it static with "
            f"jax.jit(..., static_argnames=('{name}',))")


def static_int_array(op: str, name: str, value, *, max_ndim: int = 1,
                     how: str | None = None) -> np.ndarray:
    """An int64 array of rank <= `max_ndim` (bools are rejected).

    Integers outside int64 raise `ValueError`: ONNX and StableHLO attributes are int64.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: `{name}` must be integer, got a bool")
    arr = _numpy(op, name, value, _static_how(name) if how is None else how)
    if arr.size == 0 and arr.dtype == np.float64 and not isinstance(value, np.ndarray):
        arr = arr.astype(np.int64)  # an empty Python list or tuple
    if arr.dtype == object and all(type(a) is int for a in arr.flat):
        raise ValueError(f"{op}: `{name}` holds an integer outside int64: {_short(value)}")
    if not jnp.issubdtype(arr.dtype, jnp.integer):
        raise TypeError(f"{op}: `{name}` must be integer, got dtype {arr.dtype}: {_short(value)}")
    if arr.ndim > max_ndim:
        raise ValueError(f"{op}: `{name}` must have rank <= {max_ndim}, got shape {arr.shape}")
    if arr.dtype == np.uint64 and arr.size and arr.max() > _INT64.max:
        raise ValueError(f"{op}: `{name}` holds an integer outside int64: {_short(value)}")
    return arr.astype(np.int64)


def static_int(op: str, name: str, value) -> int:
    """A Python int from an int, a NumPy integer or a concrete 0-d integer array."""
    return int(static_int_array(op, name, value, max_ndim=0))


def static_bool(op: str, name: str, value) -> bool:
    """A flag given as bool or 0/1."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    arr = _numpy(op, name, value, _static_how(name))
    if arr.ndim != 0 or not (arr.dtype == np.bool_ or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise TypeError(f"{op}: `{name}` must be a bool or 0/1, got {_short(value)}")
    if arr.dtype == np.bool_:
        return bool(arr)
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
    if any(not -ndim <= a < ndim for a in values):
        raise np.exceptions.AxisError(
            f"{op}: `{name}` {values} out of range [-{ndim}, {ndim - 1}] for data of rank {ndim}")
    try:
        return normalize_axis_tuple(values, ndim, argname=name)
    except ValueError:  # the range is checked above: a repeated axis
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
    """A string attribute, case-insensitive (as OpenVINO's attribute parser), in lower case."""
    if not isinstance(value, str):
        raise TypeError(
            f"{op}: `{name}` must be a string, one of {list(choices)} (any case), got "
            f"{_short(value)}")
    lowered = value.lower()
    if lowered not in choices:
        raise ValueError(
            f"{op}: `{name}` must be one of {list(choices)} (any case), got {value!r}")
    return lowered


def index_dtype(op: str, name: str, requested, count: int) -> np.dtype:
    """The dtype indices into `count` elements are computed in: `requested` (int32 or int64) as
    JAX stores it (int64 is int32 without ``jax_enable_x64``, with a warning, as JAX gives);
    `ValueError` when the largest index does not fit."""
    requested = np.dtype(requested)
    stored = np.dtype(jax.dtypes.canonicalize_dtype(requested))
    if stored != requested:  # say so, as JAX does when an unavailable dtype is asked for
        warnings.warn(f"{op}: `{name}` asks for {requested} indices, which JAX stores as "
                      f"{stored} unless 64-bit mode is on ({_X64_HOW})", UserWarning,
                      stacklevel=3)
    if count - 1 > np.iinfo(stored).max:
        hint = f"; {_X64_HOW}" if stored != requested else ""
        raise ValueError(
            f"{op}: `{name}` would index {count} elements, more than {stored} can count{hint}")
    return stored


def positions_fit(op: str, name: str, count: int) -> None:
    """`ValueError` when positions along an axis of `count` elements, which an operator numbers
    internally (Hardmax's first maximum), do not fit the integer JAX stores: int32 without
    ``jax_enable_x64``."""
    stored = np.dtype(jax.dtypes.canonicalize_dtype(np.int64))
    if count - 1 > np.iinfo(stored).max:
        raise ValueError(f"{op}: `{name}` has {count} elements along the axis, more than "
                         f"{stored} can count; {_X64_HOW}")


_INDEX_TYPES: dict[str, np.dtype] = {"i32": np.dtype(np.int32), "i64": np.dtype(np.int64)}


def index_element_type(op: str, value) -> np.dtype:
    """`index_element_type` as int32 or int64: ``"i32"``/``"i64"`` (any case) or the dtype."""
    if isinstance(value, str):
        name = choice(op, "index_element_type", value, tuple(_INDEX_TYPES))
        return _INDEX_TYPES[name]
    try:
        dtype: np.dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"{op}: `index_element_type` must be 'i32', 'i64' or an integer dtype, "
                        f"got {value!r}") from None
    if dtype not in _INDEX_TYPES.values():
        raise ValueError(
            f"{op}: `index_element_type` must be int32 or int64 ('i32'/'i64'), got {dtype}")
    return dtype


def static_float(op: str, name: str, value) -> float:
    """A Python float from a real number or a concrete 0-d real array (bools are rejected); a
    traced value raises the `TypeError` that names the argument."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: `{name}` must be a real number, got a bool")
    arr = _numpy(op, name, value, _static_how(name))
    if arr.ndim != 0 or not (jnp.issubdtype(arr.dtype, jnp.floating)
                             or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise TypeError(f"{op}: `{name}` must be a real number, got {_short(value)}")
    return float(arr)
