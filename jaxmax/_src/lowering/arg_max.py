"""ArgMax over one axis, by an ordering key (:mod:`jaxmax._src.lowering.order`).

The adapters pass the ordering rule ``nan_order`` (``"first"`` or ``"last"``: where NaN ranks
among the selected elements), which only decides the key's NaN placement.

The index of the first (or last) element whose key is the largest. Inputs of at most
``SMALL_BYTES`` take two integer reductions of ``order.compare_key`` (the smallest program, as
every new small shape compiles one). On an axis before the last of
at most ``FOLD_LIMIT`` elements, one fused pass over the slices keeps the running best key and its
index (a segmentation head's ``(N, classes, H, W)`` over the classes); a longer axis before the
last is folded the same way in blocks (``_blocked_arg_max``), so the pass and its compiled code
do not grow with the axis and its time does not depend on the data. float32 over a last axis of
``8 * c`` elements, ``2 <= c <= 512`` (a classifier's logits), folds the keys of at most 32 runs
of ``8 * m`` lanes in one pass (``_lane_arg_max``), exact on any data.
Other float32 over a last axis with a divisor in ``[16, 256]``, NaN first, takes per-chunk float
maxima and sums in one pass and searches one chunk per slice (``_chunked_arg_max``), exact unless
a slice's maximum is subnormal, or zero with a subnormal in its slice (checked by one more pass
only when some slice's maximum is zero: `_settled`). Other float32 axes of up to ``2**24``
elements (a last axis, then): the float maximum and the first index holding it, settled the
same way (a slice with a NaN, NaN first, by its first NaN). Otherwise (and where those are not
exact) two integer reductions: the largest key, then the smallest (largest) index holding it.

Every result is the integer key's: XLA's floating ``max`` (which drops NaN on CPU) is used only
where the checks above make it agree.
Inputs sharded over ``Explicit`` mesh axes are computed with those axes made ``Auto``
(:mod:`jaxmax._src.explicit_axes`). The output keeps the sharding of every other axis.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import explicit_axes
from jaxmax._src.lowering import order

#: ArgMax over a non-last axis of at most this many elements runs as one fused fold.
FOLD_LIMIT = 64
#: Inputs of at most this many bytes take the two integer reductions of the key, the smallest
#: program: compiling dominates their run time, and every new shape compiles one.
SMALL_BYTES = 64 << 10


def arg_max(x: jax.Array, *, axis: int, keepdims: bool, last: bool, nan_order: str,
            index_dtype: np.dtype) -> jax.Array:
    """Index of the first (`last`: last) largest element along `axis`, NaN ranking above every
    number (`nan_order` ``"first"``) or below every number (``"last"``).

    `axis` is normalised; the axis has at least one element; `index_dtype` is as JAX stores it.
    """
    return _arg_max_jit(x, axis=axis, keepdims=keepdims, last=last, nan_order=nan_order,
                        index_dtype=np.dtype(index_dtype))


@partial(jax.jit, static_argnames=("axis", "keepdims", "last", "nan_order", "index_dtype"),
         inline=True)
def _arg_max_jit(x, *, axis, keepdims, last, nan_order, index_dtype):
    def compute(x):
        def key(v):
            return order.key(v, descending=True, nan_order=nan_order)

        def exact():
            return _reduce_arg_max(key(x), axis, last, np.dtype(np.int32))

        # The float32 forms below are exact unless their `ok` says otherwise; then `exact`.
        last_axis = x.dtype == np.float32 and axis == x.ndim - 1
        if x.size * x.dtype.itemsize <= SMALL_BYTES:
            out = _reduce_arg_max(order.compare_key(x, nan_order=nan_order), axis, last,
                                  index_dtype)
        elif axis != x.ndim - 1 and x.shape[axis] <= FOLD_LIMIT:
            out = _fold_arg_max(x, key, axis, last, index_dtype)
        elif axis != x.ndim - 1:
            data, block_key = _blocked_input(x, nan_order)
            out = _blocked_arg_max(data, block_key, axis, last,
                                   block(x.shape[axis])).astype(index_dtype)
        elif last_axis and lanes(x.shape[axis]):
            out = _lane_arg_max(x, partial(order.compare_key, nan_order=nan_order),
                                lanes(x.shape[axis]), last).astype(index_dtype)
        elif last_axis and nan_order == "first" and _chunk(x.shape[axis]):
            index, sure, zero = _chunked_arg_max(x, _chunk(x.shape[axis]), last)
            out = _settled(lambda: index, sure, zero, x, axis, exact).astype(index_dtype)
        elif x.dtype == np.float32 and x.shape[axis] <= 2**24:
            top = lax.reduce_max(x, (axis,))
            nan_free = ~jnp.isnan(lax.reduce_sum(x, (axis,)))
            out = _settled(partial(_float_arg_max, x, top, axis, last),
                           nan_free & (jnp.abs(top) >= _F32_TINY), nan_free & (top == 0), x,
                           axis, exact, ~nan_free if nan_order == "first" else None,
                           last).astype(index_dtype)
        else:
            out = _reduce_arg_max(key(x), axis, last, index_dtype)
        return lax.expand_dims(out, (axis,)) if keepdims else out

    return explicit_axes.run(
        compute, (x,), lambda _: explicit_axes.reduced(explicit_axes.spec_of(x), (axis,),
                                                       keepdims))


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


_F32_TINY = np.float32(np.finfo(np.float32).tiny)  # the smallest normal float32

#: `_blocked_arg_max` folds blocks of `block(n)` elements: the fold is unrolled over a block, so
#: its compiled code is bounded by this, whatever the axis length.
MAX_BLOCK = 32


def block(n: int) -> int:
    """The block of `_blocked_arg_max` over an axis of `n` elements: its largest divisor in
    ``[8, MAX_BLOCK]``, or 16 (the other ``n % 16`` elements then folded on their own)."""
    return next((b for b in range(MAX_BLOCK, 7, -1) if n % b == 0), 16)


def _blocked_input(x, nan_order):
    """The array `_blocked_arg_max` slices and its key. bfloat16 is sliced as its 16 bits and
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
    index = at + lax.broadcasted_iota(np.int32, best.shape, axis) * np.int32(width)
    top = lax.reduce_max(best, (axis,))
    if rest:
        tail, tail_at = fold(lambda j: lax.index_in_dim(x, blocks * width + j, axis, False), rest)
        top = jnp.maximum(top, tail)
    found = first_index(best == lax.expand_dims(top, (axis,)), axis, last, np.dtype(np.int32),
                        index, n)
    if not rest:
        return found
    in_tail = tail_at + np.int32(blocks * width)
    if last:  # the tail comes after every block
        return jnp.where(tail == top, in_tail, found)
    return jnp.where(found == n, in_tail, found)


