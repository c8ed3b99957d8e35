"""SegmentMax lowering: the OpenVINO max rule per segment and the empty-segment fill. Jitted as
:mod:`jaxmax._src.lowering.reduce` describes.

The value is one scatter whose combiner is the rule itself (a NaN update never wins), into an
output initialised to lowest(T), so no data shape (NaN, empty segments, ties, signed zeros)
takes a slower path; only the ZERO fill of an output holding lowest(T) counts members.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, dtypes, explicit_axes
from jaxmax._src.lowering import compile_options, order, rules
from jaxmax._src.lowering.scatter import private as private_scatter


def segment_max(data: jax.Array, segment_ids: jax.Array, num_segments: int,
                fill: str) -> jax.Array:
    """Per-segment OpenVINO-rule max with the empty-segment `fill` (see `_segment_max_jit`)."""
    return _segment_max_jit(data, segment_ids, num_segments, fill,
                            rules.cross_device_possible(data, segment_ids),
                            rules.several_devices())


@compile_options.jit(static_argnames=("num_segments", "fill", "cross_device", "auto"))
def _segment_max_jit(data: jax.Array, segment_ids: jax.Array, num_segments: int, fill: str,
                     cross_device: bool, auto: bool = False) -> jax.Array:
    """Per-segment OpenVINO-rule max; empty segments get `fill` (``"zero"``/``"lowest"``).

    An empty segment comes out of the max rule as lowest(T) already, which is the ``"lowest"``
    fill. For ``"zero"``, emptiness is decided by counting members (a 1-D scatter of ones), never
    by comparing values with a sentinel; the count runs only when some output equals lowest(T).
    Ids outside ``[0, num_segments)`` are dropped. Floating rows sharded over ``Explicit`` axes
    take `_across_rows`; on ``Auto`` axes (`auto`: several devices in the process) the same
    per-device form is chosen once XLA knows the sharding (`_on_auto_axes`).
    """
    def compute(data, segment_ids):
        return _segment_max(data, segment_ids, num_segments, fill, cross_device)

    def out_spec(mesh):
        return explicit_axes.divisible(
            mesh, (None,) + explicit_axes.spec_of(data)[1:], (num_segments,) + data.shape[1:])

    if auto and not (explicit_axes.names_of(data) or explicit_axes.names_of(segment_ids)):
        return _on_auto_axes(data, segment_ids, num_segments, fill, cross_device)
    rows = explicit_axes.explicit_only(data, 0)
    if (rows and dtypes.is_floating(data.dtype)
            and explicit_axes.spec_of(segment_ids)[0] in (None, explicit_axes.spec_of(data)[0])
            and set(rows) >= set(explicit_axes.names_of(segment_ids))):
        return _across_rows(data, segment_ids, num_segments, fill, cross_device, rows)
    return explicit_axes.run(compute, (data, segment_ids), out_spec)


def _per_device(num_segments: int, fill: str, dtype, rows: tuple[str, ...]):
    """Each device's SegmentMax of its block of floating rows (and their ids), combined across
    the mesh axes `rows` that split the rows: the rule's max of the device's own rows into a
    whole output, the segments it has no member of marked, and one all-reduce of those
    outputs as ordered integer keys (``order.monotone_bits``: ``+0.0`` above ``-0.0``; no NaN is
    left), an empty segment's key the smallest integer, below every value's. The output's
    bytes move once; the partitioner gathered the rows instead."""
    low = dtypes.lowest(dtype)
    filler = dtypes.zero(dtype) if fill == "zero" else low

    def per_block(block, ids):
        if ids.dtype.itemsize == 8:
            ids = jnp.clip(ids, -1, num_segments)
        shape = (num_segments,) + tuple(block.shape[1:])
        out = _scatter_rule_max(jnp.full(shape, low, block.dtype), ids, block)
        members = jax.ops.segment_sum(jnp.ones(ids.shape, jnp.int32), ids, num_segments)
        key = order.monotone_bits(out)
        empty_key = np.iinfo(key.dtype).min
        mine = (members > 0).reshape((num_segments,) + (1,) * (block.ndim - 1))
        key = lax.pmax(jnp.where(mine, key, empty_key), rows)
        return jnp.where(key == empty_key, filler, order.from_monotone_bits(key, block.dtype))

    return per_block


@partial(jax.custom_jvp, nondiff_argnums=(2, 3, 4, 5))
def _across_rows(data, segment_ids, num_segments, fill, cross_device, rows):
    """SegmentMax of floating `data` whose rows are sharded over the ``Explicit`` mesh axes
    `rows`, by `_per_device` in ``jax.shard_map``. The derivative is `_segment_max`'s."""
    spec = explicit_axes.spec_of(data)
    mesh = jax.typeof(data).sharding.mesh
    if explicit_axes.spec_of(segment_ids)[0] != spec[0]:  # replicated ids: each its own slice
        segment_ids = jax.sharding.reshard(
            segment_ids, jax.sharding.NamedSharding(mesh, jax.P(spec[0])))
    # check_vma=False: the private combiner scatter (JAX's own primitive, bound directly) has
    # no rule for a mesh-invariant operand (the filled output) beside varying ones
    return jax.shard_map(_per_device(num_segments, fill, data.dtype, rows), mesh=mesh,
                         in_specs=(jax.P(*spec), jax.P(spec[0])),
                         out_specs=jax.P(None, *spec[1:]), check_vma=False)(data, segment_ids)


