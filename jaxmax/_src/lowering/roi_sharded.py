"""ROI pooling and RoiAlign on ``Explicit`` mesh axes, where only output-sized data need move.

* `by_images`: the images sharded along the batch (the ROIs replicated). Each ROI reads one
  image, known only at run time, which lies on one device. Each device answers every ROI
  against its own images (``jax.shard_map``): a ROI whose image it does not hold is made
  invalid there (image index -1: all ``+0.0``, no gradient; RoiAlign reads image 0 instead
  and its value is dropped, because its invalid ROIs send NaN into the gradient of image 0
  when that image holds NaN or infinity), and the ROIs' bits from the device holding their
  image are summed as integers (the others add 0) by one all-reduce of the output's bytes.
  Exact: the owner's values bit for bit, an invalid ROI ``+0.0`` everywhere. XLA's
  partitioner gathered the sparse tables built from the images (MaxRoiPool, ROIPooling: 34
  times the input) or all-reduced four output-sized partial sums (RoiAlign). The gradient is
  each device's own, on its images, from the cotangent of the ROIs it owns; a forward-mode
  tangent, like the values, the owner's bits summed.
* `by_rois`: the ROIs sharded, the images replicated (or sharded along the channels only).
  Each device answers its own ROIs; nothing moves, and the output keeps the ROIs' sharding
  (as RoiAlign's already did). The gradient of the images sums the devices' partial gradients,
  another order of the same sums (equal up to rounding).
* `by_channels`: the images sharded along the channels only, the ROIs replicated: each device
  pools its own channels; nothing moves.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, explicit_axes, linear_calls
from jaxmax._src.lowering import bit_sum
from jaxmax._src.lowering.roi import rois as rois_lowering


def _replicated(a: jax.Array) -> bool:
    return all(e is None for e in explicit_axes.spec_of(a))


def _none(spec) -> bool:
    return all(e is None for e in spec)


def by_images(x: jax.Array, batch: jax.Array, others: tuple[jax.Array, ...],
              run: Callable[..., jax.Array], absent: int = -1):
    """``run(x, batch, *others)`` (an ``(R, ...)`` array) with `x` sharded along the batch only
    over ``Explicit`` mesh axes and `batch` and `others` replicated; None for any other layout.

    On a device without a ROI's image that ROI reads image `absent` of the device's block:
    -1 (invalid: ``+0.0`` and no gradient), or 0 for a lowering whose invalid ROIs are not
    safe to differentiate (its value is dropped and its cotangent is 0)."""
    if not explicit_axes.explicit_only(x, 0):
        return None
    mesh = jax.typeof(x).sharding.mesh
    operands = (x, batch, *others)
    got = images_plan(_shapes(operands), _specs(operands), mesh,
                      lambda x, local, _batch, *others: run(x, local, *others), 1, absent)
    if got is None:
        return None
    per_device, in_specs, out_specs = got
    # check_vma=False: the ROI lowerings' loops start from constants, which JAX's varying-axes
    # typing would need cast
    return jax.shard_map(per_device, mesh=mesh, in_specs=tuple(jax.P(*s) for s in in_specs),
                         out_specs=jax.P(*out_specs[0]), check_vma=False)(x, batch, *others)


def images_plan(shapes, specs, mesh, run: Callable[..., jax.Array], batch_at: int,
                absent: int = -1):
    """`by_images`' per-device function of the operands ``(x, *others)`` of `shapes` laid out
    as `specs` on `mesh` (`x` sharded along the batch only, the others replicated), the image
    index of each ROI the operand at `batch_at` (column 0 of a (R, 5) ``rois``, or a (R,)
    ``batch_indices``): ``(per_device, in_specs, out_specs)``, each device calling
    ``run(x_block, local_batch, *others)`` with its own ROIs' local image indices; or None."""
    spec = specs[0]
    if spec[0] is None or not _none(spec[1:]) or not all(_none(s) for s in specs[1:]) \
            or not auto_partition.all_even(mesh, specs, shapes):
        return None
    names = explicit_axes.entry_names(spec[0])
    block = shapes[0][0] // explicit_axes.devices_along(mesh, names)

    def per_device(xb, *others):
        local, owned = _local_images(others[batch_at - 1], names, block, absent)
        return _owned_sum(run(xb, local, *others), owned, names)

    return per_device, tuple(specs), ((),)


def _local_images(batch, names, block: int, absent: int):
    """Each ROI's image index in this device's block of `block` images along mesh axes
    `names` (`absent` for a ROI whose image another device holds), of `batch`'s dtype, and
    whether this device holds it. `batch`: the (R, 5) ROIs (image in column 0) or (R,)
    indices."""
    batch = batch[:, 0] if batch.ndim == 2 else batch
    first = lax.axis_index(names) * block
    index = rois_lowering.image_index(batch)
    owned = (index >= first) & (index < first + block)
    local = jnp.where(owned, index - first.astype(index.dtype),
                      np.array(absent, index.dtype)).astype(batch.dtype)
    return local, owned


