"""Ordering keys: where the maximum is, for ArgMax and TopK on both faces (the NaN rule lives here).

An ordering key maps each element to a signed integer so that "selected earlier" is "larger key",
with ties broken by the lower index (``lax.top_k`` is index-stable, and the arg-max lowerings pick
the first maximal key). One key serves the indices, the values (gathered at those indices) and the
gradient (scattered at those indices), so all three follow the same rule.

For floating data every key is built from one map of the bits, :func:`monotone_bits`, never
from XLA's ``max`` (which drops NaN on CPU): the IEEE bits read as a signed integer of the same
width, with the magnitude bits of negative numbers flipped,

    monotone = bits ^ ((bits >> (width - 1)) & INT_MAX)

are in IEEE total order (``-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN``), and the map is its
own inverse (:func:`from_monotone_bits`). :func:`key` makes ``-0.0`` and ``+0.0`` one key (0, a
tie), which keeps every number inside ``[~inf_bits, inf_bits]``, and places every NaN (either
sign) by the ordering rule `nan_order`:

* ``"first"``: NaN gets ``INT_MAX``, selected before every number;
* ``"last"``: NaN gets ``INT_MIN``, selected after every number.

`nan_order` is where NaN ranks in the order asked for (descending, or ascending); the adapters
pass it (docs/semantics.md §6). For ascending order the numeric key is complemented
(``~key = -key - 1``, an exact reversal with no overflow) before NaN is placed.

Integers are their own numeric key (complemented for ascending order; that reverses unsigned
types too).

``lax.top_k`` is fast on CPU only for float32 (a dedicated kernel; XLA sorts other types), and
its float order is the IEEE total order. So :func:`top_k_key` gives a float32 key wherever that is
exact (float16, bfloat16, float32, integers of at most 16 bits): the integer key of the data as
float32, mapped back by :func:`ranked` (float32 bits whose total order is the key's order). Wider
types use the integer key.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

from jaxmax._src import dtypes

_SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def signed_bits_dtype(dtype) -> np.dtype:
    """The signed integer type as wide as `dtype`."""
    return np.dtype(_SIGNED[np.dtype(dtype).itemsize])


def unsigned_bits_dtype(dtype) -> np.dtype:
    """The unsigned integer type as wide as `dtype` (exact gathers of floating data)."""
    return np.dtype(_UNSIGNED[np.dtype(dtype).itemsize])


#: Where NaN ranks in the order a selection asks for (:func:`key`).
NAN_ORDERS = ("first", "last")


def monotone_bits(x: jax.Array) -> jax.Array:
    """The bits of floating `x` as a signed integer of its width, in IEEE total order (the one
    bit-order map every key is built from; see the module docstring)."""
    int_type = signed_bits_dtype(x.dtype)
    b = lax.bitcast_convert_type(x, int_type)
    return b ^ ((b >> (8 * int_type.itemsize - 1)) & np.array(np.iinfo(int_type).max, int_type))


def from_monotone_bits(m: jax.Array, dtype) -> jax.Array:
    """The inverse of :func:`monotone_bits`: `m` (signed, as wide as `dtype`) as `dtype`."""
    flipped = m ^ ((m >> (8 * m.dtype.itemsize - 1)) & np.array(np.iinfo(m.dtype).max, m.dtype))
    return lax.bitcast_convert_type(flipped, dtype)


def key(x: jax.Array, *, descending: bool, nan_order: str) -> jax.Array:
    """The ordering key of `x`: a signed (or, for unsigned data, unsigned) integer array of `x`'s
    shape; a larger key is selected earlier, equal keys go by index.

    `descending` orders numbers from the largest; `nan_order` (``"first"`` or ``"last"``) puts
    every NaN (either sign) before, or after, every number. ``-0.0`` and ``+0.0`` get the same key.
    """
    if nan_order not in NAN_ORDERS:
        raise ValueError(f"nan_order must be one of {NAN_ORDERS}, got {nan_order!r}")
    if dtypes.is_floating(x.dtype):
        int_type = signed_bits_dtype(x.dtype)
        info = np.iinfo(int_type)
        magnitude = lax.bitcast_convert_type(x, int_type) & np.array(info.max, int_type)
        numeric = jnp.where(magnitude == 0, np.array(0, int_type), monotone_bits(x))
        if not descending:
            numeric = ~numeric
        inf_bits = np.array(np.array(np.inf, x.dtype).view(int_type), int_type)
        nan_key = np.array(info.max if nan_order == "first" else info.min, int_type)
        return jnp.where(magnitude > inf_bits, nan_key, numeric)
    if dtypes.is_integer(x.dtype):
        return x if descending else ~x
    raise TypeError(f"no ordering key for dtype {x.dtype}")


def compare_key(x: jax.Array, *, nan_order: str) -> jax.Array:
    """A key in the order of ``key(x, descending=True, nan_order=nan_order)``, cheaper to
    compute, for comparisons only: its values differ (a negative number's key is one larger, so
    that ``-0.0`` meets ``+0.0`` at 0), so it is never mapped back (:func:`ranked`). The one
    comparison key: every ArgMax fold and MaxPool's compact pairs compare it.

    All on the integer bits: a negative number's key is ``(bits ^ INT_MAX) + 1`` (its magnitude
    negated, so ``-0.0`` meets ``+0.0`` at 0), computed as ``(bits ^ (sign & INT_MAX)) - sign``
    with ``sign = bits >> (width - 1)``, and NaN is a magnitude above infinity's bits (no float
    compare): a fold that keys every element it reads spends four integer operations and a
    compare on it before the NaN select, where ``key`` spends eight (the monotone bits with the
    ``-0.0`` fix as a subtraction and NaN found by ``x != x``, five and a float compare, the
    key of the pairs, the blocked and lane folds and the compact pairs until it was replaced
    by this one, runs within 5% of it on each: benchmarks/order_key_ab.py).
    """
    if nan_order not in NAN_ORDERS:
        raise ValueError(f"nan_order must be one of {NAN_ORDERS}, got {nan_order!r}")
    if not dtypes.is_floating(x.dtype):
        return key(x, descending=True, nan_order=nan_order)
    int_type = signed_bits_dtype(x.dtype)
    info = np.iinfo(int_type)
    b = lax.bitcast_convert_type(x, int_type)
    sign = b >> (8 * int_type.itemsize - 1)
    numeric = (b ^ (sign & np.array(info.max, int_type))) - sign
    magnitude = b & np.array(info.max, int_type)
    inf_bits = np.array(np.array(np.inf, x.dtype).view(int_type), int_type)
    # lax.select, not jnp.where: a jitted wrapper would be one more function in the program of
    # every new shape (MaxPool's compact form keys inside its reduction)
    nan_key = lax.full_like(numeric, info.max if nan_order == "first" else info.min)
    return lax.select(magnitude > inf_bits, nan_key, numeric)


def top_k_key(x: jax.Array, *, descending: bool, nan_order: str) -> jax.Array:
    """The key for ``lax.top_k``: as :func:`key`, but a float32 array ordered by IEEE total
    order wherever float32 holds every value of `x` exactly (float16, bfloat16, float32,
    integers of at most 16 bits); :func:`key` otherwise."""
    exact = (x.dtype.itemsize <= 2 or x.dtype == np.float32) and (
        dtypes.is_floating(x.dtype) or dtypes.is_integer(x.dtype))
    if not exact:
        return key(x, descending=descending, nan_order=nan_order)
    if dtypes.is_floating(x.dtype):
        x = x.astype(np.float32)
        if descending:
            return _descending_float32_key(x, nan_order)
    return ranked(key(x, descending=descending, nan_order=nan_order))


def _descending_float32_key(x: jax.Array, nan_order: str) -> jax.Array:
    """``ranked(key(x, descending=True, ...))`` of float32 `x` in fewer operations (6 instead
    of 14, in every new shape's program): each number itself, ``+0.0`` for either zero, and for
    NaN the float32 whose total order is above (``"first"``) or below (``"last"``) every
    number, as `ranked` maps the key's extremes. Zero and NaN are found on the bits, where
    XLA's CPU float compare would take a subnormal for zero."""
    magnitude = lax.bitcast_convert_type(x, np.int32) & np.int32(0x7FFFFFFF)
    nan_bits = np.int32(0x7FFFFFFF) if nan_order == "first" else np.int32(-1)
    nan = lax.full(x.shape, np.array(nan_bits).view(np.float32), np.float32)
    keys = lax.select(magnitude == np.int32(0), lax.full(x.shape, 0.0, np.float32), x)
    inf_bits = np.int32(np.array(np.inf, np.float32).view(np.int32))
    return lax.select(magnitude > inf_bits, nan, keys)


def ranked(keys: jax.Array) -> jax.Array:
    """An integer key of at most 32 bits as float32 whose IEEE total order (``lax.top_k``'s) is
    the key's order. The comparisons are on the bits: XLA's CPU float compare and negate would
    flush subnormals to zero, which ``lax.top_k`` does not."""
    if keys.dtype == np.uint32:
        k = lax.bitcast_convert_type(keys ^ np.uint32(1 << 31), np.int32)
    else:
        k = keys.astype(np.int32)
    return from_monotone_bits(k, np.float32)


def bits(x: jax.Array) -> jax.Array:
    """`x` as unsigned integers of its width (floating data), or `x` itself: the form gathers
    and scatters keep every bit of (zero signs, NaN payloads) on any sharding."""
    if dtypes.is_floating(x.dtype):
        return lax.bitcast_convert_type(x, unsigned_bits_dtype(x.dtype))
    return x


def magnitude_bits(x: jax.Array) -> jax.Array:
    """The bits of floating `x` but the sign, unsigned: 0 for ``±0``; read from the bits
    because XLA's CPU float compare flushes subnormals to zero."""
    mask = (1 << (8 * np.dtype(x.dtype).itemsize - 1)) - 1
    b = bits(x)
    return lax.bitwise_and(b, np.array(mask, b.dtype))


def is_subnormal(x: jax.Array) -> jax.Array:
    """Whether each element of floating `x` is subnormal, read from the bits (a flushing float
    compare reads a subnormal as zero)."""
    m = magnitude_bits(x)
    return (m > 0) & (m < smallest_normal_bits(x.dtype))


def inf_bits(dtype) -> np.ndarray:
    """The bits of +inf of floating `dtype`: a magnitude above it is a NaN."""
    return np.array(np.inf, dtype).view(unsigned_bits_dtype(dtype))


def smallest_normal_bits(dtype) -> np.ndarray:
    """The magnitude bits of the smallest normal number of floating `dtype`."""
    tiny = np.array(ml_dtypes.finfo(dtype).tiny, dtype)
    return tiny.view(unsigned_bits_dtype(dtype))


def from_bits(b: jax.Array, dtype) -> jax.Array:
    """The inverse of :func:`bits`."""
    if dtypes.is_floating(dtype):
        return lax.bitcast_convert_type(b, dtype)
    return b


def nan_top_key(x: jax.Array) -> jax.Array:
    """A signed integer of `x`'s width in the IEEE total order of the bits (``-0 < +0``), every
    NaN (either sign, any payload) moved to the one top key, so that a strict ``>`` keeps the
    earlier of two NaN. Orders as float compares do on values that are not subnormal (XLA:CPU's
    compares read a subnormal as zero)."""
    m = monotone_bits(x)
    return lax.select(x != x, lax.full_like(m, np.iinfo(m.dtype).max), m)


def equal_values(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a == b`` with NaN equal to NaN and ``-0 == +0``."""
    return (a == b) | (jnp.isnan(a) & jnp.isnan(b))


def select(pred: jax.Array, on_true, on_false) -> jax.Array:
    """``where(pred, on_true, on_false)`` as one ``lax.select``, a scalar broadcast to `pred`'s
    shape (in the other operand's dtype when only one is an array): ``jnp.where`` lowers each
    call to a call of a jitted wrapper with its own broadcasts and converts, code that every
    tap of a pooling (and every stage of a scatter rule) repeats, and tracing is part of every
    compile."""
    t, f = jnp.asarray(on_true), jnp.asarray(on_false)
    dtype = f.dtype if t.ndim == 0 and f.ndim else t.dtype
    t, f = (lax.broadcast(v.astype(dtype), pred.shape) if v.ndim == 0 else v for v in (t, f))
    return lax.select(pred, t, f)


def select_bits(pred, a, b) -> jax.Array:
    """``where(pred, a, b)`` on the bits: next to a bit test, a float select may be compiled
    into a float compare, which flushes subnormals to zero."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    return from_bits(jnp.where(pred, bits(a), bits(b)), a.dtype)
