"""Values each held by one device, combined across devices exactly.

Where one device computes each element (the device that holds an image, a window's input
element, an update's target) and every other contributes nothing, a float all-reduce that adds
is exact but for zero signs: ``-0.0 + 0.0`` is ``+0.0``. Summed as their integer bits (every
other device adding 0) the values arrive bit for bit. Inside ``jax.shard_map`` or a planned
call (:mod:`jaxmax._src.auto_partition`); not differentiable.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from jaxmax._src.lowering import order


def owner_sum(v: jax.Array, names: tuple[str, ...], mine: jax.Array | None = None) -> jax.Array:
    """`v` from the device that holds each element, summed across the devices of mesh axes
    `names` as integer bits: where `mine` (broadcast against `v`), or, without it, `v` itself
    zero on every device but its owner's."""
    bits = order.bits(v)
    if mine is not None:
        bits = jnp.where(mine, bits, jnp.zeros((), bits.dtype))
    return order.from_bits(lax.psum(bits, names), v.dtype)