def _settled(fast, sure, zero, x, axis, exact, nan_rows=None, last=False):
    """``fast()``, a float search's index, where it is exact; otherwise ``exact()``.

    The search is exact on a slice that is `sure` (no NaN in the data, or the NaN was found,
    and the float maximum a normal number or infinity: ``x == max`` is exact although XLA's CPU
    float compare treats subnormals as zero), and on a slice whose float maximum is ``±0``
    (`zero`) and that holds no subnormal: then the first (last) zero of either sign is the
    answer, as the key says. Slices in `nan_rows` (given where NaN ranks first) are answered by
    their first (`last`: last) NaN instead, when they hold one (a NaN sum may also be
    ``inf - inf``). Those checks are one more pass over `x`, taken only when some slice is not
    `sure` (a row of zeros, ReLU output; a NaN), so that such data do not pay the key's two
    integer reductions."""
    def settle():
        subnormal = order.is_subnormal(x)
        clean = lax.reduce_sum(jnp.where(subnormal, np.float32(1), np.float32(0)), (axis,)) == 0
        if nan_rows is None:
            return lax.cond(jnp.all(sure | zero & clean), fast, exact)
        at_nan = first_index(x != x, axis, last, np.dtype(np.float32)).astype(np.int32)
        found = (at_nan >= 0) & (at_nan < x.shape[axis])
        return lax.cond(jnp.all(sure | zero & clean | nan_rows & found),
                        lambda: jnp.where(nan_rows, at_nan, fast()), exact)

    return lax.cond(jnp.all(sure), fast, settle)


