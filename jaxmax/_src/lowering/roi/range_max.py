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

import functools
import operator
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

Combine = Callable[[Any, Any], Any]


def in_loop(v, counter):
    """`v` (non-negative int32) unchanged, but computed from `counter` (a loop's non-negative
    int32 counter): ``max(v, -1 - counter)``. XLA hoists what a loop body computes from
    loop-invariant values into kernels of their own before the loop; what depends on the
    counter is computed in the body's kernels that read it (a kernel fewer each)."""
    return jnp.maximum(v, np.int32(-1) - counter)


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


def fill(table, planes, combine: Combine, stride: int, spans, spare: int = 0):
    """`table` (a pytree in `build`'s layout for the full level counts ``(A, B)``, ``A`` the
    `stride`: leaves of ``A * B`` levels of shape ``planes``' leaves, level ``(i, j)`` at ``j *
    A + i``) with the levels every rectangle of at most `spans` rows and columns (a traced
    int32 array of (2,) or more, its first two at least 1 and below ``(2**A, 2**B)``, any
    after them unused) needs made those of `planes`
    (leaves (N, H, W, Cb)): ``i <= floor(log2(spans[0]))``, ``j <= floor(log2(spans[1]))``.
    The others keep what they held (a caller carries one table through its blocks,
    allocated once), and so do the last `spare` entries of the table (past its levels).

    One loop computes every level from the one before it, in `build`'s order (height levels
    of width level 0, then each width level from the one below it): a level is the
    combination of its source with the source moved back by ``2**k`` rows (``2**k * W``
    flat positions of (N, H, W)) or ``2**k`` columns (``2**k`` positions), so both kinds of
    step are one body; the level counts and the next level's slot ``j * A + i`` (one scalar)
    are computed inside the loop's kernels (two loops and their level arithmetic were a
    dozen kernels: XLA:CPU compiles each kernel separately, about 25 ms of CPU each).
    Flat moves wrap into the next row or image only where a block would leave its axis:
    positions never read. The levels equal `build`'s: the same combinations of the same
    elements."""
    width = jax.tree.leaves(planes)[0].shape[2]
    table = jax.tree.map(lambda t, p: lax.dynamic_update_index_in_dim(t, p, 0, 0),
                         table, planes)
    one = np.int32(1)

    a_levels = np.int32(stride)
    b_levels = (jax.tree.leaves(table)[0].shape[0] - spare) // stride

    def split(t):  # (i, j) of slot t by compares (cheap: copied into each kernel, no division)
        j = functools.reduce(operator.add, [(t >= np.int32(m * stride)).astype(np.int32)
                                            for m in range(1, b_levels)], np.int32(0))
        return t - j * a_levels, j

    def following(t):  # the slot of the level after slot t, and the width level count (from
        # spans made to depend on t: computed in the loop's kernels)
        counts = floor_log2(in_loop(spans, t)) + one
        i = split(t)[0]
        return jnp.where(i + one == counts[0], t - i + a_levels, t + one), counts[1]

    def more(state):
        t, b = following(state[1])
        return t < b * a_levels

    def body(state):
        table, t = state
        t = following(t)[0]
        i, j = split(t)
        down = j == np.int32(0)  # a height step: level (i - 1, 0) moved by 2**(i-1) rows
        k = jnp.where(down, i, j) - one
        src = jnp.where(down, k, t - a_levels)
        shift = jnp.where(down, np.int32(width), one) << k
        prev = jax.tree.map(lambda t: lax.dynamic_index_in_dim(t, src, 0, keepdims=False),
                            table)
        moved = jax.tree.map(lambda v: _moved(v.reshape((-1,) + v.shape[3:]), 0, shift)
                             .reshape(v.shape), prev)
        new = combine(prev, moved)
        table = jax.tree.map(lambda tb, v: lax.dynamic_update_index_in_dim(tb, v, t, 0),
                             table, new)
        return table, t

    return lax.while_loop(more, body, (table, np.int32(0)))[0]


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
