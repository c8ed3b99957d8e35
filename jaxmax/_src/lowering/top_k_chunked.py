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

Measured (jax 0.10.2, 2 cores, NaN-free normals, in process against ``lax.top_k``): k=100 of
(1, 25200) 0.92-0.99x; k=5 of (256, 1000) 0.68-0.80x; (32, 32000) k=10 0.22-0.24x;
(16, 2048, 8) k=5 on axis 1 0.36x; (64, 1000, 16) k=10 on axis 1 0.64-0.7x. Where
``m + k * c`` is not well below ``n`` it is not faster ((256, 1000) k=20: 1.12x;
(2, 80, 8400) k=100: 1.04x; (4096, 64) k=4: 1.35x), hence `chunk_size`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src.lowering import order

#: Chunk lengths tried (chunks of 64 or 128 ran 2-3x chunks of 32 on (32, 32000) k=10,
#: (4, 65536) k=5 and (64, 8192) k=3); the two short ``lax.top_k`` together may read at most 2/9
#: of the axis (``m + k * c <= 2 * n / 9``), and of those lengths the one with the least
#: ``m + 2 * k * c`` is taken (the second selection costs more per element: (8, 32000) k=50
#: ran 0.26 ms in chunks of 16 against 0.29 in chunks of 32).
CHUNK_SIZES = (8, 16, 32)
#: Axes shorter than this, or inputs smaller than CHUNK_MIN_SIZE elements, are selected by one
#: ``lax.top_k``: the extra steps cost more than they save there ((1, 4096) k=10: 2.2-2.9x).
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

