"""The tangent of an operator that picks one input element per output: the input tangent taken
at output-shaped indices flat within each ``(n, c)`` plane (`take`), on ``Auto`` mesh axes too.

``take(t, indices, like=x)`` is ``t`` gathered at `indices` (`adaptive_sharded.picked`), a
linear function of ``t`` (:mod:`jaxmax._src.linear_calls`) whose forward and transpose are each
laid out by :mod:`jaxmax._src.auto_partition` once XLA knows the shardings:

* forward (the tangent): each device takes the indices whose element its block holds and the
  devices' parts are combined as integer bits by one all-reduce of the output's size (one device
  gives each element, the others 0: exact, the sign of a ``-0.0`` tangent kept);
* transpose (the backward): each device scatters the output cotangent (output-sized, replicated
  along the spatial axes) into its own block at the indices it holds: nothing moves.

XLA's partitioner, given the gather over the flattened plane, all-reduced an input-sized
cotangent (AdaptiveMaxPool along H, 45 KiB for a 3.8 KiB output). The output keeps `like`'s
batch and channel sharding; its spatial axes are replicated (an output axis has a length of its
own). The backward's sums are the one-device transposed gather's, element by element in the same
order (each device adds its own elements' cotangents; another device's are dropped there).
Where no per-device form applies (one device) and on each device of an input sharded along the
batch or channels only, the tangent and its transpose are the operator's own one-device
derivative (`take`'s `plain`). Under ``vmap`` both run unwrapped; on a JAX where
`linear_calls.available` says no, `take` is `plain`, laid out by the partitioner.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxmax._src import auto_partition, explicit_axes
from jaxmax._src.lowering import adaptive_sharded, bit_sum


def take(t: jax.Array, indices: jax.Array, like: jax.Array,
         plain: Callable[[jax.Array, jax.Array, jax.Array], jax.Array] | None = None
         ) -> jax.Array:
    """`t` (``(N, C, *spatial)``) at `indices` (``(N, C, *out)``, integers, flat within each
    plane, in range), linear in `t`; `like`: the primal input of `t`'s shape, whose sharding the
    transpose gives the cotangent of `t`. `plain(like, indices, t)`: the same tangent as the
    operator's one-device derivative computes it (by default the gather), taken where no
    per-device form applies (a program for one device: its run time and compile are the
    operator's own) and on each device of a batch- or channel-sharded input."""
    plain = plain or (lambda _, i, v: adaptive_sharded.picked(v, i))
    return auto_partition.linear(
        plain, (like, indices), t,
        forward=lambda mesh, specs: _forward_plan(mesh, specs, t.shape, plain),
        transpose=lambda mesh, specs, reverse: _transpose_plan(mesh, specs, t.shape, reverse),
        kept=((0, 0), (0, 1)) + (None,) * (indices.ndim - 2))


def _output_spec(spec: tuple, out_ndim: int) -> tuple:
    return tuple(spec[:2]) + (None,) * (out_ndim - 2)


def _block(shape: tuple[int, ...], spec: tuple, mesh) -> tuple[int, ...]:
    return tuple(n // explicit_axes.devices_along(mesh, explicit_axes.entry_names(e))
                 for n, e in zip(shape, spec, strict=True))


def _spatial_names(spec: tuple) -> tuple[str, ...]:
    return tuple(n for e in spec[2:] for n in explicit_axes.entry_names(e))


def _forward_plan(mesh, specs, shape: tuple[int, ...], plain):
    """The tangent's plan, operands ``(like, indices, t)``: `t` sharded along the batch and
    channels only, `plain` on each device's planes; along a spatial axis, each device takes the
    indices its block holds and the devices' bits are summed."""
    like_spec, ind_spec, spec = specs
    if not auto_partition.even(mesh, spec, shape):
        return None
    out_spec = _output_spec(spec, len(ind_spec))
    names = _spatial_names(spec)
    if not names:
        return auto_partition.Plan(lambda lk, i, v: (plain(lk, i, v),), (spec, out_spec, spec),
                                   (out_spec,))
    block = _block(shape, spec, mesh)

    def per_device(_, ind, tb):
        mine, local = adaptive_sharded.held(ind, spec, block, shape)
        return (bit_sum.owner_sum(adaptive_sharded.picked(tb, local), names, mine),)
    return auto_partition.Plan(per_device, (like_spec, out_spec, spec), (out_spec,))


def _transpose_plan(mesh, specs, shape: tuple[int, ...], reverse):
    """The transpose's plan, operands ``(like, indices, ct)``: `like` sharded along the batch
    and channels only, `reverse` on each device's planes; along a spatial axis, each device
    adds the cotangents of the indices its block holds into it."""
    spec, ind_spec, _ = specs
    if not auto_partition.even(mesh, spec, shape):
        return None
    out_spec = _output_spec(spec, len(ind_spec))
    if not _spatial_names(spec):
        return auto_partition.Plan(reverse, (spec, out_spec, out_spec), (spec,))
    block = _block(shape, spec, mesh)

    def per_device(like, ind, ct):
        mine, local = adaptive_sharded.held(ind, spec, block, shape)
        # another device's elements: their cotangent dropped here (added as +0.0 at the
        # block's first element, which no sum of cotangents from +0.0 can tell)
        return (adaptive_sharded.scattered(like, local,
                                           jnp.where(mine, ct, np.zeros((), ct.dtype))),)
    return auto_partition.Plan(per_device, (spec, out_spec, out_spec), (spec,))
