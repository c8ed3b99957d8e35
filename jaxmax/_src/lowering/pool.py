"""MaxPool lowering, both faces: OpenVINO-rule values (and MaxPool-8 indices), and ONNX values
with optional Indices. Jitted as :mod:`jaxmax._src.lowering.reduce` describes.

On CPU both faces scan phase-sliced taps (:mod:`jaxmax._src.lowering.pool_phase`): the OpenVINO
scan skips NaN by itself and needs no check. Elsewhere ``reduce_window`` propagates NaN, so its
plain result holds a NaN exactly where a window did, and checking that small result is enough,
except when partial results may cross devices (then the data is checked too).

Windows of more than ``pool_compact.MAX_UNROLLED_TAPS`` taps, and inputs of at most
``pool_compact.SMALL_BYTES``, take the compact form instead
(:mod:`jaxmax._src.lowering.pool_compact`: one variadic ``reduce_window``, compiled code
independent of the window), values and indices on every platform but the OpenVINO-rule values
off CPU, which stay XLA's windowed max.
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
from jax import lax

from jaxmax._src import dtypes, explicit_axes
from jaxmax._src.lowering import pool_compact, pool_indices, pool_phase, rules


def max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
             padding: tuple[tuple[int, int], ...], dilation: tuple[int, ...] | None = None,
             axis: int = 0, index_dtype: np.dtype | None = None):
    """OpenVINO-rule max pooling, and MaxPool-8 indices with `index_dtype` (see
    `_max_pool_jit`)."""
    return _max_pool_jit(x, window, strides, padding, rules.cross_device_possible(x), dilation,
                         axis, index_dtype)


@partial(jax.jit, static_argnames=("window", "strides", "padding", "cross_device", "dilation",
                                   "axis", "index_dtype"), inline=True)
def _max_pool_jit(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
                  padding: tuple[tuple[int, int], ...], cross_device: bool,
                  dilation: tuple[int, ...] | None = None, axis: int = 0,
                  index_dtype: np.dtype | None = None):
    """OpenVINO-rule max pooling over `window` with explicit `padding` (every axis).

    Padding is never selected over an input element above lowest(T); a window that sees padding
    only gives lowest(T). On CPU the phase-sliced form with the rule built in
    (``pool_phase.max_pool_at_least_lowest``: a scan of the taps from lowest(T) that takes a tap
    only when it is greater); elsewhere ``reduce_window`` with the identity init
    (which keeps its dedicated, differentiable primitive) under the NaN check and the clamp to
    lowest(T). With `index_dtype`, also the MaxPool-8 indices (counted from `axis`).
    """
    p = pool_compact.make(x.shape, window, strides, padding, dilation)
    compact = pool_compact.applies(p, x.dtype.itemsize)

    def compute(x):
        values = _max_pool(x, window, strides, padding, cross_device, dilation,
                           p if compact else None)
        if index_dtype is None:
            return values
        if compact:
            return values, pool_compact.openvino_indices(x, values, p, axis,
                                                         np.dtype(index_dtype).type)
        indices = pool_indices.openvino_indices(
            lax.stop_gradient(x), lax.stop_gradient(values), window, strides, padding,
            dilation, axis, np.dtype(index_dtype).type)
        return values, indices

    return explicit_axes.run(compute, (x,), _pooled_spec(x, window, strides, padding, dilation),
                             outputs=1 if index_dtype is None else 2)


def _max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
              padding: tuple[tuple[int, int], ...], cross_device: bool,
              dilation: tuple[int, ...] | None = None,
              compact: pool_compact.Pool | None = None) -> jax.Array:
    def phase_sliced(v):
        if compact is not None:  # large windows and small inputs: no per-tap code
            return pool_compact.max_pool(v, compact, "skip")
        return pool_phase.max_pool_at_least_lowest(v, window, strides, padding,
                                                   dilation=dilation)

    if dilation is not None and max(dilation) > 1:
        return phase_sliced(x)  # reduce_window has no derivative with dilation
    init = dtypes.max_identity(x.dtype)

    def reduce_window(v):
        return lax.reduce_window(v, init, lax.max, window, strides, padding)

    return rules.by_platform(
        x, cpu=phase_sliced,
        default=lambda v: rules.max_skipping_nan(reduce_window, v, check_data=cross_device))


@partial(jax.jit, static_argnames=("window", "strides", "padding", "dilation", "index_dtype",
                                   "column_major"), inline=True)
def onnx_max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
                  padding: tuple[tuple[int, int], ...], dilation: tuple[int, ...],
                  index_dtype: np.dtype | None, column_major: bool):
    """ONNX max pooling (NaN propagates, empty windows give the identity), with the flat
    indices of each window's winner when `index_dtype` is given. The same code on every
    platform: ``reduce_window`` has no derivative with dilation."""
    p = pool_compact.make(x.shape, window, strides, padding, dilation)

    def compute(x):
        if pool_compact.applies(p, x.dtype.itemsize):
            values = pool_compact.max_pool(x, p, "propagate")
            if index_dtype is None:
                return values
            return values, pool_compact.onnx_indices(x, p, np.dtype(index_dtype).type,
                                                     column_major)
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
