"""Max pooling along spatial axes sharded over ``Explicit`` mesh axes whose output length does
not divide over them (ceil rounding, MaxPool-14's ``ceil_torch``): a halo exchange and one
integer all-reduce of the output's size.

The output of such an axis is replicated (:mod:`jaxmax._src.explicit_axes`), and XLA's SPMD
partitioner cut its windows from a gathered, padded intermediate: more than the output and the
halo rows together. Here (inside ``jax.shard_map``) each device owns the outputs whose windows
start in its block (``R / s`` of them, ``R`` the block's rows, ``s`` the stride; the last device
the rest), receives the few rows its windows read beyond its block from its neighbours
(``lax.ppermute``: the halo), and pools its rows with the one-device lowering, whose padding is
static per kind of device: the first (the begin padding), the last (the end padding) and the
others (none), one ``lax.switch`` branch per combination over the sharded axes. Each device
writes its outputs' bits (and indices, mapped to the whole input's layout) into an array of the
whole output, zeros elsewhere, and one integer ``lax.psum`` of those arrays gives every device
the output: exact (each element is one device's bits plus zeros), and the output's bytes.

Every window is the one-device window (the same elements, the same padding), so values, zero
signs, NaN and indices are the one-device answer. The derivative goes the same way (the
tangent's halo exchanged, each device's outputs' tangents from the one-device lowering's,
added up across devices in floating point: one device's tangent plus zeros).

Only where every sharded pooled axis's block is a multiple of its stride, the halo comes from
the nearest neighbours only, and no padding is negative (a crop); otherwise the partitioner's
form (`applies`). On ``Explicit`` axes (``jax.shard_map``), and on ``Auto`` ones once XLA
knows the sharding (`per_device`, run by :mod:`jaxmax._src.auto_partition`) for the pools
`may_apply` admits.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec

from jaxmax._src import dtypes, explicit_axes
from jaxmax._src.lowering import order
from jaxmax._src.lowering.pooling.geometry import Geometry
from jaxmax._src.lowering.pooling.winners import IndexLayout

__all__ = ["applies", "max_pool", "may_apply", "per_device", "splits"]

#: ``local(block, padding, with_indices)``: the one-device pool of a block with its own static
#: padding (one ``(lo, hi)`` per axis): the values, or ``(values, indices)`` in the default
#: layout.
Local = Callable[[jax.Array, tuple[tuple[int, int], ...], bool], Any]


class _Kind(NamedTuple):
    """The outputs one kind of device (first, middle, last along an axis) owns and reads."""
    owned: int  # outputs
    lo: int  # its first input row, relative to its block's start (negative: halo before)
    hi: int  # its end row, relative
    pads: tuple[int, int]  # the padding of those rows


class _Split(NamedTuple):
    """A sharded pooled axis."""
    axis: int
    names: tuple[str, ...]
    devices: int
    block: int
    kinds: tuple[_Kind, ...]  # first, (middle,) last
    before: int  # halo rows from the previous device
    after: int  # halo rows from the next device


def _split(g: Geometry, axis: int, names: tuple[str, ...], devices: int) -> _Split | None:
    a = g.axes[axis]
    block = a.size // devices
    if a.lo < 0 or a.hi < 0 or block % a.s or devices < 2:
        return None
    per = block // a.s
    last = a.out - (devices - 1) * per
    if last < 1:
        return None
    reach = (a.k - 1) * a.d + 1
    kinds = []
    for kind in ("first", "middle", "last") if devices > 2 else ("first", "last"):
        owned = last if kind == "last" else per
        lo, hi = -a.lo, (owned - 1) * a.s - a.lo + reach
        clip_lo = max(lo, 0) if kind == "first" else lo
        clip_hi = min(hi, block) if kind == "last" else hi
        if clip_hi <= clip_lo:
            return None
        kinds.append(_Kind(owned, clip_lo, clip_hi, (clip_lo - lo, hi - clip_hi)))
    before = max(0, -min(k.lo for k in kinds))
    after = max(0, max(k.hi for k in kinds) - block)
    if before > block or after > block:
        return None
    return _Split(axis, names, devices, block, tuple(kinds), before, after)


def _splits(x: jax.Array, g: Geometry) -> list[_Split] | None:
    """The sharded pooled axes, when this form applies (see `applies`)."""
    if not any(explicit_axes.explicit_only(x, a) for a in range(x.ndim)):
        return None
    return splits(explicit_axes.spec_of(x), jax.typeof(x).sharding.mesh, g, uneven=True)


def splits(spec: tuple, mesh, g: Geometry, *, uneven: bool) -> list[_Split] | None:
    """The pooled axes `spec` shards on `mesh` (evenly), each fit for the halo exchange; None
    when one is not, or (`uneven`) when every one's output divides over its devices (the
    partitioner's form then moves only the halo rows). An empty list: no pooled axis is
    sharded (each device pools its own block)."""
    found, odd = [], False
    for axis, a in enumerate(g.axes):
        names = explicit_axes.entry_names(spec[axis])
        pooled = (a.k, a.s, a.lo, a.hi, a.d) != (1, 1, 0, 0, 1)
        if not names or not pooled:
            continue
        if axis < 2:
            return None
        devices = explicit_axes.devices_along(mesh, names)
        split = _split(g, axis, names, devices)
        if split is None:
            return None
        found.append(split)
        odd |= a.out % devices != 0
    return found if odd or not uneven else None


def may_apply(x: jax.Array, g: Geometry, devices: int) -> bool:
    """Whether some sharding of `x` over at most `devices` devices along one pooled axis takes
    this form (`applies`: a block the exchange fits whose output does not divide): where
    ``Auto`` mesh axes leave the sharding to XLA, only such pools take the per-device form
    chosen once XLA knows it (:mod:`jaxmax._src.auto_partition`); every other pool is left to
    the partitioner, its one-device program unwrapped."""
    if x.ndim < 3 or x.size == 0 or not (dtypes.is_floating(x.dtype)
                                        or dtypes.is_integer(x.dtype)):
        return False
    for axis in range(2, x.ndim):
        a = g.axes[axis]
        if (a.k, a.s, a.lo, a.hi, a.d) == (1, 1, 0, 0, 1):
            continue
        for d in range(2, devices + 1):
            if a.size % d == 0 and a.out % d and _split(g, axis, (), d) is not None:
                return True
    return False


def applies(x: jax.Array, g: Geometry) -> bool:
    """Whether `max_pool` computes this pool: `x` sharded over ``Explicit`` mesh axes only,
    evenly, along a spatial axis whose output does not divide over them, and every sharded
    pooled axis fit for the halo exchange (see the module)."""
    if x.ndim < 3 or x.size == 0 or not (dtypes.is_floating(x.dtype)
                                        or dtypes.is_integer(x.dtype)):
        return False
    return _splits(x, g) is not None


def max_pool(x: jax.Array, g: Geometry, index_dtype: np.dtype | None, layout: IndexLayout,
             local: Local):
    """The values (and, with `index_dtype`, the indices in `layout`) when `applies`."""
    found = _splits(x, g)
    assert found is not None
    spec = explicit_axes.spec_of(x)
    mesh = jax.typeof(x).sharding.mesh
    out_spec = explicit_axes.divisible(mesh, spec, g.out_shape)
    form = per_device(g, spec, out_spec, mesh, found, index_dtype, layout, local)
    outputs = 1 if index_dtype is None else 2
    out_specs = PartitionSpec(*out_spec)

    @jax.custom_jvp
    def pool(x):
        return jax.shard_map(form.primal, mesh=mesh, in_specs=(PartitionSpec(*spec),),
                             out_specs=out_specs if outputs == 1 else (out_specs,) * 2)(x)

    @pool.defjvp
    def pool_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        out = pool(x)
        # (unchecked: the one-device lowering's own derivative rules give their integer
        # outputs' float0 tangents no varying-axes type)
        tangent = jax.shard_map(form.tangent, mesh=mesh, in_specs=(PartitionSpec(*spec),) * 2,
                                out_specs=out_specs, check_vma=False)(x, t)
        if outputs == 1:
            return out, tangent
        return out, (tangent, np.zeros(out[1].shape, jax.dtypes.float0))

    return pool(x)


def per_device(g: Geometry, spec: tuple, out_spec: tuple, mesh, found: list[_Split],
               index_dtype: np.dtype | None, layout: IndexLayout, local: Local) -> _Form:
    """Each device's part of the pool of an input laid out as `spec` on `mesh`, the pooled axes
    `found` (`splits`) exchanged: ``primal(block)`` (the values, or values and indices) and
    ``tangent(block, t)``, laid out as `out_spec`. Run in ``jax.shard_map`` on ``Explicit``
    axes (`max_pool`), by :mod:`jaxmax._src.auto_partition` on ``Auto`` ones once XLA knows
    the sharding."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes, strict=True))
    return _Form(g, spec, out_spec, found, sizes, index_dtype, layout, local)


