"""Range maxima over rectangles of an image by a 2-D sparse table.

Level ``(a, b)`` of the table (stored at ``b * a_count + a``) holds, at ``(h, w)``, the combination
of the ``2**a x 2**b`` block starting there. A rectangle ``[h0, h1) x [w0, w1)`` is then the
combination of four (overlapping) blocks of levels ``floor(log2(h1 - h0))`` and ``floor(log2(w1 -
w0))``, so any bin costs four lookups whatever its size. This needs a combination that is
associative, commutative and idempotent (a max, or a lexicographic max of (key, position) pairs),
which is why the lowerings combine integer keys, never XLA's float ``max``.

Tables are built per block of channels (the caller maps over blocks): one table for every
channel of the anchor (1, 256, 50, 50) is 92 MB, whose first touch alone cost 80 ms. `build`
makes a table with static level counts; `fill` refills a carried table with traced counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

Combine = Callable[[Any, Any], Any]


def levels(size: int) -> int:
    """The number of levels along an axis of `size` >= 1: ``floor(log2(size)) + 1``."""
    return max(size, 1).bit_length()


def _moved(v, axis: int, shift):
    """`v` moved back by `shift` along `axis` (wrapping)."""
    size = v.shape[axis]
    return lax.dynamic_slice_in_dim(lax.concatenate([v, v], axis), shift, size, axis)


def _doubled(planes, combine: Combine, axis: int, count: int):
    """Levels ``0..count-1`` of `planes` along `axis`: a pytree whose leaves have a new leading
    axis; level ``k`` combines the ``2**k`` positions from each one. Built by ``lax.scan``, each
    step emitting its carry before doubling it (an unrolled doubling chain is fused and
    recomputed: 9 s of compile for the anchor's 36 levels); positions whose block would leave
    the axis wrap around, and are never read."""

    def step(prev, shift):
        return combine(prev, jax.tree.map(lambda v: _moved(v, axis, shift), prev)), prev

    shifts = np.int32(1) << lax.iota(np.int32, count)
    return lax.scan(step, planes, shifts)[1]


def build(planes, combine: Combine, height_axis: int, width_axis: int,
          counts: tuple[int, int]):
    """The table of `planes` (a pytree of equal-shape arrays) with ``counts = (a, b)`` levels
    along the height and width: a pytree whose leaves have a new leading axis of ``a * b``
    entries, level ``(i, j)`` (``2**i`` rows, ``2**j`` columns) at ``j * a + i``. Rectangles
    of fewer than ``2**a`` rows and ``2**b`` columns can be looked up."""
    rows = _doubled(planes, combine, height_axis, counts[0])
    table = _doubled(rows, combine, width_axis + 1, counts[1])
    return jax.tree.map(lambda t: t.reshape((-1,) + t.shape[2:]), table)


def fill(table, planes, combine: Combine, height_axis: int, width_axis: int, stride: int,
         few: int, counts):
    """`table` (a pytree in `build`'s layout for the full level counts ``(A, B)``, ``A`` the
    `stride`: leaves of ``A * B`` levels, level ``(i, j)`` at ``j * A + i``) with levels
    ``i < counts[0]``, ``j < counts[1]`` (traced int32 scalars, at most ``A`` and ``B``) made
    those of `planes`; the others keep what they held (a caller carries one table through
    its blocks, allocated and zeroed once). Width level ``j`` is doubled from level ``j - 1``
    in slabs of `few` height levels (a static count, enough for most calls: one slab). The
    levels equal `build`'s: the same combinations of the same elements."""
    a, b = counts

    def rows_step(i, state):
        table, cur = state
        table = jax.tree.map(lambda t, c: lax.dynamic_update_index_in_dim(t, c, i, 0),
                             table, cur)
        shift = np.int32(1) << i
        return table, combine(cur, jax.tree.map(lambda v: _moved(v, height_axis, shift), cur))

    table = lax.fori_loop(np.int32(0), a, rows_step, (table, planes))[0]

    # the doublings along the width: one slab of `few` height levels per step, ``ceil(a /
    # few)`` slabs per width level (the last one overlapping the one before, recomputing some
    # levels from the same complete level j - 1: equal values)
    slabs = (a + np.int32(few - 1)) // np.int32(few)

    def columns(k, table):
        j = k // slabs + np.int32(1)
        first = jnp.minimum((k % slabs) * np.int32(few), np.int32(stride - few))
        src = jax.tree.map(lambda t: lax.dynamic_slice_in_dim(
            t, (j - 1) * np.int32(stride) + first, few, 0), table)
        shift = np.int32(1) << (j - 1)
        new = combine(src, jax.tree.map(lambda v: _moved(v, width_axis + 1, shift), src))
        return jax.tree.map(lambda t, v: lax.dynamic_update_slice_in_dim(
            t, v, j * np.int32(stride) + first, 0), table, new)

    return lax.fori_loop(np.int32(0), (b - np.int32(1)) * slabs, columns, table)


def floor_log2(n: jax.Array) -> jax.Array:
    """``floor(log2(n))`` of positive int32 `n`."""
    return np.int32(31) - lax.clz(n)


def corners(h0, h1, w0, w1, height_levels: int):
    """The four lookups of rectangles ``[h0, h1) x [w0, w1)`` (int32 arrays of one shape, every
    rectangle non-empty): ``(level, h, w)`` each of shape ``(4,) + h0.shape``."""
    a = floor_log2(h1 - h0)
    b = floor_log2(w1 - w0)
    top, left = h0, w0
    bottom = h1 - (np.int32(1) << a)
    right = w1 - (np.int32(1) << b)
    level = b * np.int32(height_levels) + a
    hs = jnp.stack([top, top, bottom, bottom])
    ws = jnp.stack([left, right, left, right])
    return jnp.broadcast_to(level, hs.shape), hs, ws
