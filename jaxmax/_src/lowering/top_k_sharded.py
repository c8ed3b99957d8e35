"""TopK along a sharded axis (``Explicit`` mesh axes, or ``Auto`` ones once XLA has chosen): each
device selects for a block of the other axes, and the output keeps the input's sharding on
another axis.

XLA's partitioner gathers the whole input before the CPU ``TopK`` (every device then holds the
whole, replicated answer). Here, in each device's function, the mesh axes that split the top-k
axis move to another axis (`target_axis`: the first whose length divides over them with the
mesh axes it already has), by one ``all_to_all``:

* of the device's block itself (`plan`'s first form): each device receives the whole
  top-k axis for its share of the other axis and selects there exactly as one device would
  (the same program, so values, indices and gradient are the single-device ones bit for bit);
* or, when that is smaller, of its block's own top ``min(k, n / D)`` candidates (values and
  global indices): each device then selects the top ``k`` of the ``D`` blocks' candidates by the
  same key. The candidates of a block lie in key order, equal keys by index, and the blocks come
  in index order, so equal keys among the candidates lie in index order, and the index-stable
  selection breaks ties by index as one selection over the axis would.

Either way each device receives at most its share of the input (``n / D`` elements per row of
its block) and at most the output's bytes; nothing is gathered. The output is sharded along the
target axis (its mesh axes, then the moved ones) instead of being replicated: a replicated
output would cost at least its own bytes in an all-gather on top. Without such an axis (or with
``k = 0``), `plan` returns None and the caller gathers as before.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import explicit_axes


def target_axis(shape: tuple[int, ...], spec: tuple, axis: int, mesh) -> int | None:
    """The first axis other than `axis` whose length divides over its own mesh axes and those
    of `axis` together, or None."""
    moved = explicit_axes.devices_along(mesh, explicit_axes.entry_names(spec[axis]))
    for t, (n, entry) in enumerate(zip(shape, spec, strict=True)):
        if t != axis and n % (moved * explicit_axes.devices_along(
                mesh, explicit_axes.entry_names(entry))) == 0:
            return t
    return None


def plan(shape: tuple[int, ...], dtype, spec: tuple, mesh, names: tuple[str, ...], *, k: int,
         axis: int, by_index: bool, select_block: Callable, select: Callable, take: Callable):
    """The top `k` along `axis` of an input of `shape` and `dtype` laid out as `spec` on `mesh`,
    its top-k axis sharded over the mesh axes `names`: ``(per_device, spec, out_spec)``, the
    function each device runs on its block (naming the mesh axes: ``jax.shard_map`` on
    ``Explicit`` axes, :mod:`jaxmax._src.auto_partition` on ``Auto`` axes) giving ``(values,
    indices)`` laid out as `out_spec` (sharded along `target_axis`); None when no axis can take
    the sharding.

    ``select_block(x, k, by_index)`` is the one-device selection along `axis` (values, indices);
    ``select(x, k)`` selects along the last axis by the same key and returns the positions in
    key order; ``take(x, positions)`` gathers along the last axis exactly (bits
    kept, the tangent gathered alike)."""
    t = target_axis(shape, spec, axis, mesh)
    if t is None or k == 0:
        return None
    devices = explicit_axes.devices_along(mesh, names)
    n_local = shape[axis] // devices
    k_local = min(k, n_local)
    ndim = len(shape)
    _, index_probe = jax.eval_shape(lambda v: select_block(v, 1, False),
                                    jax.ShapeDtypeStruct((1,) * ndim, dtype))
    itemsize = np.dtype(dtype).itemsize
    candidates = k_local * (itemsize + np.dtype(index_probe.dtype).itemsize)
    by_rows = n_local * itemsize <= candidates

    def whole_rows(block):
        return select_block(_exchange(block, names, t, axis), k, by_index)

    def merged(block):
        values, indices = select_block(block, k_local, False)  # key order, ties by index
        indices = indices + (lax.axis_index(names) * n_local).astype(indices.dtype)
        values = jnp.moveaxis(_exchange(values, names, t, axis), axis, -1)
        indices = jnp.moveaxis(_exchange(indices, names, t, axis), axis, -1)
        pos = select(values, k)
        chosen = jnp.take_along_axis(indices, pos, axis=-1)
        if by_index:
            chosen, pos = lax.sort((chosen, pos), dimension=pos.ndim - 1, num_keys=1)
        return jnp.moveaxis(take(values, pos), -1, axis), jnp.moveaxis(chosen, -1, axis)

    out = list(spec)
    out[axis] = None
    out[t] = explicit_axes.entry_names(spec[t]) + tuple(names)
    return whole_rows if by_rows else merged, tuple(spec), tuple(out)


def _exchange(block, names, split, concat):
    """Each device's block cut along `split` into one piece per device of `names`, piece ``j``
    sent to device ``j``, and the pieces received laid along `concat` in device order."""
    return lax.all_to_all(block, names, split, concat, tiled=True)