class _Form:
    def __init__(self, g, spec, out_spec, splits, sizes, index_dtype, layout, local):
        self.g, self.spec, self.out_spec, self.splits = g, spec, out_spec, splits
        self.sizes, self.index_dtype, self.layout, self.local = sizes, index_dtype, layout, local
        self.mesh_names = tuple(sizes)  # dicts keep the mesh's order

    # ---- one device's part (inside shard_map)

    def primal(self, block: jax.Array):
        ext = self._exchanged(block)

        def branch(kinds):
            def run(ext):
                part = self._rows(ext, kinds)
                out = self.local(part, self._padding(kinds), self.index_dtype is not None)
                values = out if self.index_dtype is None else out[0]
                placed = [self._placed(order.bits(values), kinds)]
                if self.index_dtype is not None:
                    placed.append(self._placed(self._global_index(out[1], part, kinds), kinds))
                return tuple(placed)
            return run

        parts = self._switch(branch, ext)
        names = tuple(n for s in self.splits for n in s.names)
        parts = [self._own_part(lax.psum(p, names)) for p in parts]
        values = order.from_bits(parts[0], block.dtype)
        return values if self.index_dtype is None else (values, parts[1])

    def tangent(self, block: jax.Array, t: jax.Array):
        ext, ext_t = self._exchanged(block), self._exchanged(t)

        def branch(kinds):
            def run(ext, ext_t):
                padding = self._padding(kinds)

                def values(v):  # (the values' derivative is the same with indices or not)
                    return self.local(v, padding, False)

                _, tan = jax.jvp(values, (self._rows(ext, kinds),), (self._rows(ext_t, kinds),))
                return (self._placed(tan, kinds),)
            return run

        (tan,) = self._switch(branch, ext, ext_t)
        names = tuple(n for s in self.splits for n in s.names)
        return self._own_part(lax.psum(tan, names))

    # ---- the pieces

    def _exchanged(self, block: jax.Array) -> jax.Array:
        """`block` with its halo rows from the neighbours along every sharded pooled axis
        (the corners come with the second exchange)."""
        for s in self.splits:
            pieces = []
            if s.before:
                tail = lax.slice_in_dim(block, block.shape[s.axis] - s.before, None,
                                        axis=s.axis)
                pieces.append(self._shifted(tail, s, +1))
            pieces.append(block)
            if s.after:
                head = lax.slice_in_dim(block, 0, s.after, axis=s.axis)
                pieces.append(self._shifted(head, s, -1))
            block = lax.concatenate(pieces, s.axis) if len(pieces) > 1 else block
        return block

    def _shifted(self, rows: jax.Array, s: _Split, step: int) -> jax.Array:
        """`rows` sent to the device `step` blocks further along `s` (zeros where none is).

        A block's place along an axis sharded over several mesh axes is row-major over them in
        the spec's order (`lax.axis_index`); ``lax.ppermute`` numbers the devices row-major in
        the mesh's order: the pairs are translated."""
        mesh_order = tuple(n for n in self.mesh_names if n in s.names)
        sizes = [self.sizes[n] for n in s.names]

        def in_mesh_order(block: int) -> int:
            coords = dict(zip(s.names, np.unravel_index(block, sizes), strict=True))
            return int(np.ravel_multi_index([coords[n] for n in mesh_order],
                                            [self.sizes[n] for n in mesh_order]))

        pairs = [(in_mesh_order(i), in_mesh_order(i + step)) for i in range(s.devices)
                 if 0 <= i + step < s.devices]
        return lax.ppermute(rows, mesh_order, pairs)

    def _switch(self, branch, *operands):
        combos = list(itertools.product(*(s.kinds for s in self.splits)))
        if len(combos) == 1:
            return branch(combos[0])(*operands)
        which = jnp.zeros((), np.int32)
        for s in self.splits:
            i = lax.axis_index(s.names)
            kind = jnp.where(i == 0, 0, jnp.where(i == s.devices - 1, len(s.kinds) - 1, 1))
            which = which * np.int32(len(s.kinds)) + kind.astype(np.int32)
        return lax.switch(which, [branch(c) for c in combos], *operands)

    def _rows(self, ext: jax.Array, kinds) -> jax.Array:
        for s, k in zip(self.splits, kinds, strict=True):
            ext = lax.slice_in_dim(ext, s.before + k.lo, s.before + k.hi, axis=s.axis)
        return ext

    def _padding(self, kinds) -> tuple[tuple[int, int], ...]:
        padding = [(0, 0) if i < 2 else p for i, p in enumerate(self.g.padding)]
        for s, k in zip(self.splits, kinds, strict=True):
            padding[s.axis] = k.pads
        return tuple(padding)

    def _placed(self, part: jax.Array, kinds) -> jax.Array:
        """`part` (this device's outputs) at their place in an array of the whole output along
        the sharded pooled axes, zeros elsewhere."""
        shape = list(part.shape)
        at = [jnp.zeros((), np.int32)] * part.ndim
        for s in self.splits:
            shape[s.axis] = self.g.axes[s.axis].out
            at[s.axis] = lax.axis_index(s.names).astype(np.int32) * np.int32(
                s.block // self.g.axes[s.axis].s)
        return lax.dynamic_update_slice(jnp.zeros(shape, part.dtype), part, at)

    def _offsets(self, kinds) -> list:
        """Where the rows of this device's pooled part start in the whole input, per axis."""
        halo = {s.axis: (s, k) for s, k in zip(self.splits, kinds, strict=True)}
        offsets: list = []
        for axis in range(len(self.g.axes)):
            names = explicit_axes.entry_names(self.spec[axis])
            if axis in halo:
                s, k = halo[axis]
                offsets.append(lax.axis_index(names) * s.block + k.lo)
            elif names:
                size = self.g.axes[axis].size // math.prod(self.sizes[n] for n in names)
                offsets.append(lax.axis_index(names) * size)
            else:
                offsets.append(0)
        return offsets

    def _global_index(self, index: jax.Array, part: jax.Array, kinds) -> jax.Array:
        """`index` (flat over `part`, row-major, -1 without a winner) in the layout asked for,
        over the whole input."""
        itype = index.dtype.type
        offsets = self._offsets(kinds)
        coords = []
        rest = index
        for n in reversed(part.shape):
            coords.append(rest % itype(n))
            rest = rest // itype(n)
        coords = [c + jnp.asarray(o, index.dtype) for c, o in zip(reversed(coords), offsets,
                                                                   strict=True)]
        none = index < itype(0)
        out_shape = index.shape
        if self.layout.no_winner == "plane_start":
            # the start of the output's own (batch, channel) plane
            for axis in (0, 1):
                plane = lax.broadcasted_iota(index.dtype, out_shape, axis) + jnp.asarray(
                    offsets[axis], index.dtype)
                coords[axis] = jnp.where(none, plane, coords[axis])
            for axis in range(2, len(coords)):
                coords[axis] = jnp.where(none, itype(0), coords[axis])
        flat = jnp.zeros(out_shape, index.dtype)
        for axis in self.layout.dims(part.ndim):
            flat = flat * itype(self.g.axes[axis].size) + coords[axis]
        if self.layout.no_winner == "minus_one":
            flat = jnp.where(none, itype(-1), flat)
        return flat

    def _own_part(self, out: jax.Array) -> jax.Array:
        """The outputs this device holds in the output's sharding (a sharded pooled axis whose
        output divides evenly)."""
        for s in self.splits:
            names = explicit_axes.entry_names(self.out_spec[s.axis])
            if names:
                n = out.shape[s.axis] // s.devices
                out = lax.dynamic_slice_in_dim(out, lax.axis_index(names) * n, n, s.axis)
        return out
