"""The sign of a zero maximum, settled from the data: ReduceMax's rule for ``-0.0``/``+0.0``.

XLA's float ``reduce_max`` (and the cross-device max that combines partial results when a reduced
axis is sharded) returns whichever zero its order of combination meets last when a slice's
maximum is a zero reached by both signs: on CPU the sign changed with the row length (a 256-long
row gave the other zero than an 8-long one) and with the sharding. The two faces fix it
(docs/semantics.md §3.1 and §4):

* ``nan="propagate"`` (ONNX): ``+0.0`` is above ``-0.0``, the IEEE 754-2019 maximum: a zero
  result is ``+0.0`` when the slice holds a ``+0.0``, else ``-0.0``;
* ``nan="skip"`` (OpenVINO): the reference fold ``acc = x > acc ? x : acc`` keeps the first zero
  it meets in row-major order over the reduced axes.

`settle` recomputes the sign of the zero results only when some result is a zero (a
``lax.cond`` on a scalar: results without a zero pass through, an output-sized copy), reading the
data's bits: zeros are found by their magnitude bits, never by a float compare (XLA's CPU
compare takes a subnormal for zero).
The first zero is the minimum of ``2 * position + sign bit`` over the zeros, an integer
reduction, exact in any order and across devices. The value's derivative is the reduction's
(the sign of a zero carries no tangent).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import order

__all__ = ["settle"]


def settle(x: jax.Array, axes: tuple[int, ...], out: jax.Array, nan: str) -> jax.Array:
    """`out` (the max of floating `x` over `axes`, without kept axes) with the sign of every
    zero result settled by the rule `nan` (see the module)."""
    if not dtypes.is_floating(x.dtype) or not axes or x.size == 0:
        return out
    return _with_value(out, lax.stop_gradient(_settled(lax.stop_gradient(x), axes,
                                                       lax.stop_gradient(out), nan)))


@jax.custom_jvp
def _with_value(out, value):
    return value


@_with_value.defjvp
def _with_value_jvp(primals, tangents):
    # the primal through _with_value again, so that a derivative of this rule is out's too
    return _with_value(*primals), tangents[0]


def _magnitude_is_zero(bits: jax.Array) -> jax.Array:
    return (bits << bits.dtype.type(1)) == bits.dtype.type(0)


def _settled(x: jax.Array, axes: tuple[int, ...], out: jax.Array, nan: str) -> jax.Array:
    out_bits = order.bits(out)
    zero_out = _magnitude_is_zero(out_bits)

    def signs() -> jax.Array:
        bits = order.bits(x)
        zero = _magnitude_is_zero(bits)
        if nan == "propagate":
            negative = ~lax.reduce_or(bits == bits.dtype.type(0), axes)  # no +0.0 in the slice
        else:
            negative = _first_zero_negative(bits, zero, axes)
        sign = bits.dtype.type(1) << bits.dtype.type(8 * bits.dtype.itemsize - 1)
        settled = jnp.where(negative, sign, bits.dtype.type(0))
        return order.from_bits(jnp.where(zero_out, settled, out_bits), out.dtype)

    return lax.cond(jnp.any(zero_out), signs, lambda: out)


def _first_zero_negative(bits: jax.Array, zero: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    """Whether the first zero of each slice, in row-major order over `axes`, is ``-0.0``."""
    count = math.prod(x for i, x in enumerate(bits.shape) if i in axes)
    wide = 2 * count + 1 > np.iinfo(np.int32).max
    pos = jax.dtypes.canonicalize_dtype(np.int64 if wide else np.int32)
    position = jnp.zeros(bits.shape, pos)
    stride = 1
    for axis in sorted(axes, reverse=True):
        position = position + lax.broadcasted_iota(pos, bits.shape, axis) * pos.type(stride)
        stride *= bits.shape[axis]
    sign = (bits >> bits.dtype.type(8 * bits.dtype.itemsize - 1)).astype(pos)
    none = np.array(np.iinfo(pos).max, pos)
    first = lax.reduce_min(jnp.where(zero, position * pos.type(2) + sign, none), axes)
    return (first & pos.type(1)) == pos.type(1)
