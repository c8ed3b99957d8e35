"""Max pooling as one variadic ``lax.reduce_window``: the compact form, whose compiled code does
not grow with the window, the window count or the input.

Each element carries its value and its flat index within its plane (the axes from the first
pooled one on). The select computation keeps the greater ordering key (the bits in IEEE total
order, ``-0.0`` equal to ``+0.0``, NaN placed by the values rule;
:mod:`jaxmax._src.lowering.order`), and of equal keys the lower index, so each window yields its
*winner*: the first element, in row-major window order, of the greatest key. Padding is the
reduction's init (the identity, ``-inf`` or ``iinfo.min``, at index ``NONE``), so it never beats
an element of the same value, and a window that reads padding only has no winner. Two forms of
that order (`winners`): small inputs with small windows reduce (value, index) pairs and compute
the keys in each compare (the smallest program); the rest reduce (key, value, index) triples,
the key computed once per element (faster where windows are long).

The values rule (``nan``) is the place of NaN in that order:

* ``"skip"``: NaN below every number, so the winner is the first maximal non-NaN element; the
  value is ``max(lowest(T), winner)``: lowest(T) when no element is above it (padding only, NaN,
  ``-inf``, elements equal to lowest(T)), and then the window has no winner.
* ``"propagate"``: NaN above every number, so the winner is the window's first NaN if any, else
  its first maximal element; a window without an element gives the identity (``-inf``,
  ``iinfo.min``) and no winner. ``-0.0`` and ``+0.0`` are equal, so the first zero wins.

`pooled` returns the values with each window's winner, from the one reduction: the indices
(`indices`) and the derivative read the winner the values came from. The derivative
(``jax.custom_jvp``) gathers each window's tangent at its winner, within its plane, so it is
linear in the input tangent and transposes to a scatter-add. Under ``"skip"`` a window whose
value is lowest(T) is differentiated as the pooling of the clamped input
``where(x >= lowest, x, lowest)`` with padding counted as lowest(T): its first tap wins, and
passes the tangent only when it is an input element equal to lowest(T).

`select` reduces the triples (AdaptiveMaxPool's reductions use it too).

Spec-agnostic: the adapters choose the rule. See docs/semantics.md §5 for the rules and §9 for the
jit contract.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes, explicit_axes
from jaxmax._src.lowering import order
from jaxmax._src.lowering.pooling import taps as pool_taps
from jaxmax._src.lowering.pooling.geometry import Geometry
from jaxmax._src.lowering.pooling.winners import IndexLayout

__all__ = ["FORCE", "MAX_UNROLLED_TAPS", "NONE", "PAIRS", "PAIRS_MAX_WORK", "SMALL_BYTES",
           "applies", "indices", "max_pool", "pooled", "select", "winners"]

#: Windows of more taps than this take the compact form on any input; see `applies`.
MAX_UNROLLED_TAPS = 27
#: Inputs of at most this many bytes take the compact form whatever the window; see `applies`.
SMALL_BYTES = 64 << 10
#: The index of padding, and of "no winner": above every plane index.
NONE = np.iinfo(np.int32).max
#: True or False forces the form where it can apply (tests of both forms set it, then clear
#: JAX's caches: the choice is made while tracing); None chooses by size.
FORCE: bool | None = None
#: `winners` reduces pairs up to this many element-taps (input elements times window taps):
#: each compare computes two keys, so the pairs run slower than the triples (1.0-1.4x at 4,032
#: elements and 9 taps, 1.1-1.9x at 16,384), and up to here that costs a new shape less than
#: the triples' larger program (benchmarks/RESULTS.md, "A new small shape, round 5").
PAIRS_MAX_WORK = 1 << 16
#: True or False forces the pairs or the triples of `winners` (tests set it, then clear JAX's
#: caches); None chooses by size (`_small`).
PAIRS: bool | None = None


def applies(g: Geometry, itemsize: int) -> bool:
    """Whether the compact form computes this pooling: a window of more than
    `MAX_UNROLLED_TAPS` taps (the unrolled forms' compiled code grows with the taps), or an input
    of at most `SMALL_BYTES` (where compiling dominates the run time). The per-plane index must
    fit int32, and the batch and channel axes are not pooled (the indices count planes from
    them). Figures: benchmarks/RESULTS.md, "Pooling: forms measured and not kept"."""
    plane = math.prod(g.in_shape[g.lead:])
    if plane >= NONE or 0 in g.out_shape or not plane or g.lead < 2:
        return False
    if FORCE is not None:
        return FORCE
    return (math.prod(g.window) > MAX_UNROLLED_TAPS
            or math.prod(g.in_shape) * itemsize <= SMALL_BYTES)


def select(a, b):
    """The lexicographic maximum of two (key, value, index) triples: greater key, then lower
    index (associative and commutative, as ``reduce_window`` needs)."""
    ka, va, ia = a
    kb, vb, ib = b
    take = (kb > ka) | ((kb == ka) & (ib < ia))
    # lax.select, not jnp.where (a jitted wrapper): every new shape keeps its lowered module,
    # so each wrapper costs memory per shape (benchmarks/RESULTS.md, "many shapes")
    return lax.select(take, kb, ka), lax.select(take, vb, va), lax.select(take, ib, ia)


def _plane_index(g: Geometry, small: bool) -> jax.Array:
    """The flat index of each element within its plane (row-major over the axes from `lead`):
    when `small`, a constant of the input's whole shape (at most `SMALL_BYTES`), so that no
    kernel computes or broadcasts it (each kernel costs every new shape compile time and
    memory)."""
    if small:
        plane = np.arange(math.prod(g.in_shape[g.lead:]), dtype=np.int32)
        whole = np.broadcast_to(plane.reshape(g.in_shape[g.lead:]), g.in_shape)
        return jnp.asarray(np.ascontiguousarray(whole))
    index = None
    step = 1
    for axis in reversed(range(g.lead, len(g.in_shape))):
        term = lax.broadcasted_iota(np.int32, g.in_shape, axis)
        index = term if index is None else index + term * np.int32(step)
        step *= g.in_shape[axis]
    return lax.full(g.in_shape, 0, np.int32) if index is None else index


def _small(g: Geometry, pairs: bool) -> bool:
    """Whether `winners` takes the pairs: allowed (`pairs`: the caller knows the input on one
    device) and at most `PAIRS_MAX_WORK` element-taps (input elements times window taps; their
    plane index, a constant, at most `SMALL_BYTES`)."""
    if PAIRS is not None:
        return PAIRS
    elements = math.prod(g.in_shape)
    return (pairs and elements * 4 <= SMALL_BYTES
            and elements * math.prod(g.window) <= PAIRS_MAX_WORK)


def _pair_select(nan: str, floating: bool):
    """The lexicographic maximum of two (value, index) pairs: the greater key
    (`order.compare_key`: the bits in IEEE total order, ``-0.0`` equal to ``+0.0``, NaN the
    greatest under ``"propagate"`` and the least under ``"skip"``), then the lower index
    (associative and commutative, as ``reduce_window`` needs)."""
    def rank(v):
        # on the bits, since XLA's CPU float compare takes a subnormal for zero
        if not floating:
            return v
        return order.compare_key(v, nan_order="first" if nan == "propagate" else "last")

    def select_pair(a, b):
        va, ia = a
        vb, ib = b
        ra, rb = rank(va), rank(vb)
        take = (rb > ra) | ((rb == ra) & (ib < ia))
        v = lax.select(take, vb, va)
        if floating and nan == "propagate":
            # one NaN, as every other pooling path gives (here: no kernel after the reduction)
            v = lax.select(v != v, np.array(np.nan, v.dtype), v)
        return v, lax.select(take, ib, ia)

    return select_pair


def winners(x: jax.Array, g: Geometry, nan: str,
            pairs: bool = False) -> tuple[jax.Array, jax.Array]:
    """Per window: the pooled value under the rule `nan` and the winner's plane index
    (``NONE`` without a winner).

    Two forms of one order. Up to `PAIRS_MAX_WORK` element-taps (`_small`), (value, index)
    pairs, each compare computing the two keys: the smallest program (every new shape
    compiles one). Otherwise (key, value, index) triples with the key computed once per
    element (`order.key`): 1.7-3.4x faster on 16,384 elements or long windows
    (benchmarks/RESULTS.md, "A new small shape, round 5"). Padding is the init at index
    ``NONE``: it never beats an element of its value. The pairs' init under ``"skip"`` is
    lowest(T) itself, which every reduction starts from, so the value is ``max(lowest(T),
    winner)`` with no step after the reduction (XLA compiles each such step into a kernel of
    its own). The pairs also need `pairs` (the input on one device): XLA's SPMD partitioner
    aborted (``ReshardAsWindowedInput``) on them with a pooled axis sharded over an Explicit
    mesh axis (tests/test_sharding.py). That abort, and the triples' on integers, whose values
    left the reduction unchanged, was a constraint on one result given to it alone (a mixed
    tuple sharding): where the input may be sharded, the results of either form pass through
    `explicit_axes.open_results` (forced pairs then partition too; the choice is kept)."""
    small = _small(g, pairs)
    index = _plane_index(g, small)
    if not small:
        key = order.key(x, descending=True,
                        nan_order="first" if nan == "propagate" else "last")
        low_key = np.array(np.iinfo(key.dtype).min, key.dtype)
        _, value, index = lax.reduce_window(
            (key, x, index), (low_key, dtypes.max_identity(x.dtype), np.int32(NONE)), select,
            g.window, g.strides, g.padding, window_dilation=g.dilation)
        if g.sharded:  # the results' shardings left to propagation (explicit_axes.open_results)
            value, index = explicit_axes.open_results(x, value, index)
        return _value(x, value, index, nan)
    low = dtypes.lowest(x.dtype)
    init = low if nan == "skip" else dtypes.max_identity(x.dtype)
    value, index = lax.reduce_window(
        (x, index), (np.array(init, x.dtype), np.int32(NONE)),
        _pair_select(nan, dtypes.is_floating(x.dtype)), g.window, g.strides, g.padding,
        window_dilation=g.dilation)
    if g.sharded:  # as the triples'
        value, index = explicit_axes.open_results(x, value, index)
    if nan == "skip":  # a value at lowest(T) has no winner
        index = lax.select(value > low, index, lax.full(index.shape, NONE, index.dtype))
    return value, index


def _value(x: jax.Array, value: jax.Array, index: jax.Array,
           nan: str) -> tuple[jax.Array, jax.Array]:
    """The pooled value of each window's winner `value` under the rule `nan`, and its `index`,
    ``NONE`` where the rule gives the window no winner."""
    if nan == "skip":  # max(lowest(T), winner): a NaN winner compares false, as its key would
        # (a compare of the values: the key of lowest(T) was a dozen traced operations on a
        # constant, which every new shape's module keeps)
        low = dtypes.lowest(x.dtype)
        above = value > low
        return (lax.select(above, value, lax.full(value.shape, low, value.dtype)),
                lax.select(above, index, lax.full(index.shape, NONE, index.dtype)))
    if dtypes.is_floating(x.dtype):  # one NaN, as every other pooling path gives
        value = lax.select(value != value, lax.full(value.shape, np.nan, value.dtype), value)
    return value, index


def _gather(t: jax.Array, index: jax.Array, g: Geometry) -> jax.Array:
    """`t` at each output's plane `index`, zero where it is ``NONE`` (linear in `t`). The
    leading (unpooled) axes stay batch axes of the gather: an input sharded along the batch or
    the channels is gathered on each device alone (one flat axis of ``N * C`` planes made XLA's
    partitioner all-gather the output-sized cotangent and the winners along the channels)."""
    lead = g.in_shape[:g.lead]
    picked = jnp.take_along_axis(t.reshape(lead + (-1,)), index.reshape(lead + (-1,)),
                                 axis=g.lead, mode="fill", fill_value=0)
    return picked.reshape(index.shape)


def _tap_number(index: jax.Array, g: Geometry) -> jax.Array:
    """The kernel tap (its number in ``g.taps``, row-major window order) at which each window
    reads its plane `index`; -1 where `index` is ``NONE``."""
    tap = jnp.zeros(index.shape, np.int32)
    step = 1  # the plane index's stride along `axis`
    taps = 1  # the tap number's stride along `axis`
    for axis in reversed(range(g.lead, len(g.in_shape))):
        a = g.axes[axis]
        coord = lax.rem(lax.div(index, np.int32(step)), np.int32(a.size))
        start = (lax.broadcasted_iota(np.int32, index.shape, axis) * np.int32(a.s)
                 - np.int32(a.lo))
        tap = tap + lax.div(coord - start, np.int32(a.d)) * np.int32(taps)
        step *= a.size
        taps *= a.k
    return lax.select(index != NONE, tap, lax.full(index.shape, -1, np.int32))


def _gather_by_taps(t: jax.Array, index: jax.Array, g: Geometry) -> jax.Array:
    """`_gather`'s result (`t` at each output's plane `index`, zero at ``NONE``) read tap by
    tap, for an input sharded along a pooled axis: each tap a slice of `t`
    (`pool_taps.piece_tap`), the winner's kept by a chain of selects. XLA's SPMD partitioner
    splits each slice, and its transposed pad, by rows with a halo exchange (a
    collective-permute of the rows a window reaches across a shard boundary), where it could
    not split the flat gather over the plane by rows (along H it all-reduced a whole partial
    input cotangent, along W it all-gathered the cotangent and the winners).

    The forward tangent is `_gather`'s exactly (selects only). The transpose, JAX's, adds the
    taps' cotangents in reverse tap order, which is the windows' row-major order (a later tap
    reads the same element from an earlier window), as ``_gather``'s transposed scatter-add
    adds them. That scatter-add starts from ``+0.0``; JAX's sum starts from its first term, so
    an element whose every term is ``-0.0`` would sum to ``-0.0``. The chain's first link, a
    select that never picks (no tap is numbered -2, which XLA cannot know), transposes to a
    last term of ``+0.0`` added to every element: ``-0.0 + 0.0`` is ``+0.0`` and every other
    sum is unchanged, so each element's cotangent is the scatter-add's, NaN and zeros
    included."""
    tap = _tap_number(index, g)
    pieces = pool_taps.phase_pieces(t, g)
    taps = [(j, tp) for j, tp in enumerate(g.taps) if 0 not in tp.counts]
    zero = lax.full(g.out_shape, 0, t.dtype)
    if not taps:
        return zero
    # the never-picking link reads the tap that reads each output's own position (the
    # least shifted), so that its transposed pad moves no more halo rows
    _, still = min(taps, key=lambda jt: sum(abs(i - o) for i, o in zip(jt[1].first_in,
                                                                        jt[1].first_out,
                                                                        strict=True)))
    out = lax.select(tap == -2, pool_taps.piece_tap(pieces, g, still), zero)
    for j, tp in taps:
        out = lax.select(tap == j, pool_taps.piece_tap(pieces, g, tp), out)
    return out


def _first_tap(g: Geometry, out_shape: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
    """Each window's first tap: its plane index, and whether it is an input element."""
    index = jnp.zeros(out_shape, np.int32)
    inside = jnp.ones(out_shape, bool)
    step = 1
    for axis in reversed(range(g.lead, len(g.in_shape))):
        coord = (lax.broadcasted_iota(np.int32, out_shape, axis) * np.int32(g.strides[axis])
                 - np.int32(g.padding[axis][0]))
        inside = inside & (coord >= 0) & (coord < g.in_shape[axis])
        index = index + coord * np.int32(step)
        step *= g.in_shape[axis]
    return jnp.where(inside, index, np.int32(NONE)), inside


@partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3, 4))
def _pooled(x: jax.Array, g: Geometry, nan: str, pairs: bool,
            by_taps: bool) -> tuple[jax.Array, jax.Array]:
    """The values and each window's winner (its plane index, ``NONE`` without one), from one
    reduction: the indices and the derivative read the winner the values came from. With
    `by_taps` the derivative gathers the winners' tangents tap by tap (`_gather_by_taps`)."""
    return winners(x, g, nan, pairs)


@_pooled.defjvp
def _pooled_jvp(g, nan, pairs, by_taps, primals, tangents):
    (x,), (t,) = primals, tangents
    # itself, so that higher orders differentiate it again
    out, index = _pooled(x, g, nan, pairs, by_taps)
    at = index
    if nan == "skip" and dtypes.is_floating(x.dtype):
        # windows at lowest(T): the first tap of the clamped input, padding counted
        low = dtypes.lowest(x.dtype)
        first, _ = _first_tap(g, out.shape)
        at = jnp.where(out > low, index, first)
        t = jnp.where(x >= low, t, jnp.zeros((), t.dtype))
    gather = _gather_by_taps if by_taps else _gather
    return (out, index), (gather(t, at, g), np.zeros(index.shape, jax.dtypes.float0))


def pooled(x: jax.Array, g: Geometry, nan: str, *, pairs: bool = False,
           by_taps: bool = False) -> tuple[jax.Array, jax.Array]:
    """The pooled values under the rule `nan` (``"skip"`` or ``"propagate"``), differentiable
    for floating `x`, and each window's winner as its plane index (``NONE`` without one; see
    `indices`). `pairs`: whether `winners` may take its pairs (the caller knows the input on
    one device). `by_taps`: the derivative reads the tangent tap by tap (`_gather_by_taps`;
    the caller knows a pooled axis sharded over ``Explicit`` mesh axes)."""
    if nan not in ("skip", "propagate"):
        raise ValueError(f"max_pool: unknown NaN rule {nan!r}")
    if dtypes.is_floating(x.dtype):
        return _pooled(x, g, nan, pairs, by_taps)
    return winners(x, g, nan, pairs)


