"""Elementwise maxima of arrays that already agree in dtype and broadcast (spec-agnostic).

Two rules:

* `ieee_maximum`: the IEEE-754 ``maximum`` of every input, folded left to right (``lax.max``,
  what ``jnp.maximum`` emits): NaN propagates and ``max(-0.0, +0.0)`` is ``+0.0`` in either
  order. NumPy broadcasting.
* `select_maximum`: ``a < b ? b : a``, a select on one comparison: a NaN in `a` wins (the
  comparison is false), a NaN in `b` loses, a tie (``-0.0`` against ``+0.0`` included) keeps
  `a`. NumPy broadcasting; the adapters check the stricter shape rules beforehand.

Both are single XLA fusions; nothing here validates.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxmax._src import explicit_axes
from jaxmax._src.lowering import compile_options


@compile_options.jit
def ieee_maximum(*arrays: jax.Array) -> jax.Array:
    """``maximum(...maximum(maximum(x0, x1), x2)..., xn)`` broadcast NumPy-style; one input is
    returned as it is. The derivative is ``jnp.maximum``'s at each step (a tie splits evenly)."""
    return functools.reduce(jnp.maximum, arrays)


@compile_options.jit
def select_maximum(a: jax.Array, b: jax.Array) -> jax.Array:
    """``where(a < b, b, a)`` broadcast NumPy-style; the cotangent goes to `b` where ``a < b``
    and to `a` everywhere else (NaN and ties included)."""
    # On Explicit mesh axes a select needs one sharding for its three operands, which a and b
    # sharded differently (or one replicated) lack: the comparison's broadcast sharding is
    # stated as the output's, the select runs with those axes Auto. Elsewhere: one fusion.
    return explicit_axes.run(lambda a, b: jnp.where(a < b, b, a), (a, b),
                             lambda mesh: explicit_axes.spec_of(a < b))
