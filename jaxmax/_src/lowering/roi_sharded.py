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
  each device's own, on its images, from the cotangent of the ROIs it owns.
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

from jaxmax._src import explicit_axes
from jaxmax._src.lowering import order
from jaxmax._src.lowering.roi import rois as rois_lowering


def _replicated(a: jax.Array) -> bool:
    return all(e is None for e in explicit_axes.spec_of(a))


def by_images(x: jax.Array, batch: jax.Array, others: tuple[jax.Array, ...],
              run: Callable[..., jax.Array], absent: int = -1):
    """``run(x, batch, *others)`` (an ``(R, ...)`` array) with `x` sharded along the batch only
    over ``Explicit`` mesh axes and `batch` and `others` replicated; None for any other layout.

    On a device without a ROI's image that ROI reads image `absent` of the device's block:
    -1 (invalid: ``+0.0`` and no gradient), or 0 for a lowering whose invalid ROIs are not
    safe to differentiate (its value is dropped and its cotangent is 0)."""
    spec = explicit_axes.spec_of(x)
    if spec[0] is None or any(e is not None for e in spec[1:]) \
            or not explicit_axes.explicit_only(x, 0) \
            or not all(_replicated(a) for a in (batch, *others)):
        return None
    names = explicit_axes.entry_names(spec[0])
    mesh = jax.typeof(x).sharding.mesh
    block = x.shape[0] // explicit_axes.devices_along(mesh, names)

    def per_device(xb, batch, *others):
        first = lax.axis_index(names) * block
        index = rois_lowering.image_index(batch)
        owned = (index >= first) & (index < first + block)
        local = jnp.where(owned, index - first.astype(index.dtype),
                          np.array(absent, index.dtype)).astype(batch.dtype)
        out = run(xb, local, *others)
        return _owned_sum(out, owned, names)

    replicated = jax.P()
    # check_vma=False: the ROI lowerings' loops start from constants, which JAX's varying-axes
    # typing would need cast
    return jax.shard_map(per_device, mesh=mesh,
                         in_specs=(jax.P(*spec),) + (replicated,) * (1 + len(others)),
                         out_specs=replicated, check_vma=False)(x, batch, *others)


@partial(jax.custom_jvp, nondiff_argnums=(2,))
def _owned_sum(out, owned, names):
    """`out` from the device that owns each ROI (`owned`), summed as integer bits across the
    devices of `names` (every other device adds 0): exact."""
    mask = owned.reshape(owned.shape + (1,) * (out.ndim - 1))
    bits = order.bits(out)
    return order.from_bits(lax.psum(jnp.where(mask, bits, jnp.zeros((), bits.dtype)), names),
                           out.dtype)


@_owned_sum.defjvp
def _owned_sum_jvp(names, primals, tangents):
    out, owned = primals
    t = tangents[0]
    mask = owned.reshape(owned.shape + (1,) * (out.ndim - 1))
    return (_owned_sum(out, owned, names),
            lax.psum(jnp.where(mask, t, jnp.zeros((), t.dtype)), names))


def by_rois(x: jax.Array, rois: tuple[jax.Array, ...], run: Callable[..., jax.Array]):
    """``run(x, *rois)`` with the ROI arrays `rois` sharded alike along their first axis over
    ``Explicit`` mesh axes and `x` replicated or sharded along the channels over other mesh
    axes; the output ``(R, C, ...)`` sharded as the ROIs and the channels. None otherwise."""
    first = explicit_axes.spec_of(rois[0])[0]
    spec = explicit_axes.spec_of(x)
    if first is None or any(explicit_axes.spec_of(r)[0] != first
                            or any(e is not None for e in explicit_axes.spec_of(r)[1:])
                            for r in rois):
        return None
    if spec[0] is not None or spec[2] is not None or spec[3] is not None \
            or set(explicit_axes.entry_names(spec[1])) & set(explicit_axes.entry_names(first)):
        return None
    if not all(explicit_axes.explicit_only(r, 0) for r in rois) or (
            spec[1] is not None and not explicit_axes.explicit_only(x, 1)):
        return None
    mesh = jax.typeof(rois[0]).sharding.mesh
    row = jax.P(first)
    return jax.shard_map(run, mesh=mesh, in_specs=(jax.P(*spec),) + (row,) * len(rois),
                         out_specs=jax.P(first, spec[1]), check_vma=False)(x, *rois)


def by_channels(x: jax.Array, rois: tuple[jax.Array, ...], run: Callable[..., jax.Array]):
    """``run(x, *rois)`` with `x` sharded along the channels only over ``Explicit`` mesh axes and
    the ROI arrays replicated: each device pools its own channels (nothing moves), the output
    ``(R, C, ...)`` sharded as the channels. None otherwise. (ROIPooling's per-channel lookups
    index a flattened table, which XLA's partitioner answered by gathering the tables.)"""
    spec = explicit_axes.spec_of(x)
    if spec[1] is None or any(spec[i] is not None for i in (0, 2, 3)) \
            or not explicit_axes.explicit_only(x, 1) or not all(_replicated(r) for r in rois):
        return None
    mesh = jax.typeof(x).sharding.mesh
    return jax.shard_map(run, mesh=mesh, in_specs=(jax.P(*spec),) + (jax.P(),) * len(rois),
                         out_specs=jax.P(None, spec[1]), check_vma=False)(x, *rois)


def across_devices(x: jax.Array, rois: jax.Array, run: Callable[..., jax.Array]):
    """MaxRoiPool / ROIPooling ``run(x, rois)`` (the image index in column 0 of `rois`) by
    `by_images`, else `by_rois`, else `by_channels`, else None (nothing traced)."""
    if all(e is None for e in explicit_axes.spec_of(x)) and _replicated(rois):
        return None
    out = by_images(x, rois[:, 0], (rois,), lambda x, b, r: run(x, r.at[:, 0].set(b)))
    if out is None:
        out = by_rois(x, (rois,), run)
    return out if out is not None else by_channels(x, (rois,), run)
