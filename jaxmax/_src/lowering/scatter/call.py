"""The checked scatter calls both faces make: validate the arrays and concrete indices (the
adapters have settled the version, the reduction and the data types it allows), then lower.
Each face differs only in its rule and the index types it accepts."""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from jaxmax._src import sizes
from jaxmax._src.lowering.scatter import built as scatter_built
from jaxmax._src.lowering.scatter import checks as scatter_checks
from jaxmax._src.lowering.scatter import max_scatter as scatter


def along_axis(op: str, data, indices, updates, axis, *, allowed: Callable[[np.dtype], bool],
               index_ok: Callable[[np.dtype], bool], index_kinds: str, rule: str,
               use_init: bool) -> jax.Array:
    """ScatterElements-style: `updates[i]` goes to `data` at `i` with its `axis` coordinate
    replaced by `indices[i]`, combined by `rule`."""
    data, updates = scatter_checks.data_and_updates(op, data, updates, allowed)
    axis_ = scatter_checks.axis_along(op, axis, data.ndim)
    host = scatter_checks.host_indices(op, indices, index_ok, index_kinds)
    scatter_checks.along_axis_shapes(op, data, host, updates, axis_)
    values = scatter_checks.concrete(host)
    if values is not None:
        scatter_checks.check_range(op, values, np.array(data.shape[axis_]),
                                   lambda pos: f"axis {axis_}")
    layout = scatter_checks.layout_of(values, data.shape, axis_)
    if layout == "detect" and scatter_built.constant_off_axis(host, axis_):
        layout = "rows"
    out = scatter.scatter_along_axis(data, scatter_checks.device_indices(op, host), updates,
                                     axis_, rule, use_init, layout)
    return sizes.settled(out, data.size * data.dtype.itemsize)


def by_coordinates(op: str, data, indices, updates, *, allowed: Callable[[np.dtype], bool],
                   index_ok: Callable[[np.dtype], bool], index_kinds: str,
                   scalar_as_one: bool, rule: str) -> jax.Array:
    """ScatterND-style: the slice of `data` at each index tuple (the last axis of `indices`)
    combined with its update by `rule`."""
    data, updates = scatter_checks.data_and_updates(op, data, updates, allowed)
    host = scatter_checks.host_indices(op, indices, index_ok, index_kinds)
    updates = scatter_checks.coordinate_shapes(op, data, host, updates,
                                               scalar_as_one=scalar_as_one)
    values = scatter_checks.concrete(host)
    if values is not None:
        k = host.shape[-1]
        scatter_checks.check_range(op, values, np.array(data.shape[:k], np.int64),
                                   lambda pos: f"axis {pos[-1]}")
    out = scatter.scatter_by_coordinates(data, scatter_checks.device_indices(op, host),
                                         updates, rule, True)
    return sizes.settled(out, data.size * data.dtype.itemsize)
