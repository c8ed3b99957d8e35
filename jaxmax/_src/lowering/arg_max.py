"""ArgMax over one axis, by an ordering key (:mod:`jaxmax._src.lowering.order`).

The adapters pass the ordering rule ``nan_order`` (``"first"`` or ``"last"``: where NaN ranks
among the selected elements), which only decides the key's NaN placement.

The index of the first (or last) element whose key is the largest. Inputs of at most
``SMALL_BYTES`` take one reduction of (``order.compare_key``, index) pairs (the smallest
program, as every new small shape compiles one). On an axis before the last of at most
``FOLD_LIMIT`` elements, one fused pass over the slices keeps the running best key and its index (a
segmentation head's ``(N, classes, H, W)`` over the classes); a longer axis before the last is
folded the same way in blocks (``_blocked_arg_max``). A last axis of fewer than 16 elements is
folded element by element; float32 over a last axis of ``8 * c`` elements, ``2 <= c <= 512`` (a
classifier's logits), folds the keys of at most 32 runs of ``8 * m`` lanes (``_lane_arg_max``);
any other last axis folds at most ``WIDE_RUNS`` runs of ``wide_lanes(n)`` lanes, the last run
ending at the axis's end (overlapping the one before it). Every form folds keys, so it is exact
on any data and its time does not depend on the data (NaN, ties, ``-0.0``/``+0.0``,
subnormals); its compiled code is bounded by the unrolled steps, whatever the axis length.

Inputs sharded over ``Explicit`` mesh axes are computed with those axes made ``Auto``
(:mod:`jaxmax._src.explicit_axes`), except along a sharded arg-max axis, where each device
finds its block's answer and two output-sized all-reduces combine them (`_across_blocks`). The
output keeps the sharding of every other axis. On ``Auto`` axes (several devices in the process,
no sharding in the input's type) the same per-device forms are chosen once XLA knows the
sharding (`_on_auto_axes`, :mod:`jaxmax._src.auto_partition`).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, explicit_axes
from jaxmax._src.lowering import compile_options, order, rules

#: ArgMax over a non-last axis of at most this many elements runs as one fused fold.
FOLD_LIMIT = 64
#: Inputs of at most this many bytes take one reduction of (key, index) pairs, the smallest
#: program: compiling dominates their run time, and every new shape compiles one.
SMALL_BYTES = 64 << 10


def arg_max(x: jax.Array, *, axis: int, keepdims: bool, last: bool, nan_order: str,
            index_dtype: np.dtype) -> jax.Array:
    """Index of the first (`last`: last) largest element along `axis`, NaN ranking above every
    number (`nan_order` ``"first"``) or below every number (``"last"``).

    `axis` is normalised; the axis has at least one element; `index_dtype` is as JAX stores it.
    """
    return _arg_max_jit(x, axis=axis, keepdims=keepdims, last=last, nan_order=nan_order,
                        index_dtype=np.dtype(index_dtype), auto=rules.several_devices())


@compile_options.jit(
    static_argnames=("axis", "keepdims", "last", "nan_order", "index_dtype", "auto"))
def _arg_max_jit(x, *, axis, keepdims, last, nan_order, index_dtype, auto=False):
    def compute(x):
        def key(v):
            return order.key(v, descending=True, nan_order=nan_order)

        n = x.shape[axis]
        if x.size * x.dtype.itemsize <= SMALL_BYTES:
            out = _pair_arg_max(order.compare_key(x, nan_order=nan_order), axis, last,
                                index_dtype)
        elif axis != x.ndim - 1 and n <= FOLD_LIMIT:
            out = _fold_arg_max(x, key, axis, last, index_dtype)
        elif axis != x.ndim - 1:
            data, block_key = _blocked_input(x, nan_order)
            out = _blocked_arg_max(data, block_key, axis, last, block(n)).astype(index_dtype)
        elif x.dtype == np.float32 and lanes(n):
            out = _lane_arg_max(x, partial(order.compare_key, nan_order=nan_order), lanes(n),
                                last).astype(index_dtype)
        else:
            data, fold_key = _blocked_input(x, nan_order)
            if n < 2 * _MIN_LANES:
                out = _fold_arg_max(data, fold_key, axis, last, index_dtype)
            else:
                out = _lane_arg_max(data, fold_key, wide_lanes(n), last,
                                    float_search=n < 2**24).astype(index_dtype)
        return lax.expand_dims(out, (axis,)) if keepdims else out

    spec = explicit_axes.spec_of(x)
    if auto and not explicit_axes.names_of(x):  # no sharding in the type: XLA's to choose
        return _on_auto_axes(x, compute, axis=axis, keepdims=keepdims, last=last,
                             nan_order=nan_order)
    along = explicit_axes.explicit_only(x, axis)
    if along:
        return _across_blocks(x, compute, along, axis=axis, keepdims=keepdims, last=last,
                              nan_order=nan_order)
    return explicit_axes.run(
        compute, (x,), lambda _: explicit_axes.reduced(spec, (axis,), keepdims))


def _across_blocks(x, compute, names, *, axis, keepdims, last, nan_order):
    """ArgMax of `x` sharded along `axis` over the ``Explicit`` mesh axes `names`: `_per_block`
    in ``jax.shard_map``."""
    spec = explicit_axes.spec_of(x)
    out_spec = explicit_axes.reduced(spec, (axis,), keepdims)
    mesh = jax.typeof(x).sharding.mesh
    return jax.shard_map(
        _per_block(x.shape[axis], compute, names, axis=axis, keepdims=keepdims, last=last,
                   nan_order=nan_order),
        mesh=mesh, in_specs=(jax.P(*spec),), out_specs=jax.P(*out_spec))(x)


def _on_auto_axes(x, compute, *, axis, keepdims, last, nan_order):
    """ArgMax where XLA chooses the sharding (:mod:`jaxmax._src.auto_partition`): the arg-max
    axis sharded, `_per_block` (the ``Explicit`` form's two all-reduces); only other axes
    sharded, each device finds its own block's answer and nothing moves. Blocks of unequal
    size are gathered. The indices have no derivative (a zero tangent)."""
    def planner(mesh, specs):
        spec = specs[0]
        if not auto_partition.even(mesh, spec, x.shape):
            return None
        out_spec = explicit_axes.reduced(spec, (axis,), keepdims)
        names = explicit_axes.entry_names(spec[axis])
        if not names:
            return auto_partition.Plan(lambda b: (compute(b),), (spec,), (out_spec,))
        per_block = _per_block(x.shape[axis], compute, names, axis=axis, keepdims=keepdims,
                               last=last, nan_order=nan_order)
        return auto_partition.Plan(lambda b: (per_block(b),), (spec,), (out_spec,))

    def jvp(primals, tangents, outs):
        del primals, tangents
        return (np.zeros(outs[0].shape, jax.dtypes.float0),)

    others = [i for i in range(x.ndim) if i != axis]
    kept = (tuple(None if i == axis else (0, i) for i in range(x.ndim)) if keepdims
            else tuple((0, i) for i in others))
    return auto_partition.call(lambda v: (compute(v),), planner, (x,), kept=(kept,),
                               jvp=jvp)[0]


def _per_block(n, compute, names, *, axis, keepdims, last, nan_order):
    """Each device's ArgMax of its block of an axis of `n` elements sharded over the mesh axes
    `names` (every mesh axis manual): the device finds its block's answer (`compute`), then two
    all-reduces pick the blocks that hold the largest key (one key per output element) and, of
    those, the first (`last`: last) global index (in `_wire_type`: one byte per output element
    along an axis of at most 256). The partitioner instead all-gathered a key and an index per
    element of the axis.

    The output's bytes (``int32``) cannot carry both: the winner is decided by the 32-bit key,
    so the first all-reduce alone is the output's size and the index adds to it (5 bytes per
    output element against 4; docs/multi-host.md)."""
    def per_block(block):
        local = compute(block) if keepdims else lax.expand_dims(compute(block), (axis,))
        keys = order.compare_key(block, nan_order=nan_order)
        best = jnp.take_along_axis(keys, local.astype(np.int32), axis=axis)
        top = lax.pmax(best, names)
        wire = _wire_type(n, local.dtype)
        offset = (lax.axis_index(names) * block.shape[axis]).astype(local.dtype)
        ours = jnp.where(best == top, (local + offset).astype(wire),
                         np.iinfo(wire).min if last else np.iinfo(wire).max)
        out = (lax.pmax(ours, names) if last else lax.pmin(ours, names)).astype(local.dtype)
        return out if keepdims else jnp.squeeze(out, axis)

    return per_block


def _wire_type(n: int, index_dtype: np.dtype) -> np.dtype:
    """The type the blocks' indices along an axis of `n` elements are combined in: the narrowest
    unsigned type that holds every position (``n - 1``) and the sentinel a block without the
    best key sends (its largest value for the first index: no position exceeds it; 0 for the
    last: the block holding the best sends a position at least as large), or `index_dtype`."""
    for wire in (np.uint8, np.uint16):
        if n - 1 <= np.iinfo(wire).max:
            return np.dtype(wire)
    return np.dtype(index_dtype)


def positions(n: int) -> np.dtype:
    """The integer type that numbers the positions of an axis of `n` elements: int32, or int64
    past int32's range (only reached with ``jax_enable_x64``: the adapters refuse such an axis
    without it)."""
    return np.dtype(np.int32) if n <= np.iinfo(np.int32).max else np.dtype(np.int64)


def _running_best(take, steps, key, last, index_dtype=np.int32):
    """The fold every ArgMax form runs over `steps` arrays ``take(j)``: per element, the best
    key so far and the `j` it came from, replaced only by a strictly greater key (`last`:
    greater or equal), so the first (last) best is kept. Each key is computed from its own
    slice, so the fold is one loop fusion reading each slice once."""
    best = key(take(0))
    at = jnp.zeros(best.shape, index_dtype)
    for j in range(1, steps):
        current = key(take(j))
        better = current >= best if last else current > best
        best = jnp.where(better, current, best)
        at = jnp.where(better, np.array(j, index_dtype), at)
    return best, at


def _fold_arg_max(x, key, axis, last, index_dtype):
    """One pass over the `axis` slices: the running best key and its index."""
    return _running_best(lambda j: lax.index_in_dim(x, j, axis, keepdims=False),
                         x.shape[axis], key, last, index_dtype)[1]


#: `_blocked_arg_max` folds blocks of `block(n)` elements: the fold is unrolled over a block, so
#: its compiled code is bounded by this, whatever the axis length.
MAX_BLOCK = 32


def block(n: int) -> int:
    """The block of `_blocked_arg_max` over an axis of `n` elements: its largest divisor in
    ``[8, MAX_BLOCK]``, or 16 (the other ``n % 16`` elements then folded on their own)."""
    return next((b for b in range(MAX_BLOCK, 7, -1) if n % b == 0), 16)


def _blocked_input(x, nan_order):
    """The array a fold slices (`_blocked_arg_max`, and over the last axis `_fold_arg_max` and
    `_lane_arg_max`) and its key, ``order.compare_key``. bfloat16 is sliced as its 16 bits and
    keyed as the float32 those bits widen to (the same order): XLA's CPU compiled the fold of
    bfloat16 slices in 1.1 s against 0.27 s (32 steps; float16 and integers are as fast as
    float32)."""
    if x.dtype != jnp.bfloat16:
        return x, partial(order.compare_key, nan_order=nan_order)

    def key(bits):
        wide = lax.bitcast_convert_type(bits.astype(np.uint32) << np.uint32(16), np.float32)
        return order.compare_key(wide, nan_order=nan_order)

    return lax.bitcast_convert_type(x, np.uint16), key


def _blocked_arg_max(x, key, axis, last, width):
    """Arg max over an axis before the last, by `key`, in one fused pass over `x`.

    Element ``i = q * width + j`` of the axis is element `j` of block `q`. A fold over `j` (one
    strided slice of `x` per `j`, read along the contiguous trailing axes) keeps, per block, the
    running best key and its `j`, replaced only by a strictly greater key (`last`: greater or
    equal), so each block holds its first (last) best element. On the block arrays (a
    ``width``-th of `x`), the best key and the first (last) block holding it give the index. The
    ``n % width`` elements after the last whole block are folded on their own and come last in
    the order. The key decides NaN, ``-0.0``/``+0.0`` and subnormals exactly: no check, no second
    path (the float maximum and a search for it had cost three passes, and two more on NaN or
    zero maxima)."""
    n = x.shape[axis]
    blocks, rest = divmod(n, width)
    fold = partial(_running_best, key=key, last=last)
    best, at = fold(lambda j: lax.slice_in_dim(x, j, j + (blocks - 1) * width + 1, width, axis),
                    width)
    pos = positions(n)
    index = at.astype(pos) + lax.broadcasted_iota(pos, best.shape, axis) * pos.type(width)
    top = lax.reduce_max(best, (axis,))
    if rest:
        tail, tail_at = fold(lambda j: lax.index_in_dim(x, blocks * width + j, axis, False), rest)
        top = jnp.maximum(top, tail)
    found = first_index(best == lax.expand_dims(top, (axis,)), axis, last, pos, index, n)
    if not rest:
        return found
    in_tail = tail_at.astype(pos) + pos.type(blocks * width)
    if last:  # the tail comes after every block
        return jnp.where(tail == top, in_tail, found)
    return jnp.where(found == n, in_tail, found)


#: `_lane_arg_max` folds a last axis of ``8 * c`` elements, ``2 <= c <= LANE_FOLD_LIMIT``, in
#: runs of ``8 * m`` lanes, at most `MAX_RUNS` runs: the fold is unrolled over the runs, so its
#: compiled code grows with their number (125 runs of 8 lanes compiled in 0.39 s of CPU time, 25
#: runs of 40 in 0.17 s, at the same run time: benchmarks/RESULTS.md, "TopK and ArgMax").
LANE_FOLD_LIMIT = 512
MAX_RUNS = 32
_MAX_LANES = 128


def lanes(n: int) -> int:
    """The lanes of `_lane_arg_max` over a last axis of `n` elements: the fewest, a multiple of
    8 dividing `n`, that leave at most `MAX_RUNS` runs and at least two; or 0 (not used)."""
    if n % 8 or not 2 <= n // 8 <= LANE_FOLD_LIMIT:
        return 0
    for width in range(8, min(_MAX_LANES, n // 2) + 1, 8):
        if n % width == 0 and n // width <= MAX_RUNS:
            return width
    return 0


#: `_lane_arg_max` over any other last axis (`wide_lanes`): at most this many runs. Fewer
#: runs of wider lanes read faster on long axes but leave more lanes to the final search, whose
#: compare-and-select reduction slows on ties (benchmarks/RESULTS.md, "Round 6").
WIDE_RUNS = 16
_MIN_LANES = 8


def wide_lanes(n: int) -> int:
    """The lanes of `_lane_arg_max` over a last axis of ``n >= 16`` elements that `lanes` does
    not take: the fewest, a multiple of 8, that leave at most `WIDE_RUNS` runs."""
    return _MIN_LANES * -(-n // (_MIN_LANES * WIDE_RUNS))


def _lane_arg_max(x, key, width, last, float_search=False):
    """Arg max over the last axis of `x` (``n >= width`` elements) in one fused pass, by `key`.

    The axis is cut into ``ceil(n / width)`` runs of `width` elements, the last one ending at
    the axis's end (so it overlaps the run before it when `width` does not divide `n`); a fold
    over the runs keeps, for each lane, the running best key and the run it came from (replaced
    only by a strictly greater key; `last`: greater or equal), so each lane holds its first
    (last) best element, the runs starting in increasing order. On the small lane arrays, the
    lanes holding the slice's best key give the index: the smallest (largest) position among
    them, an element read twice by overlapping runs naming one position. The key decides NaN,
    ``-0.0``/``+0.0`` and subnormals exactly, so the time does not depend on the data (a float
    fold with a fallback to the key cost 2.5-9x on NaN or zero maxima). `float_search` (an
    axis under 2**24 elements) finds the index among the lanes by float arithmetic, each miss
    pushed past the axis, and one float reduction, with no select: the select's reduction ran
    1.3-1.5x slower when many lanes hold the best key (ties, NaN).
    """
    n = x.shape[-1]
    count = -(-n // width)
    if n % width == 0:
        runs = x.reshape(x.shape[:-1] + (count, width))
        best, run = _running_best(lambda j: runs[..., j, :], count, key, last)
    else:
        def run_at(j):  # the last run ends at the axis's end
            start = min(j * width, n - width)
            return lax.slice_in_dim(x, start, start + width, axis=x.ndim - 1)

        best, run = _running_best(run_at, count, key, last)
    top = lax.reduce_max(best, (best.ndim - 1,))
    pos = positions(n)
    start = run.astype(pos) * pos.type(width)
    if n % width:
        start = jnp.minimum(start, pos.type(n - width))
    index = start + lax.broadcasted_iota(pos, best.shape, best.ndim - 1)
    hit = best == top[..., None]
    if not float_search:
        return first_index(hit, best.ndim - 1, last, pos, index, n)
    miss = (~hit).astype(np.float32)
    at = index.astype(np.float32)
    if last:
        return lax.reduce_max(at - miss * np.float32(n + 1), (best.ndim - 1,)).astype(np.int32)
    return lax.reduce_min(at + miss * np.float32(n), (best.ndim - 1,)).astype(np.int32)


def _pair_arg_max(keys, axis, last, index_dtype):
    """One reduction of (key, index) pairs: the larger key, and on equal keys the smaller
    (`last`: larger) index, an order in which the reduction may combine pairs in any grouping.
    The initial pair loses to every element (the lowest key with an index no element has
    that a tie rejects). One kernel, the smallest program."""
    index = lax.broadcasted_iota(index_dtype, keys.shape, axis)

    def better(a, b):
        (key_a, at_a), (key_b, at_b) = a, b
        take = (key_a > key_b) | (key_a == key_b) & (at_a > at_b if last else at_a < at_b)
        return lax.select(take, key_a, key_b), lax.select(take, at_a, at_b)

    lowest = np.array(np.iinfo(keys.dtype).min, keys.dtype)
    none = np.array(-1 if last else np.iinfo(index_dtype).max, index_dtype)
    return lax.reduce((keys, index), (lowest, none), better, (axis,))[1]


def first_index(hit: jax.Array, axis: int, last: bool, dtype: np.dtype,
                index: jax.Array | None = None, length: int | None = None) -> jax.Array:
    """The first (`last`: last) position along `axis` where `hit` holds, by one reduction, as
    `dtype`; ``length`` (the axis length unless given) if none holds, ``-1`` for `last`.

    `index` (the iota along `axis` unless given) names each position, for callers whose
    positions are not the elements' order along `axis`. A float `dtype` is exact below 2**24
    and lets XLA use its fast float reductions."""
    if index is None:
        index = lax.broadcasted_iota(dtype, hit.shape, axis)
    if last:
        return lax.reduce_max(jnp.where(hit, index, np.array(-1, dtype)), (axis,))
    none = hit.shape[axis] if length is None else length
    return lax.reduce_min(jnp.where(hit, index, np.array(none, dtype)), (axis,))