@partial(jax.custom_jvp, nondiff_argnums=(2,))
def _owned_sum(out, owned, names):
    """`out` from the device that owns each ROI (`owned`), summed as integer bits across the
    devices of `names` (every other device adds 0): exact."""
    return bit_sum.owner_sum(out, names, _per_roi(owned, out.ndim))


@_owned_sum.defjvp
def _owned_sum_jvp(names, primals, tangents):
    """The tangent the owner's, like the values: a linear function (`linear_calls`) whose
    forward sums the tangent's bits (a floating sum started from ``+0.0``, and a ``-0.0``
    tangent read ``+0.0``) and whose transpose is JAX's of the floating sum (the reverse mode
    unchanged); the floating sum itself where the linear call does not work."""
    out, owned = primals
    t = tangents[0]
    mine = _per_roi(owned, t.ndim)

    def summed(mine, t):
        return lax.psum(jnp.where(mine, t, jnp.zeros((), t.dtype)), names)

    if not linear_calls.available():
        return _owned_sum(out, owned, names), summed(mine, t)

    def forward(residuals, linear):
        return (bit_sum.owner_sum(linear[0], names, residuals[0]),)

    def transpose(residuals, cotangent):
        return jax.linear_transpose(partial(summed, residuals[0]), t)(cotangent[0])

    return (_owned_sum(out, owned, names),
            linear_calls.call(forward, transpose, (mine,), (t,))[0])


def _per_roi(owned: jax.Array, ndim: int) -> jax.Array:
    """`owned` (one flag per ROI) broadcastable against an ``(R, ...)`` array of `ndim` axes."""
    return owned.reshape(owned.shape + (1,) * (ndim - 1))


def by_rois(x: jax.Array, rois: tuple[jax.Array, ...], run: Callable[..., jax.Array]):
    """``run(x, *rois)`` with the ROI arrays `rois` sharded alike along their first axis over
    ``Explicit`` mesh axes and `x` replicated or sharded along the channels over other mesh
    axes; the output ``(R, C, ...)`` sharded as the ROIs and the channels. None otherwise."""
    spec = explicit_axes.spec_of(x)
    if not all(explicit_axes.explicit_only(r, 0) for r in rois) or (
            spec[1] is not None and not explicit_axes.explicit_only(x, 1)):
        return None
    operands = (x, *rois)
    return _mapped(rois_plan(_shapes(operands), _specs(operands),
                             jax.typeof(rois[0]).sharding.mesh, run), rois[0], operands)


def rois_plan(shapes, specs, mesh, run: Callable[..., jax.Array]):
    """`by_rois`' per-device function `run` of the operands ``(x, *rois)`` of `shapes` laid out
    as `specs` on `mesh`, with the specs it takes and gives; or None."""
    spec, first = specs[0], specs[1][0]
    if first is None or any(s[0] != first or not _none(s[1:]) for s in specs[1:]):
        return None
    if spec[0] is not None or spec[2] is not None or spec[3] is not None \
            or set(explicit_axes.entry_names(spec[1])) & set(explicit_axes.entry_names(first)) \
            or not auto_partition.all_even(mesh, specs, shapes):
        return None
    return run, tuple(specs), ((first, spec[1]),)


def by_channels(x: jax.Array, rois: tuple[jax.Array, ...], run: Callable[..., jax.Array]):
    """``run(x, *rois)`` with `x` sharded along the channels only over ``Explicit`` mesh axes and
    the ROI arrays replicated: each device pools its own channels (nothing moves), the output
    ``(R, C, ...)`` sharded as the channels. None otherwise. (ROIPooling's per-channel lookups
    index a flattened table, which XLA's partitioner answered by gathering the tables.)"""
    if not explicit_axes.explicit_only(x, 1):
        return None
    operands = (x, *rois)
    return _mapped(channels_plan(_shapes(operands), _specs(operands),
                                 jax.typeof(x).sharding.mesh, run), x, operands)


def channels_plan(shapes, specs, mesh, run: Callable[..., jax.Array]):
    """`by_channels`' per-device function `run` of the operands ``(x, *rois)`` of `shapes` laid
    out as `specs` on `mesh`, with the specs it takes and gives; or None."""
    spec = specs[0]
    if spec[1] is None or any(spec[i] is not None for i in (0, 2, 3)) \
            or not all(_none(s) for s in specs[1:]) \
            or not auto_partition.all_even(mesh, specs, shapes):
        return None
    return run, tuple(specs), ((None, spec[1]),)


