"""The value of a large pooling window (3-D k3: 27 taps) in two stages over cache-sized chunks.

`pool_phase.pooled` scans every tap of a window. For a 3-D window that is 27 taps read from the
whole input, and on the stride-2 innermost axis each tap is a strided read. Here the window is
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
that it meets, and the caller recomputes with the one-stage scan when a flag is raised (rare:
data with both zero signs in one window). NaN follows the scan's rules: skipped on the OpenVINO
face (NaN is never greater), propagated on the ONNX face (each stage's NaN flags or-ed).
Padding reads as `fill`.

Measured (3-D k3 s2 p1 on 8x32x32x64x64 float32, 2 cores, one process, wall medians): the
one-scan value 19.7 ms, these two stages over chunks of 4 planes 10.3 ms, onnxruntime 8.4-9.7
ms (its own process). Chunks of 1 plane ran 60 ms, of 32 planes 21 ms (stage 1 leaves the
cache); the stages on the whole array 62 ms (a fresh 67 MB stage-1 array, page-faulted on every
call). W first (the strided stage on the full-size data, which needs no flag) ran 16-19 ms, and
carrying each stage-1 maximum's tap number into stage 2 (an exact tie-break, no flag) 21 ms:
XLA computes the value and the tap number in two fusions, each scanning the 9 taps.

Each tap is one strided slice of the chunk padded once (`_strided_taps`), not `pool_phase`'s
phase view: on the chunk the phase view of the stride-2 innermost axis ran 16-18 ms against
10-12 ms for strided slices.

The value only: derivatives, indices and winners stay with `pool_phase` (they find the element
equal to this value, which is the one-stage value bit for bit).
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src.lowering import pool_scan

__all__ = ["applies", "pooled"]

#: Windows of at least this many taps over at least `_MIN_WIDE_AXES` axes take this form.
_MIN_TAPS = 17
_MIN_WIDE_AXES = 3
#: The input bytes of one chunk, at most: the largest whole number of planes under it (at least
#: two planes, and at least two chunks: see `applies`).
CHUNK_BYTES = 2 << 20


def applies(g, itemsize: int) -> bool:
    """Whether the window of geometry `g` (``pool_phase.Geometry``) over elements of `itemsize`
    bytes takes the two stages here: more than 16 taps over at least three axes of more than
    one tap (3-D windows), each of stride 2 or more, with leading unpooled axes to chunk over
    (window 1, stride 1, no padding, no dilation) whose planes fit at least twice in a chunk,
    and an input larger than one chunk (a smaller one is in cache for the one-stage scan too).

    Measured against the one-stage scan (k3 p1, float32, in process; below 1 ms the ratios
    scatter with the machine's noise): stride 2 with planes of 32-784 KB and inputs of 6-134 MB
    0.38-0.83x; stride 1 1.45-1.8x; planes of 2-4 MB (one plane a chunk) 3.6-4.6x.
    """
    wide = [a for a in g.axes if a.k > 1]
    lead = _leading(g)
    plane_bytes = math.prod(g.in_shape[lead:]) * itemsize
    return (len(wide) >= _MIN_WIDE_AXES and math.prod(a.k for a in wide) >= _MIN_TAPS
            and all(a.s >= 2 for a in wide) and lead > 0 and 0 not in g.out_shape
            and 2 * plane_bytes <= CHUNK_BYTES
            and math.prod(g.in_shape) * itemsize > CHUNK_BYTES)


def _leading(g) -> int:
    """The number of leading axes that are not pooled (chunked over)."""
    count = 0
    for a in g.axes:
        if (a.k, a.s, a.lo, a.hi, a.d) != (1, 1, 0, 0, 1):
            break
        count += 1
    return count


def _chunk_planes(planes: int, plane_bytes: int) -> int:
    """The largest divisor of `planes` whose chunk holds at most `CHUNK_BYTES` (at least 1)."""
    most = max(1, CHUNK_BYTES // max(1, plane_bytes))
    return max(d for d in range(1, min(planes, most) + 1) if planes % d == 0)


def _strided_taps(v: jax.Array, axes, fill) -> list[jax.Array]:
    """The taps, in row-major order, of windows along `axes` of `v`: ``{axis: (k, s, lo, hi, d,
    out)}``. `v` is padded (or cropped) once with `fill`; each tap is one strided slice of it."""
    pads = [(0, 0, 0)] * v.ndim
    for i, (k, s, lo, _, d, out) in axes.items():
        need = (out - 1) * s + (k - 1) * d + 1  # the padded length the last tap reaches
        pads[i] = (lo, need - lo - v.shape[i], 0)
    padded = lax.pad(v, np.asarray(fill, v.dtype), pads)
    order = sorted(axes)
    taps = []
    for offsets in itertools.product(*(range(axes[i][0]) for i in order)):
        start, limit, strides = [0] * v.ndim, list(padded.shape), [1] * v.ndim
        for i, j in zip(order, offsets, strict=True):
            k, s, _, _, d, out = axes[i]
            start[i] = j * d
            limit[i] = j * d + (out - 1) * s + 1
            strides[i] = s
        taps.append(lax.slice(padded, start, limit, strides))
    return taps


def _two_stages(v: jax.Array, window, fill, skip_nan: bool):
    """Both stages on the chunk `v` (axis 0 its planes; `window` the ``pool_phase._Axis`` of
    each other axis); and whether the second stage met a tie of unequal bits (then its first
    tie may not be the window's)."""
    params = {i: (a.k, a.s, a.lo, a.hi, a.d, a.out) for i, a in enumerate(window, start=1)}
    last = max(i for i, a in enumerate(window, start=1) if a.k > 1)
    outer = {i: p for i, p in params.items() if i != last}
    value, _ = pool_scan.first_max(_strided_taps(v, outer, fill), fill, skip_nan)
    value, tie = pool_scan.first_max(_strided_taps(value, {last: params[last]}, fill), fill,
                                     skip_nan, ties=True)
    if tie is None:
        return value, jnp.zeros((), bool)
    # as bytes: XLA's CPU max of uint8 is several times faster than its `any` of bool
    return value, lax.reduce_max(tie.astype(np.uint8), tuple(range(tie.ndim))) > 0


def pooled(x: jax.Array, g, fill, skip_nan: bool) -> tuple[jax.Array, jax.Array]:
    """The first maximal element of each window of `x` for a geometry that `applies`, and a
    scalar bool: whether that may differ from the one-stage scan in the bits of a zero (a
    window whose maximal elements are equal zeros of both signs, or subnormals: the caller
    recomputes; false positives only cost time)."""
    lead = _leading(g)
    planes = math.prod(x.shape[:lead])
    plane_shape = x.shape[lead:]
    chunk = _chunk_planes(planes, math.prod(plane_shape) * x.dtype.itemsize)
    chunks = x.reshape((planes // chunk, chunk) + plane_shape)
    out, tie = lax.map(lambda c: _two_stages(c, g.axes[lead:], fill, skip_nan), chunks)
    return out.reshape(g.out_shape), jnp.any(tie)
