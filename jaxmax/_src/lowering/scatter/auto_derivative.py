"""Along-axis scatters on ``Auto`` mesh axes: the reverse mode planned per device, as on
``Explicit`` axes.

XLA's partitioner laid out the one-device derivative of ScatterElements and
ScatterElementsUpdate-12 on ``Auto`` axes, and gathered indices and cotangents whole (1.5-6.8
KiB per device for a 0.5 KiB output). Here the backward is a planned call of its own
(:mod:`jaxmax._src.auto_partition`), its form chosen from the operands' specs by the same
`Choose` as the forward:

* ``"blocks"`` (every update on its target's device, :mod:`.blocks`): the one-device
  cotangents of each device's blocks, no collective;
* ``"own"`` (replicated updates, data sharded along the scatter axis): each device's
  one-device cotangents of its own block, and the updates' cotangent as the sum of the
  devices' parts taken as integer bits (one device holds each update's target: the sum is
  exact, ``-0.0`` kept);
* ``"across"`` (updates sharded along the scatter axis, data alike or replicated): the
  ``Explicit`` form's blocks (:func:`.across.maximum_block`, :func:`.across.acc_gt_block`),
  from the keys the forward's all-reduces left on every device. Under ``grad`` the forward is
  a second planned call that also returns those keys (replicated: what the all-reduce left)
  and a tag naming its form; the other forms return zeros and their own tag. Both calls see
  the operands' specs, so they choose alike; should XLA ever give the backward another
  layout than the forward, the tag differs and the cotangents are NaN, never numbers from
  keys of another form.

Otherwise the backward is the one-device rule on gathered operands. The forward-mode
derivative is not defined (as on ``Explicit`` axes: the rules' derivatives are reverse mode).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, dtypes, explicit_axes
from jaxmax._src.lowering import bit_sum, order
from jaxmax._src.lowering.scatter import across as scatter_across

Choose = Callable[[object, tuple], "scatter_across.Form | None"]


def forward_planner(choose: Choose) -> auto_partition.Planner:
    """The planner of the forward `choose(mesh, specs)` picks (None: the operands gathered)."""
    def planner(mesh, specs):
        form = choose(mesh, specs)
        return None if form is None else auto_partition.Plan(
            lambda d, i, u: (form.forward(d, i, u),), form.in_specs, (form.out_spec,))

    return planner


def differentiable(plain: Callable, choose: Choose, gradients: Callable, data, indices, updates,
                   *, axis: int, rule: str, use_init: bool, elements: Callable,
                   shift: Callable) -> jax.Array:
    """``plain(data, indices, updates)``, partitioned by `choose(mesh, specs)` (None: the
    operands gathered), its output kept as the data; under ``grad`` the cotangents of
    `gradients(data, indices, updates, out, g)` (the one-device rule's), planned as the module
    docstring says. `elements(shape, indices, updates_shape)` gives the per-element geometry
    and flat index, `shift(indices, size, start, block)` the indices into one block."""
    shape, dtype = tuple(data.shape), np.dtype(data.dtype)
    shapes = tuple(tuple(a.shape) for a in (data, indices, updates))
    kept = tuple((0, b) for b in range(data.ndim))
    # the indices and updates share the data's sharding along every other axis of its length
    # (what the blocks form takes): with replicated data and updates sharded along another
    # axis, the output is then sharded as the updates, as on ``Explicit`` axes
    tied = tuple(((o, b), (0, b)) for o in (1, 2) for b in range(data.ndim)
                 if b != axis and shapes[o][b] == shape[b])
    residuals = _residuals(rule, dtype)

    def primal(d, i, u):
        return auto_partition.call(lambda *a: (plain(*a),), forward_planner(choose), (d, i, u),
                                   kept=(kept,), tied=tied)[0]

    if not dtypes.is_floating(dtype):
        return primal(data, indices, updates)

    def keyed_plain(d, i, u):
        return (plain(d, i, u), *(jnp.zeros(shape, t) for t in residuals), _tag(None))

    def keyed_plan(mesh, specs):
        got = choose(mesh, specs)
        if got is None:
            return None
        if scatter_across.gradients_in_blocks(got, rule, use_init):
            def run(d, i, u):
                out, *keys = got.forward(d, i, u, keys=True)
                return (out, *(k.astype(t) for k, t in zip(keys, residuals, strict=True)),
                        _tag(got))
        else:
            def run(d, i, u):
                return (got.forward(d, i, u), *(jnp.zeros(shape, t) for t in residuals),
                        _tag(got))
        return auto_partition.Plan(run, got.in_specs,
                                   (got.out_spec,) + ((),) * (len(residuals) + 1))

    def backward_plan(mesh, specs):
        got = choose(mesh, specs[:3])
        if got is None:
            return None
        data_spec, _, update_spec = got.in_specs
        rest = (data_spec,) + ((),) * (len(residuals) + 1) + (data_spec,)
        out_specs = (data_spec, update_spec)
        if got.kind == "blocks":
            def per_device(d, i, u, out, *rest):
                return gradients(d, i, u, out, rest[-1])
            return auto_partition.Plan(per_device, got.in_specs + rest, out_specs)
        if got.kind == "own":
            names = got.names
            size = shape[axis]
            block = size // explicit_axes.devices_along(mesh, names)

            def per_device(d, i, u, out, *rest):
                start = lax.axis_index(names) * block
                g_data, g_upd = gradients(d, shift(i, size, start, block), u, out, rest[-1])
                # one device holds each update's target: an integer sum of the bits is exact
                return g_data, bit_sum.owner_sum(g_upd, names)
            return auto_partition.Plan(per_device, got.in_specs + rest, out_specs)
        if not scatter_across.gradients_in_blocks(got, rule, use_init):
            return None
        make = (scatter_across.maximum_block if rule == "maximum" else
                lambda *a: scatter_across.acc_gt_block(*a, use_init))
        block_of = make(elements, shape, dtype, data_spec, axis, got.names, mesh)
        expected = _tag(got)

        def per_device(d, i, u, out, *rest):
            *keys, tag, g = rest
            g_data, g_upd = block_of(d, i, u, out, *keys, g)
            same = jnp.all(tag == expected)  # the forward chose this form (module docstring)
            nan = jnp.array(np.nan, dtype)
            return jnp.where(same, g_data, nan), jnp.where(same, g_upd, nan)
        return auto_partition.Plan(per_device, got.in_specs + rest, out_specs)

    def backward_plain(d, i, u, out, *rest):
        return gradients(d, i, u, out, rest[-1])

    @jax.custom_vjp
    def scatter(d, i, u):
        return primal(d, i, u)

    def fwd(d, i, u):
        out, *keys = auto_partition.call(
            keyed_plain, keyed_plan, (d, i, u),
            kept=(kept,) + tuple((None,) * len(shape) for _ in residuals) + ((None,),),
            tied=tied)
        return out, (d, i, u, out, *keys)

    def bwd(saved, g):
        g_data, g_upd = auto_partition.call(
            backward_plain, backward_plan, (*saved, g),
            kept=(kept, tuple((2, b) for b in range(len(shapes[2])))), tied=tied)
        return g_data, None, g_upd

    scatter.defvjp(fwd, bwd)
    return scatter(data, indices, updates)


def _residuals(rule: str, dtype) -> tuple:
    """The dtypes of what the ``"across"`` forward leaves for the backward: the combined keys
    (``"maximum"``), or the runs' codes and the restart device (``"acc_gt"``, as int32)."""
    signed = order.signed_bits_dtype(dtype)
    if rule == "maximum":
        return (signed,)
    if rule == "acc_gt":
        return (signed, np.dtype(np.int32))
    return ()


def _tag(got: scatter_across.Form | None) -> jax.Array:
    """A form's name as three int32: zeros for the gathered form, else its kind, its devices
    along the order axis and a checksum of its specs."""
    if got is None:
        return jnp.zeros((3,), np.int32)
    code = zlib.crc32(repr((got.kind, got.in_specs, got.names)).encode()) & 0x7FFFFFFF
    kind = ("blocks", "own", "across").index(got.kind) + 1
    return jnp.array([kind, len(got.names), code], np.int32)
