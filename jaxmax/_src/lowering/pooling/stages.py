"""The value of a large pooling window (3-D k3: 27 taps) in two stages over cache-sized chunks.

A sub-step of the pooling values (:mod:`~jaxmax._src.lowering.pooling.values`), taken where it is
faster than the one-stage scan (`applies`; figures and the forms measured and not kept:
benchmarks/RESULTS.md, "3-D MaxPool values in two stages over chunks of planes"). The window is
split in two stages, computed chunk by chunk along the leading unpooled axes (N * C planes) so
that the first stage's result stays in cache instead of being a fresh array of tens of MB:

1. the last wide window axis (3-D: W, 3 taps): each row's first maximal column;
2. every other window axis (3-D: D and H, 9 taps, on an array about half the input's size): the
   first row holding the maximum.

That is the first maximal element in row-major window order, bit for bit the one-stage scan's,
zeros of both signs included (XLA's CPU compare also ties subnormals with zero, in both forms
alike): a later row replaces the value only when it is greater, and within a row the first
maximal column was kept. The other order (D and H first, then W) keeps the first maximal
*column*, which can differ in the sign of a zero; it is not used (benchmarks/RESULTS.md, "The
NaN winner chosen by a `lax.cond`, and compile time"). NaN follows the scan's
rule `nan` (each stage's NaN flags or-ed under ``"propagate"``). Padding reads as `fill`.

Each tap is one strided slice of the chunk padded once (``pool_taps.strided_taps``): on a chunk
in cache that is faster than the phase view of a stride-2 innermost axis.

The value only: derivatives, indices and winners find the element equal to this value, which
is the one-stage value bit for bit.
"""

from __future__ import annotations

import math

import jax
from jax import lax

from jaxmax._src.lowering.pooling import scan as pool_scan
from jaxmax._src.lowering.pooling import taps as pool_taps
from jaxmax._src.lowering.pooling.geometry import Axis, Geometry

__all__ = ["CHUNK_BYTES", "applies", "pooled"]

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


def _two_stages(v: jax.Array, window: tuple[Axis, ...], fill, nan: str) -> jax.Array:
    """Both stages on the chunk `v` (axis 0 its planes; `window` the axis of each other axis of
    `v`): the last wide axis first, then the others."""
    params = {i: (a.k, a.s, a.lo, a.hi, a.d, a.out) for i, a in enumerate(window, start=1)}
    last = max(i for i, a in enumerate(window, start=1) if a.k > 1)
    outer = {i: p for i, p in params.items() if i != last}
    value = pool_scan.first_max(pool_taps.strided_taps(v, {last: params[last]}, fill), fill, nan)
    return pool_scan.first_max(pool_taps.strided_taps(value, outer, fill), fill, nan)


def pooled(x: jax.Array, g: Geometry, fill, nan: str) -> jax.Array:
    """The first maximal element of each window of `x` for a geometry that `applies`, bit for
    bit the one-stage scan's."""
    lead = g.lead
    planes = math.prod(x.shape[:lead])
    plane_shape = x.shape[lead:]
    chunk = _chunk_planes(planes, math.prod(plane_shape) * x.dtype.itemsize)
    chunks = x.reshape((planes // chunk, chunk) + plane_shape)
    out = lax.map(lambda c: _two_stages(c, g.axes[lead:], fill, nan), chunks)
    return out.reshape(g.out_shape)
