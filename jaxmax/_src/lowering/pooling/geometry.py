"""The geometry of a max pooling: per axis the window, stride, padding, dilation and output
length; where each kernel tap reads; the phase view; the interior and border boxes; the split of
a large window in two stages.

Stage one of the pooling pipeline (geometry -> taps -> values -> winners -> tangents,
:mod:`~jaxmax._src.lowering.pooling.max_pool`). Pure Python arithmetic on static ints: nothing
here builds an array. The output length is ``shapes.pooled_length`` (floor rounding: the
adapters have turned every rounding rule into explicit end padding, negative to crop). The later
stages read a `Geometry`'s fields and properties only.

A strided axis of length ``D`` (a multiple of its stride ``s``) is *phased*: viewed as
``(D / s, s)``, a free reshape, so that kernel tap ``j``, which reads input ``o * s + j * d - lo``
for output ``o``, reads one phase from a run of rows, a contiguous slice. An axis whose length
is not a multiple of its stride is read with strided slices instead.
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

from jaxmax._src import shapes

__all__ = ["Axis", "Boxes", "Geometry", "Tap", "geometry"]


class Axis(NamedTuple):
    size: int     # input length D
    k: int        # window (number of taps)
    s: int        # stride
    lo: int       # begin pad (negative crops, as in reduce_window)
    hi: int       # end pad
    out: int      # output length
    phased: bool  # viewed as (D / s, s) phases; otherwise sliced with stride s
    d: int = 1    # dilation: tap j reads o * s + j * d - lo


class Tap(NamedTuple):
    """Where one kernel tap reads: outputs ``first_out .. first_out + counts - 1`` read inputs
    ``first_in, first_in + s, ...``; the other outputs read padding."""
    first_out: tuple[int, ...]
    counts: tuple[int, ...]
    first_in: tuple[int, ...]


class Geometry(NamedTuple):
    axes: tuple[Axis, ...]
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    phase_shape: tuple[int, ...]  # in_shape with every phased axis split into (D / s, s)
    # whether the input may be sharded: the taps then read its bits (see `geometry`)
    sharded: bool = False

    @property
    def taps(self) -> tuple[Tap, ...]:
        """The kernel taps in row-major window order (built on first use: the compact form
        never lists the taps of its large windows)."""
        return _taps(self.axes)

    @property
    def boxes(self) -> Boxes | None:
        """The output split into boxes whose taps need no ``lax.pad`` (see `_boxes`)."""
        return _boxes(self)

    @property
    def two_stages(self) -> tuple[Geometry, Geometry] | None:
        """The window split in two stages (see `_two_stages`)."""
        return _two_stages(self)

    @property
    def lead(self) -> int:
        """How many leading axes are not pooled (window 1, stride 1, no padding): the planes."""
        count = 0
        for a in self.axes:
            if (a.k, a.s, a.lo, a.hi, a.d) != (1, 1, 0, 0, 1):
                break
            count += 1
        return count

    @property
    def window(self) -> tuple[int, ...]:
        return tuple(a.k for a in self.axes)

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(a.s for a in self.axes)

    @property
    def padding(self) -> tuple[tuple[int, int], ...]:
        return tuple((a.lo, a.hi) for a in self.axes)

    @property
    def dilation(self) -> tuple[int, ...]:
        return tuple(a.d for a in self.axes)


class Boxes(NamedTuple):
    """The interior outputs (every tap inside the input) as a geometry of their own, placed at
    output `at`, and the border boxes, each ``(its first output, its geometry)``."""
    interior: Geometry
    at: tuple[int, ...]
    borders: tuple[tuple[tuple[int, ...], Geometry], ...]


def _canonical(x_ndim, window, strides, padding, dilation=None):
    window = tuple(int(k) for k in window)
    strides = tuple(int(s) for s in strides)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    dilation = (1,) * x_ndim if dilation is None else tuple(int(d) for d in dilation)
    if not len(window) == len(strides) == len(padding) == len(dilation) == x_ndim:
        raise ValueError(
            f"max_pool: window {window}, strides {strides}, padding {padding} and dilation "
            f"{dilation} must each have one entry per axis of the rank-{x_ndim} input")
    if min(window + strides + dilation, default=1) < 1:
        raise ValueError(f"max_pool: window {window}, strides {strides} and dilation "
                         f"{dilation} must be >= 1")
    return window, strides, padding, dilation


def _build(shape, window, strides, padding, dilation) -> Geometry:
    axes = []
    phase_shape: list[int] = []
    for size, k, s, (lo, hi), d in zip(shape, window, strides, padding, dilation, strict=True):
        out = max(0, shapes.pooled_length(size, k, s, d, lo, hi, "floor"))
        phased = s > 1 and size % s == 0
        axes.append(Axis(size, k, s, lo, hi, out, phased, d))
        phase_shape.extend((size // s, s) if phased else (size,))
    return Geometry(tuple(axes), tuple(shape), tuple(a.out for a in axes), tuple(phase_shape))


def geometry(shape, window, strides, padding, dilation=None, *,
             sharded: bool = False) -> Geometry:
    """The checked geometry of pooling an array of `shape` (one entry per axis in each of
    `window`, `strides`, ``(lo, hi)`` `padding` and `dilation`).

    ``sharded=True`` where the input may be sharded: the values' taps then read the input's
    bits (``pool_values``). A border box reads a few rows of a sharded axis, which XLA's SPMD
    partitioner replicates with an all-reduce that *adds* the owner's rows to the other
    devices' zeros: on floats ``-0.0 + 0.0`` is ``+0.0`` (a window whose maximum is ``-0.0``
    came back ``+0.0``); on integers the sum is the owner's bits.
    """
    shape = tuple(int(n) for n in shape)
    g = _build(shape, *_canonical(len(shape), window, strides, padding, dilation))
    return g._replace(sharded=True) if sharded else g


# The caches hold the geometries of the calls being traced.
@functools.lru_cache(maxsize=128)
def _taps(axes: tuple[Axis, ...]) -> tuple[Tap, ...]:
    taps = []
    for offsets in itertools.product(*(range(a.k) for a in axes)):
        first_out, count, first_in = [], [], []
        for a, j in zip(axes, offsets, strict=True):
            shift = j * a.d - a.lo  # output o reads input o * s + shift
            o_first = max(0, -(shift // a.s))  # smallest o with o * s + shift >= 0
            o_last = min(a.out - 1, (a.size - 1 - shift) // a.s)
            n = max(0, o_last - o_first + 1)
            first_out.append(o_first if n else 0)
            count.append(n)
            first_in.append(o_first * a.s + shift if n else 0)
        taps.append(Tap(tuple(first_out), tuple(count), tuple(first_in)))
    return tuple(taps)


def _restricted(g: Geometry, ranges) -> Geometry:
    """The geometry of the outputs ``ranges[i] = (first, end)`` of every axis (same input)."""
    window, strides, padding, dilation = [], [], [], []
    for a, (first, end) in zip(g.axes, ranges, strict=True):
        lo = a.lo - first * a.s
        hi = (end - first - 1) * a.s + (a.k - 1) * a.d + 1 - a.size - lo
        window.append(a.k)
        strides.append(a.s)
        padding.append((lo, hi))
        dilation.append(a.d)
    return _build(g.in_shape, window, strides, padding, dilation)


def _interior(a: Axis) -> tuple[int, int]:
    """The outputs ``[first, end)`` of axis `a` whose every tap reads inside the input."""
    first = max(0, -(-a.lo // a.s))
    end = min(a.out, (a.size - 1 + a.lo - (a.k - 1) * a.d) // a.s + 1)
    return first, max(first, end)


# Up to this many padded output rows on one side of an axis, each row is a box of its own (its
# taps are then inside or wholly padding: plain slices or constants); more are one slab. On a
# dilated axis, up to `_DILATED_BORDER_ROWS`: there the slab compiles in 0.25-0.45x the time at
# the same or a lower run time (k3 d2 p2 and k3 d3 p3; on undilated k5 p2 the rows of their own
# are 1.2-1.5x faster to compile and 1.15x to run: benchmarks/border_rows_ab.py, and
# benchmarks/RESULTS.md, "MaxPool's dilated border rows").
_BORDER_ROWS = 3
_DILATED_BORDER_ROWS = 1


@functools.lru_cache(maxsize=128)
def _boxes(g: Geometry) -> Boxes | None:
    """The output split into boxes whose taps need no ``lax.pad``: per axis, the interior outputs
    (every tap inside) and each padded output row on its own (up to `_BORDER_ROWS` per side,
    `_DILATED_BORDER_ROWS` on a dilated axis, else one slab, padded). None when some axis has no
    interior output or no axis has padded outputs."""
    inner = [_interior(a) for a in g.axes]
    if any(first >= end for first, end in inner):
        return None
    if all((first, end) == (0, a.out) for a, (first, end) in zip(g.axes, inner, strict=True)):
        return None
    segments = []
    for a, (first, end) in zip(g.axes, inner, strict=True):
        segs = [(first, end)]
        rows = _BORDER_ROWS if a.d == 1 else _DILATED_BORDER_ROWS
        for lo, hi in ((0, first), (end, a.out)):
            if 0 < hi - lo <= rows:
                segs += [(r, r + 1) for r in range(lo, hi)]
            elif hi > lo:
                segs.append((lo, hi))
        segments.append(segs)
    split = list(itertools.product(*segments))[1:]  # the first box is the interior
    return Boxes(_restricted(g, inner), tuple(first for first, _ in inner),
                 tuple((tuple(lo for lo, _ in box), _restricted(g, box)) for box in split))


@functools.lru_cache(maxsize=128)
def _two_stages(g: Geometry) -> tuple[Geometry, Geometry] | None:
    """The window split into stage 1 (the inner half of its axes of more than one tap, pooled
    from the input) and stage 2 (the outer ones, pooled from stage 1's result), or None when
    fewer than two axes have more than one tap.

    Max pooling is separable: the window maximum is the maximum over the outer taps of the
    inner windows' maxima, NaN and padding included (every stage pads with the same fill), and
    the first maximal element in row-major window order is found the same way.
    """
    wide = [i for i, a in enumerate(g.axes) if a.k > 1]
    if len(wide) < 2:
        return None
    inner = set(wide[len(wide) // 2:])

    def sub(shape, axes):
        window, strides, padding, dilation = zip(*[
            (a.k, a.s, (a.lo, a.hi), a.d) if i in axes else (1, 1, (0, 0), 1)
            for i, a in enumerate(g.axes)], strict=True)
        return _build(shape, window, strides, padding, dilation)

    first = sub(g.in_shape, inner)
    second = sub(first.out_shape, set(range(len(g.axes))) - inner)
    return first, second
