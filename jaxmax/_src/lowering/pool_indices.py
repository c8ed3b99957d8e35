"""The Indices output of MaxPool-8/-14 and ONNX MaxPool: the flat index of each window's winner.

The index and the gradient are one fact: the *winner* of a window, a kernel tap
(:mod:`jaxmax._src.lowering.pool_phase`), whose input element's flat index is the Indices output and
which receives the window's whole cotangent.

* OpenVINO (`openvino_indices`): the first element equal to the window's value
  ``max(lowest(T), non-NaN elements)`` when that value is above lowest(T); a window without such
  an element (padding only, NaN, ``-inf``, elements equal to lowest(T)) points at the start of
  its ``(n, c)`` plane, as OpenVINO's reference kernel does.
* ONNX (`onnx_max_pool`): NaN propagates; the first element of the window that is NaN when the
  value is NaN, else the first equal to the value; a window with no input element gives the
  empty-set value (``-inf``, ``iinfo.min``) and index -1.

The winner search (``pool_phase.first_equal``) re-reads the input and the values in one
fusion and yields the flat index itself: the window origin's index plus the winner tap's
constant offset. Flat indices count over
``(N, C, *spatial)`` in row-major order (ONNX ``storage_order=1``: column-major over the spatial
axes); OpenVINO reduces them modulo ``prod(shape[axis:])`` by counting only the axes from `axis`
on. Indices are computed in the index dtype asked for (the adapters check that the range fits
it).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import pool_phase


def _flat_labels(g: pool_phase.Geometry, shape: tuple[int, ...], dims: list[int], dtype):
    """The flat index of tap ``j``'s element for every output, as ``label(j)``, and that of the
    ``(n, c)`` plane start.

    The flat index is ``sum(coord[d] * stride[d])`` over `dims` (a row-major layout of those
    dims in the given order, the first the slowest), linear in the coordinates: the window
    origin's part (from the output position) plus a constant offset per tap.
    """
    strides, step = {}, 1
    for d in reversed(dims):
        strides[d] = step
        step *= shape[d]

    def origin(dims):
        flat = jnp.zeros(g.out_shape, dtype)
        for d in dims:
            a = g.axes[d]
            coord = lax.broadcasted_iota(dtype, g.out_shape, d) * dtype(a.s) - dtype(a.lo)
            flat = flat + coord * dtype(strides[d])
        return flat

    counts = [a.k for a in g.axes]
    offsets = []
    for j in range(len(g.taps)):
        taps_of_axes = np.unravel_index(j, counts)
        offsets.append(sum(int(taps_of_axes[d]) * g.axes[d].d * strides[d] for d in dims))
    # built where it is used (XLA merges the copies within a computation), never passed into a
    # while_loop as an array in memory
    return (lambda j: origin(dims) + dtype(offsets[j])), origin([d for d in dims if d < 2])


def openvino_indices(x: jax.Array, out: jax.Array, window, strides, padding, dilation,
                     axis: int, dtype) -> jax.Array:
    """MaxPool-8/-14 indices of the windows whose OpenVINO-rule values are `out`.

    `x` is ``(N, C, *spatial)``; `window` etc. cover every axis (1 on N and C). Padding reads
    ``-inf`` (lowest(T) for integers), which never equals a value above lowest(T).
    """
    g = pool_phase.geometry(x.shape, window, strides, padding, dilation)
    label, plane = _flat_labels(g, x.shape, list(range(axis, x.ndim)), dtype)
    first = pool_phase.first_equal(x, g, out, dtypes.max_identity(x.dtype), label=label,
                                   none=0, dtype=dtype)
    return jnp.where(out > dtypes.lowest(x.dtype), first, plane)


def onnx_max_pool(x: jax.Array, window, strides, padding, dilation, *, indices_dtype=None,
                  column_major: bool = False):
    """ONNX MaxPool: ``Y`` (NaN propagates; a window with no input element gives ``-inf`` /
    ``iinfo.min``) and, when `indices_dtype` is given, ``(Y, Indices)``."""
    g = pool_phase.geometry(x.shape, window, strides, padding, dilation)
    out = pool_phase.onnx_rule(x, g)
    if indices_dtype is None:
        return out
    spatial = list(range(2, x.ndim))
    order = [0, 1] + (spatial[::-1] if column_major else spatial)
    label, _ = _flat_labels(g, x.shape, order, indices_dtype)
    return out, pool_phase.onnx_first(lax.stop_gradient(x), g, lax.stop_gradient(out),
                                      label=label, none=-1, dtype=indices_dtype)
