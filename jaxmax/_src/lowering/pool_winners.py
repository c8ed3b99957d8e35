"""Winners: the kernel tap each pooling window selects, as a tap number or a flat index.

Stage four of the pooling pipeline (:mod:`jaxmax._src.lowering.pool`). The index and the
gradient are one fact: a window's *winner* is the tap whose input element is its Indices output
(`indices`) and receives its whole tangent (`winner`,
:mod:`jaxmax._src.lowering.pool_tangents`). One mechanism finds it under both values rules
(`first_equal`): the first tap, in row-major window order, whose element equals the window's
value, in one fusion that re-reads the input and the value (a padded tap that XLA sees used
twice is written to memory, so every tap is read once per fusion, and a tap of the winner search
is never the very expression of the value's: its padding holds another value).

* ``nan="skip"`` (values ``max(lowest(T), non-NaN window elements)``): the winner is the first
  element equal to the value when that is above lowest(T). A window whose value is lowest(T) is
  differentiated as the pooling of the clamped input ``where(x >= lowest, x, lowest)``: every
  clamped tap equals lowest(T), so its first tap wins, and passes the tangent only if it is an
  input element that is not NaN or ``-inf``. Such a window has no index winner.
* ``nan="propagate"``: the winner is the first NaN of a NaN window, else the first element
  equal to the value; a window without input elements has none.

An index is the winner's flat index in an `IndexLayout`: row-major over the axes from
``first_axis`` on (the batch and channel axes first, then the spatial axes in order, or
reversed: column-major), linear in the coordinates, so each output's label is its window
origin's flat index plus the winner tap's constant offset. A window without a winner gets the
layout's ``no_winner`` index. Indices are computed in the index dtype asked for (the adapters
check that the range fits it).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import order, pool_taps, rules
from jaxmax._src.lowering.pool_geometry import Geometry

__all__ = ["NO_WINNER", "IndexLayout", "first_equal", "index_dtype", "indices", "winner"]

#: What a window without a winner points at: the start of its (batch, channel) plane, or -1.
NO_WINNER = ("plane_start", "minus_one")


class IndexLayout(NamedTuple):
    """How a winner's position is written as one integer over ``(N, C, *spatial)``.

    The flat index counts the axes from `first_axis` on (0: over the whole input; ``k``: modulo
    ``prod(shape[k:])``), row-major with the spatial axes in order, or reversed with
    `column_major`; a window without a winner gets `no_winner` (see `NO_WINNER`)."""
    first_axis: int = 0
    column_major: bool = False
    no_winner: str = "minus_one"

    def dims(self, ndim: int) -> list[int]:
        """The axes the flat index counts, the slowest first."""
        spatial = list(range(2, ndim))
        axes = [0, 1] + (spatial[::-1] if self.column_major else spatial)
        return [d for d in axes if d >= self.first_axis]


def index_dtype(count: int) -> type:
    """Tap indices (and -1) as int8 when they fit: a quarter of int32's memory and page faults,
    at the same speed; int32 otherwise."""
    return np.int8 if count <= 127 else np.int32


def first_equal(x: jax.Array, g: Geometry, out: jax.Array, fill, *, read=None,
                inside: bool = False, label=None, none=-1, dtype=None) -> jax.Array:
    """Per output, ``label(j)`` of the first tap ``j`` whose element equals `out` (both through
    `read`, when given), padding read as `fill`; `none` where no tap does (None: the caller
    knows that one always does). With `inside`, padding never matches. `label` defaults to the
    tap number, in `dtype` (default `index_dtype`).

    One pass over the input and `out`, each tap read once. The result is fused into its
    consumers: a caller that uses it more than once computes it apart (`_apart`).
    """
    taps = pool_taps.taps(x, g, fill, read)
    masks = pool_taps.taps(jnp.ones(x.shape, bool), g, False) if inside else None
    target = out if read is None else read(out)
    dtype = index_dtype(len(taps)) if dtype is None else dtype
    label = (lambda j: dtype(j)) if label is None else label
    last = len(taps)
    if none is None:  # some tap always matches: the last one needs no comparison
        last -= 1
        none = label(last)
    index = jnp.broadcast_to(jnp.asarray(none, dtype), out.shape)
    for j in range(last - 1, -1, -1):
        hit = taps[j] == target
        if masks is not None:
            hit = hit & masks[j]
        index = jnp.where(hit, label(j), index)
    return index


def _apart(pred: jax.Array, if_true, if_false) -> jax.Array:
    """``lax.cond(pred, if_true, if_false)``: the result computed in a computation of its own,
    hence into a buffer, and from taps XLA does not merge with the value's. Elementwise code is
    otherwise fused (recomputed) into each of its consumers, and a winner read by every tap of
    a tangent would be recomputed per tap."""
    return lax.cond(pred, if_true, if_false)


def _winner_at_least_lowest(x: jax.Array, g: Geometry, out: jax.Array) -> jax.Array:
    """Per output of the rule ``"skip"`` (`out`), the tap that receives its tangent, or -1.

    Above lowest(T), the first element equal to `out` (padding, at ``-inf``, never is). At
    lowest(T) (no element above it), every clamped tap equals the value, so the first tap wins,
    and passes the tangent only if it is an input element that is not NaN or ``-inf``.
    """
    low = dtypes.lowest(x.dtype)
    pad = dtypes.max_identity(x.dtype)

    def raised():
        index = first_equal(x, g, out, pad, none=None)  # used above lowest(T) only
        # whether tap 0 reads an input element >= lowest(T) (False in the padding)
        tap0 = pool_taps.tap(x.reshape(g.phase_shape), g, g.taps[0], False,
                             read=lambda v: v >= low)
        fallback = jnp.where(tap0, index.dtype.type(0), index.dtype.type(-1))
        return jnp.where(out > low, index, fallback)

    return _apart(jnp.min(out) > low, lambda: first_equal(x, g, out, pad, none=None), raised)


def _equal_key(v: jax.Array) -> jax.Array:
    """An integer key of `v`: equal keys are equal values (``-0`` and ``+0`` too) or both NaN."""
    return order.key(v, descending=True, nan_order="first")


def _first_nan_or_equal(x: jax.Array, g: Geometry, out: jax.Array, **labels) -> jax.Array:
    """Per output of the rule ``"propagate"`` (`out`), `first_equal` for the first input element
    that is NaN when `out` is, else equal to it; `none` for a window with no input element.

    When every output is finite, padding (read as NaN) equals none, and plain equality finds
    the element; otherwise the search runs again (a ``while_loop`` of zero or one trip, as for
    the values, which runs on every thread where a ``lax.cond`` would not) on `_equal_key`s,
    NaN equal to NaN, padding at a key no element has.
    """
    if not dtypes.is_floating(x.dtype):
        return first_equal(x, g, out, dtypes.max_identity(x.dtype), inside=True, **labels)
    # padding key: `_equal_key` gives NaN the largest key and numbers keys above the smallest
    pad_key = np.iinfo(order.signed_bits_dtype(x.dtype)).min
    fast = first_equal(x, g, out, np.nan, **labels)
    return rules.redo_if(~rules.finite_sum(out), fast,
                         lambda: first_equal(x, g, out, pad_key, read=_equal_key, **labels))


def winner(x: jax.Array, g: Geometry, out: jax.Array, nan: str) -> jax.Array:
    """Per output (`out`, the values of `x` under the rule `nan`), the number of the tap that
    receives its tangent, or -1 (no tap does)."""
    if nan == "skip":
        return _winner_at_least_lowest(x, g, out)
    return _first_nan_or_equal(x, g, out)


def _flat_labels(g: Geometry, dims: list[int], dtype):
    """The flat index of tap ``j``'s element for every output, as ``label(j)``, and that of the
    ``(n, c)`` plane start.

    The flat index is ``sum(coord[d] * stride[d])`` over `dims` (a row-major layout of those
    dims in the given order, the first the slowest), linear in the coordinates: the window
    origin's part (from the output position) plus a constant offset per tap.
    """
    strides, step = {}, 1
    for d in reversed(dims):
        strides[d] = step
        step *= g.in_shape[d]

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


def indices(x: jax.Array, g: Geometry, out: jax.Array, nan: str, layout: IndexLayout,
            dtype) -> jax.Array:
    """The flat index (in `layout`, of `dtype`) of each window's winner; `out` holds the values
    of `x` under the rule `nan`.

    Under ``"skip"`` padding reads ``-inf`` (lowest(T) for integers), which never equals a
    value above lowest(T), and a window whose value is lowest(T) has no winner.
    """
    label, plane = _flat_labels(g, layout.dims(x.ndim), dtype)
    none = plane if layout.no_winner == "plane_start" else dtype(-1)
    if nan == "skip":
        first = first_equal(x, g, out, dtypes.max_identity(x.dtype), label=label, none=0,
                            dtype=dtype)
        return jnp.where(out > dtypes.lowest(x.dtype), first, none)
    return _first_nan_or_equal(x, g, out, label=label, none=none, dtype=dtype)