def _on_auto_axes(data, segment_ids, num_segments, fill, cross_device):
    """SegmentMax where XLA chooses the sharding (:mod:`jaxmax._src.auto_partition`): floating
    rows sharded (their ids sharded alike, or replicated: each device then takes its own
    slice) by `_per_device`; rows not sharded, the trailing axes (and ids replicated), each
    device computes its own block. Otherwise the inputs are gathered. The derivative is
    `_segment_max`'s."""
    def plain(d, i, cross=cross_device):
        return (_segment_max(d, i, num_segments, fill, cross),)

    def planner(mesh, specs):
        spec, ids_spec = specs
        if not auto_partition.even(mesh, spec, data.shape):
            return None
        out_spec = (None,) + spec[1:]
        if spec[0] is None:
            if ids_spec[0] is not None:
                return None
            return auto_partition.Plan(partial(plain, cross=False), (spec, ids_spec),
                                       (out_spec,))
        if not dtypes.is_floating(data.dtype) or ids_spec[0] not in (None, spec[0]):
            return None
        per_block = _per_device(num_segments, fill, data.dtype,
                                explicit_axes.entry_names(spec[0]))
        return auto_partition.Plan(lambda d, i: (per_block(d, i),), (spec, (spec[0],)),
                                   (out_spec,))

    def jvp(primals, tangents, out):
        del out
        return jax.jvp(lambda d: plain(d, primals[1]), (primals[0],), (tangents[0],))[1]

    kept = ((None,) + tuple((0, i) for i in range(1, data.ndim)),)
    return auto_partition.call(plain, planner, (data, segment_ids), kept=kept,
                               jvp=jvp)[0]


@_across_rows.defjvp
def _across_rows_jvp(num_segments, fill, cross_device, rows, primals, tangents):
    data, segment_ids = primals
    out = _across_rows(data, segment_ids, num_segments, fill, cross_device, rows)
    spec = (None,) + explicit_axes.spec_of(data)[1:]
    _, tangent = jax.jvp(
        lambda d: explicit_axes.run(
            lambda d_, i_: _segment_max(d_, i_, num_segments, fill, cross_device),
            (d, segment_ids), lambda _: spec), (data,), (tangents[0],))
    return out, tangent


def _segment_max(data: jax.Array, segment_ids: jax.Array, num_segments: int, fill: str,
                 cross_device: bool) -> jax.Array:
    # XLA's CPU scatter wraps 64-bit indices to 32 bits (jax 0.10 with x64: an id 2**32 + 1
    # lands in segment 1), so 64-bit ids out of range are first mapped to the out-of-range
    # values -1 and num_segments, which every scatter drops. (int32 ids need no clip, which
    # would cost ~25% of the call: XLA fuses it into both scatters.)
    if segment_ids.dtype.itemsize == 8:
        segment_ids = jnp.clip(segment_ids, -1, num_segments)
    if not dtypes.is_floating(data.dtype):
        return _rule_value(data, segment_ids, num_segments, fill)
    return _value(data, segment_ids, num_segments, fill, cross_device)


