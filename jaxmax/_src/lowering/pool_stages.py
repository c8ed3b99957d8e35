"""The value of a large pooling window (3-D k3: 27 taps) in two stages over cache-sized chunks.

A sub-step of the pooling values (:mod:`jaxmax._src.lowering.pool_values`), taken where it is
faster than the one-stage scan (`applies`; figures and the forms measured and not kept:
benchmarks/RESULTS.md, "3-D MaxPool values in two stages over chunks of planes"). The window is
split in two stages, computed chunk by chunk along the leading unpooled axes (N * C planes) so
that the first stage's result stays in cache instead of being a fresh array of tens of MB:

1. every window axis but the last wide one (3-D: D and H, 9 taps of contiguous rows): the first
   maximum of those taps;
2. the last wide axis (3-D: W, 3 taps, on an array a quarter of the input's size): the first
   maximum of stage 1's values.

Max pooling is separable, and so is the value of the first maximal element in row-major window
order, but for one thing: stage 2 keeps the first *column* holding the maximum, where the
one-stage scan keeps the first element, which may sit in a later column. Both are equal to the
maximum, so their bits differ only for zeros of both signs (``-0.0`` against ``+0.0``; XLA's
CPU compare also ties subnormals with zero). Stage 2 therefore flags any tie of unequal bits
that it meets, and the caller recomputes when a flag is raised (data with both zero signs in one
window) with `pooled_exact`: the same two stages the other way round, the last wide axis first
(a row's first maximal column, then the first row holding the maximum: the first maximal
element in row-major order, ties included), slower on the full-size data but exact without a
flag, and compiled from 3 + 9 taps where the one-stage scan of every border box had 27 each.
NaN follows the scan's rule `nan` (each stage's NaN flags or-ed under ``"propagate"``).
Padding reads as `fill`.

Each tap is one strided slice of the chunk padded once (``pool_taps.strided_taps``): on a chunk
in cache that is faster than the phase view of a stride-2 innermost axis.

The value only: derivatives, indices and winners find the element equal to this value, which
is the one-stage value bit for bit.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src.lowering import pool_scan, pool_taps
from jaxmax._src.lowering.pool_geometry import Axis, Geometry

__all__ = ["CHUNK_BYTES", "applies", "pooled", "pooled_exact"]

#: Windows of at least this many taps over at least `_MIN_WIDE_AXES` axes take this form.
_MIN_TAPS = 17
_MIN_WIDE_AXES = 3
#: The input bytes of one chunk, at most: the largest whole number of planes under it (at least
#: two planes, and at least two chunks: see `applies`).
CHUNK_BYTES = 2 << 20


def applies(g: Geometry, itemsize: int) -> bool:
    """Whether the window of `g` over elements of `itemsize` bytes takes the two stages here:
    more than 16 taps over at least three axes of more than one tap (3-D windows), each of
    stride 2 or more (at stride 1 the one-stage scan is faster), with leading unpooled axes to
    chunk over whose planes fit at least twice in a chunk (one plane a chunk is slower), and an
    input larger than one chunk (a smaller one is in cache for the one-stage scan too)."""
    wide = [a for a in g.axes if a.k > 1]
    lead = g.lead
    plane_bytes = math.prod(g.in_shape[lead:]) * itemsize
    return (len(wide) >= _MIN_WIDE_AXES and math.prod(a.k for a in wide) >= _MIN_TAPS
            and all(a.s >= 2 for a in wide) and lead > 0 and 0 not in g.out_shape
            and 2 * plane_bytes <= CHUNK_BYTES
            and math.prod(g.in_shape) * itemsize > CHUNK_BYTES)


def _chunk_planes(planes: int, plane_bytes: int) -> int:
    """The largest divisor of `planes` whose chunk holds at most `CHUNK_BYTES` (at least 1)."""
    most = max(1, CHUNK_BYTES // max(1, plane_bytes))
    return max(d for d in range(1, min(planes, most) + 1) if planes % d == 0)


def _two_stages(v: jax.Array, window: tuple[Axis, ...], fill, nan: str, last_first: bool):
    """Both stages on the chunk `v` (axis 0 its planes; `window` the axis of each other axis of
    `v`); and whether the second stage met a tie of unequal bits (then its first tie may not be
    the window's). With `last_first`, the last wide axis first: exact, no flag."""
    params = {i: (a.k, a.s, a.lo, a.hi, a.d, a.out) for i, a in enumerate(window, start=1)}
    last = max(i for i, a in enumerate(window, start=1) if a.k > 1)
    outer = {i: p for i, p in params.items() if i != last}
    if last_first:
        value, _ = pool_scan.first_max(pool_taps.strided_taps(v, {last: params[last]}, fill),
                                       fill, nan)
        value, _ = pool_scan.first_max(pool_taps.strided_taps(value, outer, fill), fill, nan)
        return value, jnp.zeros((), bool)
    value, _ = pool_scan.first_max(pool_taps.strided_taps(v, outer, fill), fill, nan)
    value, tie = pool_scan.first_max(pool_taps.strided_taps(value, {last: params[last]}, fill),
                                     fill, nan, ties=True)
    if tie is None:
        return value, jnp.zeros((), bool)
    # as bytes: XLA's CPU max of uint8 is several times faster than its `any` of bool
    return value, lax.reduce_max(tie.astype(np.uint8), tuple(range(tie.ndim))) > 0


def pooled(x: jax.Array, g: Geometry, fill, nan: str) -> tuple[jax.Array, jax.Array]:
    """The first maximal element of each window of `x` for a geometry that `applies`, and a
    scalar bool: whether that may differ from the one-stage scan in the bits of a zero (a
    window whose maximal elements are equal zeros of both signs, or subnormals: the caller
    recomputes with `pooled_exact`; false positives only cost time)."""
    return _chunked(x, g, fill, nan, last_first=False)


def pooled_exact(x: jax.Array, g: Geometry, fill, nan: str) -> jax.Array:
    """The first maximal element of each window of `x` for a geometry that `applies`, bit for
    bit the one-stage scan's: the two stages with the last wide axis first."""
    return _chunked(x, g, fill, nan, last_first=True)[0]


def _chunked(x: jax.Array, g: Geometry, fill, nan: str,
             last_first: bool) -> tuple[jax.Array, jax.Array]:
    lead = g.lead
    planes = math.prod(x.shape[:lead])
    plane_shape = x.shape[lead:]
    chunk = _chunk_planes(planes, math.prod(plane_shape) * x.dtype.itemsize)
    chunks = x.reshape((planes // chunk, chunk) + plane_shape)
    out, tie = lax.map(lambda c: _two_stages(c, g.axes[lead:], fill, nan, last_first), chunks)
    return out.reshape(g.out_shape), jnp.any(tie)
