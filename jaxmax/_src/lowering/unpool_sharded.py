"""MaxUnpool of an ``X`` sharded along one axis over ``Explicit`` mesh axes (or ``Auto`` ones,
once XLA knows the sharding: `plan`): each device scatters its own elements, and only
output-sized data crosses devices.

XLA's partitioner gathers ``I`` (and ``X``) whole before the scatter. Here, in each device's
function (``jax.shard_map``, or :mod:`jaxmax._src.auto_partition`), with ``I`` replicated every
device finds the last writer of every output element from the whole ``I`` (its position in
``X``), and only the values move (the reduce-scatter below). With ``I`` sharded as ``X``, each
device takes its block of ``I`` and finds, for every output element, the last of its own
elements that names it (a scatter-max of local positions: local order is global order within a
block). Across devices the last writer is the one whose winner comes last in ``X``'s row-major
order: the axes before the sharded one are whole on every device, so that order is (the winner's
coordinates on those axes, then the device's block), a key of ``prefix * D + device`` values,
one byte per output element for up to 255 (`_key_type`). One all-reduce (max) of those keys
tells each device where it wrote last; the winners' values, as integer bits (zero signs and NaN
payloads exact; every other device adds 0), are summed into each device's block of the output by
one reduce-scatter. Per device: the key array (a quarter of a float32 output) and one output
block, where the partitioner moved ``I`` and ``X`` whole.

The output is sharded as the single-device lowering's (``explicit_axes.divisible``); where the
sharded axis's output length does not divide, the values are all-reduced instead (on ``Auto``
axes along a spatial axis too: the output's spatial axes are replicated there, and with ``I``
sharded the keys and the output together move 1.25 times a float32 output). The values are
the single-device ones bit for bit, and so is the gradient: each ``X`` element's cotangent is
the output cotangent at its index when it is that element's last writer, else 0, added to a
zero (the single-device forms do the same); a forward-mode tangent is placed as bits too (a
``-0.0`` one kept), a linear function (:mod:`jaxmax._src.linear_calls`) whose transpose sums
the cotangents as floats.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, explicit_axes, linear_calls
from jaxmax._src.lowering import order


def _key_type(count: int) -> np.dtype | None:
    """The narrowest unsigned type holding ``0..count`` (0: no writer), or None."""
    for t in (np.uint8, np.uint16, np.uint32):
        if count <= np.iinfo(t).max:
            return np.dtype(t)
    return None


def across_devices(x: jax.Array, indices: jax.Array, out_shape: tuple[int, ...]):
    """MaxUnpool (`unpool.max_unpool`'s scatter form) of `x` sharded along one axis over
    ``Explicit`` mesh axes, `indices` sharded alike or replicated; None for any other layout."""
    sx, si = explicit_axes.spec_of(x), explicit_axes.spec_of(indices)
    sharded = [a for a, e in enumerate(sx) if e is not None]
    if len(sharded) != 1 or not explicit_axes.explicit_only(x, sharded[0]):
        return None
    if any(e is not None for e in si) and not explicit_axes.explicit_only(indices, sharded[0]):
        return None
    mesh = jax.typeof(x).sharding.mesh
    out_spec = explicit_axes.divisible(mesh, sx, tuple(out_shape))
    per_device = plan(tuple(x.shape), sx, si, mesh, out_shape, out_spec)
    if per_device is None:
        return None
    return jax.shard_map(per_device, mesh=mesh, in_specs=(jax.P(*sx), jax.P(*si)),
                         out_specs=jax.P(*out_spec))(x, indices)


def plan(x_shape: tuple[int, ...], sx: tuple, si: tuple, mesh, out_shape: tuple[int, ...],
         out_spec: tuple, *, linear: bool = False):
    """Each device's function ``per_device(x_block, i_block)`` of MaxUnpool's scatter form for
    an ``X`` of `x_shape` laid out as `sx` on `mesh` (sharded along one axis, evenly) and
    ``I`` laid out as `si` (as `sx`, or replicated), giving its block of the output laid out as
    `out_spec` (`sx` on the batch and channels; on the sharded axis, when it is a spatial one,
    sharded as `sx` or replicated); None for any other layout.
    Run in ``jax.shard_map`` on ``Explicit`` axes (`across_devices`), by
    :mod:`jaxmax._src.auto_partition` on ``Auto`` ones once XLA knows the sharding. `linear`:
    the same placement as a linear function of the block (floats summed, the sums
    ``auto_partition.psum`` / ``psum_scatter``), for a transpose taken where it runs."""
    sharded = [a for a, e in enumerate(sx) if e is not None]
    if len(sharded) != 1 or (any(e is not None for e in si) and tuple(si) != tuple(sx)):
        return None
    a = sharded[0]
    names = explicit_axes.entry_names(sx[a])
    devices = explicit_axes.devices_along(mesh, names)
    if x_shape[a] % devices:
        return None
    prefix = math.prod(x_shape[:a])
    key_type = _key_type(prefix * devices)
    size = math.prod(out_shape)
    if key_type is None or max(size, math.prod(x_shape)) > np.iinfo(np.int32).max:
        return None
    scatter_out = out_spec[a] is not None
    block = x_shape[a] // devices
    replicated_i = all(e is None for e in si)

    def reduce(v):
        if linear:
            return (auto_partition.psum_scatter(v, names, a) if scatter_out
                    else auto_partition.psum(v, names))
        if scatter_out:
            return lax.psum_scatter(v, names, scatter_dimension=a, tiled=True)
        return lax.psum(v, names)

    def last_writers(ib):
        """Per output element, the largest position in `ib` (row-major) that names it, or -1."""
        flat_i = ib.reshape(-1)
        valid = flat_i >= 0
        if size - 1 < np.iinfo(flat_i.dtype).max:
            valid = valid & (flat_i < size)
        positions = lax.iota(np.int32, flat_i.shape[0])
        return jnp.full((size,), -1, np.int32).at[jnp.where(valid, flat_i, 0)].max(
            jnp.where(valid, positions, np.int32(-1)), indices_are_sorted=False,
            unique_indices=False)

    def own_winners(ib):
        """Per output element, the position in this device's block of `X` of its last
        writer when this device holds it, else -1."""
        d = lax.axis_index(names)
        if replicated_i:  # every device finds the winners from the whole I: no key to combine
            winner = last_writers(ib)
            after = math.prod(x_shape[a + 1:])
            row, at, rest = winner // (x_shape[a] * after), (winner // after) % x_shape[a], \
                winner % after
            mine = (winner >= 0) & (at // block == d)
            return jnp.where(mine, (row * block + at - d * block) * after + rest, -1)
        winner = last_writers(ib)
        written = winner >= 0
        tail = math.prod(x_shape[a:]) // devices
        key = jnp.where(written, (winner // tail) * devices + d + 1, 0).astype(key_type)
        return jnp.where(written & (key == lax.pmax(key, names)), winner, -1)

    def per_device(xb, ib):
        winner = own_winners(ib)
        if not linear:
            return _place(xb.reshape(-1), winner, out_shape, reduce)
        written = winner >= 0
        taken = jnp.take(xb.reshape(-1), jnp.where(written, winner, 0), mode="clip")
        return reduce(jnp.where(written, taken, jnp.zeros((), xb.dtype)).reshape(out_shape))

    return per_device


@partial(jax.custom_jvp, nondiff_argnums=(2, 3))
def _place(flat_x, winner, out_shape, reduce):
    """``flat_x[winner]`` where ``winner >= 0``, else 0, in `out_shape`, summed across devices
    by `reduce` as integer bits (exact: one device writes each element)."""
    written = winner >= 0
    taken = jnp.take(order.bits(flat_x), jnp.where(written, winner, 0), mode="clip")
    local = jnp.where(written, taken, jnp.zeros((), taken.dtype)).reshape(out_shape)
    return order.from_bits(reduce(local), flat_x.dtype)


@_place.defjvp
def _place_jvp(out_shape, reduce, primals, tangents):
    # linear in `flat_x`: the tangent is the placement of its tangent, as bits (exact, a -0.0
    # tangent kept), and its transpose that of the same placement summed as floats
    flat_x, winner = primals
    t = tangents[0]

    def summed(v, winner):
        written = winner >= 0
        taken = jnp.take(v, jnp.where(written, winner, 0), mode="clip")
        return reduce(jnp.where(written, taken, jnp.zeros((), v.dtype)).reshape(out_shape))

    out = _place(flat_x, winner, out_shape, reduce)
    if not linear_calls.available():  # a floating sum: a -0.0 tangent reads +0.0
        return out, summed(t, winner)

    def forward(residuals, tangent):
        return _place(tangent[0], residuals[0], out_shape, reduce)

    def transpose(residuals, cotangent):
        # zeros of the block's own type (varying over the devices, as the cotangent asked of
        # it), not a replicated constant
        zeros = jnp.zeros_like(residuals[1], t.dtype)
        return jax.vjp(lambda v: summed(v, residuals[0]), zeros)[1](cotangent)

    return out, linear_calls.call(forward, transpose, (winner, lax.stop_gradient(flat_x)), (t,))
