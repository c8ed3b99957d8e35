"""The spec-agnostic lowering: one jitted function per computation.

Every public function takes canonical static arguments (tuples of Python ints, bools, strings)
that the adapters have validated, adds what the core decides itself (whether partial results
may be combined across devices), and calls a ``jax.jit(..., inline=True)`` function, so an
eager call dispatches a cached executable and a call inside an outer ``jit`` is inlined into it.
Inputs sharded over ``Explicit`` mesh axes are computed with those axes made ``Auto``
(:mod:`jaxmax._src.explicit_axes`).

Two max rules exist, chosen by the flag ``skip_nan`` (MaxPool and SegmentMax are OpenVINO's):

* ``skip_nan=False`` (ONNX): NaN propagates, an empty set gives the identity (``-inf``,
  ``iinfo.min``, ``False``).
* ``skip_nan=True`` (OpenVINO): ``max(lowest(T), non-NaN elements)``. The reduction runs with the
  ``-inf`` identity, so ``lax`` keeps its dedicated max primitives; NaN is replaced by ``-inf``
  only when a NaN is found (``lax.cond``), and the result is then raised to ``lowest(T)``.

Finding NaN: elementwise ``lax.max`` (MaxPool's taps, ``reduce_window``) and scatter-max
(SegmentMax) propagate NaN, so their plain result holds a NaN exactly where a window or segment
did, and checking that small result is enough. Two places drop NaN instead, giving an
order-dependent, wrong maximum: XLA's CPU ``reduce_max`` on all but small inputs (jax 0.10, where
XLA hands such reductions to YNNPACK, ``__ynn_fusion`` in the compiled HLO; measured here on 300
random shapes: two thirds gave values that were neither NaN nor the NaN-free maximum), and the
cross-device max that combines partial results when a reduced axis is sharded.
Where those can occur (``check_data=True``: a float ``reduce_max`` that is not folded, and the
other operators when several devices exist), the data's sum is checked too. Addition propagates NaN
in every order, so this check is exact; it costs one more read of the data, and an ``inf + -inf``
can flag NaN-free data, which only sends it down the exact masked path.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes, explicit_axes, pool_indices, pool_phase


@functools.cache
def cross_device_possible() -> bool:
    """Whether partial results may be combined across devices (more than one device exists).

    The core decides this itself (the adapters never pass it); it is a static argument of the
    jitted functions, so a test can change it and get a fresh trace.
    """
    return jax.device_count() > 1


def _by_platform(x: jax.Array, *, cpu: Callable[[jax.Array], jax.Array],
                 default: Callable[[jax.Array], jax.Array]) -> jax.Array:
    """``cpu(x)`` when compiled for CPU, ``default(x)`` elsewhere (chosen at lowering time).

    One seam for every platform choice, so the tests can run the non-CPU lowerings on CPU.
    """
    return lax.platform_dependent(x, cpu=cpu, default=default)


def _nan_found(x: jax.Array, plain: jax.Array, check_data: bool) -> jax.Array:
    """A scalar bool: True when `x` holds a NaN (false positives only cost time)."""
    found = jnp.isnan(plain).any()
    if check_data:
        found = found | jnp.isnan(jnp.sum(x))
    return found


def _mask_nan(x: jax.Array) -> jax.Array:
    return jnp.where(jnp.isnan(x), dtypes.max_identity(x.dtype), x)


def _skipping_nan(reducer: Callable[..., jax.Array], x: jax.Array, operands: tuple,
                  check_data: bool) -> jax.Array:
    """``reducer(x, *operands)`` computed as if every NaN in `x` were ``-inf``.

    The value takes the masked path only when a NaN is found. The derivative is always that of
    ``reducer`` at the masked input (a ``custom_jvp``), so a slice's NaN never leaks into its
    gradient and the primitive's own tie rule holds.
    """
    if not dtypes.is_floating(x.dtype):
        return reducer(x, *operands)

    @jax.custom_jvp
    def value(x, *operands):
        plain = reducer(x, *operands)
        return lax.cond(_nan_found(x, plain, check_data),
                        lambda: reducer(_mask_nan(x), *operands), lambda: plain)

    @value.defjvp
    def value_jvp(primals, tangents):
        x, *rest = primals
        return jax.jvp(lambda clean: reducer(clean, *rest), (_mask_nan(x),), (tangents[0],))

    return value(x, *operands)


def _at_least_lowest(x: jax.Array) -> jax.Array:
    """``max(lowest(T), x)`` for NaN-free `x`; a raised value passes no gradient."""
    if not dtypes.is_floating(x.dtype):
        return x  # the integer identity already is lowest(T)
    low = dtypes.lowest(x.dtype)
    return jnp.where(x < low, low, x)


def _openvino_max(reducer: Callable[..., jax.Array], x: jax.Array, *operands,
                  check_data: bool) -> jax.Array:
    """The OpenVINO max rule: ``max(lowest(T), non-NaN elements)`` of each reduced set."""
    return _at_least_lowest(_skipping_nan(reducer, x, operands, check_data))


# XLA's CPU reduction collapses when leading axes are reduced over a large kept block (a
# (64, 256, 56, 56) float32 max over axis 0 took ~180 ms against a ~6 ms read floor); folding the
# leading rows with elementwise maxima in a loop reads the data once (~8 ms). Below this many
# kept elements per row XLA's own reduction is as fast or faster.
_FOLD_MIN_ROW = 32768


def _bfloat16_order_key(y: jax.Array) -> jax.Array:
    """int16 keys whose order is the float order of bfloat16 `y`; every NaN maps to the top."""
    bits = lax.bitcast_convert_type(y, jnp.int16)
    key = bits ^ ((bits >> 15) & 0x7FFF)  # flip the magnitude of negatives
    return jnp.where((bits & 0x7FFF) > 0x7F80, np.int16(0x7FFF), key)


def _bfloat16_from_key(key: jax.Array) -> jax.Array:
    return lax.bitcast_convert_type(key ^ ((key >> 15) & 0x7FFF), jnp.bfloat16)


def _halving_max(y: jax.Array) -> jax.Array:
    """``max(y, axis=0)`` as a tree of elementwise maxima of halves."""
    while y.shape[0] > 1:
        half = y.shape[0] // 2
        folded = lax.max(y[:half], y[half:2 * half])
        y = lax.concatenate([folded, y[2 * half:]], 0) if y.shape[0] % 2 else folded
    return y[0]


def _fold_rows(y: jax.Array) -> jax.Array:
    """``max(y, axis=0)`` by elementwise maxima of the rows of `y` (exact; NaN propagates)."""
    if y.dtype == jnp.bfloat16:
        # bfloat16 elementwise maxima are slow on CPU (a loop ran at ~20x the floor, a halving
        # tree at ~6x); the same tree over int16 order keys runs at ~1.5x (NaN key: NaN).
        return _bfloat16_from_key(_halving_max(_bfloat16_order_key(y)))
    acc_dtype = jnp.float32 if y.dtype == jnp.float16 else y.dtype  # exact widening
    return lax.fori_loop(1, y.shape[0], lambda i, acc: lax.max(acc, y[i].astype(acc_dtype)),
                         y[0].astype(acc_dtype)).astype(y.dtype)


def _leading_run(axes: tuple[int, ...]) -> int:
    """How many of the leading axes ``0, 1, ...`` are all reduced."""
    run = 0
    while run in axes:
        run += 1
    return run


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def _reduce_max_folding(x: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    """``lax.reduce_max(x, axes)`` for `axes` = the leading axes, folded row by row."""
    return _fold_rows(x.reshape((-1,) + x.shape[len(axes):]))


@_reduce_max_folding.defjvp
def _reduce_max_folding_jvp(axes, primals, tangents):
    # The derivative of lax.reduce_max itself: tied maxima share the tangent evenly.
    return jax.jvp(lambda v: lax.reduce_max(v, axes), primals, tangents)


def _folds_rows(shape: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    """Whether the CPU lowering folds rows: only leading axes reduced, over a large kept block."""
    run = _leading_run(axes)
    return (0 < run == len(axes) < len(shape) and math.prod(shape[run:]) >= _FOLD_MIN_ROW
            and math.prod(shape[:run]) > 1)


def _max_with_rule(x: jax.Array, axes: tuple[int, ...], skip_nan: bool, fold: bool,
                   check_data: bool) -> jax.Array:
    """``max`` over `axes` with the OpenVINO (`skip_nan`) or ONNX NaN rule, float data.

    Folded rows are elementwise maxima, which propagate NaN, so their result shows every NaN;
    XLA's ``reduce_max`` may not, and then `check_data` makes the NaN check read the data.
    """
    def reducer(v):
        return _reduce_max_folding(v, axes) if fold else lax.reduce_max(v, axes)

    if skip_nan:
        return _openvino_max(reducer, x, check_data=check_data)
    out = reducer(x)
    # NaN propagates: a slice holding one gives NaN, the others their (exact) maximum.
    nan = np.array(np.nan, out.dtype)
    return lax.cond(_nan_found(x, out, check_data),
                    lambda: jnp.where(jnp.isnan(x).any(axes), nan, reducer(_mask_nan(x))),
                    lambda: out)


def reduce_max(x: jax.Array, axes: tuple[int, ...], keepdims: bool,
               skip_nan: bool) -> jax.Array:
    """Max over `axes` (normalised, unique); logical or for bool data (see `_reduce_max_jit`)."""
    return _reduce_max_jit(x, axes, keepdims, skip_nan, cross_device_possible())


@partial(jax.jit, static_argnames=("axes", "keepdims", "skip_nan", "cross_device"), inline=True)
def _reduce_max_jit(x: jax.Array, axes: tuple[int, ...], keepdims: bool, skip_nan: bool,
                    cross_device: bool) -> jax.Array:
    """Max over `axes` (normalised, unique); logical or for bool data.

    On CPU, a reduction of leading axes only over a large kept block folds its rows with
    elementwise maxima (XLA's own reduction of outer axes is ~30x slower there); everything else
    is ``lax.reduce_max``. Integers have no NaN and their identity is lowest(T), so both rules
    are the plain max for them.
    """
    def compute(x):
        return _reduce_max(x, axes, keepdims, skip_nan, cross_device)

    return explicit_axes.run(
        compute, (x,), lambda _: explicit_axes.reduced(explicit_axes.spec_of(x), axes, keepdims))


def _reduce_max(x: jax.Array, axes: tuple[int, ...], keepdims: bool, skip_nan: bool,
                cross_device: bool) -> jax.Array:
    fold = _folds_rows(x.shape, axes)
    if dtypes.is_bool(x.dtype):
        out = lax.reduce_or(x, axes)
    elif not dtypes.is_floating(x.dtype):
        out = _by_platform(
            x, cpu=lambda v: _reduce_max_folding(v, axes) if fold else lax.reduce_max(v, axes),
            default=lambda v: lax.reduce_max(v, axes))
    else:
        out = _by_platform(
            x,
            cpu=lambda v: _max_with_rule(v, axes, skip_nan, fold,
                                         check_data=cross_device or not fold),
            default=lambda v: _max_with_rule(v, axes, skip_nan, fold=False, check_data=True))
    return lax.expand_dims(out, axes) if keepdims else out


def max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
             padding: tuple[tuple[int, int], ...], dilation: tuple[int, ...] | None = None,
             axis: int = 0, index_dtype: np.dtype | None = None):
    """OpenVINO-rule max pooling, and MaxPool-8 indices with `index_dtype` (see
    `_max_pool_jit`)."""
    return _max_pool_jit(x, window, strides, padding, cross_device_possible(), dilation, axis,
                         index_dtype)


@partial(jax.jit, static_argnames=("window", "strides", "padding", "cross_device", "dilation",
                                   "axis", "index_dtype"), inline=True)
def _max_pool_jit(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
                  padding: tuple[tuple[int, int], ...], cross_device: bool,
                  dilation: tuple[int, ...] | None = None, axis: int = 0,
                  index_dtype: np.dtype | None = None):
    """OpenVINO-rule max pooling over `window` with explicit `padding` (every axis).

    Padding is never selected over an input element above lowest(T); a window that sees padding
    only gives lowest(T). On CPU the phase-sliced form with the rule built in
    (``pool_phase.max_pool_at_least_lowest``: padding at lowest(T), and the plain pooling kept
    whenever its output's sum is finite); elsewhere ``reduce_window`` with the identity init
    (which keeps its dedicated, differentiable primitive) under the NaN check and the clamp to
    lowest(T). With `index_dtype`, also the MaxPool-8 indices (counted from `axis`).
    """
    def compute(x):
        values = _max_pool(x, window, strides, padding, cross_device, dilation)
        if index_dtype is None:
            return values
        indices = pool_indices.openvino_indices(
            lax.stop_gradient(x), lax.stop_gradient(values), window, strides, padding,
            dilation, axis, np.dtype(index_dtype).type)
        return values, indices

    return explicit_axes.run(compute, (x,), _pooled_spec(x, window, strides, padding, dilation),
                             outputs=1 if index_dtype is None else 2)


def _max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
              padding: tuple[tuple[int, int], ...], cross_device: bool,
              dilation: tuple[int, ...] | None = None) -> jax.Array:
    def phase_sliced(v):
        return pool_phase.max_pool_at_least_lowest(v, window, strides, padding,
                                                   check_data=cross_device, dilation=dilation)

    if dilation is not None and max(dilation) > 1:
        return phase_sliced(x)  # reduce_window has no derivative with dilation
    init = dtypes.max_identity(x.dtype)

    def reduce_window(v):
        return lax.reduce_window(v, init, lax.max, window, strides, padding)

    return _by_platform(
        x, cpu=phase_sliced,
        default=lambda v: _openvino_max(reduce_window, v, check_data=cross_device))


def segment_max(data: jax.Array, segment_ids: jax.Array, num_segments: int,
                fill: str) -> jax.Array:
    """Per-segment OpenVINO-rule max with the empty-segment `fill` (see `_segment_max_jit`)."""
    return _segment_max_jit(data, segment_ids, num_segments, fill, cross_device_possible())


@partial(jax.jit, static_argnames=("num_segments", "fill", "cross_device"), inline=True)
def _segment_max_jit(data: jax.Array, segment_ids: jax.Array, num_segments: int, fill: str,
                     cross_device: bool) -> jax.Array:
    """Per-segment OpenVINO-rule max; empty segments get `fill` (``"zero"``/``"lowest"``).

    An empty segment comes out of the max rule as lowest(T) already, which is the ``"lowest"``
    fill. For ``"zero"``, emptiness is decided by counting members (a 1-D scatter of ones), never
    by comparing values with a sentinel; the count runs only when some output equals lowest(T).
    Ids outside ``[0, num_segments)`` are dropped.
    """
    def compute(data, segment_ids):
        return _segment_max(data, segment_ids, num_segments, fill, cross_device)

    def out_spec(mesh):
        return explicit_axes.divisible(
            mesh, (None,) + explicit_axes.spec_of(data)[1:], (num_segments,) + data.shape[1:])

    return explicit_axes.run(compute, (data, segment_ids), out_spec)


def _segment_max(data: jax.Array, segment_ids: jax.Array, num_segments: int, fill: str,
                 cross_device: bool) -> jax.Array:
    def reducer(v, ids):
        return jax.ops.segment_max(v, ids, num_segments)

    # XLA's CPU scatter wraps 64-bit indices to 32 bits (jax 0.10 with x64: an id 2**32 + 1
    # lands in segment 1), so 64-bit ids out of range are first mapped to the out-of-range
    # values -1 and num_segments, which every scatter drops. (int32 ids need no clip, which
    # would cost ~25% of the call: XLA fuses it into both scatters.)
    if segment_ids.dtype.itemsize == 8:
        segment_ids = jnp.clip(segment_ids, -1, num_segments)
    out = _openvino_max(reducer, data, segment_ids, check_data=cross_device)
    if fill == "lowest":
        return out

    def zero_empty_segments():
        members = jax.ops.segment_sum(jnp.ones(segment_ids.shape, jnp.int32), segment_ids,
                                      num_segments)
        empty = (members == 0).reshape((num_segments,) + (1,) * (data.ndim - 1))
        return jnp.where(empty, dtypes.zero(data.dtype), out)

    return lax.cond((out == dtypes.lowest(data.dtype)).any(), zero_empty_segments, lambda: out)


@partial(jax.jit, static_argnames=("window", "strides", "padding", "dilation", "index_dtype",
                                   "column_major"), inline=True)
def onnx_max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
                  padding: tuple[tuple[int, int], ...], dilation: tuple[int, ...],
                  index_dtype: np.dtype | None, column_major: bool):
    """ONNX max pooling (NaN propagates, empty windows give the identity), with the flat
    indices of each window's winner when `index_dtype` is given. The same code on every
    platform: ``reduce_window`` has no derivative with dilation."""
    def compute(x):
        return pool_indices.onnx_max_pool(
            x, window, strides, padding, dilation,
            indices_dtype=None if index_dtype is None else np.dtype(index_dtype).type,
            column_major=column_major)

    return explicit_axes.run(compute, (x,), _pooled_spec(x, window, strides, padding, dilation),
                             outputs=1 if index_dtype is None else 2)


def _pooled_spec(x, window, strides, padding, dilation=None):
    """The documented output sharding of a pooling of `x` (see explicit_axes)."""
    dilation = (1,) * x.ndim if dilation is None else dilation

    def out_spec(mesh):
        shape = tuple((lo + n + hi - (k - 1) * d - 1) // s + 1
                      for n, k, s, (lo, hi), d
                      in zip(x.shape, window, strides, padding, dilation, strict=True))
        return explicit_axes.divisible(mesh, explicit_axes.spec_of(x), shape)

    return out_spec
