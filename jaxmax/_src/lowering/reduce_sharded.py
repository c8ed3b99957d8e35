"""ReduceMax along axes sharded over ``Explicit`` mesh axes: one all-reduce of the output's size.

Each device reduces its own block with the one-device lowering (the values rule and the zero
sign settled on its block), maps its partial result to an integer code whose order is the
rule's, and one integer ``lax.pmax`` over the mesh axes of the reduced axes combines the codes;
decoding gives the answer the whole array gives on one device, bit for bit. An integer max is
exact in any order of combination (XLA's float cross-device max drops NaN and meets zeros in any
order), and the one all-reduce moves the output's bytes: no second all-reduce for a NaN branch
or a zero-sign flag.

The codes, in the signed integer type as wide as the data (`order.monotone_bits` is the IEEE
total order of the bits):

* ``nan="propagate"`` (ONNX, +0.0 above -0.0): the monotone bits, every NaN the largest code
  (decoded as the canonical NaN, the one-device lowering's NaN);
* ``nan="skip"`` (OpenVINO, NaN skipped, a zero maximum takes the sign of the slice's first zero
  in row-major order over the reduced axes): the range of the codes ``monotone_bits`` gives to
  NaN (``2 ** mantissa - 1`` on each side, unused once NaN is skipped) is taken by shifting the
  nonzero numbers outwards, and the room made between ``-0.0`` and ``+0.0`` holds a zero as
  ``S - (2 * position + sign)``: among zero maxima the larger code is the first zero, whose
  position in the whole slice each device knows from its block's offset. This needs
  ``2 * count <= 2 ** (mantissa + 1)`` (``count`` the elements of one slice: 8 Mi for float32,
  1024 for float16, 128 for bfloat16); longer slices keep the partitioned form (`combinable`).

On ``Explicit`` axes the sharding is read at trace time and `reduce_max` runs `combined` in
``jax.shard_map``; on ``Auto`` axes :mod:`jaxmax._src.lowering.reduce` runs the same `combined`
once XLA knows the sharding (:mod:`jaxmax._src.auto_partition`), where XLA's partitioner moved
the NaN flags and a zero-sign flag besides the partial results. The derivative is the one-device
lowering's, ``reduce_cpu.shared_tangent`` (tied maxima share the tangent evenly).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec

from jaxmax._src import dtypes, explicit_axes
from jaxmax._src.lowering import order, reduce_cpu, signed_zeros

__all__ = ["applies", "combinable", "combined", "reduce_max"]

Local = Callable[[jax.Array], jax.Array]


def _room(dtype) -> int:
    """``S``: the NaN codes on each side of `dtype`'s monotone bits, ``2 ** mantissa - 1``."""
    return (1 << ml_dtypes.finfo(dtype).nmant) - 1


def combinable(dtype, shape: tuple[int, ...], axes: tuple[int, ...], nan: str) -> bool:
    """Whether the codes can combine blocks of this reduction, wherever they are sharded:
    floating data (16, 32 or 64 bits, ``-inf`` its identity), some axis reduced, some element,
    and (``nan="skip"``) slices short enough for the zero codes. Shared by `applies` (the
    ``Explicit`` form) and the ``Auto``-axes planner of :mod:`jaxmax._src.lowering.reduce`."""
    if not dtypes.is_floating(dtype) or not axes or math.prod(shape) == 0:
        return False
    if np.dtype(dtype).itemsize not in (2, 4, 8) or not np.isinf(dtypes.max_identity(dtype)):
        return False
    count = math.prod(shape[a] for a in axes)
    return nan == "propagate" or 2 * count <= 2 * (_room(dtype) + 1)


def applies(x: jax.Array, axes: tuple[int, ...], nan: str) -> bool:
    """Whether `reduce_max` computes this reduction: `combinable`, with `x` sharded over
    ``Explicit`` mesh axes only, evenly, along some reduced axis."""
    return (combinable(x.dtype, tuple(x.shape), axes, nan)
            and any(explicit_axes.explicit_only(x, a) for a in axes))


def reduce_max(x: jax.Array, axes: tuple[int, ...], nan: str, local: Local) -> jax.Array:
    """The max of `x` over `axes` (no kept axes) with the rule `nan`, when `applies`: `local`
    is the one-device reduction of a block (the rule applied, zero signs not settled)."""
    spec = explicit_axes.spec_of(x)
    out_spec = explicit_axes.reduced(spec, axes, False)

    @jax.custom_jvp
    def value(x):
        mesh = jax.typeof(x).sharding.mesh
        return jax.shard_map(lambda b: combined(b, x.shape, spec, axes, nan, local), mesh=mesh,
                             in_specs=(PartitionSpec(*spec),),
                             out_specs=PartitionSpec(*out_spec))(x)

    @value.defjvp
    def value_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        out = value(x)
        shared = explicit_axes.run(lambda x, out, t: reduce_cpu.shared_tangent(x, axes, out, t),
                                   (x, out, t), lambda _: out_spec)
        return out, shared

    return value(x)


