"""Arg max and top k over one axis, by an ordering key (:mod:`jaxmax._src.lowering.order`).

Both faces use these two jitted functions; the face only decides the key's NaN placement.

* ``arg_max``: the first (or last) index whose key is the largest. On an axis before the last
  of at most ``FOLD_LIMIT`` elements, one fused pass over the slices keeps the running best key
  and its index (a segmentation head's ``(N, classes, H, W)`` over the classes). float32 over a
  last axis of ``8 * c`` elements, ``2 <= c <= 128`` (a classifier's logits), folds runs of 8
  lanes in one pass (``_lane_arg_max``), exact unless the data has a NaN or a slice's maximum
  is zero or subnormal. Other float32 over a last axis with a divisor in ``[16, 256]`` (ONNX
  face) takes per-chunk float maxima and sums in one pass and searches one chunk per slice
  (``_chunked_arg_max``), exact unless a slice's maximum is zero or subnormal. Otherwise (and
  where those are not exact) two integer reductions: the largest key, then the smallest
  (largest) index holding it.
* ``top_k``: along an axis long against ``k`` (:func:`top_k_chunked.chunk_size`: from 512
  elements and 16384 in all, keys of at most 32 bits), two short ``lax.top_k``, of chunk maxima
  of the key and of the best chunks' elements (:mod:`jaxmax._src.lowering.top_k_chunked`),
  exact on any data with no branch. Otherwise one ``lax.top_k`` of the key along the last axis
  (the axis is moved there), which is index-stable, so ties go to the lower index; ``by_index``
  re-sorts the selected indices.
  float32 in descending order over the last axis tries the plain ``lax.top_k`` of the data
  first and keeps it when no NaN is in the data and no zero was selected (``_select``); over a
  moved axis the key is computed inside the transpose instead. The
  values are gathered at the returned indices from the data's bits, so zero signs and NaN
  payloads survive on any sharding (a float ``take_along_axis`` over a sharded axis returned
  ``+0.0`` for a selected ``-0.0`` on an ``Auto`` mesh). Their derivative is the gather of the
  tangent at those indices (a ``custom_jvp``), whose transpose sends each cotangent to the element
  its index names.

Integer keys decide everything: XLA's floating ``max`` (which drops NaN on CPU) is never used.
Inputs sharded over ``Explicit`` mesh axes are computed with those axes made ``Auto``
(:mod:`jaxmax._src.explicit_axes`): ``lax.top_k`` has no sharding rule for a sharded axis there.
The output keeps the sharding of every other axis; the arg-max/top-k axis is replicated.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes, explicit_axes
from jaxmax._src.lowering import order, rules, top_k_chunked

#: ArgMax over a non-last axis of at most this many elements runs as one fused fold.
FOLD_LIMIT = 64


def arg_max(x: jax.Array, *, axis: int, keepdims: bool, last: bool, face: str,
            index_dtype: np.dtype) -> jax.Array:
    """Index of the first (`last`: last) largest element along `axis` under `face`'s NaN rule.

    `axis` is normalised; the axis has at least one element; `index_dtype` is as JAX stores it.
    """
    return _arg_max_jit(x, axis=axis, keepdims=keepdims, last=last, face=face,
                        index_dtype=np.dtype(index_dtype))


@partial(jax.jit, static_argnames=("axis", "keepdims", "last", "face", "index_dtype"),
         inline=True)
def _arg_max_jit(x, *, axis, keepdims, last, face, index_dtype):
    def compute(x):
        def key(v):
            return order.key(v, descending=True, nan_is_first=order.nan_first(face, True))

        def exact():
            return _reduce_arg_max(key(x), axis, last, np.dtype(np.int32))

        # The float32 forms below are exact unless their `ok` says otherwise; then `exact`.
        last_axis = x.dtype == np.float32 and axis == x.ndim - 1
        if axis != x.ndim - 1 and x.shape[axis] <= FOLD_LIMIT:
            out = _fold_arg_max(x, key, axis, last, index_dtype)
        elif last_axis and _lanes_fit(x.shape[axis]):
            index, ok = _lane_arg_max(x, last)
            out = lax.cond(ok, lambda: index, exact).astype(index_dtype)
        elif last_axis and order.nan_first(face, True) and _chunk(x.shape[axis]):
            index, ok = _chunked_arg_max(x, _chunk(x.shape[axis]), last)
            out = lax.cond(ok, lambda: index, exact).astype(index_dtype)
        elif x.dtype == np.float32 and x.shape[axis] <= 2**24:
            top = lax.reduce_max(x, (axis,))
            out = lax.cond(_plain_float_ok(x, top), partial(_float_arg_max, x, top, axis, last),
                           exact).astype(index_dtype)
        else:
            out = _reduce_arg_max(key(x), axis, last, index_dtype)
        return lax.expand_dims(out, (axis,)) if keepdims else out

    return explicit_axes.run(
        compute, (x,), lambda _: explicit_axes.reduced(explicit_axes.spec_of(x), (axis,),
                                                       keepdims))


def _fold_arg_max(x, key, axis, last, index_dtype):
    """One pass over the `axis` slices: the running best key and its index. Each slice's key is
    computed from the slice, so the whole fold is one loop fusion reading `x` once."""
    best = key(lax.index_in_dim(x, 0, axis, keepdims=False))
    index = jnp.zeros(best.shape, index_dtype)
    for j in range(1, x.shape[axis]):
        current = key(lax.index_in_dim(x, j, axis, keepdims=False))
        better = current >= best if last else current > best
        best = jnp.where(better, current, best)
        index = jnp.where(better, np.array(j, index_dtype), index)
    return index


_F32_TINY = np.float32(np.finfo(np.float32).tiny)  # the smallest normal float32


def _plain_float_ok(x, top):
    """Whether the float reductions of `_float_arg_max` are exact for float32 `x` whose plain
    maximum over the axis is `top`: no NaN in the
    data (their sum is NaN otherwise; an ``inf - inf`` only costs the exact path) and every
    slice's maximum a normal number or infinity. Then ``x == max`` is exact although XLA's CPU
    float compare treats subnormals as zero, and ``-0.0``/``+0.0`` ties cannot arise."""
    return ~rules.sum_is_nan(x) & jnp.all(jnp.abs(top) >= _F32_TINY)


def _float_arg_max(x, top, axis, last):
    """Three float reductions (XLA's fast float kernels): the maximum, then the smallest
    (largest) index holding it, as float32 (exact below 2**24). Exact only where
    `_plain_float_ok` says so; `top` is the plain float maximum over `axis`."""
    n = x.shape[axis]
    top = lax.expand_dims(top, (axis,))
    iota = lax.broadcasted_iota(np.float32, x.shape, axis)
    if last:
        index = lax.reduce_max(jnp.where(x == top, iota, np.float32(-1)), (axis,))
    else:
        index = lax.reduce_min(jnp.where(x == top, iota, np.float32(n)), (axis,))
    return index.astype(np.int32)


#: `_lane_arg_max` folds a last axis of ``LANES * c`` elements, ``2 <= c <= LANE_FOLD_LIMIT``.
LANES = 8
LANE_FOLD_LIMIT = 128


def _lanes_fit(n: int) -> bool:
    return n % LANES == 0 and 2 <= n // LANES <= LANE_FOLD_LIMIT


def _lane_arg_max(x, last):
    """Arg max over the last axis of float32 `x` (a classifier's logits) in one fused pass, and
    whether it is exact.

    The axis is cut into `c` runs of ``LANES`` elements; a fold over the runs keeps, for each lane,
    the running float maximum and the run it came from (replaced only by a strictly greater
    element; `last`: greater or equal), so each lane holds its first (last) maximum, and an
    "any NaN" flag. On the small lane arrays, the lanes holding the slice maximum give the index.
    Exact when the data has no NaN (a NaN never wins a float compare; then the caller's key path
    decides, under either face's rule) and every slice maximum is a normal number or infinity:
    XLA's CPU float compare treats subnormals as zero, which cannot change a comparison with a
    normal number, and ``-0.0``/``+0.0`` ties cannot arise.
    """
    n = x.shape[-1]
    runs = x.reshape(x.shape[:-1] + (n // LANES, LANES))
    best = runs[..., 0, :]
    run = jnp.zeros(best.shape, np.int32)
    nan = best != best
    for j in range(1, n // LANES):
        current = runs[..., j, :]
        better = current >= best if last else current > best
        best = jnp.where(better, current, best)
        run = jnp.where(better, np.int32(j), run)
        nan = nan | (current != current)
    top = lax.reduce_max(best, (best.ndim - 1,))
    hit = best == top[..., None]
    index = run * np.int32(LANES) + lax.broadcasted_iota(np.int32, best.shape, best.ndim - 1)
    if last:
        index = lax.reduce_max(jnp.where(hit, index, np.int32(-1)), (index.ndim - 1,))
    else:
        index = lax.reduce_min(jnp.where(hit, index, np.int32(n)), (index.ndim - 1,))
    return index, ~jnp.any(nan) & jnp.all(jnp.abs(top) >= _F32_TINY)


def _chunk(n: int) -> int:
    """The chunk length of `_chunked_arg_max` for a last axis of `n` elements: its largest
    divisor in ``[16, 256]`` leaving at least two chunks, or 0 (no such divisor: not used)."""
    for d in range(min(256, n // 2), 15, -1):
        if n % d == 0:
            return d
    return 0


def _chunked_arg_max(x, d, last):
    """ONNX arg max over the last axis of float32 `x` (NaN is the maximum) from XLA's fast float
    reductions, and whether it is exact.

    The axis is cut into chunks of `d`: one pass takes each chunk's float maximum and sum (a NaN
    in a chunk makes its sum NaN; XLA's CPU ``max`` may drop it). Then, on the small chunk
    arrays, the slice maximum `top` and the first (`last`: last) chunk that holds it, or, in a
    slice with a NaN sum, the first (last) such chunk; the `d` elements of that chunk are
    gathered and searched for `top` (or a NaN). Exact when every slice either found a NaN there
    or has a normal or infinite `top` (so ``x == top`` is exact although XLA's CPU float compare
    treats subnormals as zero, and no ``-0.0``/``+0.0`` tie arises). A NaN sum without a NaN
    (``inf - inf``, overflow) finds nothing in its chunk: not exact, the caller takes the key.
    """
    n = x.shape[-1]
    c = n // d
    chunks = x.reshape(x.shape[:-1] + (c, d))
    chunk_max = lax.reduce_max(chunks, (chunks.ndim - 1,))
    chunk_nan = jnp.isnan(lax.reduce_sum(chunks, (chunks.ndim - 1,)))
    # The barrier keeps XLA from rewriting this max of maxima as a second pass over `x`.
    top = lax.reduce_max(lax.optimization_barrier(chunk_max), (chunk_max.ndim - 1,))
    has_nan = jnp.any(chunk_nan, axis=-1)

    def pick(hit, length):  # first (last) True along the last axis; `length` (-1) if none
        iota = lax.broadcasted_iota(np.int32, hit.shape, hit.ndim - 1)
        if last:
            return lax.reduce_max(jnp.where(hit, iota, np.int32(-1)), (hit.ndim - 1,))
        return lax.reduce_min(jnp.where(hit, iota, np.int32(length)), (hit.ndim - 1,))

    j = pick(jnp.where(has_nan[..., None], chunk_nan, chunk_max == top[..., None]), c)
    block = jnp.take_along_axis(chunks, jnp.clip(j, 0, c - 1)[..., None, None],
                                axis=chunks.ndim - 2)[..., 0, :]
    w = pick(jnp.where(has_nan[..., None], block != block, block == top[..., None]), d)
    found = (w >= 0) & (w < d)
    ok = jnp.all(found & (has_nan | (jnp.abs(top) >= _F32_TINY)))
    return j * np.int32(d) + w, ok


def _reduce_arg_max(keys, axis, last, index_dtype):
    """Two integer reductions: the largest key, then the first (last) index holding it."""
    n = keys.shape[axis]
    top = lax.reduce_max(keys, (axis,))
    hit = keys == lax.expand_dims(top, (axis,))
    iota = lax.broadcasted_iota(index_dtype, keys.shape, axis)
    if last:
        return lax.reduce_max(jnp.where(hit, iota, np.array(-1, index_dtype)), (axis,))
    return lax.reduce_min(jnp.where(hit, iota, np.array(n, index_dtype)), (axis,))


def top_k(x: jax.Array, k: int, *, axis: int, descending: bool, face: str, by_index: bool,
          index_dtype: np.dtype) -> tuple[jax.Array, jax.Array]:
    """The `k` first elements along `axis` in key order (`by_index`: the same ones in index
    order) and their indices. `axis` is normalised; ``0 <= k <= x.shape[axis]``."""
    return _top_k_jit(x, k=k, axis=axis, descending=descending, face=face, by_index=by_index,
                      index_dtype=np.dtype(index_dtype))


@partial(jax.jit, static_argnames=("k", "axis", "descending", "face", "by_index", "index_dtype"),
         inline=True)
def _top_k_jit(x, *, k, axis, descending, face, by_index, index_dtype):
    def compute(x):
        c = top_k_chunked.chunk_size(x.shape, axis, k, x.dtype)
        if c:
            indices = top_k_chunked.select(x, k, c, axis=axis, descending=descending, face=face,
                                           by_index=by_index)
            return _take(x, indices, axis), indices.astype(index_dtype)
        moved = jnp.moveaxis(x, axis, -1)
        if k == 0 or math.prod(moved.shape) == 0:
            values = moved[..., :k]  # empty: no element to select
            indices = jnp.zeros(values.shape, index_dtype)
        else:
            values, indices = _select(moved, k, descending, face, by_index,
                                      try_plain=axis == x.ndim - 1)
            indices = indices.astype(index_dtype)
        return jnp.moveaxis(values, -1, axis), jnp.moveaxis(indices, -1, axis)

    spec = explicit_axes.spec_of(x)
    return explicit_axes.run(
        compute, (x,), lambda _: tuple(None if i == axis else e for i, e in enumerate(spec)),
        outputs=2)


def _select(x, k, descending, face, by_index, try_plain=True):
    """The values and int32 indices of the top `k` along the last axis under `face`'s key
    (`by_index`: the same elements in index order).

    float32 in descending order first runs the plain ``lax.top_k`` of the data: with no NaN in
    the data and no zero among the selected values, IEEE total order (``lax.top_k``'s) and the
    key agree on every selected element and on the order, so its values (the input elements)
    and indices are the answer. A NaN anywhere (found by the data's sum, exact in any summation
    order; an ``inf - inf`` only costs the exact path) or a selected zero (``-0.0`` and
    ``+0.0`` must tie) takes the key, under a ``cond``. On the OpenVINO face, where NaN ranks
    after every number, the selected values alone decide: a ``+NaN`` would be selected first,
    and a ``-NaN`` (IEEE total order's lowest) that is not selected is where the key puts it,
    so no NaN and no zero among the selected values is enough, and the data's sum (a pass over
    the data) is not taken. Either way
    the derivative is the gather of the tangent at the returned indices.

    Not `try_plain` (the axis was moved last: a transpose writes the data anyway): the key
    alone, which XLA computes inside that transpose, so the NaN rule costs no pass of its own
    (cheaper than the plain try with its NaN sum; benchmarks/RESULTS.md, "TopK and ArgMax").
    """
    def finish(indices):
        if by_index:
            indices = lax.sort(indices, dimension=indices.ndim - 1)
        return _take(x, indices), indices

    def exact():
        keys = order.top_k_key(x, descending=descending,
                               nan_is_first=order.nan_first(face, descending))
        return finish(lax.top_k(keys, k)[1])

    if not (try_plain and descending and x.dtype == np.float32):
        return exact()
    values, indices = lax.top_k(x, k)
    plain = ~jnp.any((values == 0) | jnp.isnan(values))
    if order.nan_first(face, descending):  # an unselected -NaN is ONNX's maximum
        plain = plain & ~rules.sum_is_nan(x)
    return lax.cond(plain, lambda: finish(indices) if by_index else (values, indices), exact)


def _take(x, indices, axis=-1):
    """`x` at `indices` along `axis` with every bit kept (see `_take_exact`)."""
    if dtypes.is_floating(x.dtype):
        return _take_exact(x, indices, axis)
    return jnp.take_along_axis(x, indices, axis=axis)


@partial(jax.custom_jvp, nondiff_argnums=(2,))
def _take_exact(x, indices, axis):
    """The gather done on the data's bits; its derivative is the float gather of the tangent at
    the same indices, whose transpose scatters each cotangent to the element its index names."""
    return order.from_bits(jnp.take_along_axis(order.bits(x), indices, axis=axis), x.dtype)


@_take_exact.defjvp
def _take_exact_jvp(axis, primals, tangents):
    x, indices = primals
    return _take_exact(x, indices, axis), jnp.take_along_axis(tangents[0], indices, axis=axis)