def as_plan(got) -> auto_partition.Plan | None:
    """A plan of this module (``(per_device, in_specs, out_specs)`` of one output, or None) as
    :mod:`jaxmax._src.auto_partition`'s `Plan`, whose per-device function gives a tuple."""
    if got is None:
        return None
    per_device, in_specs, out_specs = got
    return auto_partition.Plan(lambda *a: (per_device(*a),), in_specs, out_specs)


def _shapes(arrays) -> list[tuple[int, ...]]:
    return [tuple(a.shape) for a in arrays]


def _specs(arrays) -> list[tuple]:
    return [explicit_axes.spec_of(a) for a in arrays]


def _mapped(plan, like: jax.Array, args: tuple[jax.Array, ...]):
    """`plan` (or None) run in ``jax.shard_map`` on the mesh of `like`'s type."""
    if plan is None:
        return None
    per_device, in_specs, out_specs = plan
    return jax.shard_map(per_device, mesh=jax.typeof(like).sharding.mesh,
                         in_specs=tuple(jax.P(*s) for s in in_specs),
                         out_specs=jax.P(*out_specs[0]), check_vma=False)(*args)


def across_devices(x: jax.Array, rois: jax.Array, run: Callable[..., jax.Array]):
    """MaxRoiPool / ROIPooling ``run(x, rois)`` (the image index in column 0 of `rois`) by
    `by_images`, else `by_rois`, else `by_channels`, else None (nothing traced)."""
    if all(e is None for e in explicit_axes.spec_of(x)) and _replicated(rois):
        return None
    out = by_images(x, rois[:, 0], (rois,), lambda x, b, r: run(x, r.at[:, 0].set(b)))
    if out is None:
        out = by_rois(x, (rois,), run)
    return out if out is not None else by_channels(x, (rois,), run)


def max_pool_plan(shapes, specs, mesh, run: Callable[..., jax.Array]):
    """`across_devices`' choice as a plan of the operands ``(x, rois)`` of `shapes` laid out as
    `specs` on `mesh` (``Auto`` axes, :mod:`jaxmax._src.auto_partition`); None when nothing
    applies."""
    return (images_plan(shapes, specs, mesh, lambda x, b, r: run(x, r.at[:, 0].set(b)), 1)
            or rois_plan(shapes, specs, mesh, run) or channels_plan(shapes, specs, mesh, run))


def max_pool_backward_plan(shapes, specs, mesh, run: Callable[..., jax.Array]):
    """The reverse mode of `max_pool_plan`'s images and channels forms on ``Auto`` axes
    (:mod:`jaxmax._src.auto_partition`, `backward`): the operands ``(x, rois, g)`` of `shapes`
    laid out as `specs`, `g` the output cotangent. Each device takes the cotangent of its own
    images (of the ROIs it owns, as the forward answered them) or of its own channels from
    `run`'s derivative on its blocks: nothing moves but the cotangent itself, laid out as the
    forward's output. None for the other layouts (the ROIs sharded: the devices' partial
    cotangents of the images would be summed, an all-reduce of the input's size)."""
    def reverse(x, rois, g):
        return jax.vjp(run, x, rois)[1](g)

    x_spec, rois_spec = specs[0], specs[1]
    if images_plan(shapes[:2], specs[:2], mesh, run, 1) is not None:
        names = explicit_axes.entry_names(x_spec[0])
        block = shapes[0][0] // explicit_axes.devices_along(mesh, names)

        def by_images(xb, rois, g):
            local, owned = _local_images(rois, names, block, -1)
            # as the Explicit form's derivative
            g = jnp.where(_per_roi(owned, g.ndim), g, jnp.zeros((), g.dtype))
            return reverse(xb, rois.at[:, 0].set(local), g)[0], jnp.zeros_like(rois)
        return auto_partition.Plan(by_images, (x_spec, rois_spec, (None,) * 4),
                                   (x_spec, rois_spec))
    if channels_plan(shapes[:2], specs[:2], mesh, run) is not None:
        def by_channels(xb, rois, g):
            return reverse(xb, rois, g)[0], jnp.zeros_like(rois)
        g_spec = (None, x_spec[1], None, None)
        return auto_partition.Plan(by_channels, (x_spec, rois_spec, g_spec), (x_spec, rois_spec))
    return None


def align_tangent(run: Callable[..., jax.Array], live: tuple[int, ...]):
    """RoiAlign's forward-mode tangent as a function of ``(x, boxes, batch, *tangents)``: the
    tangents of the inputs `live` (0: `x`, 1: `boxes`), the others not differentiated (no
    term of theirs, as ``jax.jvp`` of `run(x, boxes, batch)` closing over them gives)."""
    def tangent(x, boxes, batch, *tangents):
        def at(*moving):
            args = dict(zip(live, moving, strict=True))
            return run(args.get(0, x), args.get(1, boxes), batch)
        return jax.jvp(at, tuple((x, boxes)[k] for k in live), tangents)[1]
    return tangent