def combined(block: jax.Array, shape: tuple[int, ...], spec: tuple, axes: tuple[int, ...],
             nan: str, local: Local) -> jax.Array:
    """One device's part of the result, every mesh axis manual (inside ``shard_map``, or the
    ``Auto``-axes plan of :mod:`jaxmax._src.lowering.reduce`): its block's code, combined."""
    names = tuple(n for a in axes for n in explicit_axes.entry_names(spec[a]))
    out = local(block)
    if nan == "propagate":
        code = _propagating_code(signed_zeros.settle(block, axes, out, nan))
        return _from_propagating_code(lax.pmax(code, names), out.dtype)
    rank = _first_zero_rank(block, axes, out, _offsets(block, shape, spec, axes), shape)
    return _from_skipping_code(lax.pmax(_skipping_code(out, rank), names), out.dtype)


def _propagating_code(out: jax.Array) -> jax.Array:
    m = order.monotone_bits(out)
    top = np.array(np.iinfo(m.dtype).max, m.dtype)
    return jnp.where(order.magnitude_bits(out) > order.inf_bits(out.dtype), top, m)


def _from_propagating_code(code: jax.Array, dtype) -> jax.Array:
    nan = np.array(np.nan, dtype)
    return jnp.where(code > order.inf_bits(dtype).astype(code.dtype), nan,
                     order.from_monotone_bits(code, dtype))


def _skipping_code(out: jax.Array, rank: jax.Array) -> jax.Array:
    """The code of NaN-free `out` whose zeros are first met at `rank` (2 * position + sign)."""
    m = order.monotone_bits(out)
    room = m.dtype.type(_room(out.dtype))
    zero = order.magnitude_bits(out) == 0
    return jnp.where(zero, room - rank, jnp.where(m > 0, m + room, m - room))


def _from_skipping_code(code: jax.Array, dtype) -> jax.Array:
    room = code.dtype.type(_room(dtype))
    one = code.dtype.type(1)
    rank = room - code
    zero = jnp.where((rank & one) == one, np.array(-0.0, dtype), np.array(0.0, dtype))
    number = order.from_monotone_bits(jnp.where(code > room, code - room, code + room), dtype)
    return jnp.where((code <= room) & (code >= -one - room), zero, number)


def _offsets(block: jax.Array, shape: tuple[int, ...], spec: tuple,
             axes: tuple[int, ...]) -> dict[int, jax.Array]:
    """Where this device's block starts along each sharded reduced axis."""
    return {a: lax.axis_index(explicit_axes.entry_names(spec[a])) * block.shape[a]
            for a in axes if explicit_axes.entry_names(spec[a]) and block.shape[a] != shape[a]}


def _first_zero_rank(block: jax.Array, axes: tuple[int, ...], out: jax.Array,
                     offsets: dict[int, jax.Array], shape: tuple[int, ...]) -> jax.Array:
    """``2 * position + sign`` of the block's first zero in each slice (position in row-major
    order over the reduced axes of the whole array), computed only when some result is a zero:
    a zero result whose block holds no zero does not occur (its maximum is one)."""
    code_type = order.signed_bits_dtype(block.dtype)
    out_zero = order.magnitude_bits(out) == 0

    def ranks() -> jax.Array:
        bits = order.bits(block)
        zero = order.magnitude_bits(block) == 0
        position = jnp.zeros(block.shape, code_type)
        stride = 1
        for axis in sorted(axes, reverse=True):
            along = lax.broadcasted_iota(code_type, block.shape, axis)
            if axis in offsets:
                along = along + offsets[axis].astype(code_type)
            position = position + along * code_type.type(stride)
            stride *= shape[axis]
        sign = (bits >> bits.dtype.type(8 * bits.dtype.itemsize - 1)).astype(code_type)
        none = np.array(np.iinfo(code_type).max, code_type)
        return lax.reduce_min(jnp.where(zero, position * code_type.type(2) + sign, none), axes)

    # (no zero result: any rank will do; this one varies over the devices as `ranks()` does)
    return lax.cond(jnp.any(out_zero), ranks, lambda: out_zero.astype(code_type))