def _float_arg_max(x, top, axis, last):
    """Three float reductions (XLA's fast float kernels): the maximum, then the smallest
    (largest) index holding it, as float32 (exact below 2**24). Exact only where `_settled`
    says so; `top` is the plain float maximum over `axis`."""
    hit = x == lax.expand_dims(top, (axis,))
    return first_index(hit, axis, last, np.dtype(np.float32)).astype(np.int32)


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


def _lane_arg_max(x, key, width, last):
    """Arg max over the last axis of `x` (a classifier's logits) in one fused pass, by `key`.

    The axis is cut into runs of `width` elements; a fold over the runs keeps, for each lane,
    the running best key and the run it came from (replaced only by a strictly greater key;
    `last`: greater or equal), so each lane holds its first (last) best element. On the small
    lane arrays, the lanes holding the slice's best key give the index. The key decides NaN,
    ``-0.0``/``+0.0`` and subnormals exactly, so the time does not depend on the data (a float
    fold with a fallback to the key cost 2.5-9x on NaN or zero maxima).
    """
    n = x.shape[-1]
    runs = x.reshape(x.shape[:-1] + (n // width, width))
    best, run = _running_best(lambda j: runs[..., j, :], n // width, key, last)
    top = lax.reduce_max(best, (best.ndim - 1,))
    index = run * np.int32(width) + lax.broadcasted_iota(np.int32, best.shape, best.ndim - 1)
    return first_index(best == top[..., None], best.ndim - 1, last, np.dtype(np.int32), index, n)


def _chunk(n: int) -> int:
    """The chunk length of `_chunked_arg_max` for a last axis of `n` elements: its largest
    divisor in ``[16, 256]`` leaving at least two chunks, or 0 (no such divisor: not used)."""
    for d in range(min(256, n // 2), 15, -1):
        if n % d == 0:
            return d
    return 0


def _chunked_arg_max(x, d, last):
    """Arg max over the last axis of float32 `x`, NaN first (the maximum), from XLA's fast float
    reductions, and whether it is exact.

    The axis is cut into chunks of `d`: one pass takes each chunk's float maximum and sum (a NaN
    in a chunk makes its sum NaN; XLA's CPU ``max`` may drop it). Then, on the small chunk
    arrays, the slice maximum `top` and the first (`last`: last) chunk that holds it, or, in a
    slice with a NaN sum, the first (last) such chunk; the `d` elements of that chunk are
    gathered and searched for `top` (or a NaN). Returns the index and, per slice, whether it
    is sure (a NaN found there, or a normal or infinite `top`) and whether its `top` is ``±0``
    (exact unless the slice holds a subnormal), for `_settled`. A NaN sum without a NaN
    (``inf - inf``, overflow) finds nothing in its chunk: neither, the caller takes the key.
    """
    n = x.shape[-1]
    c = n // d
    chunks = x.reshape(x.shape[:-1] + (c, d))
    chunk_max = lax.reduce_max(chunks, (chunks.ndim - 1,))
    chunk_nan = jnp.isnan(lax.reduce_sum(chunks, (chunks.ndim - 1,)))
    # The barrier keeps XLA from rewriting this max of maxima as a second pass over `x`.
    top = lax.reduce_max(lax.optimization_barrier(chunk_max), (chunk_max.ndim - 1,))
    has_nan = jnp.any(chunk_nan, axis=-1)

    def pick(hit):
        return first_index(hit, hit.ndim - 1, last, np.dtype(np.int32))

    j = pick(jnp.where(has_nan[..., None], chunk_nan, chunk_max == top[..., None]))
    block = jnp.take_along_axis(chunks, jnp.clip(j, 0, c - 1)[..., None, None],
                                axis=chunks.ndim - 2)[..., 0, :]
    w = pick(jnp.where(has_nan[..., None], block != block, block == top[..., None]))
    found = (w >= 0) & (w < d)
    sure = found & (has_nan | (jnp.abs(top) >= _F32_TINY))
    return j * np.int32(d) + w, sure, found & ~has_nan & (top == 0)


def _reduce_arg_max(keys, axis, last, index_dtype):
    """Two integer reductions: the largest key, then the first (last) index holding it."""
    top = lax.reduce_max(keys, (axis,))
    return first_index(keys == lax.expand_dims(top, (axis,)), axis, last, index_dtype)


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
