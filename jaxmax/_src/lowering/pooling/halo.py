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
signs, NaN and indices are the one-device answer. The derivative is a linear function of the
tangent (`derivative`, :mod:`jaxmax._src.linear_calls`) laid out the same way, and is the
one-device derivative bit for bit:

* forward (`_Form.tangent`): the tangent's halo exchanged, each device's outputs' tangents from
  the one-device lowering's, and their bits added by one integer all-reduce (`bit_sum.owner_sum`; a
  floating sum turned a ``-0.0`` tangent into ``-0.0 + 0.0 = +0.0``);
* transpose (`_Form.cotangent`): each device takes every output whose window reads its block
  (its own, and those of its neighbours that reach into it: `_Touch`), their cotangents (the
  output's halo rows exchanged where the output is sharded as the blocks) and the rows they
  read, and differentiates the one-device lowering there, in the whole input's form. Each
  element then sums the same windows' cotangents in the one-device order (a device adding the
  halo rows' cotangents its neighbours sent back rounded them in another order; so did XLA's
  partitioner, which also all-reduced an input-sized cotangent).

The same derivative serves the pools whose output does divide (`explicit_form`: their values
are the partitioner's, which moves only the halo rows). Only where every sharded pooled axis's
block is a multiple of its stride, both halos come from the nearest neighbours only, and no
padding is negative (a crop); otherwise the partitioner's form (`applies`). On ``Explicit``
axes (``jax.shard_map``), and on ``Auto`` ones once XLA knows the sharding (`per_device`, run
by :mod:`jaxmax._src.auto_partition`) for the pools `may_apply` admits.
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

from jaxmax._src import dtypes, explicit_axes, linear_calls
from jaxmax._src.lowering import bit_sum, order
from jaxmax._src.lowering.pooling.geometry import Geometry
from jaxmax._src.lowering.pooling.winners import IndexLayout

__all__ = ["applies", "derivative", "explicit_form", "max_pool", "may_apply",
           "per_device", "splits", "with_tangent"]

#: ``local(block, padding, with_indices)``: the one-device pool of a block with its own static
#: padding (one ``(lo, hi)`` per axis): the values, or ``(values, indices)`` in the default
#: layout.
Local = Callable[[jax.Array, tuple[tuple[int, int], ...], bool], Any]

#: ``combine(parts, mesh_axes)``: the devices' parts of the tangent (each its own outputs',
#: zeros elsewhere) added over `mesh_axes`.
Combine = Callable[[jax.Array, tuple[str, ...]], jax.Array]


class _Kind(NamedTuple):
    """The outputs one kind of device (first, middle, last along an axis) owns and reads."""
    owned: int  # outputs
    lo: int  # its first input row, relative to its block's start (negative: halo before)
    hi: int  # its end row, relative
    pads: tuple[int, int]  # the padding of those rows


class _Touch(NamedTuple):
    """The outputs whose windows read some row of one kind of device's block (first, middle,
    last along an axis), and the rows they read: what its cotangent sums over."""
    first: int  # the first such output, relative to the block's first owned one
    outputs: int  # how many (0: no window reads the block)
    lo: int  # their first input row, relative to the block's start (negative: halo before)
    hi: int  # their end row, relative
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
    touch: tuple[_Touch, ...]  # first, (middle,) last
    touch_before: int  # the rows of `touch` from the previous device
    touch_after: int  # and from the next


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
    touch = _touch(a, devices, block)
    if before > block or after > block or touch is None:
        return None
    return _Split(axis, names, devices, block, tuple(kinds), before, after, *touch)


def _touch(a, devices: int, block: int) -> tuple[tuple[_Touch, ...], int, int] | None:
    """Per kind of device, the outputs whose windows read its block (`_Touch`), and the halo
    rows they need from the neighbours; None when that is not the same for every middle
    device or reaches past a neighbour's block."""
    reach = (a.k - 1) * a.d + 1
    per = block // a.s

    def of(i: int) -> _Touch:
        b0 = i * block
        o0 = max(0, -(-(b0 - reach + 1 + a.lo) // a.s))
        o1 = min(a.out - 1, (b0 + block - 1 + a.lo) // a.s)
        if o1 < o0:
            return _Touch(0, 0, 0, 0, (0, 0))
        r0, r1 = o0 * a.s - a.lo, o1 * a.s - a.lo + reach
        c0, c1 = max(r0, 0), min(r1, a.size)
        return _Touch(o0 - i * per, o1 - o0 + 1, c0 - b0, c1 - b0, (c0 - r0, r1 - c1))

    every = [of(i) for i in range(devices)]
    if len(set(every[1:-1])) > 1:
        return None
    kinds = (every[0], *every[1:-1][:1], every[-1])
    before = max(0, -min(k.lo for k in kinds))
    after = max(0, max(k.hi for k in kinds) - block)
    if before > block or after > block:
        return None
    return kinds, before, after


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


def may_apply(x: jax.Array, g: Geometry, devices: int, *, divided: bool = False) -> bool:
    """Whether some sharding of `x` over at most `devices` devices along one pooled axis takes
    this form (`applies`: a block the exchange fits whose output does not divide): where
    ``Auto`` mesh axes leave the sharding to XLA, only such pools take the per-device form
    chosen once XLA knows it (:mod:`jaxmax._src.auto_partition`); every other pool is left to
    the partitioner, its one-device program unwrapped. With `divided`: whether some such
    sharding fits the exchange, its output divided or not (the derivative's per-device
    form, `per_device`)."""
    if x.ndim < 3 or x.size == 0 or not (dtypes.is_floating(x.dtype)
                                        or dtypes.is_integer(x.dtype)):
        return False
    for axis in range(2, x.ndim):
        a = g.axes[axis]
        if (a.k, a.s, a.lo, a.hi, a.d) == (1, 1, 0, 0, 1):
            continue
        for d in range(2, devices + 1):
            if (a.size % d == 0 and (divided or a.out % d)
                    and _split(g, axis, (), d) is not None):
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

    pool = jax.shard_map(form.primal, mesh=mesh, in_specs=(PartitionSpec(*spec),),
                         out_specs=out_specs if outputs == 1 else (out_specs,) * 2)
    return with_tangent(pool, x, lambda v, t: derivative(form, mesh, v, t), outputs)


def with_tangent(values, x: jax.Array, tangent, outputs: int):
    """``values(x)`` (the pooled values, or values and indices: `outputs` arrays) whose
    tangent is ``tangent(x, t)``."""
    f = jax.custom_jvp(values)

    @f.defjvp
    def _(primals, tangents):
        (v,), (t,) = primals, tangents
        out = f(v)
        tan = tangent(v, t)
        return out, (tan if outputs == 1
                     else (tan, np.zeros(out[1].shape, jax.dtypes.float0)))

    return f(x)


def explicit_form(x: jax.Array, g: Geometry, local: Local) -> _Form | None:
    """The per-device form of the values' derivative for `x` sharded along pooled axes over
    ``Explicit`` mesh axes only, evenly, every such axis fit for the exchange, whether its
    output divides or not (`applies` asks that one does not); None otherwise."""
    if (x.ndim < 3 or x.size == 0 or not dtypes.is_floating(x.dtype)
            or not any(explicit_axes.explicit_only(x, a) for a in range(x.ndim))):
        return None
    spec = explicit_axes.spec_of(x)
    mesh = jax.typeof(x).sharding.mesh
    if explicit_axes.divisible(mesh, spec, tuple(x.shape)) != tuple(spec):
        return None
    found = splits(spec, mesh, g, uneven=False)
    if not found:
        return None
    out_spec = explicit_axes.divisible(mesh, spec, g.out_shape)
    return per_device(g, spec, out_spec, mesh, found, None, IndexLayout(), local)


def derivative(form: _Form, mesh, x: jax.Array, t: jax.Array) -> jax.Array:
    """The tangent of the values at `x` along `t` by `form` on ``Explicit`` axes: a linear
    function of `t` (:mod:`jaxmax._src.linear_calls`) whose forward (`bit_sum.owner_sum`) and
    transpose (`_Form.cotangent`) are each the one-device bits; where the linear call does not
    work, `_Form.tangent` as it is (its transpose sums the halo rows' cotangents in another
    order, and its forward turns a ``-0.0`` tangent into ``+0.0``)."""
    in_spec, out_spec = PartitionSpec(*form.spec), PartitionSpec(*form.out_spec)

    def mapped(f, in_specs, result_spec):
        # (unchecked: the one-device lowering's own derivative rules give their integer
        # outputs' float0 tangents no varying-axes type)
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=result_spec,
                             check_vma=False)

    if not linear_calls.available():
        return mapped(form.tangent, (in_spec,) * 2, out_spec)(x, t)

    def forward(residuals, tangent):
        return mapped(lambda v, w: form.tangent(v, w, bit_sum.owner_sum), (in_spec,) * 2, out_spec)(
            *residuals, *tangent)

    def transpose(residuals, cotangent):
        return (mapped(form.cotangent, (in_spec, out_spec), in_spec)(*residuals, cotangent),)

    return linear_calls.call(forward, transpose, (lax.stop_gradient(x),), (t,))


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

    def tangent(self, block: jax.Array, t: jax.Array, combine: Combine = lax.psum):
        """The tangent of `primal` at `block` along `t`: the devices' parts (each its own
        outputs' tangents, zeros elsewhere) added by ``combine(parts, mesh_axes)``."""
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
        return self._own_part(combine(tan, names))

    def cotangent(self, block: jax.Array, ct: jax.Array) -> jax.Array:
        """The cotangent of `block` (the transpose of `tangent`) from the output cotangent `ct`
        laid out as `out_spec`: each device takes every output whose window reads its block
        (`_Touch`: its own, and its neighbours' that reach into it; the output cotangent is
        whole along the sharded pooled axes, gathered where `out_spec` shards it) and the rows
        they read, and differentiates the one-device lowering there. Each element's cotangent
        is then summed over the same windows, in the same order, as on one device: bit for
        bit (a device adding the halo rows' cotangents sent back by its neighbours rounded
        them in another order)."""
        starts: list[Any] = []  # per split: where this device's first owned output is in `ct`
        for s in self.splits:
            per = s.block // self.g.axes[s.axis].s
            names = explicit_axes.entry_names(self.out_spec[s.axis])
            halo = self._cotangent_halo(s) if names else None
            if halo is not None:  # the output sharded as the blocks: its halo rows exchanged
                ct, starts = self._with_halo(ct, s, *halo), starts + [halo[0]]
                continue
            if names:
                ct = lax.all_gather(ct, names, axis=s.axis, tiled=True)
            starts.append(lax.axis_index(s.names).astype(np.int32) * np.int32(per))
        ext = self._exchanged(block, touch=True)

        def branch(kinds):
            def run(ext, ct):
                if any(k.outputs == 0 for k in kinds):  # no window reads this block
                    return (jnp.zeros(block.shape, ct.dtype),)
                part = ext
                for s, k, at in zip(self.splits, kinds, starts, strict=True):
                    part = lax.slice_in_dim(part, s.touch_before + k.lo,
                                            s.touch_before + k.hi, axis=s.axis)
                    ct = lax.dynamic_slice_in_dim(ct, at + np.int32(k.first), k.outputs, s.axis)
                padding = self._padding(kinds)
                got = jax.vjp(lambda v: self.local(v, padding, False), part)[1](ct)[0]
                for s, k in zip(self.splits, kinds, strict=True):  # the block's own rows
                    got = lax.slice_in_dim(got, max(0, -k.lo), min(k.hi, s.block) - k.lo,
                                           axis=s.axis)
                    pad = [(0, 0)] * got.ndim
                    pad[s.axis] = (max(0, k.lo), max(0, s.block - k.hi))
                    got = jnp.pad(got, pad) if any(pad[s.axis]) else got
                return (got,)
            return run

        (out,) = self._switch(branch, ext, ct, touch=True)
        return out

    def _cotangent_halo(self, s: _Split) -> tuple[int, int] | None:
        """For an output sharded along `s`'s axis in blocks of the outputs each device owns:
        the output rows every output whose window reads a device's block needs from the
        previous and the next device (the cotangent's halo); None when the output's blocks
        are not those (an output that divides otherwise) or a neighbour's block is not
        enough."""
        a = self.g.axes[s.axis]
        per = s.block // a.s
        if a.out != per * s.devices:
            return None
        before = max(0, -min(k.first for k in s.touch))
        after = max(0, max(k.first + k.outputs for k in s.touch) - per)
        return None if before > per or after > per else (before, after)

    def _with_halo(self, ct: jax.Array, s: _Split, before: int, after: int) -> jax.Array:
        """`ct` (this device's block of the output along `s`'s axis) with `before` rows of the
        previous device's block and `after` of the next one's (zeros where none is)."""
        pieces = []
        if before:
            tail = lax.slice_in_dim(ct, ct.shape[s.axis] - before, None, axis=s.axis)
            pieces.append(self._shifted(tail, s, +1))
        pieces.append(ct)
        if after:
            pieces.append(self._shifted(lax.slice_in_dim(ct, 0, after, axis=s.axis), s, -1))
        return lax.concatenate(pieces, s.axis) if len(pieces) > 1 else ct

    # ---- the pieces

    def _exchanged(self, block: jax.Array, touch: bool = False) -> jax.Array:
        """`block` with its halo rows from the neighbours along every sharded pooled axis
        (the corners come with the second exchange): those its own outputs read, or with
        `touch` those of every output that reads the block."""
        for s in self.splits:
            pieces = []
            before, after = (s.touch_before, s.touch_after) if touch else (s.before, s.after)
            if before:
                tail = lax.slice_in_dim(block, block.shape[s.axis] - before, None,
                                        axis=s.axis)
                pieces.append(self._shifted(tail, s, +1))
            pieces.append(block)
            if after:
                head = lax.slice_in_dim(block, 0, after, axis=s.axis)
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

    def _switch(self, branch, *operands, touch: bool = False):
        combos = list(itertools.product(*(s.touch if touch else s.kinds
                                            for s in self.splits)))
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
        """The padding of the rows of `kinds` (`_Kind` or `_Touch`, one per split)."""
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