def align_tangent_plan(shapes, specs, mesh, run: Callable[..., jax.Array],
                       live: tuple[int, ...]):
    """`align_tangent`'s per-device form on ``Auto`` axes in the forward's forms: the operands
    ``(x, boxes, batch, *tangents)`` of `shapes` laid out as `specs`, each tangent laid out as
    its primal, `run(x, boxes, batch)` the lowering: ``(per_device, in_specs, out_specs)``, or
    None. With the images sharded each ROI's tangent comes from the device that holds its
    image, its bits summed (exact, a ``-0.0`` included)."""
    if any(tuple(specs[3 + j]) != tuple(specs[k]) for j, k in enumerate(live)):
        return None
    tangent = align_tangent(run, live)
    if images_plan(shapes[:3], specs[:3], mesh, run, 2) is not None:
        names = explicit_axes.entry_names(specs[0][0])
        block = shapes[0][0] // explicit_axes.devices_along(mesh, names)

        def by_images(xb, boxes, batch, *tangents):
            local, owned = _local_images(batch, names, block, 0)
            got = tangent(xb, boxes, local, *tangents)
            return bit_sum.owner_sum(got, names, _per_roi(owned, got.ndim))
        return by_images, tuple(specs), ((),)
    for plan in (rois_plan, channels_plan):
        got = plan(shapes[:3], specs[:3], mesh, run)
        if got is not None:
            return tangent, tuple(specs), got[2]
    return None


def align_backward_plan(shapes, specs, mesh, run: Callable[..., jax.Array]):
    """RoiAlign's reverse mode on ``Auto`` axes (:mod:`jaxmax._src.auto_partition`,
    `backward`) in the forward's forms: the operands ``(x, boxes, batch, g)`` of `shapes` laid
    out as `specs`, `g` the output cotangent, `run(x, boxes, batch)` the lowering; the
    cotangents of `x` and `boxes`. None for the layouts no form takes.

    * the images sharded (`images_plan`): each device the cotangent of its own images from the
      ROIs it owns (the others' cotangent zeroed, as the forward dropped their values), and
      the boxes' cotangent summed as integer bits (one device owns each ROI: exact); the one-
      device bits, since the four corners' cotangents are one scatter in a fixed order
      (`align._four_corners`);
    * the channels sharded (`channels_plan`): each device its channels, the boxes' cotangent
      the sum of the devices' channels (another order of the one-device sum: up to rounding);
    * the ROIs sharded (`rois_plan`): each device its ROIs' cotangents, the images' cotangent
      the sum of the devices' parts (up to rounding, as XLA's partitioner summed them)."""
    x_spec, boxes_spec = specs[0], specs[1]

    def reverse(x, boxes, batch, g):
        return jax.vjp(lambda x, b: run(x, b, batch), x, boxes)[1](g)

    if images_plan(shapes[:3], specs[:3], mesh, run, 2) is not None:
        names = explicit_axes.entry_names(x_spec[0])
        block = shapes[0][0] // explicit_axes.devices_along(mesh, names)

        def by_images(xb, boxes, batch, g):
            local, owned = _local_images(batch, names, block, 0)
            g = jnp.where(_per_roi(owned, g.ndim), g, jnp.zeros((), g.dtype))
            gx, gb = reverse(xb, boxes, local, g)
            return gx, bit_sum.owner_sum(gb, names, _per_roi(owned, gb.ndim))
        return auto_partition.Plan(by_images, (x_spec, (None,) * 2, (None,), (None,) * 4),
                                   (x_spec, (None,) * 2))
    if channels_plan(shapes[:3], specs[:3], mesh, run) is not None:
        names = explicit_axes.entry_names(x_spec[1])

        def by_channels(xb, boxes, batch, g):
            gx, gb = reverse(xb, boxes, batch, g)
            return gx, lax.psum(gb, names)
        return auto_partition.Plan(by_channels, (x_spec, (None,) * 2, (None,),
                                                 (None, x_spec[1], None, None)),
                                   (x_spec, (None,) * 2))
    if rois_plan(shapes[:3], specs[:3], mesh, run) is not None:
        first = boxes_spec[0]
        names = explicit_axes.entry_names(first)

        def by_rois(xb, boxes, batch, g):
            gx, gb = reverse(xb, boxes, batch, g)
            return lax.psum(gx, names), gb
        return auto_partition.Plan(by_rois, (x_spec, tuple(boxes_spec), tuple(specs[2]),
                                             (first, x_spec[1], None, None)),
                                   (x_spec, tuple(boxes_spec)))
    return None
