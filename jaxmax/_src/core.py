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
* ``skip_nan=True`` (OpenVINO): ``max(lowest(T), non-NaN elements)``: NaN counts as ``-inf``
  (the identity), and the result is then raised to ``lowest(T)``.

ReduceMax on one device, on CPU, applies the rule while it reads the data, in one pass
(:mod:`jaxmax._src.max_reduce`), as fast on data with NaN as without.

Elsewhere, and for MaxPool and SegmentMax, the plain max runs first with the ``-inf`` identity (so
``lax`` keeps its dedicated max primitives), and NaN is masked and the max recomputed only when
a NaN is found (``lax.cond``). Finding NaN: elementwise ``lax.max`` (MaxPool's taps,
``reduce_window``) and scatter-max (SegmentMax) propagate NaN, so their plain result holds a NaN
exactly where a window or segment did, and checking that small result is enough. Two places drop
NaN instead, giving an order-dependent, wrong maximum: XLA's CPU ``reduce_max`` on all but small
inputs (jax 0.10, where XLA hands such reductions to YNNPACK, ``__ynn_fusion`` in the compiled
HLO; measured here on 300 random shapes: two thirds gave values that were neither NaN nor the
NaN-free maximum), and the cross-device max that combines partial results when a reduced axis is
sharded. Where those can occur (``check_data=True``: a float ``reduce_max`` off the one-pass path
that is not folded, and the other operators when partial results may cross devices), the data's
sum is checked too. Addition propagates NaN in every order, so this check is exact; it costs one
more read of the data, and an ``inf + -inf`` can flag NaN-free data, which only sends it down
the exact masked path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes, explicit_axes, max_reduce, pool_indices, pool_phase


def cross_device_possible(*arrays) -> bool:
    """Whether partial results may be combined across devices: several devices exist and some
    input is traced (an outer ``jit`` may shard it) or is laid over more than one device.

    The core decides this itself (the adapters never pass it); it is a static argument of the
    jitted functions, so a test can change it and get a fresh trace.
    """
    if _device_count() == 1:
        return False
    return any(isinstance(a, jax.core.Tracer)
               or (isinstance(a, jax.Array) and len(a.sharding.device_set) > 1)
               for a in arrays)


@functools.cache
def _device_count() -> int:
    return jax.device_count()


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
                        lambda: reducer(max_reduce.mask_nan(x), *operands), lambda: plain)

    @value.defjvp
    def value_jvp(primals, tangents):
        x, *rest = primals
        return jax.jvp(lambda clean: reducer(clean, *rest), (max_reduce.mask_nan(x),),
                       (tangents[0],))

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


def _max_with_rule(x: jax.Array, axes: tuple[int, ...], skip_nan: bool, fold: bool) -> jax.Array:
    """``max`` over `axes` with the OpenVINO (`skip_nan`) or ONNX NaN rule, float data, from the
    plain reduction (the multi-device and non-CPU lowering).

    ONNX: the plain max is exact on NaN-free slices, and the slices holding a NaN are found by a
    sum of squares, exact across devices too (``max_reduce.propagating``). OpenVINO: XLA's
    ``reduce_max`` and a cross-device max may drop NaN, so the NaN check reads the data (a fold
    of elementwise maxima alone would show every NaN in its result).
    """
    def reducer(v):
        return max_reduce.fold_max(v, axes) if fold else lax.reduce_max(v, axes)

    if skip_nan:
        return _openvino_max(reducer, x, check_data=True)
    return max_reduce.propagating(x, axes, reducer)


def _cpu_max(x: jax.Array, axes: tuple[int, ...], skip_nan: bool) -> jax.Array:
    """``max`` over `axes` with the OpenVINO (`skip_nan`) or ONNX NaN rule, as fast on data with
    NaN as without (:mod:`jaxmax._src.max_reduce`): the one-device CPU lowering."""
    out = max_reduce.max_over(x, axes, propagate=not skip_nan)
    return _at_least_lowest(out) if skip_nan else out


def reduce_max(x: jax.Array, axes: tuple[int, ...], keepdims: bool,
               skip_nan: bool) -> jax.Array:
    """Max over `axes` (normalised, unique); logical or for bool data (see `_reduce_max_jit`)."""
    return _reduce_max_jit(x, axes, keepdims, skip_nan, cross_device_possible(x))


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
    if dtypes.is_bool(x.dtype):
        out = lax.reduce_or(x, axes)
    elif not dtypes.is_floating(x.dtype):
        out = _by_platform(x, cpu=lambda v: max_reduce.max_over(v, axes, propagate=False),
                           default=lambda v: lax.reduce_max(v, axes))
    else:
        def cpu(v):
            if cross_device or not max_reduce.one_pass(v.dtype, v.shape, axes, not skip_nan):
                # Partial results may meet in a cross-device max, which drops NaN: the plain
                # reduction (never cut into blocks, which would gather a sharded axis) and a
                # check of the data.
                return _max_with_rule(v, axes, skip_nan, max_reduce.folds_rows(v.shape, axes))
            return _cpu_max(v, axes, skip_nan)

        out = _by_platform(x, cpu=cpu,
                           default=lambda v: _max_with_rule(v, axes, skip_nan, fold=False))
    return lax.expand_dims(out, axes) if keepdims else out


def max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
             padding: tuple[tuple[int, int], ...], dilation: tuple[int, ...] | None = None,
             axis: int = 0, index_dtype: np.dtype | None = None):
    """OpenVINO-rule max pooling, and MaxPool-8 indices with `index_dtype` (see
    `_max_pool_jit`)."""
    return _max_pool_jit(x, window, strides, padding, cross_device_possible(x), dilation, axis,
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
    return _segment_max_jit(data, segment_ids, num_segments, fill,
                            cross_device_possible(data, segment_ids))


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
