"""Floating max-scatters whose combiner reads the bits: exact orders in one pass over `updates`.

XLA's float scatter-max on CPU flushes a subnormal result to zero, and a scatter of computed
values (an ordered integer key of every update) makes XLA write that array out first, a pass
over the updates as costly as the scatter itself. Here the combiner does the work: XLA calls it
as ``(current value, update)`` with the update's raw bits, and the current value holds an
ordered key (the operand is keyed before the scatter and decoded after it, both
operand-sized). So one scatter of the unmodified `updates` gives, on every input:

* ``"ieee_max"``: the IEEE-754-2019 ``maximum`` (NaN of either sign on top, ``+0`` above
  ``-0``, subnormals kept);
* ``"max_skip_nan"``: the same with every NaN *update* below every number, so NaN updates never
  win (a NaN operand value is the caller's to keep);
* ``"bits_min"``: the minimum of the raw bits read as signed integers: the sign-bit pattern
  alone (``-0``) is the smallest, so a result equal to it says a ``-0`` reached the target.

Keys: `order.monotone_bits` (the bits as a signed integer in IEEE total order, ``-NaN``
lowest), viewed unsigned and shifted by a constant (wrapping) so that the
NaNs land above ``+inf`` (``"ieee_max"``) or below ``-inf`` (``"max_skip_nan"``); a wrapping shift
keeps the order of the numbers. Only integer operations touch the values, so nothing flushes.

The combiner is bound through JAX's private scatter primitive
(:mod:`jaxmax._src.lowering.scatter.private`, as SegmentMax's is), whose `available` decides
once whether it works here; `supports` asks it, and callers keep a public form for a JAX
without it.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
from jax import lax

from jaxmax._src.lowering import order
from jaxmax._src.lowering.scatter import private as private_scatter

KINDS = ("ieee_max", "max_skip_nan", "bits_min")


def supports(dtype) -> bool:
    """Whether `dtype` takes these scatters: float32 and float64. XLA's CPU computes 16-bit
    floats in float32, and the conversions quiet a NaN's bits, which a key may be."""
    return np.dtype(dtype).itemsize in (4, 8) and private_scatter.available()


def scatter(kind: str, operand: jax.Array, index: jax.Array, values: jax.Array,
            numbers: lax.ScatterDimensionNumbers) -> jax.Array:
    """`operand` combined by `kind` with the floating `values` at `index` (out-of-range targets
    dropped), with XLA's scatter dimension `numbers`."""
    dtype = np.dtype(operand.dtype)
    if kind == "bits_min":
        return private_scatter.bind(_bits_min(dtype), operand, index, values, numbers)
    start = lax.bitcast_convert_type(_key(operand, kind), dtype)
    out = private_scatter.bind(_keyed_max(kind, dtype), start, index, values, numbers)
    return _unkey(lax.bitcast_convert_type(out, order.unsigned_bits_dtype(dtype)), kind, dtype)


def _shift(kind: str, dtype: np.dtype):
    """The unsigned constant subtracted from a flipped key: the key of -inf for ``ieee_max``
    (NaN then wraps above +inf), one past that of +inf for ``max_skip_nan`` (NaN below -inf)."""
    signed, unsigned = order.signed_bits_dtype(dtype), order.unsigned_bits_dtype(dtype)
    edge = np.array(-np.inf if kind == "ieee_max" else np.inf, dtype).view(signed)
    flipped = edge ^ ((edge >> (8 * dtype.itemsize - 1)) & np.iinfo(signed).max)
    return np.array(flipped.view(unsigned) + (0 if kind == "ieee_max" else 1), unsigned)


def _key(x, kind: str):
    dtype = np.dtype(x.dtype)
    return (lax.bitcast_convert_type(order.monotone_bits(x), order.unsigned_bits_dtype(dtype))
            - _shift(kind, dtype))


def _unkey(k, kind: str, dtype: np.dtype):
    signed = lax.bitcast_convert_type(k + _shift(kind, dtype), order.signed_bits_dtype(dtype))
    return order.from_monotone_bits(signed, dtype)


@functools.cache
def _keyed_max(kind: str, dtype: np.dtype):
    unsigned = order.unsigned_bits_dtype(dtype)

    def combine(current, update):
        # `current` holds a key already; the update's key is a few integer operations on its
        # bits, and the max of keys vectorises where a select would not
        held = lax.bitcast_convert_type(current, unsigned)
        return lax.bitcast_convert_type(lax.max(held, _key(update, kind)), dtype)

    return combine


@functools.cache
def _bits_min(dtype: np.dtype):
    signed = order.signed_bits_dtype(dtype)

    def combine(current, update):
        low = lax.min(lax.bitcast_convert_type(current, signed),
                      lax.bitcast_convert_type(update, signed))
        return lax.bitcast_convert_type(low, dtype)

    return combine
