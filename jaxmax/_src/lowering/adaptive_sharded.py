"""AdaptiveMaxPool-8 along spatial axes sharded over ``Explicit`` mesh axes: each device folds
the part of every window it holds, and two integer all-reduces of the output's size combine the
parts (the values' codes, then the winners' positions): the output's bytes, never the input's.

The one-device fold (:mod:`jaxmax._src.lowering.adaptive_pool`) keeps ``acc`` unless
``acc < x`` from the window's first element in row-major order: the value is the window's
maximum, the first one met (``±0`` tie, the earlier wins), NaN only when it is the window's first
element (a later NaN is never taken). As an order of codes that any device can compute on its
part of a window and an integer max combines in any order:

* the code of an element is its monotone bits (`order.monotone_bits`) with both zeros one code
  (0); a NaN is below every number, unless it is its window's first element, then above all;
* among the elements of the largest code the first wins: the smallest ``2 * position + sign``
  (the position flat over the plane, as the indices; the sign bit rides along, so that a zero or
  a NaN comes back with its sign, and a NaN's payload is the code's).

Each device reduces its block to the best code and, among its elements of that code, the
smallest ``2 * position + sign`` for every window (masks of the windows' rows on this device,
from its offset, one axis at a time); ``lax.pmax`` of the codes, then ``lax.pmin`` of the
positions of the devices whose code is the largest. Each axis's fold builds a (window, element)
array along that axis: ``O`` times the block's size for ``O`` outputs there (adaptive pools have
few). Floating data, on ``Explicit`` axes (``jax.shard_map``) and on ``Auto`` ones once XLA
knows the sharding (`body`, run by :mod:`jaxmax._src.auto_partition`); elsewhere the
partitioner's form (docs/multi-host.md). The derivative is the one-device form's, bit for bit:
a linear function of the tangent (:mod:`jaxmax._src.linear_calls`) whose forward takes the
tangent at each index on the device that holds the index's element, the devices' bits summed
(`_Body.tangent`: a ``-0.0`` tangent kept), and whose transpose adds each output's cotangent
into the block that holds its index (`_Body.cotangent`), from every window's index, which every
device holds after the forward's all-reduces: the gradient moves the output cotangent, never
the input's size. Where the linear call does not work, `_Body.with_tangent` (a floating sum: a
``-0.0`` tangent reads ``+0.0``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec

from jaxmax._src import dtypes, explicit_axes, linear_calls
from jaxmax._src.lowering import bit_sum, order

__all__ = ["adaptive_max_pool", "applies", "block_offsets", "body", "fits", "held", "picked",
           "scattered"]

Windows = Callable[[int, int], tuple[tuple[int, int], ...]]


def applies(x: jax.Array, output_shape: tuple[int, ...], index_dtype: np.dtype) -> bool:
    """Whether `adaptive_max_pool` computes this pool: `fits`, and `x` sharded over
    ``Explicit`` mesh axes only, evenly, along some spatial axis."""
    if not fits(x.dtype, tuple(x.shape), index_dtype):
        return False
    return any(explicit_axes.explicit_only(x, a) for a in range(2, x.ndim))


def fits(dtype, shape: tuple[int, ...], index_dtype: np.dtype) -> bool:
    """Whether the per-device form (`body`) computes a pool of `shape` and `dtype` sharded
    along a spatial axis: floating data of 16, 32 or 64 bits, with room in the index type for
    ``2 * position + 1``."""
    if not dtypes.is_floating(dtype) or np.dtype(dtype).itemsize not in (2, 4, 8):
        return False
    return 2 * math.prod(shape[2:]) < np.iinfo(index_dtype).max


def body(shape: tuple[int, ...], spec: tuple, out_spec: tuple, mesh,
         output_shape: tuple[int, ...], index_dtype: np.dtype, windows: Windows) -> _Body:
    """Each device's function of its block of an input of `shape` laid out as `spec` on
    `mesh` (the sharded spatial axes' mesh axes named in its collectives), giving ``(values,
    indices)`` laid out as `out_spec`, and ``with_tangent`` beside: run in ``jax.shard_map`` on
    ``Explicit`` axes (`adaptive_max_pool`), by :mod:`jaxmax._src.auto_partition` on ``Auto``
    ones once XLA knows the sharding."""
    return _Body(shape, spec, out_spec, output_shape, np.dtype(index_dtype), windows, mesh)


def adaptive_max_pool(x: jax.Array, output_shape: tuple[int, ...], index_dtype: np.dtype, *,
                      windows: Windows):
    """``(values, indices)`` of AdaptiveMaxPool-8 when `applies`; `windows(length, outputs)`
    gives the windows of an axis."""
    spec = explicit_axes.spec_of(x)
    mesh = jax.typeof(x).sharding.mesh
    out_shape = tuple(x.shape[:2]) + output_shape
    out_spec = explicit_axes.divisible(mesh, spec, out_shape)
    per_device = body(tuple(x.shape), spec, out_spec, mesh, output_shape, index_dtype,
                      windows)

    in_spec, o_spec = PartitionSpec(*spec), PartitionSpec(*out_spec)
    # every window's index, on every device of its planes (what the pmin left there)
    whole_spec = PartitionSpec(*spec[:2], *(None,) * len(output_shape))

    def run(x):
        return jax.shard_map(per_device.with_whole_indices, mesh=mesh, in_specs=(in_spec,),
                             out_specs=(o_spec, o_spec, whole_spec))(x)

    @jax.custom_jvp
    def pool(x):
        return run(x)[:2]

    def mapped(f, in_specs, result_specs):
        # (unchecked: the transpose's zeros are each device's own, not replicated values whose
        # cotangent JAX would sum over the devices)
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=result_specs,
                             check_vma=False)

    def forward(residuals, tangent):
        return mapped(per_device.tangent, (in_spec, whole_spec), o_spec)(*tangent, residuals[1])

    def transpose(residuals, cotangent):
        return (mapped(per_device.cotangent, (in_spec, whole_spec, o_spec), in_spec)(
            *residuals, cotangent),)

    @pool.defjvp
    def pool_jvp(primals, tangents):
        # the one-device form's derivative, the tangent at each index, taken on the device that
        # holds the index's element: a linear function of the tangent whose forward
        # (`_Body.tangent`) and transpose (`_Body.cotangent`) are each the one-device bits
        (x,), (t,) = primals, tangents
        if not linear_calls.available():  # a floating sum: a -0.0 tangent reads +0.0
            values, indices, tangent = jax.shard_map(
                per_device.with_tangent, mesh=mesh, in_specs=(in_spec,) * 2,
                out_specs=(o_spec,) * 3)(x, t)
        else:
            values, indices, whole = run(x)
            tangent = linear_calls.call(forward, transpose,
                                        (lax.stop_gradient(x), lax.stop_gradient(whole)), (t,))
        return (values, indices), (tangent, np.zeros(indices.shape, jax.dtypes.float0))

    return pool(x)


def scattered(like: jax.Array, indices: jax.Array, ct: jax.Array) -> jax.Array:
    """The transpose of `picked`: `ct` added at `indices` into zeros of `like`'s shape, in the
    outputs' order from ``+0.0``."""
    zeros = jnp.zeros(like.shape, ct.dtype)
    return jax.vjp(lambda v: picked(v, indices), zeros)[1](ct)[0]


