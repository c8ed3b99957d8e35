"""Scatter along an axis, block by block, where the sharding keeps every update on the device of
its target: no collective.

An update of ScatterElements / ScatterElementsUpdate keeps its own coordinates on every axis but
the scatter axis. So when the data, the indices and the updates that are sharded are sharded
alike over ``Explicit`` mesh axes, along axes other than the scatter axis only, and all three
span the same length along those axes, each device's updates reach only its own block of the
data: the one-device scatter runs on each block (``jax.shard_map``) with the values, the rule's
order and the gradient of one device, bit for bit. A replicated operand is cut into those blocks
where it lies, and the output is sharded as the blocks: with replicated data and sharded
updates, it is sharded as the updates (replicating it would all-gather the output's bytes, as
many as the updates'). XLA's partitioner gathered the indices and the updates instead.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax.sharding import NamedSharding

from jaxmax._src import explicit_axes


def along_other_axes(compute: Callable, data: jax.Array, indices: jax.Array,
                     updates: jax.Array, axis: int):
    """``compute(data, indices, updates)`` on each device's blocks, or None when the layout
    does not keep every update on its target's device (see the module docstring)."""
    arrays = (data, indices, updates)
    specs = [explicit_axes.spec_of(a) for a in arrays]
    sharded = [s for s in specs if any(e is not None for e in s)]
    if not sharded or any(s != sharded[0] for s in sharded):
        return None
    spec = sharded[0]
    along = [b for b, e in enumerate(spec) if e is not None]
    if spec[axis] is not None or any(a.shape[b] != data.shape[b] for a in arrays for b in along):
        return None
    if not all(explicit_axes.explicit_only(a, b) for a, s in zip(arrays, specs, strict=True)
               if s == spec for b in along):
        return None
    mesh = jax.typeof(next(a for a, s in zip(arrays, specs, strict=True) if s == spec)) \
        .sharding.mesh
    block = jax.P(*spec)
    # a replicated operand is cut into the same blocks where it lies (no collective; its
    # cotangent is gathered back whole, bit for bit)
    data, indices, updates = (a if s == spec else jax.sharding.reshard(
        a, NamedSharding(mesh, block)) for a, s in zip(arrays, specs, strict=True))
    # check_vma=False: the private combiner scatter (JAX's own primitive, bound directly) has
    # no rule for varying operands (as in lowering/segment.py)
    return jax.shard_map(compute, mesh=mesh, in_specs=(block, block, block), out_specs=block,
                         check_vma=False)(data, indices, updates)
