"""SegmentMax lowering: the OpenVINO max rule per segment and the empty-segment fill. Jitted as
:mod:`jaxmax._src.lowering.reduce` describes.

Scatter-max propagates NaN, so the plain result holds a NaN exactly where a segment did, and
checking that small result is enough, except when partial results may cross devices (then the data
is checked too).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax

from jaxmax._src import dtypes, explicit_axes
from jaxmax._src.lowering import rules


def segment_max(data: jax.Array, segment_ids: jax.Array, num_segments: int,
                fill: str) -> jax.Array:
    """Per-segment OpenVINO-rule max with the empty-segment `fill` (see `_segment_max_jit`)."""
    return _segment_max_jit(data, segment_ids, num_segments, fill,
                            rules.cross_device_possible(data, segment_ids))


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
    # XLA's CPU scatter wraps 64-bit indices to 32 bits (jax 0.10 with x64: an id 2**32 + 1
    # lands in segment 1), so 64-bit ids out of range are first mapped to the out-of-range
    # values -1 and num_segments, which every scatter drops. (int32 ids need no clip, which
    # would cost ~25% of the call: XLA fuses it into both scatters.)
    if segment_ids.dtype.itemsize == 8:
        segment_ids = jnp.clip(segment_ids, -1, num_segments)
    if not dtypes.is_floating(data.dtype):
        return _fast_or_exact(data, segment_ids, num_segments, fill, cross_device)
    return _value(data, segment_ids, num_segments, fill, cross_device)


def _exact(data: jax.Array, segment_ids: jax.Array, num_segments: int, fill: str,
           cross_device: bool) -> jax.Array:
    """The rule spelled out: NaN masked (when one is found), the max raised to lowest(T), empty
    segments found by counting members. Its derivative is the one the value has."""
    def reducer(v, ids):
        return jax.ops.segment_max(v, ids, num_segments)

    out = rules.max_skipping_nan(reducer, data, segment_ids, check_data=cross_device)
    if fill == "lowest":
        return out

    def zero_empty_segments():
        members = jax.ops.segment_sum(jnp.ones(segment_ids.shape, jnp.int32), segment_ids,
                                      num_segments)
        empty = (members == 0).reshape((num_segments,) + (1,) * (data.ndim - 1))
        return jnp.where(empty, dtypes.zero(data.dtype), out)

    return lax.cond((out == dtypes.lowest(data.dtype)).any(), zero_empty_segments, lambda: out)


def _fast_or_exact(data: jax.Array, segment_ids: jax.Array, num_segments: int, fill: str,
                   cross_device: bool) -> jax.Array:
    """One scatter-max into an output initialised to lowest(T): an empty segment comes out as
    lowest(T) (the LOWEST fill) and a ``-inf`` maximum is raised to it, so the result is the
    rule's unless it holds NaN (scatter-max propagates it), or, with the ZERO fill, some output
    is lowest(T) (an empty segment, or a maximum of lowest(T) or ``-inf``). Only then is
    `_exact` run, in a ``while_loop`` of zero or one trip (its carry is updated in place; a
    ``lax.cond`` returning the fast result would copy it). Checking the small output costs two
    fast reductions of it; the jvp and the `_exact` path are those of the previous lowering."""
    low = dtypes.lowest(data.dtype)
    shape = (num_segments,) + tuple(data.shape[1:])
    numbers = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(range(1, data.ndim)), inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(0,))
    fast = lax.scatter_max(jnp.full(shape, low), segment_ids[:, None], data, numbers,
                           mode=lax.GatherScatterMode.FILL_OR_DROP)  # negative ids dropped too
    redo = jnp.zeros((), bool)
    if dtypes.is_floating(data.dtype):
        redo = ~rules.finite_sum(fast)  # a NaN (or inf: only costs time)
        if cross_device:  # a cross-device max may drop NaN before the output shows it
            redo = redo | ~rules.finite_sum(data)
    if fill == "zero" and low != dtypes.zero(data.dtype) and fast.size:  # unsigned: ZERO is LOWEST
        redo = redo | (jnp.min(fast) == low)
    return rules.redo_if(redo, fast,
                         lambda: _exact(data, segment_ids, num_segments, fill, cross_device))


@partial(jax.custom_jvp, nondiff_argnums=(2, 3, 4))
def _value(data, segment_ids, num_segments, fill, cross_device):
    return _fast_or_exact(data, segment_ids, num_segments, fill, cross_device)


@_value.defjvp
def _value_jvp(num_segments, fill, cross_device, primals, tangents):
    data, segment_ids = primals
    out = _value(data, segment_ids, num_segments, fill, cross_device)
    _, tangent = jax.jvp(
        lambda d: _exact(d, segment_ids, num_segments, fill, cross_device), (data,),
        (tangents[0],))
    return out, tangent