def picked(t: jax.Array, indices: jax.Array) -> jax.Array:
    """`t` (``(N, C, ...)``) at each output's `indices`, flat within its own ``(n, c)`` plane:
    a gather whose batch and channel axes stay batch axes, so that an input sharded along them
    is gathered on each device alone (flattening ``N * C`` into one axis made XLA's partitioner
    all-gather the output-sized cotangent and the indices of a channel-sharded gradient)."""
    lead = t.shape[:2]
    got = jnp.take_along_axis(t.reshape(lead + (-1,)), indices.reshape(lead + (-1,)), axis=2,
                              mode="clip")
    return got.reshape(indices.shape)


def block_offsets(spec: tuple, block_shape: tuple[int, ...]) -> list:
    """Where this device's block (`block_shape`) of an input laid out as `spec` starts along
    each spatial axis (every mesh axis manual)."""
    return [lax.axis_index(names) * block_shape[a] if names else 0
            for a in range(2, len(block_shape)) for names in [explicit_axes.entry_names(spec[a])]]


def held(indices: jax.Array, spec: tuple, block_shape: tuple[int, ...],
         shape: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
    """Which `indices` (flat within a plane of `shape`) name an element of this device's block
    (`block_shape`, of an input laid out as `spec`: `block_offsets`), and their positions flat
    within the block's plane (0 where not held)."""
    offsets = block_offsets(spec, block_shape)
    itype = indices.dtype.type
    mine = jnp.ones(indices.shape, bool)
    local = jnp.zeros(indices.shape, indices.dtype)
    for d, a in enumerate(range(2, len(shape))):
        coord = (indices // itype(math.prod(shape[a + 1:])) % itype(shape[a])
                 - jnp.asarray(offsets[d], indices.dtype))
        mine = mine & (coord >= 0) & (coord < block_shape[a])
        local = local + coord * itype(math.prod(block_shape[a + 1:]))
    return mine, jnp.where(mine, local, itype(0))


class _Body:
    """One device's part (inside ``shard_map``)."""

    def __init__(self, shape, spec, out_spec, output_shape, index_dtype, windows: Windows,
                 mesh):
        self.shape, self.spec, self.out_spec = shape, spec, out_spec
        self.index_dtype, self.mesh = index_dtype, mesh
        self.windows = [windows(n, o) for n, o in zip(shape[2:], output_shape, strict=True)]

    def __call__(self, block: jax.Array):
        values, indices = self._whole(block)
        return self._own_part(values), self._own_part(indices)

    def with_tangent(self, block: jax.Array, t: jax.Array):
        """The values, the indices and their tangent: `t` at each index, taken by the device
        whose block holds the index's element (zero on the others) and summed across the
        devices (an all-reduce of the output's size; its transpose, the backward, sums the
        output cotangent alike and scatters it into each device's own block: no input-sized
        array moves, where XLA's partitioner of a gather at indices flat over the plane summed
        a partial input cotangent). Floating-point sums, so a forward tangent of ``-0.0``
        reads ``+0.0``: the derivative where `jaxmax._src.linear_calls` does not work
        (`tangent` and `cotangent` otherwise)."""
        values, indices = self._whole(block)
        mine, local = held(indices, self.spec, tuple(block.shape), self.shape)
        taken = picked(t, local)
        tangent = lax.psum(jnp.where(mine, taken, jnp.zeros((), t.dtype)), self._names(block))
        return self._own_part(values), self._own_part(indices), self._own_part(tangent)

    def with_whole_indices(self, block: jax.Array):
        """`__call__`'s values and indices, and every window's index (on every device)."""
        values, indices = self._whole(block)
        return self._own_part(values), self._own_part(indices), indices

    def tangent(self, t: jax.Array, indices: jax.Array) -> jax.Array:
        """The tangent of this device's outputs from its block of `t` and every window's
        index (`with_whole_indices`): each index's element's tangent, taken by the device whose
        block holds it and summed as integer bits over the devices (exact: a ``-0.0`` tangent
        kept). Not differentiable: a forward of `jaxmax._src.linear_calls`, whose transpose is
        `cotangent`."""
        mine, local = held(indices, self.spec, tuple(t.shape), self.shape)
        return self._own_part(bit_sum.owner_sum(picked(t, local), self._names(t), mine))

    def cotangent(self, like: jax.Array, indices: jax.Array, ct: jax.Array) -> jax.Array:
        """The transpose of `tangent`: this block's cotangent, every output's cotangent added
        at its index where this block holds its element, in the outputs' order (the
        one-device scatter's sums; another device's elements get ``+0.0`` at the block's first
        element, which no sum from ``+0.0`` can tell)."""
        mine, local = held(indices, self.spec, tuple(like.shape), self.shape)
        return scattered(like, local, jnp.where(mine, self._whole_output(ct),
                                                np.zeros((), ct.dtype)))

    def _whole_output(self, part: jax.Array) -> jax.Array:
        """This device's part of a floating output (its `out_spec` layout) made whole along the
        spatial axes (the inverse of `_own_part`): each part's bits at its place, zeros
        elsewhere, summed by one integer all-reduce of the output's size (exact; one
        all-gather per sharded axis moved half as much again for two)."""
        names: list[str] = []
        shape = list(part.shape)
        at: list[Any] = [np.int32(0)] * part.ndim
        for a in range(2, part.ndim):
            axis_names = explicit_axes.entry_names(self.out_spec[a])
            if axis_names:
                names += axis_names
                shape[a] = part.shape[a] * explicit_axes.devices_along(self.mesh, axis_names)
                at[a] = lax.axis_index(axis_names).astype(np.int32) * np.int32(part.shape[a])
        if not names:
            return part
        bits = order.bits(part)
        whole = lax.psum(lax.dynamic_update_slice(jnp.zeros(shape, bits.dtype), bits, at),
                         tuple(names))
        return order.from_bits(whole, part.dtype)

    def _names(self, block: jax.Array) -> tuple[str, ...]:
        return tuple(n for a in range(2, block.ndim)
                     for n in explicit_axes.entry_names(self.spec[a]))

    def _whole(self, block: jax.Array):
        """Every window's value and index (on every device)."""
        offsets = block_offsets(self.spec, tuple(block.shape))
        code, rank = self._local(block, offsets)
        names = self._names(block)
        best = lax.pmax(code, names)
        rank = lax.pmin(jnp.where(code == best, rank, _most(rank.dtype)), names)
        values = _decode(best, rank, block.dtype)
        return values, rank >> self.index_dtype.type(1)

    def _own_part(self, out: jax.Array) -> jax.Array:
        """The windows of the result this device holds in the output's sharding."""
        for a in range(2, out.ndim):
            names = explicit_axes.entry_names(self.out_spec[a])
            if names:
                n = out.shape[a] // explicit_axes.devices_along(self.mesh, names)
                out = lax.dynamic_slice_in_dim(out, lax.axis_index(names) * n, n, a)
        return out

    def _local(self, block: jax.Array, offsets) -> tuple[jax.Array, jax.Array]:
        """The best code of each window's part on this device, and the smallest
        ``2 * position + sign`` among that part's elements of that code (a window's first
        element, when it is a NaN on this device, is the part's best)."""
        itype = self.index_dtype
        bits = order.bits(block)
        sign = (bits >> bits.dtype.type(8 * bits.dtype.itemsize - 1)).astype(itype)
        position = jnp.zeros(block.shape, itype)
        for d, a in enumerate(range(2, block.ndim)):
            along = lax.broadcasted_iota(itype, block.shape, a) + jnp.asarray(offsets[d], itype)
            position = position + along * itype.type(math.prod(self.shape[a + 1:]))
        rank = position * itype.type(2) + sign
        masks = [self._masks(d, block.shape[a], offsets[d])
                 for d, a in enumerate(range(2, block.ndim))]
        m = order.monotone_bits(block)
        magnitude = order.magnitude_bits(block)
        nan = magnitude > order.inf_bits(block.dtype)
        low = _least(m.dtype)
        numbers = jnp.where(magnitude == 0, m.dtype.type(0), jnp.where(nan, low, m))
        code, best_rank = _fold(numbers, rank, [member for member, _ in masks])
        # a NaN first element: the code of its magnitude, above every number's
        nan_code = jnp.where(nan, order.monotone_bits(lax.abs(block)), low)
        first, first_rank = _fold(nan_code, rank, [first for _, first in masks])
        return jnp.where(first > low, first, code), jnp.where(first > low, first_rank, best_rank)

    def _masks(self, d: int, length: int, offset) -> tuple[jax.Array, jax.Array]:
        """(windows, elements) masks of this device's elements along spatial axis `d`: in the
        window, and the window's first element."""
        starts = np.array([s for s, _ in self.windows[d]], np.int32)[:, None]
        ends = np.array([e for _, e in self.windows[d]], np.int32)[:, None]
        at = lax.broadcasted_iota(np.int32, (1, length), 1) + jnp.asarray(offset, np.int32)
        return (at >= starts) & (at < ends), at == starts


def _least(dtype) -> np.ndarray:
    return np.array(np.iinfo(dtype).min, dtype)


def _most(dtype) -> np.ndarray:
    return np.array(np.iinfo(dtype).max, dtype)


def _fold(code: jax.Array, rank: jax.Array, masks: list[jax.Array]):
    """For every window (the product of one mask's rows per spatial axis): the largest code of
    its elements, and the smallest rank among its elements of that code; one spatial axis at a
    time (the axis replaced by (window, element), then the element reduced)."""
    low, none = _least(code.dtype), _most(rank.dtype)
    for d, member in enumerate(masks):
        a = 2 + d
        shape = [1] * (code.ndim + 1)
        shape[a], shape[a + 1] = member.shape
        m = member.reshape(shape)
        c = jnp.where(m, jnp.expand_dims(code, a), low)
        best = lax.reduce_max(c, (a + 1,))
        hit = m & (c == jnp.expand_dims(best, a + 1))
        rank = lax.reduce_min(jnp.where(hit, jnp.expand_dims(rank, a), none), (a + 1,))
        code = best
    return code, rank


def _decode(code: jax.Array, rank: jax.Array, dtype) -> jax.Array:
    """The value of the winning code, its sign bit the rank's (a zero's, a NaN's)."""
    magnitude = order.magnitude_bits(order.from_monotone_bits(code, dtype))
    width = 8 * np.dtype(dtype).itemsize
    sign = (rank & rank.dtype.type(1)).astype(magnitude.dtype) << magnitude.dtype.type(width - 1)
    return order.from_bits(magnitude | sign, dtype)
