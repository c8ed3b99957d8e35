"""Range maxima over rectangles of an image by a 2-D sparse table.

Level ``(a, b)`` of the table holds, at ``(h, w)``, the combination of the ``2**a x 2**b``
block starting there. A rectangle ``[h0, h1) x [w0, w1)`` is then the combination of four
(overlapping) blocks of levels ``floor(log2(h1 - h0))`` and ``floor(log2(w1 - w0))``, so any
bin costs four lookups whatever its size. This needs a combination that is associative,
commutative and idempotent (a max, or a lexicographic max of (key, position) pairs), which is
why the lowerings combine integer keys, never XLA's float ``max``.

Tables are built per block of channels (the caller maps over blocks): one table for every
channel of the anchor (1, 256, 50, 50) is 92 MB, whose first touch alone cost 80 ms.
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


def _shifted(x, step: int, axis: int):
    """`x` moved back by `step` along `axis`, the last `step` positions repeated (never read)."""
    n = x.shape[axis]
    head = lax.slice_in_dim(x, step, n, axis=axis)
    tail = lax.slice_in_dim(x, n - step, n, axis=axis)
    return lax.concatenate([head, tail], axis)


def build(planes, combine: Combine, height_axis: int, width_axis: int):
    """The table of `planes` (a pytree of equal-shape arrays): a pytree whose leaves have a new
    leading axis of ``levels(H) * levels(W)`` entries, level ``(a, b)`` at ``a * levels(W) + b``.
    """
    leaves = jax.tree.leaves(planes)
    height, width = leaves[0].shape[height_axis], leaves[0].shape[width_axis]
    rows = [planes]
    for a in range(1, levels(height)):
        prev = rows[-1]
        rows.append(combine(prev, jax.tree.map(
            lambda v, s=1 << (a - 1): _shifted(v, s, height_axis), prev)))
    table = []
    for row in rows:
        level = row
        table.append(level)
        for b in range(1, levels(width)):
            level = combine(level, jax.tree.map(
                lambda v, s=1 << (b - 1): _shifted(v, s, width_axis), level))
            table.append(level)
    return jax.tree.map(lambda *ls: jnp.stack(ls), *table)


def floor_log2(n: jax.Array) -> jax.Array:
    """``floor(log2(n))`` of positive int32 `n`."""
    return np.int32(31) - lax.clz(n)


def corners(h0, h1, w0, w1, width_levels: int):
    """The four lookups of rectangles ``[h0, h1) x [w0, w1)`` (int32 arrays of one shape, every
    rectangle non-empty): ``(level, h, w)`` each of shape ``(4,) + h0.shape``."""
    a = floor_log2(h1 - h0)
    b = floor_log2(w1 - w0)
    top, left = h0, w0
    bottom = h1 - (np.int32(1) << a)
    right = w1 - (np.int32(1) << b)
    level = a * np.int32(width_levels) + b
    hs = jnp.stack([top, top, bottom, bottom])
    ws = jnp.stack([left, right, left, right])
    return jnp.broadcast_to(level, hs.shape), hs, ws