def max_pool(x: jax.Array, g: Geometry, nan: str, *, pairs: bool = False,
             by_taps: bool = False) -> jax.Array:
    """The pooled values under the rule `nan`, differentiable for floating `x` (`pooled`)."""
    return pooled(x, g, nan, pairs=pairs, by_taps=by_taps)[0]


def _coords(index: jax.Array, g: Geometry, dtype) -> list[jax.Array]:
    """The coordinates (axes from `lead` on) of plane `index`, in `dtype`."""
    coords = []
    rest = index.astype(dtype)
    for axis in reversed(range(g.lead, len(g.in_shape))):
        n = dtype(g.in_shape[axis])
        coords.append(lax.rem(rest, n))  # plane indices are >= 0: no floor correction
        rest = lax.div(rest, n)
    return coords[::-1]


def indices(index: jax.Array, g: Geometry, layout: IndexLayout, dtype) -> jax.Array:
    """The flat index (in `layout`, of `dtype`) of each window's winner, from `pooled`'s plane
    `index` (``NONE``: no winner, written as the layout's ``no_winner``)."""
    dims = layout.dims(len(g.in_shape))
    strides = {d: math.prod(g.in_shape[e] for e in dims[i + 1:]) for i, d in enumerate(dims)}
    if not layout.column_major and layout.first_axis <= g.lead:
        # the pooled axes in row-major order: their part of the flat index is the plane index
        # (no coordinates divided out and multiplied back: fewer operations in every new
        # shape's module)
        flat = index.astype(dtype)
    else:
        flat = jnp.zeros(index.shape, dtype)
        for d, coord in zip(range(g.lead, len(g.in_shape)), _coords(index, g, dtype),
                            strict=True):
            if d in strides:
                flat = flat + coord * dtype(strides[d])
    plane = jnp.zeros(index.shape, dtype)
    for d in (d for d in dims if d < g.lead):
        term = lax.broadcasted_iota(dtype, index.shape, d) * dtype(strides[d])
        flat = flat + term
        if d < 2:
            plane = plane + term
    none = plane if layout.no_winner == "plane_start" else dtype(-1)
    return lax.select(index != NONE, flat, jnp.broadcast_to(none, flat.shape))
