"""Tap reads: for each kernel tap of a pooling, the input element it reads for every output.

Stage two of the pooling pipeline (:mod:`~jaxmax._src.lowering.pooling.max_pool`). The values,
the winners and the tangents all read the input (or its tangent) tap by tap through here:

* `taps`: each tap a slice of the phase view (:mod:`~jaxmax._src.lowering.pooling.geometry`), the
  rows that fall in the padding supplied by a ``lax.pad`` of the *tap*, not of the input, so
  that XLA fuses reshape, slices, pads and maxima into one loop and never writes a padded copy
  of the input;
* `strided_taps`: each tap one strided slice of an input padded once (the chunks of the
  two-stage values, where a padded copy of a chunk stays in cache);
* `phase_pieces` and `piece_tap`: the same reads of a tangent, built from ``lax.split`` so that
  their transpose (the cotangent) interleaves the pieces back in one pass.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import order
from jaxmax._src.lowering.pooling.geometry import Geometry, Tap

__all__ = ["by_boxes", "phase_pieces", "piece_tap", "strided_taps", "tap", "taps"]


def _read_slice(g: Geometry, t: Tap):
    """``lax.slice`` start/limit/strides on the phase view for the inside part of `t`."""
    start, limit, strides = [], [], []
    for a, n, first in zip(g.axes, t.counts, t.first_in, strict=True):
        if a.phased:
            row, phase = divmod(first, a.s)
            start += [row, phase]
            limit += [row + n, phase + 1]
            strides += [1, 1]
        else:
            start.append(first)
            limit.append(first + (n - 1) * a.s + 1 if n else first)
            strides.append(a.s)
    return start, limit, strides


def _pads(g: Geometry, t: Tap) -> list[tuple[int, int, int]]:
    """The ``lax.pad`` config that places the inside part of `t` among the outputs."""
    return [(o, a.out - o - n, 0) for a, o, n in zip(g.axes, t.first_out, t.counts, strict=True)]


def tap(phases: jax.Array, g: Geometry, t: Tap, fill, read=None) -> jax.Array:
    """The values read by tap `t` for every output from the phase view `phases`; `fill` where
    it reads padding.

    `read` (elementwise) is applied to the inside values before the padding is added, so a
    padded tap stays single-use even when `read` uses its argument twice; `fill` is of
    `read`'s result dtype.
    """
    dtype = phases.dtype if read is None else jax.eval_shape(
        read, jax.ShapeDtypeStruct((), phases.dtype)).dtype
    fill = jnp.asarray(fill, dtype)
    if 0 in t.counts:
        return jnp.full(g.out_shape, fill)
    inside = lax.slice(phases, *_read_slice(g, t)).reshape(t.counts)
    if read is not None:
        inside = read(inside)
    pads = _pads(g, t)
    if any(lo or hi for lo, hi, _ in pads):
        inside = lax.pad(inside, fill, pads)
    return inside


def taps(v: jax.Array, g: Geometry, fill, read=None) -> list[jax.Array]:
    """Every tap of `v` in row-major window order (see `tap`)."""
    phases = v.reshape(g.phase_shape)
    return [tap(phases, g, t, fill, read) for t in g.taps]


def strided_taps(v: jax.Array, axes, fill) -> list[jax.Array]:
    """The taps, in row-major order, of windows along `axes` of `v`: ``{axis: (k, s, lo, hi, d,
    out)}``. `v` is padded (or cropped) once with `fill`; each tap is one strided slice of it."""
    pads = [(0, 0, 0)] * v.ndim
    for i, (k, s, lo, _, d, out) in axes.items():
        need = (out - 1) * s + (k - 1) * d + 1  # the padded length the last tap reaches
        pads[i] = (lo, need - lo - v.shape[i], 0)
    padded = lax.pad(v, np.asarray(fill, v.dtype), pads)
    order = sorted(axes)
    out_taps = []
    for offsets in itertools.product(*(range(axes[i][0]) for i in order)):
        start, limit, strides = [0] * v.ndim, list(padded.shape), [1] * v.ndim
        for i, j in zip(order, offsets, strict=True):
            k, s, _, _, d, out = axes[i]
            start[i] = j * d
            limit[i] = j * d + (out - 1) * s + 1
            strides[i] = s
        out_taps.append(lax.slice(padded, start, limit, strides))
    return out_taps


def phase_pieces(v: jax.Array, g: Geometry) -> dict[tuple[int, ...], jax.Array]:
    """`v` split by phase: ``{(phase per strided axis): v[..., phase::s, ...]}``.

    Each piece has ``ceil(D / s)`` rows on a strided axis (zero-padded at the end when ``s``
    does not divide ``D``). Built from pad, reshape and ``lax.split`` along the phase axes of
    the ``(D / s, s)`` view, whose transposes are slice, reshape and ``concatenate``: the
    transposed (cotangent) code interleaves the pieces in one pass that writes every input
    element once, from the few taps of its phase only (figures: benchmarks/RESULTS.md).
    """
    strided = [i for i, a in enumerate(g.axes) if a.s > 1]
    if not strided:
        return {(): v}
    rows = [-(-a.size // a.s) if a.s > 1 else a.size for a in g.axes]
    ends = [r * a.s - a.size if a.s > 1 else 0 for r, a in zip(rows, g.axes, strict=True)]
    if any(ends):
        v = lax.pad(v, np.zeros((), v.dtype), [(0, e, 0) for e in ends])
    split_shape, phase_dims = [], []
    for a, r in zip(g.axes, rows, strict=True):
        split_shape.append(r)
        if a.s > 1:
            phase_dims.append(len(split_shape))
            split_shape.append(a.s)
    pieces: dict[tuple[int, ...], jax.Array] = {(): v.reshape(split_shape)}
    for dim, i in zip(phase_dims, strided, strict=True):
        pieces = {combo + (phase,): part for combo, piece in pieces.items()
                  for phase, part in enumerate(lax.split(piece, [1] * g.axes[i].s, axis=dim))}
    return {combo: piece.reshape(rows) for combo, piece in pieces.items()}


def piece_tap(pieces: dict[tuple[int, ...], jax.Array], g: Geometry, t: Tap) -> jax.Array:
    """Tap `t` read from the `phase_pieces` of a tangent, zero where it reads padding (`t`
    reads some input element)."""
    phase = tuple(first % a.s for a, first in zip(g.axes, t.first_in, strict=True) if a.s > 1)
    start = [first // a.s for a, first in zip(g.axes, t.first_in, strict=True)]
    limit = [r + n for r, n in zip(start, t.counts, strict=True)]
    inside = lax.slice(pieces[phase], start, limit)
    return lax.pad(inside, np.zeros((), inside.dtype), _pads(g, t))


def by_boxes(g: Geometry, part, fill) -> jax.Array:
    """``part(box, at)`` (the result over the outputs of the sub-geometry `box`, whose first
    output is `g`'s output `at`) for the interior and each border box of `g` (``Geometry.boxes``;
    the whole of `g` when it has none), written into one array of `g`'s output shape: the
    interior padded out with `fill`, each border box then written in place."""
    boxes = g.boxes
    if boxes is None:
        return part(g, (0,) * len(g.out_shape))
    fill = np.asarray(fill)
    if g.sharded and dtypes.is_floating(fill.dtype):
        # assembled on the bits: XLA's SPMD partitioner may move a box to the devices of its
        # rows with an adding all-reduce, which turns -0.0 into +0.0 (pool_geometry.geometry)
        def as_bits(v):
            return order.bits(v)

        out = by_boxes(g._replace(sharded=False), lambda box, at: as_bits(part(box, at)),
                       fill.view(order.unsigned_bits_dtype(fill.dtype)))
        return order.from_bits(out, fill.dtype)
    inner = boxes.interior
    out = lax.pad(part(inner, boxes.at), fill,
                  [(at, n - at - m, 0)
                   for at, n, m in zip(boxes.at, g.out_shape, inner.out_shape, strict=True)])
    for at, box in boxes.borders:
        out = lax.dynamic_update_slice(out, part(box, at), list(at))
    return out
