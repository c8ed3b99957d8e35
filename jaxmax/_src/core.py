"""The spec-agnostic lowering: one jitted function per computation.

Every function takes canonical static arguments (tuples of Python ints, bools, strings) that the
adapters have validated, and is a ``jax.jit(..., inline=True)`` function, so an eager call
dispatches a cached executable and a call inside an outer ``jit`` is inlined into it.

Two max rules exist, chosen by the flag ``skip_nan``:

* ``skip_nan=False`` (ONNX): the plain ``max`` of ``lax``; NaN propagates, an empty set gives
  the identity (``-inf``, ``iinfo.min``, ``False``).
* ``skip_nan=True`` (OpenVINO): ``max(lowest(T), non-NaN elements)``. The reduction runs with the
  ``-inf`` identity, so ``lax`` keeps its differentiable max primitives; NaN is replaced by
  ``-inf`` only when the plain result shows a NaN (``lax.cond``), so NaN-free data pays for a
  check of the small result only; the result is then raised to ``lowest(T)``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax

from jaxmax._src import dtypes


def _without_nan(reducer: Callable[[jax.Array], jax.Array], x: jax.Array) -> jax.Array:
    """``reducer(x)`` computed as if every NaN in `x` were ``-inf``.

    ``lax``'s max propagates NaN, so the plain result has a NaN exactly where the reduced slice
    held one; only then is the reduction redone with the NaN masked.
    """
    if not dtypes.is_floating(x.dtype):
        return reducer(x)
    plain = reducer(x)
    minus_inf = dtypes.max_identity(x.dtype)
    return lax.cond(
        jnp.isnan(plain).any(),
        lambda: reducer(jnp.where(jnp.isnan(x), minus_inf, x)),
        lambda: plain,
    )


def _at_least_lowest(x: jax.Array) -> jax.Array:
    """``max(lowest(T), x)`` for NaN-free `x`; a raised value passes no gradient."""
    if not dtypes.is_floating(x.dtype):
        return x  # the integer identity already is lowest(T)
    low = dtypes.lowest(x.dtype)
    return jnp.where(x < low, low, x)


def _max_rule(reducer: Callable[[jax.Array], jax.Array], x: jax.Array,
              skip_nan: bool) -> jax.Array:
    if skip_nan:
        return _at_least_lowest(_without_nan(reducer, x))
    return reducer(x)


@partial(jax.jit, static_argnames=("axes", "keepdims", "skip_nan"), inline=True)
def reduce_max(x: jax.Array, axes: tuple[int, ...], keepdims: bool, skip_nan: bool) -> jax.Array:
    """Max over `axes` (normalised, unique); logical or for bool data."""
    if dtypes.is_bool(x.dtype):
        out = lax.reduce_or(x, axes)
    else:
        out = _max_rule(lambda v: lax.reduce_max(v, axes), x, skip_nan)
    return lax.expand_dims(out, axes) if keepdims else out


@partial(jax.jit, static_argnames=("window", "strides", "padding", "skip_nan"), inline=True)
def max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
             padding: tuple[tuple[int, int], ...], skip_nan: bool) -> jax.Array:
    """``reduce_window_max`` over `window` with explicit `padding` (one entry per axis of `x`).

    Padding holds the ``max`` identity, so it is never selected over an input element; a window
    that sees padding only gives the identity, raised to lowest(T) by the OpenVINO rule.
    """
    init = dtypes.max_identity(x.dtype)

    def pool(v):
        return lax.reduce_window(v, init, lax.max, window, strides, padding)

    return _max_rule(pool, x, skip_nan)


@partial(jax.jit, static_argnames=("num_segments", "fill"), inline=True)
def segment_max(data: jax.Array, segment_ids: jax.Array, num_segments: int,
                fill: str) -> jax.Array:
    """Per-segment max with the OpenVINO rule; empty segments get `fill` (``"zero"``/``"lowest"``).

    Emptiness is decided by counting members (a 1-D scatter of ones), never by comparing values
    with a sentinel. Ids outside ``[0, num_segments)`` are dropped.
    """
    out = _max_rule(lambda v: jax.ops.segment_max(v, segment_ids, num_segments), data,
                    skip_nan=True)
    members = jax.ops.segment_sum(jnp.ones(segment_ids.shape, jnp.int32), segment_ids,
                                  num_segments)
    empty = (members == 0).reshape((num_segments,) + (1,) * (data.ndim - 1))
    fill_value = dtypes.zero(data.dtype) if fill == "zero" else dtypes.lowest(data.dtype)
    return jnp.where(empty, fill_value, out)
