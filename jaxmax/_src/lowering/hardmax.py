"""Hardmax over one axis: a one-hot of the ArgMax winner (:mod:`jaxmax._src.lowering.arg_max`).

The winner is the first element whose ``order.compare_key`` is the largest, with NaN ranking
above every number (``nan_order="first"``, the ONNX ArgMax rule, docs/semantics.md §6.2): ties go
to the first maximum, ``-0.0 == +0.0``, a slice holding a NaN gets its 1 at its first NaN. The
output is ``iota == winner`` in the data dtype; it is piecewise constant, so its gradient is
zero. Reusing the ArgMax fold (rather than ``jnp.argmax``, a variadic reduce ~40x slower than
``jnp.max`` on XLA:CPU) keeps the time independent of the data (benchmarks/RESULTS.md,
"Detection").
"""

from __future__ import annotations

import math

import jax
from jax import lax

from jaxmax._src.lowering import arg_max, compile_options


def hardmax(x: jax.Array, *, axis: int, flatten: bool = False) -> jax.Array:
    """``1`` at the first maximal element (NaN the maximum) of every slice along `axis`, ``0``
    elsewhere, in `x`'s dtype; `axis` is normalised. With `flatten` the slices are the rows of
    `x` viewed as the matrix ``[prod(shape[:axis]), prod(shape[axis:])]`` (ONNX Hardmax before
    13). An empty `x` is returned as zeros."""
    return _hardmax_jit(x, axis=axis, flatten=flatten)


@compile_options.jit(static_argnames=("axis", "flatten"))
def _hardmax_jit(x, *, axis, flatten):
    if flatten:
        rows = x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
        return _hardmax_jit(rows, axis=1, flatten=False).reshape(x.shape)
    if x.size == 0:
        return lax.full(x.shape, 0, x.dtype)
    index_dtype = arg_max.positions(x.shape[axis])
    winner = arg_max.arg_max(lax.stop_gradient(x), axis=axis, keepdims=True, last=False,
                             nan_order="first", index_dtype=index_dtype)
    return (lax.broadcasted_iota(index_dtype, x.shape, axis) == winner).astype(x.dtype)
