"""Tangents: the pooled values as one ``jax.custom_jvp`` function whose tangent is each window's
winner's.

Stage five of the pooling pipeline (:mod:`~jaxmax._src.lowering.pooling.max_pool`): `pooled` is
the values of :mod:`~jaxmax._src.lowering.pooling.values` (entered at one place, `_value`) with,
for floating data, a tangent rule that gathers the input tangent at each window's winner
(:mod:`~jaxmax._src.lowering.pooling.winners`), zero without one. The tangent is linear in the
input tangent, so forward mode, reverse mode (JAX transposes the rule), ``vmap`` and ``jit`` all
work, dilated and 3-D windows included, where ``lax.reduce_window`` has no derivative. The
tangent reads the phase pieces of the input tangent (``pool_taps.phase_pieces``), so its
transpose interleaves them back in one pass.

Under ``nan="skip"`` the derivative is that of pooling the clamped input
``where(x >= lowest, x, lowest)``: each window's tangent comes from its first maximal clamped
element, padding counted; a NaN or ``-inf`` input, and padding, pass none. Windows of more than
`_ONE_STAGE_MAX_TAPS` taps are differentiated in two stages (``Geometry.two_stages``), the
inner axes first, each with few taps: the first maximal element composes, so the two-stage
derivative is the one-stage one, ties included.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import rules
from jaxmax._src.lowering.pooling import taps as pool_taps
from jaxmax._src.lowering.pooling import values as pool_values
from jaxmax._src.lowering.pooling import winners as pool_winners
from jaxmax._src.lowering.pooling.geometry import Geometry
from jaxmax._src.lowering.pooling.scan import select

__all__ = ["gather_tangent", "pooled"]

# Up to this many taps the tangent is a chain of selects; beyond, a sum of masked taps: the
# chain is faster in forward mode for small windows, the sum transposes faster for large ones.
_CHAIN_MAX_TAPS = 9

# A window with more taps than this is differentiated in two stages, its value computed in one:
# the gradient of 27 winner taps and a 27-term tangent is slower than two stages of a few taps.
_ONE_STAGE_MAX_TAPS = 16


def gather_tangent(t: jax.Array, winner: jax.Array, g: Geometry) -> jax.Array:
    """The tangent of each window's selected tap (zero when it is padding or `winner` is not a
    tap index): linear in `t`."""
    pieces = pool_taps.phase_pieces(t, g)
    zero = np.zeros((), t.dtype)
    chain = len(g.taps) <= _CHAIN_MAX_TAPS
    out = jnp.zeros(g.out_shape, t.dtype)
    for j, tap in enumerate(g.taps):
        if 0 in tap.counts:
            continue
        value = pool_taps.piece_tap(pieces, g, tap)
        if chain:
            out = select(winner == j, value, out)
        else:
            out = out + select(winner == j, value, zero)
    return out


def _value(x: jax.Array, g: Geometry, nan: str, keep: bool) -> jax.Array:
    """The pooled values of `x` (:mod:`~jaxmax._src.lowering.pooling.values`, the one call into
    that stage); with `keep`, as an array in memory (`_in_memory`)."""
    out = pool_values.pooled(x, g, nan)
    if keep and out.size:
        out = _in_memory(out, lambda: pool_values.pooled(x, g, nan))
    return out


def _in_memory(v: jax.Array, recompute) -> jax.Array:
    """`v`, as the carry of a ``while_loop`` of zero trips (its predicate reads one element of
    `v`, NaN in no value of the rule ``"skip"``, which XLA cannot know; the body would
    `recompute` it): an array XLA keeps in memory, where a plain value would be fused into, and
    recomputed by, each of its readers (``optimization_barrier`` is removed on CPU; a loop whose
    body returns its carry is simplified away)."""
    return rules.redo_if(jnp.isnan(v.reshape(-1)[0]), v, recompute)


@partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3, 4))
def _pooled(x: jax.Array, g: Geometry, nan: str, stages, keep: bool) -> jax.Array:
    """The values of `x` (`_value`) with the winner's tangent; with `stages` (``"skip"``
    windows of many taps: ``Geometry.two_stages``), the derivative is that of the two stages
    (the same function; each stage's derivative has few taps)."""
    return _value(x, g, nan, keep)


@_pooled.defjvp
def _pooled_jvp(g, nan, stages, keep, primals, tangents):
    if stages is not None:
        first, second = stages

        def two_stages(v):
            # stage 1's result in memory: stage 2's taps and winners read it, not recompute it
            return _pooled(_pooled(v, first, nan, None, True), second, nan, None, False)

        return jax.jvp(two_stages, primals, tangents)
    (x,), (t,) = primals, tangents
    # The value is the custom_jvp function itself (its while_loop is never differentiated).
    out = _pooled(x, g, nan, None, keep)
    if 0 in g.out_shape:
        return out, jnp.zeros(g.out_shape, t.dtype)
    winner = pool_winners.winner(lax.stop_gradient(x), g, lax.stop_gradient(out), nan)
    return out, gather_tangent(t, winner, g)


def pooled(x: jax.Array, g: Geometry, nan: str) -> jax.Array:
    """``pool_values.pooled(x, g, nan)``, differentiable for floating `x` (see the module).

    Under ``"skip"`` the value involves no reduction, so no NaN check, even for sharded inputs
    (where a cross-device max may drop a NaN).
    """
    if not dtypes.is_floating(x.dtype):
        return _value(x, g, nan, False)
    many = nan == "skip" and len(g.taps) > _ONE_STAGE_MAX_TAPS
    return _pooled(x, g, nan, g.two_stages if many else None, False)
