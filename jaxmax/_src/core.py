"""The spec-agnostic lowering: one jitted function per computation.

Every function takes canonical static arguments (tuples of Python ints, bools, strings) that the
adapters have validated, and is a ``jax.jit(..., inline=True)`` function, so an eager call
dispatches a cached executable and a call inside an outer ``jit`` is inlined into it.

Two max rules exist, chosen by the flag ``skip_nan``:

* ``skip_nan=False`` (ONNX): the plain ``max`` of ``lax``; NaN propagates, an empty set gives
  the identity (``-inf``, ``iinfo.min``, ``False``).
* ``skip_nan=True`` (OpenVINO): ``max(lowest(T), non-NaN elements)``. The reduction runs with the
  ``-inf`` identity, so ``lax`` keeps its dedicated max primitives; NaN is replaced by ``-inf``
  only when a NaN is present (``lax.cond``), so NaN-free data pays for a check of the small
  result only; the result is then raised to ``lowest(T)``.

Finding NaN cheaply: ``lax``'s max propagates NaN within a device, so the plain result holds a
NaN exactly where its slice did. XLA's cross-device max (the all-reduce that combines partial
results when a reduced axis is sharded) drops NaN on CPU, so with more than one device
(``cross_device=True``) the data's NaN-propagating sum is checked too: one more read of the data,
paid only where devices could be combined.
"""

from __future__ import annotations

from collections.abc import Callable
import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes, pool_phase


@functools.cache
def cross_device_possible() -> bool:
    """Whether partial results may be combined across devices (more than one device exists)."""
    return jax.device_count() > 1


def _nan_found(x: jax.Array, plain: jax.Array, cross_device: bool) -> jax.Array:
    """A scalar bool: True when `x` holds a NaN (false positives only cost time)."""
    found = jnp.isnan(plain).any()
    if cross_device:
        # Addition propagates NaN across devices; inf + -inf may flag a NaN-free input, which
        # only sends it down the (exact) masked path.
        found = found | jnp.isnan(jnp.sum(x, dtype=jnp.float32))
    return found


def _mask_nan(x: jax.Array) -> jax.Array:
    return jnp.where(jnp.isnan(x), dtypes.max_identity(x.dtype), x)


def _skipping_nan(reducer: Callable[..., jax.Array], x: jax.Array, operands: tuple,
                  cross_device: bool) -> jax.Array:
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
        return lax.cond(_nan_found(x, plain, cross_device),
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
                  cross_device: bool) -> jax.Array:
    """The OpenVINO max rule: ``max(lowest(T), non-NaN elements)`` of each reduced set."""
    return _at_least_lowest(_skipping_nan(reducer, x, operands, cross_device))


@partial(jax.jit, static_argnames=("axes", "keepdims", "skip_nan", "cross_device"), inline=True)
def reduce_max(x: jax.Array, axes: tuple[int, ...], keepdims: bool, skip_nan: bool,
               cross_device: bool) -> jax.Array:
    """Max over `axes` (normalised, unique); logical or for bool data."""
    def reducer(v):
        return lax.reduce_max(v, axes)

    if dtypes.is_bool(x.dtype):
        out = lax.reduce_or(x, axes)
    elif skip_nan:
        out = _openvino_max(reducer, x, cross_device=cross_device)
    else:
        out = reducer(x)
        if cross_device and dtypes.is_floating(x.dtype):
            # Put back the NaN that a cross-device max may have dropped.
            nan = np.array(np.nan, out.dtype)
            out = lax.cond(_nan_found(x, out, cross_device),
                           lambda: jnp.where(jnp.isnan(x).any(axes), nan, out), lambda: out)
    return lax.expand_dims(out, axes) if keepdims else out


@partial(jax.jit, static_argnames=("window", "strides", "padding", "cross_device"), inline=True)
def max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
             padding: tuple[tuple[int, int], ...], cross_device: bool) -> jax.Array:
    """OpenVINO-rule max pooling over `window` with explicit `padding` (every axis).

    Padding holds the ``max`` identity, so it is never selected over an input element; a window
    that sees padding only gives the identity, raised to lowest(T).
    """
    init = dtypes.max_identity(x.dtype)

    def pool(v):
        # On CPU the phase-sliced form is faster than XLA's reduce_window, forward and backward
        # (benchmarks/RESULTS.md); elsewhere reduce_window keeps its native lowering.
        return lax.platform_dependent(
            v,
            cpu=lambda u: pool_phase.max_pool(u, window, strides, padding),
            default=lambda u: lax.reduce_window(u, init, lax.max, window, strides, padding))

    return _openvino_max(pool, x, cross_device=cross_device)


@partial(jax.jit, static_argnames=("num_segments", "fill", "cross_device"), inline=True)
def segment_max(data: jax.Array, segment_ids: jax.Array, num_segments: int, fill: str,
                cross_device: bool) -> jax.Array:
    """Per-segment OpenVINO-rule max; empty segments get `fill` (``"zero"``/``"lowest"``).

    Emptiness is decided by counting members (a 1-D scatter of ones), never by comparing values
    with a sentinel. Ids outside ``[0, num_segments)`` are dropped.
    """
    def reducer(v, ids):
        return jax.ops.segment_max(v, ids, num_segments)

    out = _openvino_max(reducer, data, segment_ids, cross_device=cross_device)
    members = jax.ops.segment_sum(jnp.ones(segment_ids.shape, jnp.int32), segment_ids,
                                  num_segments)
    empty = (members == 0).reshape((num_segments,) + (1,) * (data.ndim - 1))
    fill_value = dtypes.zero(data.dtype) if fill == "zero" else dtypes.lowest(data.dtype)
    return jnp.where(empty, fill_value, out)
