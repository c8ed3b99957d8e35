"""Top k along a long axis by chunk maxima: ``lax.top_k`` of two short arrays, not of the axis.

The axis of ``n`` elements is cut into ``m = n / c`` chunks of ``c`` consecutive elements. Every
element of the top k lies in one of the ``k`` chunks whose maxima rank first: an element's chunk
holds its own first maximal element, which ranks at least as high (order: larger key first,
then lower index), so that chunk maximum is itself in the top k, and at most ``k`` chunk maxima
are. Chunks compare as their first maximal elements do, by maximal key and then by chunk number
(chunks are index ranges). So the selection is

1. the integer ordering key (:mod:`jaxmax._src.lowering.order`, the NaN ordering rule) and its
   maximum per chunk, one fusion reading the data once, along the axis where it lies (no
   transpose of the data);
2. ``lax.top_k`` of the ``m`` chunk maxima, the ``k`` chunks put back in index order;
3. their ``k * c`` elements gathered (as bits, so zero signs and NaN payloads survive any
   sharding), in index order, and ``lax.top_k`` of their keys, which ties equal keys by position,
   that is by index. The caller gathers the values at the indices this gives (`select`), with
   the derivative every TopK lowering has: the tangent gathered at them.

``lax.top_k`` runs on float32 keys whose IEEE total order (the one ``lax.top_k`` sorts by; it is
fast only for float32) is the integer key's order (`order.ranked`). Exact on every input, no branch.

It pays only where the two short selections read well under the axis (``m + k * c`` well below
``n``), hence `chunk_size`; the figures are in benchmarks/RESULTS.md ("TopK and ArgMax").
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src.lowering import order

#: Chunk lengths tried (longer chunks make the second selection longer than it saves); the two
#: short ``lax.top_k`` together may read at most 2/9 of the axis (``m + k * c <= 2 * n / 9``),
#: and of those lengths the one with the least ``m + 2 * k * c`` is taken, because the second
#: selection costs more per element than the first (benchmarks/RESULTS.md, "TopK and ArgMax").
CHUNK_SIZES = (8, 16, 32)
#: Axes shorter than this, or inputs smaller than CHUNK_MIN_SIZE elements, are selected by one
#: ``lax.top_k``: the extra steps cost more than they save there.
CHUNK_MIN_LENGTH = 512
CHUNK_MIN_SIZE = 16384


def chunk_size(shape: tuple[int, ...], axis: int, k: int, dtype) -> int:
    """The chunk length `select` uses for the top `k` along `axis` of an array of `shape` and
    `dtype`, or 0 when one ``lax.top_k`` of the whole axis is the better choice (or the key is
    wider than 32 bits)."""
    n = shape[axis]
    if (n < CHUNK_MIN_LENGTH or math.prod(shape) < CHUNK_MIN_SIZE or k < 1
            or order.signed_bits_dtype(dtype).itemsize > 4):
        return 0
    best, best_cost = 0, None
    for c in CHUNK_SIZES:
        if n % c == 0 and 9 * (n // c + k * c) <= 2 * n:
            cost = n // c + 2 * k * c
            if best_cost is None or cost < best_cost:
                best, best_cost = c, cost
    return best


def select(x: jax.Array, k: int, c: int, *, axis: int, descending: bool, nan_order: str,
           by_index: bool) -> jax.Array:
    """The int32 indices, along `axis`, of the top `k` along `axis` under the key of `nan_order`
    (`by_index`: the same elements in index order), in chunks of `c` (``c`` divides the axis;
    ``k`` is at most the number of chunks). The caller gathers the values at them."""
    def key(v):
        return order.key(v, descending=descending, nan_order=nan_order)

    n = x.shape[axis]
    pre, post = x.shape[:axis], x.shape[axis + 1:]
    chunked = pre + (n // c, c) + post
    chunk_max = lax.reduce_max(key(x).reshape(chunked), (axis + 1,))
    chunks = lax.top_k(order.ranked(jnp.moveaxis(chunk_max, axis, -1)), k)[1]
    chunks = lax.sort(chunks, dimension=chunks.ndim - 1)  # index order
    at = lax.expand_dims(jnp.moveaxis(chunks, -1, axis), (axis + 1,))
    picked = jnp.take_along_axis(order.bits(x).reshape(chunked), at, axis=axis,
                                 mode="promise_in_bounds")
    picked = jnp.moveaxis(picked.reshape(pre + (k * c,) + post), axis, -1)  # index order
    pos = lax.top_k(order.ranked(key(order.from_bits(picked, x.dtype))), k)[1]
    if by_index:
        pos = lax.sort(pos, dimension=pos.ndim - 1)
    indices = jnp.take_along_axis(chunks, pos // c, axis=-1) * np.int32(c) + pos % c
    return jnp.moveaxis(indices, -1, axis)

