"""Scatter sharded along the axis that orders its updates: one exchange of output-sized keys.

An update's target is known only at run time, so when the updates are sharded along the axis
that orders them (ScatterElements / ScatterElementsUpdate: the scatter axis; ScatterND /
ScatterNDUpdate: the leading axis of the index tuples), each device's updates may reach any
target. XLA's partitioner then gathers the indices and the updates, or all-reduces several
output-sized arrays (the rule's NaN and zero-sign checks). Here, on ``Explicit`` mesh axes
(``jax.shard_map``), each device scatters its own updates into an output-sized partial result
with the one-device rule, the devices combine the partials in one all-reduce of integer keys
(a max), and each device joins its own block of the data to the combined result. Blocks of
the updates along the order axis are consecutive runs of each target's sequence, in mesh
order, so device ``j``'s partial is the fold of its run, and:

* the IEEE ``maximum`` (ONNX) is order-free: the max of IEEE total-order keys (NaN on top,
  ``+0`` above ``-0``), the data one more operand of the same max;
* ``acc < u ? u : acc`` (ScatterNDUpdate-15) folds a run into one value (NaN updates skipped,
  the earliest of equal values kept), and folding runs is the same rule on their values: only
  a tie between ``-0`` and ``+0`` depends on the order. The keys give each device's zero its
  own code (the earlier device above; the codes of NaN, which no run yields, make room), so
  one max is exact; the data element comes first and keeps a tie;
* ``acc > u ? acc : u`` (ScatterElementsUpdate-12) is not an order-free combine: a NaN
  restarts the fold. Runs ``[5]``, ``[NaN, 1]``, ``[3]`` on devices 0, 1, 2 give 3; without
  device 2, 1; without device 1, 5. Any max of per-device keys would need key 2 above key 1
  (3 beats 1), key 1 above key 0 (1 beats 5) and key 0 above key 2 (5 beats 3): no single
  max of any width is exact. The smallest exact exchange found is two max all-reduces: the
  last device whose run holds a NaN (one byte per target), then the keys of the runs from it
  on (each run's fold from its last NaN; the later device's zero above the earlier's).

Integers and bool take one max of the partials (every rule is a max there); integer data with
``use_init_val=False`` keeps the partitioner's form. With replicated updates and data sharded
along the scatter axis (along-axis faces), each device scatters every update into its own
block instead: no collective.

Gradients are the rule's (`rules.gradients`), bit for bit. With the updates sharded along the
scatter axis and the data sharded alike or replicated (`gradients_in_blocks`), the along-axis
faces take them in blocks too (`_maximum_gradients`, `_acc_gt_gradients`): the forward's all-reduces
leave every target's combined key (and ``acc_gt``'s restart device) on every device, which
tells each update whether it can have produced the output; then one small integer exchange
(the counts of equal updates, reduce-scattered to their targets' owners; or the last device
holding the chosen update, one byte per target) and one all-gather of the output cotangent's
bits (zero where no update can receive it) give every device its blocks of both cotangents.
The partitioner's form had all-gathered data-sized positions, keys and the data cotangent
whole. Otherwise they are computed from the output as on one device, with the mesh axes made
``Auto`` (`_with_gradients`).

`plan` chooses the form from the operands' specs alone, so that ``Auto`` mesh axes take the same
per-device forward once XLA knows the shardings (:mod:`jaxmax._src.auto_partition`, from
:mod:`~jaxmax._src.lowering.scatter.max_scatter`), and the same block gradients
(`maximum_block`, `acc_gt_block`), from the keys a second planned forward returns under ``grad``
(:mod:`~jaxmax._src.lowering.scatter.auto_derivative`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec

from jaxmax._src import dtypes, explicit_axes
from jaxmax._src.lowering import order
from jaxmax._src.lowering.order import select_bits as _select
from jaxmax._src.lowering.scatter.geometry import ieee_key

Local = Callable[[str, bool], Callable]


class Form(NamedTuple):
    """One device's part of a scatter: ``forward(data, indices, updates)`` on its blocks laid
    out as `in_specs` (data, indices, updates), giving its block of the output laid out as
    `out_spec`; `names` are the mesh axes along the order axis (of the updates, or with
    replicated updates of the data). `kind`: ``"across"`` (the updates sharded along the
    order axis), ``"own"`` (replicated updates, each device its own block of the data), or
    ``"blocks"`` (:mod:`.blocks`' form, every update on its target's device)."""

    forward: Callable
    in_specs: tuple[tuple, tuple, tuple]
    out_spec: tuple
    names: tuple[str, ...]
    kind: str


def plan(mesh, shape: tuple[int, ...], dtype, specs, along: Callable, *, order_axis: int,
         rule: str, use_init: bool, local: Local, shift: Callable | None) -> Form | None:
    """This module's form for operands laid out as `specs` (data, indices, updates; one entry
    per axis) on `mesh`, data of `shape` and `dtype`, or None. `along(operand, axis)` names the
    mesh axes `operand` is sharded over along `axis` when every axis it is sharded over can be
    cut into even blocks (``Explicit`` axes only, inside ``jax.shard_map``), ``()`` otherwise.
    Replicated indices beside sharded updates are cut into the updates' blocks (`in_specs`).
    Both mesh kinds share it: `along_order` on ``Explicit`` axes, and the ``Auto``-axes planner
    of :mod:`~jaxmax._src.lowering.scatter.max_scatter`."""
    data_spec, index_spec, update_spec = (tuple(s) for s in specs)
    floating = dtypes.is_floating(dtype)
    if floating and not _keyable(dtype):
        return None
    if _sharded(update_spec):
        names = _order_names(along, order_axis, index_spec, update_spec)
        if names is None or not _data_fits(along, data_spec):
            return None
        n = explicit_axes.devices_along(mesh, names)
        if floating and rule != "maximum" and not _codes_fit(dtype, n):
            return None
        if not floating and not use_init:
            return None
        forward = _exchange(rule, use_init, local, shape, dtype, data_spec, mesh, names, n)
        kind = "across"
        if not _sharded(index_spec):
            # (no collective: each device keeps its own block of a replicated array)
            index_spec = tuple(update_spec[order_axis] if b == order_axis else None
                               for b in range(len(index_spec)))
    elif shift is not None and not _sharded(index_spec) and _sharded(data_spec):
        names = along(0, order_axis)
        if not names or any(e is not None for b, e in enumerate(data_spec) if b != order_axis):
            return None
        forward = _own_block(rule, use_init, local, shift, shape, mesh, order_axis, names)
        kind = "own"
    else:
        return None
    return Form(forward, (data_spec, index_spec, update_spec), data_spec, names, kind)


def gradients_in_blocks(form: Form, rule: str, use_init: bool) -> bool:
    """Whether `form`'s cotangents come in blocks (`maximum_block`, `acc_gt_block`): the
    updates sharded along the order axis, the data sharded alike or replicated (the IEEE
    ``maximum`` with the data as the fold's start; ``acc > u ? acc : u``)."""
    data_spec, _, update_spec = form.in_specs
    if form.kind != "across" or (_sharded(data_spec)
                                 and tuple(data_spec) != tuple(update_spec)):
        return False
    return (rule == "maximum" and use_init) or rule == "acc_gt"


def along_order(data: jax.Array, indices: jax.Array, updates: jax.Array, *, order_axis: int,
                rule: str, use_init: bool, local: Local, gradients: Callable,
                shift: Callable | None, elements: Callable | None = None) -> jax.Array | None:
    """The scatter by `rule` on ``Explicit`` mesh axes when the layout allows one of this
    module's forms (`plan`), else None.

    `local(rule, use_init)` is the one-device ``compute(data, indices, updates)``;
    `gradients(data, indices, updates, out, g)` the rule's cotangents; `shift(indices, size,
    start, block)` turns along-axis indices into indices of one block of the scatter axis (None:
    the form with replicated updates does not apply); `elements(shape, indices,
    updates_shape)` the per-element geometry and flat index of along-axis `indices` into an
    array of `shape` (None: no `_maximum_gradients`)."""
    arrays = (data, indices, updates)
    specs = [explicit_axes.spec_of(a) for a in arrays]
    data_spec, index_spec, update_spec = specs
    if _sharded(update_spec):
        if _sharded(data_spec) and _mesh(data) != _mesh(updates):
            return None
        mesh = _mesh(updates)
    elif _sharded(data_spec):
        mesh = _mesh(data)
    else:
        return None

    def along(operand, axis):
        return explicit_axes.explicit_only(arrays[operand], axis)

    form = plan(mesh, tuple(data.shape), np.dtype(data.dtype), specs, along,
                order_axis=order_axis, rule=rule, use_init=use_init, local=local, shift=shift)
    if form is None:
        return None
    forward, specs, names = form.forward, list(form.in_specs), form.names
    if specs[1] != index_spec:  # replicated indices, cut where they lie
        indices = jax.sharding.reshard(indices, NamedSharding(mesh, PartitionSpec(*specs[1])))
    replicated = NamedSharding(mesh, PartitionSpec())
    data, indices, updates = (a if _sharded(s) else jax.sharding.reshard(a, replicated)
                              for a, s in zip((data, indices, updates), specs, strict=True))
    in_specs = tuple(PartitionSpec(*s) for s in specs)
    # check_vma=False: the private combiner scatter (JAX's own primitive, bound directly) has
    # no rule for varying operands (as in blocks.py)
    mapped = jax.shard_map(forward, mesh=mesh, in_specs=in_specs,
                           out_specs=PartitionSpec(*data_spec), check_vma=False)
    if not dtypes.is_floating(data.dtype):
        return mapped(data, indices, updates)
    if elements is not None and gradients_in_blocks(form, rule, use_init):
        residuals = 1 if rule == "maximum" else 2
        with_keys = jax.shard_map(
            lambda *a: forward(*a, keys=True), mesh=mesh, in_specs=in_specs,
            out_specs=(PartitionSpec(*data_spec),) + (PartitionSpec(),) * residuals,
            check_vma=False)
        gradients_of = _maximum_gradients if rule == "maximum" else _acc_gt_gradients
        backward = gradients_of(elements, data, data_spec, order_axis, names, mesh, in_specs,
                                use_init)
        return _with_block_gradients(mapped, with_keys, backward)(data, indices, updates)
    return _with_gradients(mapped, gradients, data_spec, update_spec)(data, indices, updates)


def _sharded(spec) -> bool:
    return any(e is not None for e in spec)


def _mesh(x: jax.Array):
    return jax.typeof(x).sharding.mesh


def _keyable(dtype) -> bool:
    """Floating types whose keys these forms build: 16, 32 and 64 bits, with an infinity."""
    dtype = np.dtype(dtype)
    return dtype.itemsize in (2, 4, 8) and bool(np.isinf(np.array(np.inf, dtype)))


def _order_names(along, order_axis, index_spec, update_spec):
    """The mesh axes the updates are sharded over along the order axis, when that is their
    only sharded axis, the indices are sharded alike (or replicated) and every axis is
    usable (`along`: ``Explicit`` and even)."""
    names = along(2, order_axis)
    if not names or any(e is not None for b, e in enumerate(update_spec) if b != order_axis):
        return None
    if not _sharded(index_spec):  # replicated indices are cut into the updates' blocks
        return names
    if along(1, order_axis) != names:
        return None
    if any(e is not None for b, e in enumerate(index_spec) if b != order_axis):
        return None
    return names


def _data_fits(along, data_spec) -> bool:
    """Whether the data is replicated, or sharded in even blocks over usable axes (`along`;
    on ``Explicit`` axes the caller checks that the data's mesh is the updates')."""
    if not _sharded(data_spec):
        return True
    return all(along(0, b) for b, e in enumerate(data_spec) if e is not None)


def _codes_fit(dtype, n: int) -> bool:
    """Whether the keys of `dtype` hold ``2 * n`` zero codes: the positive numbers move up
    into the codes of positive NaN, which the folds' keys never hold."""
    signed = order.signed_bits_dtype(dtype)
    top = int(np.array(np.inf, dtype).view(signed))
    return top + 2 * n - 2 <= np.iinfo(signed).max


def _own_block(rule, use_init, local, shift, shape, mesh, axis, names):
    """Replicated updates, data sharded along the scatter axis: every update into the
    device's own block (out-of-block targets dropped), by the one-device rule."""
    size = shape[axis]
    block = size // explicit_axes.devices_along(mesh, names)
    compute = local(rule, use_init)

    def forward(data, indices, updates):
        start = lax.axis_index(names) * block
        return compute(data, shift(indices, size, start, block), updates)

    return forward


def _exchange(rule, use_init, local, shape, dtype, data_spec, mesh, names, n):
    """Each device's partial of its updates, one or two max all-reduces over `names`, then
    the device's block of the data joined."""
    shape, dtype = tuple(shape), np.dtype(dtype)

    def own(full):
        return _own(full, data_spec, mesh)

    def forward(e0, indices, updates, keys=False):
        # with `keys` (floating "maximum" and "acc_gt"), also what the all-reduces left on
        # every device: the combined keys of every target (and "acc_gt"'s restart devices)
        j = lax.axis_index(names)
        if not dtypes.is_floating(dtype):
            identity = dtypes.max_identity(dtype)
            part = local("maximum", True)(jnp.full(shape, identity), indices, updates)
            wide = np.uint8 if dtypes.is_bool(dtype) else dtype
            combined = own(lax.pmax(part.astype(wide), names)).astype(dtype)
            return jnp.maximum(e0, combined)
        if rule == "maximum":
            part = local("maximum", True)(jnp.full(shape, -np.inf, dtype), indices, updates)
            combined = lax.pmax(ieee_key(part), names)
            out = _join_maximum(e0, own(combined))
            return (out, combined) if keys else out
        if rule == "acc_lt":
            part = local("acc_lt", True)(jnp.full(shape, -np.inf, dtype), indices, updates)
            codes = _encode(part, j, n, later=False)
            return _join_acc_lt(e0, _decode(own(lax.pmax(codes, names)), n, dtype))
        # acc_gt: each run folded from a NaN start is its fold after its last NaN (NaN when it
        # ends with one); the last device with a NaN starts the global fold
        part = local("acc_gt", True)(jnp.full(shape, np.nan, dtype), indices, updates)
        hit_nan = local("maximum", True)(jnp.zeros(shape, bool), indices, jnp.isnan(updates))
        touched = hit_nan | ~_is_nan(part)
        small = np.int8 if n < 127 else np.int32
        restart = lax.pmax(jnp.where(hit_nan, j, -1).astype(small), names)
        signed = order.signed_bits_dtype(dtype)
        low = np.iinfo(signed).min
        codes = jnp.where(_is_nan(part), signed.type(low + 1), _encode(part, j, n, later=True))
        codes = jnp.where(touched & (j >= restart), codes, signed.type(low))
        every = lax.pmax(codes, names)
        out = _join_acc_gt(e0, own(every), own(restart), n, use_init)
        return (out, every, restart) if keys else out

    return forward


def _own(full, data_spec, mesh):
    """The device's block of an output-sized array, as the data is sharded (inside
    ``jax.shard_map``)."""
    for axis, entry in enumerate(data_spec):
        if entry is None:
            continue
        along = explicit_axes.entry_names(entry)
        block = full.shape[axis] // explicit_axes.devices_along(mesh, along)
        full = lax.dynamic_slice_in_dim(full, lax.axis_index(along) * block, block, axis)
    return full


def _is_nan(x):
    """NaN, read from the bits (next to the selects on bits, as `order.select_bits` reads them)."""
    return order.magnitude_bits(x) > order.inf_bits(x.dtype)


def _numeric(x):
    """Monotone keys with ``-0`` and ``+0`` equal (non-NaN `x`): the order the folds compare
    in."""
    m = order.monotone_bits(x)
    return jnp.where(m == -1, m.dtype.type(0), m)


def _encode(x, j, n: int, *, later: bool):
    """Keys of non-NaN `x` from device `j` of `n`: IEEE total order, except that a zero takes
    code ``2 * rank + (sign is +) - 1`` in ``[-1, 2n - 2]`` (rank `j` when the later device
    wins a tie, ``n - 1 - j`` when the earlier does) and the positive numbers move up past
    those codes."""
    m = order.monotone_bits(x)
    t = m.dtype.type
    rank = (j if later else n - 1 - j).astype(m.dtype)
    zero_code = 2 * rank + jnp.where(m == 0, t(1), t(0)) - t(1)
    return jnp.where(m > 0, m + t(2 * n - 2), jnp.where(m >= -1, zero_code, m))


def _decode(codes, n: int, dtype):
    """The inverse of `_encode` (for codes it made)."""
    t = codes.dtype.type
    zero = jnp.where((codes + t(1)) % t(2) == 1, t(0), t(-1))
    m = jnp.where(codes >= t(2 * n - 1), codes - t(2 * n - 2),
                  jnp.where(codes >= t(-1), zero, codes))
    return order.from_monotone_bits(m, dtype)


def _join_maximum(e0, combined):
    """The IEEE maximum of the data and the devices' combined key; where the data's key
    wins, its own bits (a key holds a NaN without its sign)."""
    start = ieee_key(e0)
    best = jnp.maximum(start, combined)
    return _select(best == start, e0, order.from_monotone_bits(best, e0.dtype))


def _join_acc_lt(e0, combined):
    """``acc < u ? u : acc`` with the data first: a NaN data element sticks, a tie keeps it
    (no update: `combined` is ``-inf``, which never wins)."""
    wins = ~_is_nan(e0) & (_numeric(e0) < _numeric(combined))
    return _select(wins, combined, e0)


def _join_acc_gt(e0, codes, restart, n: int, use_init: bool):
    """``acc > u ? acc : u`` from the data, given the combined codes of the runs from the
    `restart` device on (-1: no NaN update, so the data starts the fold)."""
    dtype = e0.dtype
    low = np.iinfo(codes.dtype).min
    folded = _decode(codes, n, dtype)
    folded = _select(codes == low + 1, jnp.full(e0.shape, np.nan, dtype), folded)
    untouched = codes == low
    start = e0 if use_init else _select(untouched, e0, jnp.full(e0.shape, dtypes.lowest(dtype)))
    keeps = (restart < 0) & (untouched | (~_is_nan(start) &
                                          (_numeric(start) > _numeric(folded))))
    return _select(keeps, start, folded)


def _with_gradients(forward, gradients, data_spec, update_spec):
    """`forward` with the rule's cotangents, computed from its output on the mesh axes made
    ``Auto`` (as the partitioner's form computes them)."""

    @jax.custom_vjp
    def scatter(data, indices, updates):
        return forward(data, indices, updates)

    def fwd(data, indices, updates):
        out = forward(data, indices, updates)
        return out, (data, indices, updates, out)

    def bwd(residuals, g):
        data, indices, updates, out = residuals
        mesh = _mesh(out)
        names = tuple(sorted({n for a in residuals for n in explicit_axes.names_of(a)}))
        shardings = (NamedSharding(mesh, PartitionSpec(*data_spec)),
                     NamedSharding(mesh, PartitionSpec(*update_spec)))
        g_data, g_upd = jax.sharding.auto_axes(gradients, axes=names, out_sharding=shardings)(
            data, indices, updates, out, g)
        return g_data, None, g_upd

    scatter.defvjp(fwd, bwd)
    return scatter


def _with_block_gradients(forward, with_keys, backward):
    """`forward` with the cotangents `backward(residuals, g)` computes from the data, indices,
    updates, output and combined keys of `with_keys` (the same output, and the keys its one
    all-reduce left on every device)."""

    @jax.custom_vjp
    def scatter(data, indices, updates):
        return forward(data, indices, updates)

    def fwd(data, indices, updates):
        out, *keys = with_keys(data, indices, updates)
        return out, (data, indices, updates, out, *keys)

    def bwd(residuals, g):
        out = residuals[3]
        # the cotangent laid out as the output (the caller's may be replicated: each device
        # then keeps its block, nothing moves)
        g = jax.sharding.reshard(g, NamedSharding(_mesh(out), PartitionSpec(
            *explicit_axes.spec_of(out))))
        g_data, g_upd = backward(*residuals, g)
        return g_data, None, g_upd

    scatter.defvjp(fwd, bwd)
    return scatter


def _maximum_gradients(elements, data, data_spec, axis, names, mesh, in_specs, use_init):
    """The IEEE ``maximum`` rule's cotangents (``rules.gradients``) in blocks on ``Explicit``
    axes (`maximum_block` in ``jax.shard_map``)."""
    del use_init
    data_spec_p = PartitionSpec(*data_spec)
    return jax.shard_map(
        maximum_block(elements, tuple(data.shape), data.dtype, data_spec, axis, names, mesh),
        mesh=mesh, in_specs=(*in_specs, data_spec_p, PartitionSpec(), data_spec_p),
        out_specs=(data_spec_p, in_specs[2]), check_vma=False)


def maximum_block(elements, shape, dtype, data_spec, axis, names, mesh):
    """One device's part of the IEEE ``maximum`` rule's cotangents (``rules.gradients``), for
    updates sharded along the scatter `axis` over `names` and the data sharded alike or
    replicated: ``block(data, indices, updates, out, keys, g)``, `keys` what the forward's
    all-reduce left on every device. The partitioner's form all-gathered data-sized positions,
    keys and the data cotangent whole (2.0-2.5 KiB for a 0.5 KiB output).

    An update shares its target's cotangent when it equals the output there; each target's
    share is its cotangent over the count of its data element and updates equal to it. The
    forward's all-reduce left the updates' combined key of every target on every device: an
    update equals the output at its target iff it equals that key's value and the output
    does too (the rule's equality classes, ``-0 == +0`` and NaN, are runs of the key order,
    and no update's key is above the combined one). So each device counts its own updates
    equal to the combined values per target (integers), one reduce-scatter gives every
    device its block's counts (an all-reduce, with replicated data), the owner keeps them
    where its output equals the combined value and computes its block's shares as the
    one-device rule does (the same division of the same numbers), and one all-gather of the
    shares' bits (zero where no update can equal the output; none with replicated data)
    gives each update its target's: the output cotangent's bytes, once."""
    shape = tuple(shape)
    dtype = np.dtype(dtype)
    count_dtype = np.float64 if dtype.itemsize == 8 else np.float32
    sharded = _sharded(data_spec)

    def block(data, indices, updates, out, keys, g):
        geom, flat = elements(shape, indices, updates.shape)
        zero = jnp.zeros((), dtype)
        combined = order.from_monotone_bits(keys, dtype)  # every target's, replicated
        valid = geom.gather(jnp.ones(shape, bool), flat, fill=False)
        mine = order.equal_values(updates, geom.gather(combined, flat, fill=0)) & valid
        partial = geom.scatter("add", jnp.zeros(shape, np.int32), flat, mine.astype(np.int32))
        counts = (lax.psum_scatter(partial, names, scatter_dimension=axis, tiled=True)
                  if sharded else lax.psum(partial, names))
        reachable = order.equal_values(out, _own(combined, data_spec, mesh))
        eq_init = order.equal_values(data, out)
        count = (eq_init.astype(count_dtype)
                 + jnp.where(reachable, counts, 0).astype(count_dtype))
        share = (g.astype(count_dtype) / jnp.maximum(count, 1)).astype(dtype)
        g_data = jnp.where(eq_init, share, zero)
        reached = order.bits(jnp.where(reachable, share, zero))
        if sharded:
            reached = lax.all_gather(reached, names, axis=axis, tiled=True)
        shares = order.from_bits(reached, dtype)
        g_upd = jnp.where(mine, geom.gather(shares, flat, fill=0), zero)
        return g_data, g_upd

    return block


def _acc_gt_gradients(elements, data, data_spec, axis, names, mesh, in_specs, use_init):
    """``acc > u ? acc : u``'s cotangents (``rules.gradients``) in blocks on ``Explicit`` axes
    (`acc_gt_block` in ``jax.shard_map``)."""
    data_spec_p = PartitionSpec(*data_spec)
    return jax.shard_map(
        acc_gt_block(elements, tuple(data.shape), data.dtype, data_spec, axis, names, mesh,
                     use_init),
        mesh=mesh,
        in_specs=(*in_specs, data_spec_p, PartitionSpec(), PartitionSpec(), data_spec_p),
        out_specs=(data_spec_p, in_specs[2]), check_vma=False)


def acc_gt_block(elements, shape, dtype, data_spec, axis, names, mesh, use_init):
    """``acc > u ? acc : u``'s cotangents (``rules.gradients``), one device's part, for
    updates sharded along the scatter `axis` over `names` and the data sharded alike or
    replicated: ``block(data, indices, updates, out, codes, restart, g)``, `codes` and
    `restart` what the forward's all-reduces left on every device. The partitioner's form
    all-reduced and all-gathered data-sized positions and the output's bits (1.6-3.6 KiB for a
    0.5 KiB output).

    The cotangent of a target goes to the last update (in the fold's order: device, then
    position) at or after the target's last NaN update that equals the output, else to the
    data element when it equals the output and no NaN update reached it (with
    ``use_init_val`` false, to no one where an update landed). The forward's all-reduces
    left on every device the last device with a NaN update per target (`restart`) and the
    combined keys of the runs from it on, whose value is the fold of the updates: an update
    equals the output iff it equals that value and the output does too (where the data
    element is kept, it is above every update). So each device finds its own last equal
    update after the last NaN per target, one all-reduce of one byte per target names the
    last device holding one, the owner of each target decides its data element's share, and
    one all-gather of the output cotangent's bits (zero where no update equals the output)
    gives the chosen updates theirs."""
    shape = tuple(shape)
    dtype = np.dtype(dtype)
    n = explicit_axes.devices_along(mesh, names)
    small = np.int8 if n < 127 else np.int32
    low = np.iinfo(order.signed_bits_dtype(dtype)).min
    sharded = _sharded(data_spec)

    def block(data, indices, updates, out, codes, restart, g):
        geom, flat = elements(shape, indices, updates.shape)
        j = lax.axis_index(names)
        zero = jnp.zeros((), dtype)
        folded = _decode(codes, n, dtype)  # every target's, replicated
        folded = _select(codes == low + 1, jnp.full(shape, np.nan, dtype), folded)
        valid = geom.gather(jnp.ones(shape, bool), flat, fill=False)
        q = (lax.iota(np.int32, updates.size) + 1).reshape(updates.shape)  # this device's order
        none = jnp.full(shape, -1, np.int32)
        last_nan = geom.scatter("max", none, flat, jnp.where(jnp.isnan(updates), q, -1))
        first = geom.gather(restart.astype(np.int32), flat, fill=-1)
        after = (first < j) | ((first == j) & (q >= geom.gather(last_nan, flat, fill=-1)))
        equal = order.equal_values(updates, geom.gather(folded, flat, fill=0)) & valid & after
        mine = geom.scatter("max", none, flat, jnp.where(equal, q, -1))
        last = lax.pmax(jnp.where(mine > 0, j, -1).astype(small), names)
        own_codes, own_restart = _own(codes, data_spec, mesh), _own(restart, data_spec, mesh)
        touched = (own_restart >= 0) | (own_codes != low)
        start = data if use_init else jnp.where(touched, dtypes.lowest(dtype), data)
        reachable = order.equal_values(out, _own(folded, data_spec, mesh))
        to_init = (order.equal_values(start, out) & (own_restart < 0)
                   & (~reachable | (_own(last, data_spec, mesh) < 0)))
        if not use_init:
            to_init = to_init & ~touched
        g_data = jnp.where(to_init, g, zero)
        reached = order.bits(jnp.where(reachable, g, zero))
        if sharded:
            reached = lax.all_gather(reached, names, axis=axis, tiled=True)
        chosen = (equal & (geom.gather(last.astype(np.int32), flat, fill=-1) == j)
                  & (q == geom.gather(mine, flat, fill=-1)))
        at = geom.gather(order.from_bits(reached, dtype), flat, fill=0)
        return g_data, jnp.where(chosen, at, zero)

    return block
