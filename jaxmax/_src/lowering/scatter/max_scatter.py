"""Max-scatter along an axis (one index per update element) and by coordinate tuples (one index
per slice), with the value and gradient rules of `scatter_rules`.

Indices arrive checked for shape; concrete ones also for range. Here every index in
``[-s, -1]`` counts from the end and every other out-of-range one (only possible when traced) is
sent past the end, where XLA's ``FILL_OR_DROP`` mode drops the update: never wrapped, never
clamped. A coordinate tuple with any coordinate out of range drops its whole slice.

Along an axis there are two forms with identical results (the same rule on the same sequences,
in the same order):

* *rows*, when `indices` is constant along every other axis and spans the operand there (a
  graph network's ``index.view(-1, 1).expand_as(src)``): a row scatter of `indices` taken at 0
  off the axis, XLA's native window scatter;
* *elements* otherwise: one flat operand offset per update element.

The caller passes ``layout="rows"`` or ``"elements"`` when it knows (concrete indices, or
indices broadcast in the same trace), or ``"detect"``: then a run-time check (each row's min
against its max) chooses the form of the rule's first scatter with a ``lax.cond``, and the
rest of the rule (the closed forms on NaN and signed zeros, the gradient) runs per element,
one copy for both layouts.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, dtypes, explicit_axes
from jaxmax._src.lowering import compile_options, rules
from jaxmax._src.lowering.scatter import across as scatter_across
from jaxmax._src.lowering.scatter import auto_derivative
from jaxmax._src.lowering.scatter import blocks as scatter_blocks
from jaxmax._src.lowering.scatter import rules as scatter_rules
from jaxmax._src.lowering.scatter.geometry import (
    Geometry,
    element_offsets,
    flag,
    normalised,
    signed_index_dtype,
)

LAYOUTS = ("rows", "elements", "detect")


def row_layout_possible(data_shape, indices_shape, axis: int) -> bool:
    """Whether the shapes allow the row form: `indices` spans `data` off `axis`."""
    return all(i == d for a, (i, d) in enumerate(zip(indices_shape, data_shape, strict=True))
               if a != axis)


def scatter_along_axis(data: jax.Array, indices: jax.Array, updates: jax.Array, axis: int,
                       rule: str, use_init: bool, layout: str) -> jax.Array:
    """Each element of `updates` max-scattered by `rule` onto `data` at its own coordinates with
    the one along `axis` replaced by its entry of `indices` (same shape as `updates`)."""
    return _along_axis(data, indices, updates, axis=axis, rule=rule, use_init=use_init,
                       layout=layout, auto=rules.several_devices())


def scatter_by_coordinates(data: jax.Array, indices: jax.Array, updates: jax.Array, rule: str,
                           use_init: bool) -> jax.Array:
    """Each slice of `updates` (``indices.shape[:-1] + data.shape[k:]``) max-scattered by `rule`
    onto the slice of `data` its ``k = indices.shape[-1]`` coordinates name."""
    return _by_coordinates(data, indices, updates, rule=rule, use_init=use_init,
                           auto=rules.several_devices())


def _on_mesh(*arrays) -> bool:
    """Whether any input lives on a device mesh (sharded, or on an ``Auto`` mesh whose
    partitioner may split the scatter): then every floating max runs on integer keys."""
    return any(jax.typeof(a).sharding.mesh.axis_names for a in arrays)


def _sharded(compute, data, indices, updates):
    def out_spec(mesh):
        return explicit_axes.spec_of(data)

    return explicit_axes.run(compute, (data, indices, updates), out_spec)


@compile_options.jit(static_argnames=("axis", "rule", "use_init", "layout", "auto"))
def _along_axis(data, indices, updates, *, axis, rule, use_init, layout, auto=False):
    """The scatter along `axis`: on ``Explicit`` mesh axes in blocks (`scatter_blocks`) or
    across the order axis (`scatter_across`) where the layout allows, else as the partitioner
    does; on ``Auto`` axes (`auto`: several devices in the process, no sharding in the
    inputs' types) the same per-device forms, chosen once XLA knows the sharding
    (`_on_auto_axes`)."""
    if data.size == 0 or updates.size == 0:
        return data
    if not row_layout_possible(data.shape, indices.shape, axis):
        layout = "elements"
    elif data.ndim == 1:
        layout = "rows"
    keys = _on_mesh(data, indices, updates)
    compute = _along_rule(axis, rule, use_init, layout, keys)
    local = partial(_local_along, axis=axis, layout=layout)
    if auto and not any(explicit_axes.names_of(a) for a in (data, indices, updates)):
        return _on_auto_axes(compute, _layout_gradients(axis, rule, use_init, layout, keys),
                             data, indices, updates, axis=axis, rule=rule, use_init=use_init,
                             local=local)
    blocks = scatter_blocks.along_other_axes(compute, data, indices, updates, axis)
    if blocks is not None:
        return blocks
    across = scatter_across.along_order(
        data, indices, updates, order_axis=axis, rule=rule, use_init=use_init, local=local,
        gradients=_along_gradients(axis, rule, use_init), shift=_into_block,
        elements=partial(_elements_index, axis=axis, keys=True))
    if across is not None:
        return across
    return _sharded(compute, data, indices, updates)


def _local_along(init_rule: str, use: bool, *, axis: int, layout: str):
    """The one-device scatter `scatter_across` runs on each device's updates."""
    return _along_rule(axis, init_rule, use, layout, False)


def _on_auto_axes(compute, gradients, data, indices, updates, *, axis, rule, use_init, local):
    """`compute(data, indices, updates)` where XLA chooses the sharding
    (:mod:`jaxmax._src.auto_partition`): in blocks when every update stays on its target's
    device (`scatter_blocks.plan`), across the scatter axis when the updates (or, with
    replicated updates, the data) are sharded along it (`scatter_across.plan`), the operands
    gathered otherwise. The output keeps the data's sharding: with replicated data and
    updates sharded along another axis, the blocks' output is then all-gathered (its bytes,
    once), where the ``Explicit`` form leaves it sharded as the updates (a propagation rule
    has one operand per result axis, and taking the updates' would all-gather the output of
    sharded data beside replicated updates instead).

    The derivative is the one-device rule's cotangents from the output (`gradients`:
    `_layout_gradients`, the one-device program itself), bit for bit, planned per device in
    the same forms (:mod:`~jaxmax._src.lowering.scatter.auto_derivative`)."""
    def blocks(mesh, shapes, specs):
        spec = scatter_blocks.plan(mesh, shapes, specs, axis)
        return None if spec is None else (spec,) * 3

    choose = _chooser(compute, data, indices, updates, blocks, order_axis=axis, rule=rule,
                      use_init=use_init, local=local, shift=_into_block)
    return auto_derivative.differentiable(
        compute, choose, gradients, data, indices, updates, axis=axis, rule=rule,
        use_init=use_init, elements=partial(_elements_index, axis=axis, keys=True),
        shift=_into_block)


def _chooser(compute, data, indices, updates, blocks, *, order_axis, rule, use_init, local,
             shift) -> auto_derivative.Choose:
    """Both faces' choice of a form from the operands' specs: the blocks form, ``blocks(mesh,
    shapes, specs)`` (every update on its target's device: no collective) when it gives the
    in-specs; then the form across `order_axis` (`scatter_across.plan`; none when
    `order_axis` is None); None (the operands gathered) otherwise."""
    shapes = tuple(tuple(a.shape) for a in (data, indices, updates))

    def choose(mesh, specs):
        in_specs = blocks(mesh, shapes, specs)
        if in_specs is not None:
            return scatter_across.Form(compute, in_specs, in_specs[0], (), "blocks")
        if order_axis is None or not auto_partition.all_even(mesh, specs, shapes):
            return None

        def along(operand, b):
            return explicit_axes.entry_names(specs[operand][b])

        return scatter_across.plan(mesh, shapes[0], np.dtype(data.dtype), specs, along,
                                   order_axis=order_axis, rule=rule, use_init=use_init,
                                   local=local, shift=shift)

    return choose


def _partitioned(compute, gradients, data, indices, updates, blocks, *, order_axis, rule,
                 use_init, local, shift):
    """ScatterND's `auto_partition.call`: the form `_chooser` picks, the operands gathered
    when none applies. The output keeps the data's sharding; the derivative is `gradients`'
    from the output (`_from_output`), laid out by XLA's partitioner."""
    choose = _chooser(compute, data, indices, updates, blocks, order_axis=order_axis,
                      rule=rule, use_init=use_init, local=local, shift=shift)
    kept = (tuple((0, b) for b in range(data.ndim)),)
    return auto_partition.call(lambda d, i, u: (compute(d, i, u),),
                               auto_derivative.forward_planner(choose),
                               (data, indices, updates), kept=kept,
                               jvp=_from_output(gradients))[0]


def _from_output(gradients):
    """``jvp(primals, tangents, outputs)`` of a scatter whose cotangents `gradients(data,
    indices, updates, out, g)` gives from its output: no second forward, and under ``grad``
    the very cotangents of the one-device rule (integers: no derivative)."""
    def jvp(primals, tangents, out):
        data, indices, updates = primals
        (result,) = out
        if not dtypes.is_floating(result.dtype):
            return (np.zeros(result.shape, jax.dtypes.float0),)

        # the output and the indices are arguments, not closed over: the backward runs
        # outside this rule's trace
        @jax.custom_vjp
        def given(d, u, i, o):
            return o

        def fwd(d, u, i, o):
            return o, (d, u, i, o)

        def bwd(residuals, g):
            d, u, i, o = residuals
            g_data, g_upd = gradients(d, i, u, o, g)
            return g_data, g_upd, None, jnp.zeros_like(o)

        given.defvjp(fwd, bwd)
        return (jax.jvp(lambda d, u: given(d, u, indices, result), (data, updates),
                        (tangents[0], tangents[2]))[1],)

    return jvp


def _along_rule(axis: int, rule: str, use_init: bool, layout: str, keys: bool):
    """``compute(data, indices, updates)``: the scatter along `axis` by `rule` in `layout`,
    a floating max on integer keys when `keys`."""
    index_of = _along_index(axis, layout, keys)

    def compute(data, indices, updates):
        geom, index = index_of(data, indices, updates)
        return scatter_rules.apply(rule, geom, use_init, data, index, updates)

    return compute


def _along_index(axis: int, layout: str, keys: bool):
    """``index_of(data, indices, updates)``: the geometry and the index of `layout` that the
    rule scatters by (and its one-device gradient gathers by, `_layout_gradients`)."""

    # each form normalises only the indices it reads: the row form one column, so that the
    # (n, features) index array is never rewritten
    def index_of(data, indices, updates):
        if layout == "rows":
            ids = indices[tuple(slice(None) if d == axis else 0 for d in range(indices.ndim))]
            size = data.shape[axis]
            geom = Geometry("rows", tuple(data.shape), tuple(updates.shape), axis=axis,
                            keys=keys)
            return geom, normalised(ids, size, signed_index_dtype(size)).reshape(-1, 1)
        if layout == "elements":
            return _elements_index(data.shape, indices, updates.shape, axis, keys)
        # a row is constant iff its min equals its max: one variadic integer reduction straight
        # on the index runs at the speed of a read, where a compare with the row's first
        # element in front of a reduction is not vectorised; the min is then the row's id
        # both layouts share one copy of the rule (its fast scatter alone takes the row form
        # when the rows are constant), so that the closed forms compile once
        size = data.shape[axis]
        low, high = _row_bounds(indices, axis)
        ids = normalised(low, size, signed_index_dtype(size)).reshape(-1, 1)
        geom = Geometry("detect", tuple(data.shape), tuple(updates.shape), axis=axis, keys=keys)
        return geom, (flag(low != high), ids, indices)

    return index_of


def _layout_gradients(axis: int, rule: str, use_init: bool, layout: str, keys: bool):
    """The rule's cotangents given its output in `layout`'s own geometry: the very program of
    the one-device derivative (`_along_gradients`, per element, gives the same bits, slower
    on the row form)."""
    index_of = _along_index(axis, layout, keys)

    def gradients(data, indices, updates, out, g):
        geom, index = index_of(data, indices, updates)
        return scatter_rules.gradients(rule, geom, use_init, data, index, updates, out, g)

    return gradients


def _elements_index(shape, indices, updates_shape, axis: int, keys: bool):
    """The per-element geometry and flat offsets of along-axis `indices` into `shape`."""
    size = shape[axis]
    norm = normalised(indices, size, signed_index_dtype(size))
    flat = element_offsets(norm, tuple(shape), axis, signed_index_dtype(math.prod(shape)))
    return Geometry("elements", tuple(shape), tuple(updates_shape), keys=keys), flat


def _along_gradients(axis: int, rule: str, use_init: bool):
    """The rule's cotangents of `data` and `updates` given its output, per element (every
    layout's gradient is the same)."""
    def gradients(data, indices, updates, out, g):
        geom, flat = _elements_index(data.shape, indices, updates.shape, axis, True)
        return scatter_rules.gradients(rule, geom, use_init, data, flat, updates, out, g)

    return gradients


def _into_block(indices, size: int, start, block: int):
    """Along-axis `indices` into an axis of `size` as indices into its block of `block`
    positions from `start`: a target outside the block (or out of range) becomes `block`,
    which the block's scatter drops."""
    dtype = signed_index_dtype(size)
    local = normalised(indices, size, dtype) - start.astype(dtype)
    return jnp.where((local >= 0) & (local < block), local, dtype.type(block))


def _row_bounds(indices: jax.Array, axis: int) -> tuple[jax.Array, jax.Array]:
    """The min and the max of `indices` over every axis but `axis`, in one pass."""
    info = np.iinfo(indices.dtype)

    def combine(a, b):
        return lax.min(a[0], b[0]), lax.max(a[1], b[1])

    dims = tuple(d for d in range(indices.ndim) if d != axis)
    init = (np.array(info.max, indices.dtype), np.array(info.min, indices.dtype))
    low, high = lax.reduce((indices, indices), init, combine, dims)
    return low, high


@compile_options.jit(static_argnames=("rule", "use_init", "auto"))
def _by_coordinates(data, indices, updates, *, rule, use_init, auto=False):
    """The scatter by coordinate tuples: on ``Explicit`` mesh axes across the index tuples'
    leading axis (`scatter_across`) where the layout allows, else as the partitioner does;
    on ``Auto`` axes (`auto`) chosen once XLA knows the sharding (`_coordinates_on_auto_axes`)."""
    if data.size == 0 or updates.size == 0:
        return data
    keys = _on_mesh(data, indices, updates)
    compute = _coordinates_rule(rule, use_init, keys)
    if auto and not any(explicit_axes.names_of(a) for a in (data, indices, updates)):
        return _coordinates_on_auto_axes(compute, _coordinates_gradients(rule, use_init, keys),
                                         data, indices, updates, rule=rule, use_init=use_init)
    if indices.ndim < 2:  # a single index tuple: nothing orders the updates
        return _sharded(compute, data, indices, updates)
    across = scatter_across.along_order(
        data, indices, updates, order_axis=0, rule=rule, use_init=use_init,
        local=_local_coordinates,
        gradients=_coordinates_gradients(rule, use_init), shift=None)
    if across is not None:
        return across
    return _sharded(compute, data, indices, updates)


def _coordinates_on_auto_axes(compute, gradients, data, indices, updates, *, rule, use_init):
    """`compute(data, indices, updates)` where XLA chooses the sharding
    (:mod:`jaxmax._src.auto_partition`): in blocks of the slice axes
    (`scatter_blocks.slices_plan`), across the index tuples' leading axis when the updates
    are sharded along it, or, with replicated updates and the data sharded along its first
    axis, each device scattering every update whose first coordinate falls in its block
    (`scatter_across.plan`); the operands gathered otherwise. The output keeps the data's
    sharding. The derivative is the one-device rule's cotangents from the output (`gradients`,
    in the one-device program's geometry, `_from_output`), laid out by XLA's partitioner
    (within the collectives bound on every layout measured; the along-axis faces plan theirs,
    :mod:`~jaxmax._src.lowering.scatter.auto_derivative`)."""
    ordered = indices.ndim >= 2 and indices.shape[-1] > 0
    fits = np.iinfo(indices.dtype).max >= data.shape[0]
    return _partitioned(compute, gradients, data, indices, updates, scatter_blocks.slices_plan,
                        order_axis=0 if ordered else None, rule=rule, use_init=use_init,
                        local=_local_coordinates, shift=_first_into_block if fits else None)


def _local_coordinates(init_rule: str, use: bool):
    """The one-device scatter by coordinates `scatter_across` runs on each device's updates."""
    return _coordinates_rule(init_rule, use, False)


def _first_into_block(indices, size: int, start, block: int):
    """Coordinate tuples into data of `size` along its first axis as tuples into its block of
    `block` positions from `start` (`_into_block` on the first coordinate; the caller checks
    that `block` fits in the indices' type)."""
    first = _into_block(indices[..., 0], size, start, block).astype(indices.dtype)
    return jnp.concatenate([first[..., None], indices[..., 1:]], axis=-1)


def _coordinates_index(shape, indices, updates_shape, keys: bool):
    """The slice geometry and the normalised ``(n, k)`` index of coordinate `indices` into
    `shape`, and whether the geometry adds a leading unit axis (``k = 0``)."""
    k = indices.shape[-1]
    n = math.prod(indices.shape[:-1])
    if not k:
        # Every update names the whole tensor. XLA's CPU scatter with an empty index
        # vector into a one-element operand keeps the last update instead of combining
        # (lax.scatter_add of 5, 1, 2, 3 into [0.] gives [3.]), so the updates go to
        # coordinate 0 of a new leading unit axis instead.
        geom = Geometry("slices", (1, *shape), tuple(updates_shape), k=1, keys=keys)
        return geom, jnp.zeros((n, 1), signed_index_dtype(1)), True
    coords = indices.reshape(n, k)
    dtype = signed_index_dtype(max(shape[:k], default=1))
    cols = [normalised(coords[:, j], shape[j], dtype) for j in range(k)]
    dropped = jnp.zeros((n,), bool)
    for j in range(k):
        dropped = dropped | (cols[j] == shape[j])
    cols[0] = jnp.where(dropped, dtype.type(shape[0]), cols[0])
    geom = Geometry("slices", tuple(shape), tuple(updates_shape), k=k, keys=keys)
    return geom, jnp.stack(cols, axis=1), False


def _coordinates_rule(rule: str, use_init: bool, keys: bool):
    """``compute(data, indices, updates)``: the scatter by coordinate tuples by `rule`."""
    def compute(data, indices, updates):
        geom, index, lead = _coordinates_index(data.shape, indices, updates.shape, keys)
        if lead:
            return scatter_rules.apply(rule, geom, use_init, data[None], index, updates)[0]
        return scatter_rules.apply(rule, geom, use_init, data, index, updates)

    return compute


def _coordinates_gradients(rule: str, use_init: bool, keys: bool = True):
    """The rule's cotangents of `data` and `updates` given its output (`keys`: of a scatter
    with floating maxima on integer keys; the same bits either way)."""
    def gradients(data, indices, updates, out, g):
        geom, index, lead = _coordinates_index(data.shape, indices, updates.shape, keys)
        if lead:
            g_data, g_upd = scatter_rules.gradients(rule, geom, use_init, data[None], index,
                                                    updates, out[None], g[None])
            return g_data[0], g_upd
        return scatter_rules.gradients(rule, geom, use_init, data, index, updates, out, g)

    return gradients
