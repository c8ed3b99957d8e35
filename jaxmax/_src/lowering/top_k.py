"""TopK over one axis, by an ordering key (:mod:`jaxmax._src.lowering.order`).

The adapters pass the ordering rule ``nan_order`` (``"first"`` or ``"last"``: where NaN ranks in
the order asked for, descending or ascending), which only decides the key's NaN placement.

Along an axis long against ``k`` (:func:`top_k_chunked.chunk_size`: from 512 elements and 16384
in all, keys of at most 32 bits), two short ``lax.top_k``, of chunk maxima of the key and of the
best chunks' elements (:mod:`jaxmax._src.lowering.top_k_chunked`), exact on any data with no
branch. Otherwise one ``lax.top_k`` of the key along the last axis (the axis is moved there),
which is index-stable, so ties go to the lower index; ``by_index`` re-sorts the selected indices.
float32 in descending order over the last axis tries the plain ``lax.top_k`` of the data first and
keeps it when no NaN is in the data and no zero was selected (``_select``); over a moved axis the
key is computed inside the transpose instead. The values are gathered at the returned indices from
the data's bits, so zero signs and NaN payloads survive on any sharding (a float
``take_along_axis`` over a sharded axis returned ``+0.0`` for a selected ``-0.0`` on an ``Auto``
mesh). Their derivative is the gather of the tangent at those indices (a ``custom_jvp``), whose
transpose sends each cotangent to the element its index names.

Integer keys decide everything: XLA's floating ``max`` (which drops NaN on CPU) is never used.
Inputs sharded over ``Explicit`` mesh axes along other axes only are computed block by block
(``explicit_axes.blockwise``: no collective, where XLA's partitioner would gather the whole input
before its CPU ``TopK``); the output keeps the sharding of every other axis. Sharded along the
top-k axis over ``Explicit`` axes, one all-to-all moves that axis's mesh axes to another axis
(:mod:`jaxmax._src.lowering.top_k_sharded`), where the output is then sharded; without an axis
that divides, with those axes made ``Auto`` (:mod:`jaxmax._src.explicit_axes`): the partitioner
gathers the input and the top-k axis of the output is replicated. On ``Auto`` axes (several
devices in the process, no sharding in the input's type) the same per-device forms are chosen
once XLA knows the sharding (:mod:`jaxmax._src.auto_partition`).
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, dtypes, explicit_axes
from jaxmax._src.lowering import compile_options, order, rules, top_k_chunked, top_k_sharded

#: Inputs of at most this many bytes are selected by the key alone, without first trying the
#: plain ``lax.top_k`` of the data (`_select`): compiling dominates their run time, and the try
#: doubles the program.
SMALL_BYTES = 64 << 10


def top_k(x: jax.Array, k: int, *, axis: int, descending: bool, nan_order: str,
          by_index: bool, index_dtype: np.dtype) -> tuple[jax.Array, jax.Array]:
    """The `k` first elements along `axis` in key order (`by_index`: the same ones in index
    order) and their indices; NaN ranks before every number (`nan_order` ``"first"``) or after
    (``"last"``) in that order. `axis` is normalised; ``0 <= k <= x.shape[axis]``."""
    return _top_k_jit(x, k=k, axis=axis, descending=descending, nan_order=nan_order,
                      by_index=by_index, index_dtype=np.dtype(index_dtype),
                      auto=rules.several_devices())


@compile_options.jit(
    static_argnames=("k", "axis", "descending", "nan_order", "by_index", "index_dtype", "auto"))
def _top_k_jit(x, *, k, axis, descending, nan_order, by_index, index_dtype, auto=False):
    compute = partial(select_along, k=k, axis=axis, descending=descending, nan_order=nan_order,
                      by_index=by_index, index_dtype=index_dtype)
    across = partial(top_k_sharded.plan, k=k, axis=axis, by_index=by_index,
                     select_block=lambda v, kk, b: select_along(
                         v, k=kk, axis=axis, descending=descending, nan_order=nan_order,
                         by_index=b, index_dtype=index_dtype),
                     select=lambda v, kk: _select(v, kk, descending, nan_order, False, False)[1],
                     take=_take)
    spec = explicit_axes.spec_of(x)
    if auto and not explicit_axes.names_of(x):  # no sharding in the type: XLA's to choose
        return _on_auto_axes(x, compute, across, axis)
    along = explicit_axes.explicit_only(x, axis)
    if along:
        got = across(tuple(x.shape), x.dtype, spec, jax.typeof(x).sharding.mesh, along)
        if got is not None:
            per_device, in_spec, out_spec = got
            return jax.shard_map(per_device, mesh=jax.typeof(x).sharding.mesh,
                                 in_specs=(jax.P(*in_spec),),
                                 out_specs=(jax.P(*out_spec),) * 2)(x)
    return explicit_axes.blockwise(
        compute, x, axis, lambda _: tuple(None if i == axis else e for i, e in enumerate(spec)),
        outputs=2)


def _on_auto_axes(x, compute, across, axis):
    """`compute(x)` where XLA chooses the sharding (:mod:`jaxmax._src.auto_partition`): each
    device selects in its own block when the top-k axis is not sharded, the all-to-all form
    of `top_k_sharded` when it is; the input is gathered only when neither applies (blocks
    of unequal size, no axis to take the top-k axis's sharding). The values' derivative is
    the tangent gathered at the indices, as on one device."""
    def planner(mesh, specs):
        spec = specs[0]
        if not auto_partition.even(mesh, spec, x.shape):
            return None
        names = explicit_axes.entry_names(spec[axis])
        if not names:
            return auto_partition.Plan(compute, (spec,), (spec, spec))
        got = across(tuple(x.shape), x.dtype, spec, mesh, names)
        return None if got is None else auto_partition.Plan(got[0], (got[1],), (got[2],) * 2)

    def jvp(primals, tangents, out):  # `_take_exact`'s derivative
        values, indices = out
        zero = np.zeros(indices.shape, jax.dtypes.float0)
        if not dtypes.is_floating(values.dtype):
            return zero, zero
        return jnp.take_along_axis(tangents[0], indices, axis=axis,
                                   mode="promise_in_bounds"), zero

    kept = tuple(None if i == axis else (0, i) for i in range(x.ndim))
    return auto_partition.call(compute, planner, (x,), kept=(kept, kept), jvp=jvp)


def select_along(x, *, k, axis, descending, nan_order, by_index, index_dtype):
    """The values and indices (`index_dtype`) of the top `k` along `axis` of `x`, on one
    device's data (or under the partitioner): the form chosen by the axis length."""
    c = top_k_chunked.chunk_size(x.shape, axis, k, x.dtype)
    if x.shape[axis] > LONG_AXIS and k:  # positions past int32 (jax_enable_x64 only)
        moved = jnp.moveaxis(x, axis, -1)
        indices = _select_long(moved, k, descending, nan_order, by_index)
        values = _take(moved, indices)
        return (jnp.moveaxis(values, -1, axis),
                jnp.moveaxis(indices.astype(index_dtype), -1, axis))
    if c:
        indices = top_k_chunked.select(x, k, c, axis=axis, descending=descending,
                                       nan_order=nan_order, by_index=by_index)
        return _take(x, indices, axis), indices.astype(index_dtype)
    moved = jnp.moveaxis(x, axis, -1)
    if k == 0 or math.prod(moved.shape) == 0:
        values = moved[..., :k]  # empty: no element to select
        indices = jnp.zeros(values.shape, index_dtype)
    else:
        values, indices = _select(moved, k, descending, nan_order, by_index,
                                  try_plain=axis == x.ndim - 1 and x.nbytes > SMALL_BYTES)
        indices = indices.astype(index_dtype)
    return jnp.moveaxis(values, -1, axis), jnp.moveaxis(indices, -1, axis)


def _select(x, k, descending, nan_order, by_index, try_plain=True):
    """The values and int32 indices of the top `k` along the last axis under the key
    (`by_index`: the same elements in index order).

    float32 in descending order first runs the plain ``lax.top_k`` of the data: with no NaN in
    the data and no zero among the selected values, IEEE total order (``lax.top_k``'s) and the
    key agree on every selected element and on the order, so its values (the input elements)
    and indices are the answer. A NaN anywhere (found by the data's sum, exact in any summation
    order; an ``inf - inf`` only costs the exact path) or a selected zero (``-0.0`` and
    ``+0.0`` must tie) takes the key, under a ``cond``. With NaN last (``nan_order="last"``),
    the selected values alone decide: a ``+NaN`` would be selected first,
    and a ``-NaN`` (IEEE total order's lowest) that is not selected is where the key puts it,
    so no NaN and no zero among the selected values is enough, and the data's sum (a pass over
    the data) is not taken. Either way
    the derivative is the gather of the tangent at the returned indices.

    Not `try_plain` (inputs of at most `SMALL_BYTES`, where the try would double the program;
    or the axis was moved last: a transpose writes the data anyway): the key alone, which XLA
    computes inside that transpose, so the NaN rule costs no pass of its own (cheaper than the
    plain try with its NaN sum; benchmarks/RESULTS.md, "TopK and ArgMax").
    """
    def finish(indices):
        if by_index:
            indices = lax.sort(indices, dimension=indices.ndim - 1)
        return _take(x, indices), indices

    def exact():
        keys = order.top_k_key(x, descending=descending, nan_order=nan_order)
        return finish(lax.top_k(keys, k)[1])

    if not (try_plain and descending and x.dtype == np.float32):
        return exact()
    values, indices = lax.top_k(x, k)
    plain = ~jnp.any((values == 0) | jnp.isnan(values))
    if nan_order == "first":  # an unselected -NaN would rank above every selected value
        plain = plain & ~rules.sum_is_nan(x)
    return lax.cond(plain, lambda: finish(indices) if by_index else (values, indices), exact)


#: An axis longer than this is selected in blocks (`_select_long`): ``lax.top_k`` numbers its
#: positions in int32 and refuses a longer axis.
LONG_AXIS = int(np.iinfo(np.int32).max)
#: The block length of `_select_long` (a power of two below int32's range).
LONG_BLOCK = 1 << 30


def _select_long(x, k, descending, nan_order, by_index):
    """The indices (int64) of the top `k` along the last axis of `x` (``n > LONG_AXIS``) under
    the key: ``lax.top_k`` of each block of `LONG_BLOCK` elements, then of the blocks'
    candidates.

    The candidates lie block after block, each block's in key order with equal keys by index,
    so equal keys among them are in index order, and the second ``lax.top_k`` (index-stable)
    breaks ties by index as one selection over the axis would. The last block is filled out
    with the lowest key of the order (the all-ones bits of a float32 key, ``iinfo.min``
    otherwise), after every element: it can tie with an element but never rank before one."""
    n = x.shape[-1]
    keys = order.top_k_key(x, descending=descending, nan_order=nan_order)
    blocks = -(-n // LONG_BLOCK)
    if keys.dtype == np.float32:
        lowest = np.array(np.uint32(0xFFFFFFFF)).view(np.float32)
    else:
        lowest = np.array(np.iinfo(keys.dtype).min, keys.dtype)
    keys = lax.pad(keys, lowest, [(0, 0, 0)] * (keys.ndim - 1) + [(0, blocks * LONG_BLOCK - n, 0)])
    keys = keys.reshape(keys.shape[:-1] + (blocks, LONG_BLOCK))
    kb = min(k, LONG_BLOCK)
    best, local = lax.top_k(keys, kb)
    pos = jax.dtypes.canonicalize_dtype(np.int64)  # int64 wherever such an axis can exist
    start = lax.broadcasted_iota(pos, local.shape, local.ndim - 2) * pos.type(LONG_BLOCK)
    positions = (local.astype(pos) + start).reshape(local.shape[:-2] + (blocks * kb,))
    best = best.reshape(positions.shape)
    indices = jnp.take_along_axis(positions, lax.top_k(best, k)[1], axis=-1)
    if by_index:
        indices = lax.sort(indices, dimension=indices.ndim - 1)
    return indices


def _take(x, indices, axis=-1):
    """`x` at `indices` along `axis` with every bit kept (see `_take_exact`)."""
    if dtypes.is_floating(x.dtype):
        return _take_exact(x, indices, axis)
    return jnp.take_along_axis(x, indices, axis=axis, mode="promise_in_bounds")


@partial(jax.custom_jvp, nondiff_argnums=(2,))
def _take_exact(x, indices, axis):
    """The gather done on the data's bits; its derivative is the float gather of the tangent at
    the same indices, whose transpose scatters each cotangent to the element its index names."""
    # promise_in_bounds: every index comes from a selection along the axis (no bounds or sign
    # handling to compile)
    return order.from_bits(jnp.take_along_axis(order.bits(x), indices, axis=axis,
                                               mode="promise_in_bounds"), x.dtype)


@_take_exact.defjvp
def _take_exact_jvp(axis, primals, tangents):
    x, indices = primals
    return _take_exact(x, indices, axis), jnp.take_along_axis(tangents[0], indices, axis=axis,
                                                              mode="promise_in_bounds")
