"""The element each pooling window selects, as the Indices output of MaxPool-8/-14 and ONNX MaxPool.

The index and the gradient are one fact: the *winner* of a window, a kernel tap, whose input
element's flat index is the Indices output and which receives the window's whole cotangent.
Both come from the phase-sliced taps of :mod:`jaxmax._src.pool_phase`:

* OpenVINO (``openvino_indices``): the winner is the first tap equal to the window's value
  ``max(lowest(T), non-NaN elements)`` when that value is above lowest(T); a window without such
  an element (padding only, NaN, ``-inf``, elements equal to lowest(T)) points at the start of
  its ``(n, c)`` plane, as OpenVINO's reference kernel does. The value's derivative is
  ``pool_phase.max_pool_at_least_lowest``'s, which follows the same first-maximal rule.
* ONNX (``onnx_max_pool``): NaN propagates; the winner is the first input element of the
  window that is NaN when the value is NaN, else the first equal to the value; a window with no
  input element gives the empty-set value (``-inf``, ``iinfo.min``) and index -1. The value is a
  ``custom_jvp`` whose tangent is gathered at that winner, so the gradient routes exactly where
  Indices point (dilated and 3-D windows included, where ``lax.reduce_window`` has no
  derivative).

Flat indices count over ``(N, C, *spatial)`` in row-major order (ONNX ``storage_order=1``:
column-major over the spatial axes); OpenVINO reduces them modulo ``prod(shape[axis:])`` by
counting only the axes from `axis` on. Indices are computed in the index dtype asked for (the
adapters check that the range fits it).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes, pool_phase


def _geometry(x: jax.Array, window, strides, padding, dilation, fill=None):
    return pool_phase._prepare(x, window, strides, padding, fill, dilation)[1]


def _coordinates(g, winner: jax.Array) -> list[jax.Array]:
    """Per axis of the input, the coordinate the `winner` tap reads for every output (any value
    where the winner is not a tap index: the caller masks those)."""
    tap = winner.astype(np.int32)
    coords = []
    inner = 1  # taps are in row-major window order: the last axis varies fastest
    for axis in range(len(g.axes) - 1, -1, -1):
        a = g.axes[axis]
        coord = lax.broadcasted_iota(np.int32, g.out_shape, axis) * a.s - a.lo
        if a.k > 1:
            coord = coord + (tap // inner) % a.k * a.d
        coords.append(coord)
        inner *= a.k
    return coords[::-1]


def _flat(coords: list[jax.Array], shape: tuple[int, ...], dims: list[int],
          dtype) -> jax.Array:
    """``sum(coords[d] * stride[d])`` over `dims`, strides of a row-major layout of those dims
    in the given order (the first the slowest)."""
    flat = jnp.zeros(coords[0].shape, dtype)
    for d in dims:
        flat = flat * dtype(shape[d]) + coords[d].astype(dtype)
    return flat


def openvino_indices(x: jax.Array, out: jax.Array, window, strides, padding, dilation,
                     axis: int, dtype) -> jax.Array:
    """MaxPool-8/-14 indices of the windows whose OpenVINO-rule values are `out`.

    `x` is ``(N, C, *spatial)``; `window` etc. cover every axis (1 on N and C).
    """
    g = _geometry(x, window, strides, padding, dilation)
    low = dtypes.lowest(x.dtype)
    winner = pool_phase._first_maximal(x, g, out, low)  # padding reads lowest(T) < out
    coords = _coordinates(g, winner)
    found = out > low
    spatial = list(range(2, x.ndim))
    for d in spatial:  # no winner: the start of the (n, c) plane
        coords[d] = jnp.where(found, coords[d], 0)
    return _flat(coords, x.shape, list(range(axis, x.ndim)), dtype)


def _onnx_winner(x: jax.Array, g, out: jax.Array) -> jax.Array:
    """Per output, the first tap reading an input element that is NaN (when `out` is NaN) or
    equal to `out`; -1 for a window with no input element."""
    fill = dtypes.max_identity(x.dtype)
    taps = pool_phase._taps(x, g, fill)
    inside = pool_phase._taps(jnp.ones(x.shape, bool), g, False)
    dtype = pool_phase._index_dtype(len(taps))
    out_nan = jnp.isnan(out) if dtypes.is_floating(x.dtype) else None
    index = jnp.full(out.shape, -1, dtype)
    for j in range(len(taps) - 1, -1, -1):
        hit = taps[j] == out
        if out_nan is not None:
            hit = hit | (jnp.isnan(taps[j]) & out_nan)
        index = jnp.where(hit & inside[j], dtype(j), index)
    return index


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def _onnx_values(x, g):
    return pool_phase._forward(x, g)


@_onnx_values.defjvp
def _onnx_values_jvp(g, primals, tangents):
    (x,), (t,) = primals, tangents
    out = _onnx_values(x, g)
    if 0 in g.out_shape:
        return out, jnp.zeros(g.out_shape, t.dtype)
    winner = lax.stop_gradient(_onnx_winner(lax.stop_gradient(x), g, lax.stop_gradient(out)))
    return out, pool_phase._gather_tangent(t, winner, g)


def onnx_max_pool(x: jax.Array, window, strides, padding, dilation, *, indices_dtype=None,
                  column_major: bool = False):
    """ONNX MaxPool: ``Y`` (NaN propagates; a window with no input element gives ``-inf`` /
    ``iinfo.min``) and, when `indices_dtype` is given, ``(Y, Indices)``."""
    g = _geometry(x, window, strides, padding, dilation)
    if dtypes.is_floating(x.dtype):
        out = _onnx_values(x, g)
    else:
        out = pool_phase._forward(x, g)
    if indices_dtype is None:
        return out
    winner = _onnx_winner(lax.stop_gradient(x), g, lax.stop_gradient(out))
    coords = _coordinates(g, winner)
    spatial = list(range(2, x.ndim))
    order = [0, 1] + (spatial[::-1] if column_major else spatial)
    flat = _flat(coords, x.shape, order, indices_dtype)
    return out, jnp.where(winner >= 0, flat, indices_dtype(-1))