def _rule_value(data: jax.Array, segment_ids: jax.Array, num_segments: int,
                fill: str) -> jax.Array:
    """One scatter of the rule's max into an output initialised to lowest(T): NaN updates never
    win (`_scatter_rule_max`), a ``-inf`` maximum stays lowest(T), and an empty segment comes
    out as lowest(T), the LOWEST fill. The ZERO fill counts members: over ``_COUNT_ALWAYS_ROWS``
    rows in a ``while_loop`` of zero or one trip, only when some output is lowest(T) (an empty
    segment, or a maximum of lowest(T) or ``-inf``); up to it always (the count then costs
    microseconds, the loop a third of the compile). The value is exact on any device layout: no
    partial result holds NaN, so a cross-device max has none to drop."""
    low = dtypes.lowest(data.dtype)
    shape = (num_segments,) + tuple(data.shape[1:])
    out = _scatter_rule_max(jnp.full(shape, low, data.dtype), segment_ids, data)
    if fill != "zero" or low == dtypes.zero(data.dtype) or not out.size:  # unsigned: ZERO is LOWEST
        return out

    def zero_empty_segments():
        members = jax.ops.segment_sum(jnp.ones(segment_ids.shape, jnp.int32), segment_ids,
                                      num_segments)
        empty = (members == 0).reshape((num_segments,) + (1,) * (data.ndim - 1))
        return jnp.where(empty, dtypes.zero(data.dtype), out)

    if segment_ids.shape[0] <= _COUNT_ALWAYS_ROWS:
        return zero_empty_segments()
    return rules.redo_if(jnp.min(out) == low, out, zero_empty_segments)


# Up to this many rows the ZERO fill counts members unconditionally: a count of 2M ids costs
# ~0.8 ms (6% of a 2M x 32 call), 64Ki ids ~30 us, while the loop that skips it on data without
# empty segments took 0.63 instead of 0.45 s to compile on small shapes.
_COUNT_ALWAYS_ROWS = 1 << 16


def _scatter_rule_max(out: jax.Array, segment_ids: jax.Array, data: jax.Array) -> jax.Array:
    """``out[segment_ids[i]] = max(out[...], data[i])`` over rows, NaN rows of a column
    skipped, ids outside the output dropped (negative ones too).

    Floats use a scatter whose combiner skips a NaN update: masking the data first (a select
    before a plain scatter-max) writes a masked copy of the whole input, which XLA does not fuse
    into the scatter. Where JAX lacks the primitive that takes a combiner, that public form is
    used. Non-NaN pairs go through ``lax.max``, so ``+0.0`` beats ``-0.0`` in either order.
    """
    numbers = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(range(1, data.ndim)), inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(0,))
    mode = lax.GatherScatterMode.FILL_OR_DROP
    ids = segment_ids[:, None]
    if not dtypes.is_floating(data.dtype):
        return lax.scatter_max(out, ids, data, numbers, mode=mode)
    if not private_scatter.available():
        masked = jnp.where(jnp.isnan(data), jnp.array(-jnp.inf, data.dtype), data)
        return lax.scatter_max(out, ids, masked, numbers, mode=mode)
    return _bind_rule_scatter(out, ids, data, numbers)


def _bind_rule_scatter(out: jax.Array, ids: jax.Array, data: jax.Array,
                       numbers: lax.ScatterDimensionNumbers) -> jax.Array:
    """The scatter of `_max_skipping_nan`, NaN updates skipped, ids outside `out` dropped."""
    return private_scatter.bind(_max_skipping_nan, out, ids, data, numbers)


def _max_skipping_nan(current: jax.Array, update: jax.Array) -> jax.Array:
    # StableHLO's scatter calls its combiner as (current value, update), and the current value
    # is never NaN (lowest(T) at first, a combiner's result after), so one select suffices (a
    # second, for a NaN current value, cost 12% of the call).
    return lax.select(update != update, current, lax.max(current, update))


def _exact(data: jax.Array, segment_ids: jax.Array, num_segments: int, fill: str,
           cross_device: bool) -> jax.Array:
    """The rule spelled out with ``jax.ops.segment_max`` (NaN masked when one is found, the max
    raised to lowest(T), empty segments found by counting members), for its derivative."""
    def reducer(v, ids):
        return jax.ops.segment_max(v, ids, num_segments)

    out = rules.max_skipping_nan(reducer, data, segment_ids, check_data=cross_device)
    if fill == "lowest":
        return out
    members = jax.ops.segment_sum(jnp.ones(segment_ids.shape, jnp.int32), segment_ids,
                                  num_segments)
    empty = (members == 0).reshape((num_segments,) + (1,) * (data.ndim - 1))
    return jnp.where(empty, dtypes.zero(data.dtype), out)


@partial(jax.custom_jvp, nondiff_argnums=(2, 3, 4))
def _value(data, segment_ids, num_segments, fill, cross_device):
    return _rule_value(data, segment_ids, num_segments, fill)


@_value.defjvp
def _value_jvp(num_segments, fill, cross_device, primals, tangents):
    data, segment_ids = primals
    out = _value(data, segment_ids, num_segments, fill, cross_device)
    _, tangent = jax.jvp(
        lambda d: _exact(d, segment_ids, num_segments, fill, cross_device), (data,),
        (tangents[0],))
    return out, tangent

