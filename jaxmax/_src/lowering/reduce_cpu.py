"""Max over axes with a NaN rule, in as few reads of the data as XLA's CPU reductions allow.

XLA's CPU reductions (jax 0.10 hands them to YNNPACK) are fast only on a plain array input or
with a multiply fused in: a select fused into the reduce, such as masking NaN, sends it to XLA's
scalar loop (an order of magnitude slower), and YNNPACK's max drops NaN in an
order-dependent way, though it is exact on a slice without NaN. Hence:

* **NaN-bearing slices** are found by a sum of squares (:func:`where_nan`): every term is
  ``>= 0`` or NaN, so the sum is NaN exactly when the slice holds a NaN, in any order and across
  devices (overflow gives ``+inf``, never NaN), and ``x * x`` keeps the fast reduction.
* **fold** (only leading axes reduced, over a large kept block): the rows are combined by
  elementwise maxima in a loop, with the NaN rule inside the elementwise step, because XLA's
  reduction of outer axes is far slower than this on CPU.
* **blocks** (NaN skipped, everything else): the data is cut along its leading axes into blocks
  of about ``_BLOCK_BYTES``; each block is masked in one fusion whose result is materialised (an
  ``optimization_barrier`` keeps the mask out of the reduce, and the buffer is reused from one
  block to the next, so it stays in cache), then reduced by the fast primitive. Block results are
  combined by elementwise maxima (a reduced leading axis) or stacked (a kept one).

:func:`max_over` is the one-device CPU lowering with either rule, per output element:

* ``nan="skip"``: the max of the non-NaN elements, ``-inf`` when there are none (the caller
  raises that to lowest(T));
* ``nan="propagate"``: NaN when the slice holds a NaN, else its max.

Its derivative is that of ``lax.reduce_max`` at the NaN-masked input (tied maxima share the
tangent evenly), computed from the result instead of a second reduction; a NaN output passes
none. Elements that are not maxima get a selected ``+0.0``, never a product with the tie mask:
``lax.reduce_max``'s own derivative multiplies, so a negative cotangent gave ``-0.0`` there in an
eager call and ``+0.0`` under ``jit`` (XLA's simplifier turns the product into a select for
float32, not for bfloat16). :func:`plain_max` is ``lax.reduce_max`` with this derivative, for
the lowerings that run the primitive itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import order

# Below this many kept elements per row XLA's own reduction of leading axes is as fast as a fold.
_FOLD_MIN_ROW = 32768
# Blocks of about this size are masked and reduced one at a time: the size that ran fastest,
# between the cost of many small blocks and the freshly mapped pages of large ones
# (benchmarks/RESULTS.md, "ReduceMax").
_BLOCK_BYTES = 4 << 20


def folds_rows(shape: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    """Whether the fold applies: only leading axes reduced, over a large kept block."""
    run = 0
    while run in axes:
        run += 1
    return (0 < run == len(axes) < len(shape) and math.prod(shape[run:]) >= _FOLD_MIN_ROW
            and math.prod(shape[:run]) > 1)


def where_nan(x: jax.Array, axes: tuple[int, ...], out: jax.Array) -> jax.Array:
    """`out` (a max of `x` over `axes`, exact on NaN-free slices) with NaN where the slice of `x`
    holds a NaN."""
    nan = np.array(np.nan, out.dtype)
    return jnp.where(jnp.isnan(jnp.sum(x * x, axes)), nan, out)


@partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def propagating(x: jax.Array, axes: tuple[int, ...],
                reducer: Callable[[jax.Array], jax.Array]) -> jax.Array:
    """The rule ``nan="propagate"`` from `reducer` (a max over `axes` that is exact on NaN-free
    slices, whatever it does with NaN), with the derivative of ``lax.reduce_max`` at the
    NaN-masked input."""
    return where_nan(x, axes, reducer(x))


@propagating.defjvp
def _propagating_jvp(axes, reducer, primals, tangents):
    (x,), (t,) = primals, tangents
    out = propagating(x, axes, reducer)
    return out, shared_tangent(x, axes, out, t)


def one_pass(dtype, shape: tuple[int, ...], axes: tuple[int, ...], nan: str) -> bool:
    """Whether :func:`max_over` is fast for this reduction. Not for bfloat16 with NaN skipped
    off the fold: every elementwise bfloat16 operation (the mask, even a bitcast to int16 and
    back in a block) runs far slower than the read on CPU, while its plain max is fast."""
    return nan == "propagate" or np.dtype(dtype) != jnp.bfloat16 or folds_rows(shape, axes)


def max_over(x: jax.Array, axes: tuple[int, ...], nan: str) -> jax.Array:
    """``max`` of `x` over `axes` (normalised, unique, non-empty) with the NaN rule `nan`,
    lowered for one CPU device. Integers have no NaN: they fold or take ``lax.reduce_max``."""
    if not dtypes.is_floating(x.dtype):
        return _fold(x, axes, nan) if folds_rows(x.shape, axes) else lax.reduce_max(x, axes)
    return _float_max(x, axes, nan)


def fold_max(x: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    """The fold with NaN propagating (it must apply: `folds_rows`), with ``lax.reduce_max``'s
    derivative; for the lowerings that find NaN themselves."""
    if dtypes.is_floating(x.dtype):
        return _float_max(x, axes, "propagate")
    return _fold(x, axes, "propagate")


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def plain_max(x: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    """``lax.reduce_max`` with the derivative of this module (`shared_tangent`)."""
    return lax.reduce_max(x, axes)


@plain_max.defjvp
def _plain_max_jvp(axes, primals, tangents):
    (x,), (t,) = primals, tangents
    out = plain_max(x, axes)
    return out, shared_tangent(x, axes, out, t)


@partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _float_max(x: jax.Array, axes: tuple[int, ...], nan: str) -> jax.Array:
    if folds_rows(x.shape, axes):
        return _fold(x, axes, nan)
    if nan == "skip":
        return _blocks(x, axes)
    if x.dtype == jnp.float16:  # float16 sums are slow on CPU: map NaN in blocks
        return jnp.where(_blocks(x, axes, _nan_map_max) > 0, np.array(np.nan, x.dtype),
                         lax.reduce_max(x, axes))
    return where_nan(x, axes, lax.reduce_max(x, axes))


@_float_max.defjvp
def _float_max_jvp(axes, nan, primals, tangents):
    (x,), (t,) = primals, tangents
    out = _float_max(x, axes, nan)
    return out, shared_tangent(x, axes, out, t)


def shared_tangent(x: jax.Array, axes: tuple[int, ...], out: jax.Array,
                   t: jax.Array) -> jax.Array:
    """``lax.reduce_max``'s tangent at the NaN-masked `x` (tied maxima share it evenly), from
    `out`, its value there (no second reduction); a NaN output, or one no element equals (raised
    to lowest(T), or empty), passes none. The one derivative of every form of the reduction,
    on one device and sharded."""
    tied = mask_nan(x) == lax.expand_dims(out, axes)
    count = jnp.sum(tied, axes, dtype=t.dtype)
    share = jnp.sum(jnp.where(tied, t, 0), axes) / count
    return jnp.where(jnp.isnan(out) | (count == 0), jnp.zeros((), t.dtype), share)


def mask_nan(v: jax.Array) -> jax.Array:
    """`v` with every NaN replaced by the max identity (``-inf``)."""
    return jnp.where(jnp.isnan(v), dtypes.max_identity(v.dtype), v)


def _masked_max(v: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    """The max of the non-NaN elements of a block small enough to materialise: the masked block
    written out, then reduced by the fast primitive."""
    return lax.reduce_max(lax.optimization_barrier(mask_nan(v)), axes)


def _nan_map_max(v: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    """1 where the slice of a block holds a NaN, else 0 (int8): the block's NaN map written
    out, then reduced by the fast primitive."""
    return lax.reduce_max(lax.optimization_barrier(jnp.isnan(v).astype(np.int8)), axes)


_BlockMax = Callable[[jax.Array, tuple[int, ...]], jax.Array]


def _blocks(v: jax.Array, axes: tuple[int, ...], block_max: _BlockMax = _masked_max) -> jax.Array:
    """``block_max`` of `v` over `axes`, block by block and combined by maxima (see above)."""
    n = v.shape[0] if v.ndim else 1
    if v.size * v.dtype.itemsize <= _BLOCK_BYTES or n > np.iinfo(np.int32).max:
        return block_max(v, axes)
    row_bytes = v.size // n * v.dtype.itemsize
    rows_reduced = 0 in axes
    kept = math.prod(v.shape[a] for a in range(1, v.ndim) if a not in axes)
    if row_bytes > _BLOCK_BYTES or (rows_reduced and kept >= _FOLD_MIN_ROW):
        # One row at a time (a row may be cut further): a reduced leading axis of a block
        # over a large kept part would be XLA's slow reduction of outer axes.
        inner = tuple(a - 1 for a in axes if a)

        def part(i):
            return _blocks(lax.dynamic_index_in_dim(v, i, 0, keepdims=False), inner, block_max)

        rows, count, by_row = 1, n, True
    else:
        rows = _BLOCK_BYTES // row_bytes
        count, by_row = n // rows, False

        def part(i):
            return block_max(lax.dynamic_slice_in_dim(v, i * rows, rows, 0), axes)

    rest = v[count * rows:]
    if rows_reduced:
        out = lax.fori_loop(1, count, lambda i, acc: lax.max(acc, part(i)), part(0))
        return lax.max(out, block_max(rest, axes)) if rest.shape[0] else out
    out = lax.map(part, jnp.arange(count))
    if not by_row:  # (count, rows, ...) -> (count * rows, ...)
        out = out.reshape((count * rows,) + out.shape[2:])
    return lax.concatenate([out, block_max(rest, axes)], 0) if rest.shape[0] else out


def _fold(x: jax.Array, axes: tuple[int, ...], nan: str) -> jax.Array:
    """``max`` over the leading `axes` by elementwise maxima of the rows, with the NaN rule."""
    y = x.reshape((-1,) + x.shape[len(axes):])
    if y.dtype == jnp.bfloat16:
        # bfloat16 elementwise maxima are slow on CPU, a halving tree over int16 order keys is
        # not (benchmarks/RESULTS.md, "ReduceMax").
        return _bfloat16_halving_max(y, nan)
    acc_dtype = jnp.float32 if y.dtype == jnp.float16 else y.dtype  # exact widening

    def row(i):
        r = y[i] if nan == "propagate" or not dtypes.is_floating(y.dtype) else mask_nan(y[i])
        return r.astype(acc_dtype)

    return lax.fori_loop(1, y.shape[0], lambda i, acc: lax.max(acc, row(i)),
                         row(0)).astype(y.dtype)


_BF16_INF_KEY = np.int16(0x7F80)  # the monotone key of bfloat16 +inf; -inf's is its complement


def _bfloat16_halving_max(y: jax.Array, nan: str) -> jax.Array:
    """``max(y, axis=0)`` of bfloat16 `y` over int16 keys in float order (`order.monotone_bits`),
    every NaN (a key beyond those of the infinities) at the top (``nan="propagate"``) or at the
    key of ``-inf``, the identity."""
    keys = order.monotone_bits(y)
    nan_key = np.int16(0x7FFF) if nan == "propagate" else ~_BF16_INF_KEY
    keys = jnp.where((keys > _BF16_INF_KEY) | (keys < ~_BF16_INF_KEY), nan_key, keys)
    return order.from_monotone_bits(_halving_max(keys), jnp.bfloat16)


def _halving_max(y: jax.Array) -> jax.Array:
    """``max(y, axis=0)`` as a tree of elementwise maxima of halves."""
    while y.shape[0] > 1:
        half = y.shape[0] // 2
        folded = lax.max(y[:half], y[half:2 * half])
        y = lax.concatenate([folded, y[2 * half:]], 0) if y.shape[0] % 2 else folded
    return y[0]
