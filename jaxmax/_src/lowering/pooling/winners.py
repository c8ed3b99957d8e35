"""Winners: the kernel tap each pooling window selects, as a tap number or a flat index.

Stage four of the pooling pipeline (:mod:`~jaxmax._src.lowering.pooling.max_pool`). The index
and the gradient are one fact: a window's *winner* is the tap whose input element is its Indices
output (`indices`) and receives its whole tangent (`winner`,
:mod:`~jaxmax._src.lowering.pooling.tangents`). One mechanism finds it under both values rules
(`first_equal`): the first tap, in row-major window order, whose element equals the window's
value, in one fusion that re-reads the input and the value (a padded tap that XLA sees used
twice is written to memory, so every tap is read once per fusion, and a tap of the winner search
is never the very expression of the value's: its padding holds another value).

* ``nan="skip"`` (values ``max(lowest(T), non-NaN window elements)``): the winner is the first
  element equal to the value when that is above lowest(T). A window whose value is lowest(T) is
  differentiated as the pooling of the clamped input ``where(x >= lowest, x, lowest)``: every
  clamped tap equals lowest(T), so its first tap wins, and passes the tangent only if it is an
  input element that is not NaN or ``-inf``. Such a window has no index winner.
* ``nan="propagate"``: the winner is the first NaN of a NaN window, else the first element
  equal to the value; a window without input elements has none.

An index is the winner's flat index in an `IndexLayout`: row-major over the axes from
``first_axis`` on (the batch and channel axes first, then the spatial axes in order, or
reversed: column-major), linear in the coordinates, so each output's label is its window
origin's flat index plus the winner tap's constant offset. A window without a winner gets the
layout's ``no_winner`` index. Indices are computed in the index dtype asked for (the adapters
check that the range fits it).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import rules
from jaxmax._src.lowering.pooling import taps as pool_taps
from jaxmax._src.lowering.pooling.geometry import Geometry
from jaxmax._src.lowering.pooling.scan import select

__all__ = ["NO_WINNER", "IndexLayout", "first_equal", "index_dtype", "indices", "winner"]

#: What a window without a winner points at: the start of its (batch, channel) plane, or -1.
NO_WINNER = ("plane_start", "minus_one")


class IndexLayout(NamedTuple):
    """How a winner's position is written as one integer over ``(N, C, *spatial)``.

    The flat index counts the axes from `first_axis` on (0: over the whole input; ``k``: modulo
    ``prod(shape[k:])``), row-major with the spatial axes in order, or reversed with
    `column_major`; a window without a winner gets `no_winner` (see `NO_WINNER`)."""
    first_axis: int = 0
    column_major: bool = False
    no_winner: str = "minus_one"

    def dims(self, ndim: int) -> list[int]:
        """The axes the flat index counts, the slowest first."""
        spatial = list(range(2, ndim))
        axes = [0, 1] + (spatial[::-1] if self.column_major else spatial)
        return [d for d in axes if d >= self.first_axis]


def index_dtype(count: int) -> type:
    """Tap indices (and -1) as int8 when they fit: a quarter of int32's memory and page faults,
    at the same speed; int32 otherwise."""
    return np.int8 if count <= 127 else np.int32


def first_equal(x: jax.Array, g: Geometry, out: jax.Array, fill, *, read=None,
                inside: bool = False, label=None, none=-1, dtype=None) -> jax.Array:
    """Per output, ``label(j)`` of the first tap ``j`` whose element equals `out` (both through
    `read`, when given), padding read as `fill`; `none` where no tap does (None: the caller
    knows that one always does). With `inside`, padding never matches. `label` defaults to the
    tap number, in `dtype` (default `index_dtype`).

    One pass over the input and `out`, each tap read once. The result is fused into its
    consumers: a caller that uses it more than once computes it apart (`_apart`).
    """
    taps = pool_taps.taps(x, g, fill, read)
    masks = pool_taps.taps(jnp.ones(x.shape, bool), g, False) if inside else None
    target = out if read is None else read(out)
    dtype = index_dtype(len(taps)) if dtype is None else dtype
    label = (lambda j: dtype(j)) if label is None else label
    last = len(taps)
    if none is None:  # some tap always matches: the last one needs no comparison
        last -= 1
        none = label(last)
    index = jnp.broadcast_to(jnp.asarray(none, dtype), out.shape)
    for j in range(last - 1, -1, -1):
        hit = taps[j] == target
        if masks is not None:
            hit = hit & masks[j]
        index = select(hit, label(j), index)
    return index


def _apart(pred: jax.Array, if_true, if_false) -> jax.Array:
    """``lax.cond(pred, if_true, if_false)``: the result computed in a computation of its own,
    hence into a buffer, and from taps XLA does not merge with the value's. Elementwise code is
    otherwise fused (recomputed) into each of its consumers, and a winner read by every tap of
    a tangent would be recomputed per tap."""
    return lax.cond(pred, if_true, if_false)


def _winner_at_least_lowest(x: jax.Array, g: Geometry, out: jax.Array) -> jax.Array:
    """Per output of the rule ``"skip"`` (`out`), the tap that receives its tangent, or -1.

    Above lowest(T), the first element equal to `out` (padding, at ``-inf``, never is). At
    lowest(T) (no element above it), every clamped tap equals the value, so the first tap wins,
    and passes the tangent only if it is an input element that is not NaN or ``-inf``.
    """
    low = dtypes.lowest(x.dtype)
    pad = dtypes.max_identity(x.dtype)

    def raised():
        index = first_equal(x, g, out, pad, none=None)  # used above lowest(T) only
        # whether tap 0 reads an input element >= lowest(T) (False in the padding)
        tap0 = pool_taps.tap(x.reshape(g.phase_shape), g, g.taps[0], False,
                             read=lambda v: v >= low)
        fallback = select(tap0, index.dtype.type(0), index.dtype.type(-1))
        return select(out > low, index, fallback)

    return _apart(jnp.min(out) > low, lambda: first_equal(x, g, out, pad, none=None), raised)


def _padded(g: Geometry, t) -> bool:
    """Whether tap `t` of `g` reads padding for some output."""
    return any(o or a.out - o - n for a, o, n in zip(g.axes, t.first_out, t.counts, strict=True))


def _nan_or_equal_taps(x: jax.Array, g: Geometry, out: jax.Array, offsets: list[int],
                       dtype, covered: bool) -> jax.Array:
    """Per output of `g`, ``offsets[j]`` of its first tap ``j`` that is NaN or equal to `out`,
    -1 where none is (`offsets` are >= 0). With `covered` (every window of `g` holds an input
    element), some tap always is, so the last tap is taken without a compare.

    One compare per tap and its NaN test, so NaN data costs what clean data costs: a NaN tap
    makes its window's value NaN, so in a window whose value is not NaN no tap is NaN, and the
    NaN test only matches in a NaN window (where equality never does). A tap wholly in the
    padding never matches and is skipped; a partly padded one reads its NaN test through a tap
    of its own whose padding is False (its padding, read as NaN, must not match).
    """
    phases = x.reshape(g.phase_shape)
    last = len(g.taps) - 1 if covered else len(g.taps)
    index = jnp.full(out.shape, dtype(offsets[last] if covered else -1))
    for j in range(last - 1, -1, -1):
        t = g.taps[j]
        if 0 in t.counts:
            continue
        value = pool_taps.tap(phases, g, t, np.nan)
        if _padded(g, t):
            nan = pool_taps.tap(phases, g, t, False, read=lambda v: v != v)
        else:
            nan = value != value
        index = select((value == out) | nan, dtype(offsets[j]), index)
    return index


def _first_nan_or_equal(x: jax.Array, g: Geometry, out: jax.Array, *,
                        dims: list[int] | None = None, no_winner: str = "minus_one",
                        dtype=None) -> jax.Array:
    """Per output of the rule ``"propagate"`` (`out`), the winner: the first input element that
    is NaN when `out` is, else equal to it; a window without input elements has none. As its
    flat index over `dims` (`_origin_and_offsets`; no winner: `no_winner`, see `NO_WINNER`), or
    with `dims` None as its tap number in `dtype` (default `index_dtype`; -1 without one).

    When every value is finite, `first_equal`'s one pass; otherwise, instead, one pass of
    `_nan_or_equal_taps` over the interior outputs (every tap a plain slice, every window
    covered) and one per border box (``Geometry.boxes``), written into the result in place, as
    the values are; its labels are per-tap constant offsets, the window origin's flat index
    added once. Either result is an array in memory (a ``lax.cond``'s result), which a caller
    reading it once per tap needs.
    """
    if dtype is None:
        dtype = index_dtype(len(g.taps))
    if not dtypes.is_floating(x.dtype):
        label, none = _labels(g, dims, no_winner, dtype)
        return first_equal(x, g, out, dtypes.max_identity(x.dtype), inside=True, label=label,
                           none=none, dtype=dtype)

    def search(gb: Geometry, view: jax.Array) -> jax.Array:
        covered = not any(0 in t.counts or _padded(gb, t) for t in gb.taps)
        if dims is None:
            return _nan_or_equal_taps(x, gb, view, list(range(len(gb.taps))), dtype, covered)
        origin, offsets = _origin_and_offsets(gb, dims, dtype)
        index = _nan_or_equal_taps(x, gb, view, offsets, dtype, covered)
        flat = origin(dims) + index
        if covered:
            return flat
        return select(index < 0, _no_winner(origin, dims, no_winner, dtype), flat)

    def compute() -> jax.Array:
        def part(box: Geometry, at) -> jax.Array:
            if box is g:
                return search(g, out)
            return search(box, lax.slice(out, at, [a + n for a, n in
                                                   zip(at, box.out_shape, strict=True)]))

        return pool_taps.by_boxes(g, part, dtype(0))  # every output is in one box

    def fast() -> jax.Array:
        label, none = _labels(g, dims, no_winner, dtype)  # built in the branch that uses it
        return first_equal(x, g, out, np.nan, label=label, none=none, dtype=dtype)

    # Where every value is finite no tap is NaN, and plain equality (padding read as NaN) finds
    # the winner: one compare per tap, the pass clean data pays; otherwise `compute`, a compare
    # and a NaN test per tap (8-24% slower on clean data). A lax.cond runs one of the two, and
    # its operand `out` is in memory, so neither search recomputes the values; a while_loop
    # redo ran the one-compare pass on NaN data as well (benchmarks/RESULTS.md, "Pooling: forms
    # measured and not kept")
    return lax.cond(rules.finite_sum(out), fast, compute)


def winner(x: jax.Array, g: Geometry, out: jax.Array, nan: str) -> jax.Array:
    """Per output (`out`, the values of `x` under the rule `nan`), the number of the tap that
    receives its tangent, or -1 (no tap does)."""
    if nan == "skip":
        return _winner_at_least_lowest(x, g, out)
    return _first_nan_or_equal(x, g, out)


def _origin_and_offsets(g: Geometry, dims: list[int], dtype):
    """The flat index of each output's window origin, as ``origin(dims)`` (over a subset of
    `dims`), and the constant offset of each tap's element from it.

    The flat index is ``sum(coord[d] * stride[d])`` over `dims` (a row-major layout of those
    dims in the given order, the first the slowest), linear in the coordinates: the window
    origin's part (from the output position) plus a constant offset per tap (>= 0).
    """
    strides, step = {}, 1
    for d in reversed(dims):
        strides[d] = step
        step *= g.in_shape[d]

    def origin(subset):
        flat = jnp.zeros(g.out_shape, dtype)
        for d in subset:
            a = g.axes[d]
            coord = lax.broadcasted_iota(dtype, g.out_shape, d) * dtype(a.s) - dtype(a.lo)
            flat = flat + coord * dtype(strides[d])
        return flat

    counts = [a.k for a in g.axes]
    offsets = []
    for j in range(len(g.taps)):
        taps_of_axes = np.unravel_index(j, counts)
        offsets.append(sum(int(taps_of_axes[d]) * g.axes[d].d * strides[d] for d in dims))
    return origin, offsets


def _no_winner(origin, dims: list[int], no_winner: str, dtype):
    """The index of a window without a winner: its ``(n, c)`` plane start, or -1."""
    if no_winner == "plane_start":
        return origin([d for d in dims if d < 2])
    return dtype(-1)


def _labels(g: Geometry, dims: list[int] | None, no_winner: str, dtype):
    """``(label, none)`` for `first_equal`: the flat index over `dims` of tap ``j``'s element
    for every output as ``label(j)`` (see `_origin_and_offsets`), and the index of a window
    without a winner; with `dims` None, tap numbers (``label`` None) and -1."""
    if dims is None:
        return None, dtype(-1)
    origin, offsets = _origin_and_offsets(g, dims, dtype)
    first: list[jax.Array] = []

    def label(j: int) -> jax.Array:
        # the origin built once, at the first label, in the computation that uses it (never
        # passed into a lax.cond or while_loop as an array in memory)
        if not first:
            first.append(origin(dims))
        return first[0] + dtype(offsets[j])

    return label, _no_winner(origin, dims, no_winner, dtype)


def indices(x: jax.Array, g: Geometry, out: jax.Array, nan: str, layout: IndexLayout,
            dtype) -> jax.Array:
    """The flat index (in `layout`, of `dtype`) of each window's winner; `out` holds the values
    of `x` under the rule `nan`.

    Under ``"skip"`` padding reads ``-inf`` (lowest(T) for integers), which never equals a
    value above lowest(T), and a window whose value is lowest(T) has no winner.
    """
    if nan == "skip":
        label, none = _labels(g, layout.dims(x.ndim), layout.no_winner, dtype)
        first = first_equal(x, g, out, dtypes.max_identity(x.dtype), label=label, none=0,
                            dtype=dtype)
        return select(out > dtypes.lowest(x.dtype), first, none)
    return _first_nan_or_equal(x, g, out, dims=layout.dims(x.ndim), no_winner=layout.no_winner,
                               dtype=dtype)
