"""Scatter along an axis, block by block, where the sharding keeps every update on the device of
its target: no collective.

An update of ScatterElements / ScatterElementsUpdate keeps its own coordinates on every axis but
the scatter axis. So when the data, the indices and the updates that are sharded are sharded
alike, along axes other than the scatter axis only, in even blocks, and all three span the same
length along those axes, each device's updates reach only its own block of the data: the
one-device scatter runs on each block with the values, the rule's order and the gradient of one
device, bit for bit. A replicated operand is cut into those blocks where it lies, and the output
is sharded as the blocks: with replicated data and sharded updates, it is sharded as the updates
(replicating it would all-gather the output's bytes, as many as the updates'). XLA's partitioner
gathered the indices and the updates instead.

`plan` decides the blocks from the shapes and specs alone, so that both mesh kinds share it:
`along_other_axes` on ``Explicit`` axes (``jax.shard_map``), and the ``Auto``-axes planner of
:mod:`~jaxmax._src.lowering.scatter.max_scatter` once XLA knows the shardings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
from jax.sharding import NamedSharding

from jaxmax._src import auto_partition, explicit_axes

Spec = tuple


def plan(mesh, shapes: Sequence[tuple[int, ...]], specs: Sequence[Spec], axis: int):
    """The one spec of every operand's blocks (data, indices, updates), or None when the layout
    does not keep every update on its target's device (see the module docstring)."""
    sharded = [s for s in specs if any(e is not None for e in s)]
    if not sharded or any(s != sharded[0] for s in sharded):
        return None
    spec = tuple(sharded[0])
    along = [b for b, e in enumerate(spec) if e is not None]
    if spec[axis] is not None or any(s[b] != shapes[0][b] for s in shapes for b in along):
        return None
    if not all(auto_partition.even(mesh, spec, s) for s in shapes):
        return None
    return spec


def along_other_axes(compute: Callable, data: jax.Array, indices: jax.Array,
                     updates: jax.Array, axis: int):
    """``compute(data, indices, updates)`` on each device's blocks over ``Explicit`` mesh axes,
    or None when `plan` finds none (or some sharded axis is not ``Explicit``)."""
    arrays = (data, indices, updates)
    specs = [explicit_axes.spec_of(a) for a in arrays]
    sharded = [a for a, s in zip(arrays, specs, strict=True) if any(e is not None for e in s)]
    if not sharded:
        return None
    mesh = jax.typeof(sharded[0]).sharding.mesh
    spec = plan(mesh, [tuple(a.shape) for a in arrays], specs, axis)
    if spec is None or not all(explicit_axes.explicit_only(a, b) for a in sharded
                               for b, e in enumerate(spec) if e is not None):
        return None
    block = jax.P(*spec)
    # a replicated operand is cut into the same blocks where it lies (no collective; its
    # cotangent is gathered back whole, bit for bit)
    data, indices, updates = (a if s == spec else jax.sharding.reshard(
        a, NamedSharding(mesh, block)) for a, s in zip(arrays, specs, strict=True))
    # check_vma=False: the private combiner scatter (JAX's own primitive, bound directly) has
    # no rule for varying operands (as in lowering/segment.py)
    return jax.shard_map(compute, mesh=mesh, in_specs=(block, block, block), out_specs=block,
                         check_vma=False)(data, indices, updates)


def slices_plan(mesh, shapes: Sequence[tuple[int, ...]], specs: Sequence[Spec]):
    """ScatterND's blocks: the specs (data, indices, updates) that cut the data along its slice
    axes (those past the ``k`` coordinates of an index tuple) and the updates alike along
    theirs, the indices replicated, or None. Each update slice then lands in the same block
    of its target slice: the one-device scatter of each device's blocks, no collective."""
    data_shape, index_shape, _ = shapes
    data_spec, index_spec, update_spec = (tuple(s) for s in specs)
    k, lead = index_shape[-1], len(index_shape) - 1
    if any(e is not None for e in index_spec + data_spec[:k] + update_spec[:lead]):
        return None
    trailing, along = data_spec[k:], update_spec[lead:]
    spec = trailing if any(e is not None for e in trailing) else along
    if not any(e is not None for e in spec) or along not in (spec, (None,) * len(spec)):
        return None
    if trailing not in (spec, (None,) * len(spec)):
        return None
    out = ((None,) * k + spec, (None,) * len(index_shape), (None,) * lead + spec)
    if not auto_partition.all_even(mesh, out, shapes):
        return None
    return out
