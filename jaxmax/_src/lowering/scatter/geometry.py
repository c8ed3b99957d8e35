"""Where each update of a scatter goes: the index geometries the scatter rules run on.

A geometry turns normalised indices (every value in range, or out of range to be dropped) into
XLA scatter and gather dimension numbers, so that a rule (`scatter_rules`) can scatter any
update-shaped array onto the operand with ``max``, ``min`` or ``add``, and gather any
operand-shaped array back at each update's target. Out-of-range targets use XLA's
``FILL_OR_DROP`` mode: a scatter drops the update (the whole window when any coordinate is out
of range), a gather returns the fill value.

Four geometries, all with static dimension numbers:

* `elements`: one target per update element, as a flat offset into the operand viewed 1-D (the
  general per-element form, one scalar index per update element);
* `rows`: one index per position along `axis`, each update's window being the rest of that row
  (the row-broadcast form: XLA's native row scatter);
* `slices`: one ``k``-coordinate index per leading position, ``k >= 1``, the window being the
  trailing ``operand.shape[k:]`` (the slice form; ``k = 0`` reaches it as ``k = 1`` on a new
  leading unit axis, `scatter.scatter_by_coordinates`);
* `detect`: along-axis indices whose row layout is known only at run time. The index is the
  triple ``(each, ids, indices)``: a `when` flag (raised when a row is not constant), the
  normalised row ids ``(n, 1)`` and the raw indices. `scatter_fast` picks the row or the
  per-element scatter with `when`; every other operation runs per element on offsets built
  where it runs (so one copy of a rule's closed form serves both layouts, and no offset array
  is built on the fast path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src.lowering import order
from jaxmax._src.lowering.scatter import combiner as scatter_combiner

_DROP = lax.GatherScatterMode.FILL_OR_DROP


@dataclass(frozen=True)
class Geometry:
    """Static description of how `index` (a traced integer array) routes updates to the
    operand. ``kind`` is ``"elements"``, ``"rows"``, ``"slices"`` or ``"detect"``; ``axis`` is
    the row axis (``rows``, ``detect``) and ``k`` the coordinate count (``slices``). ``keys``
    runs a floating max on ordered integer keys, else on XLA's float max."""

    kind: str
    operand_shape: tuple[int, ...]
    updates_shape: tuple[int, ...]
    axis: int = 0
    k: int = 0
    keys: bool = True

    def _scatter_dnums(self) -> lax.ScatterDimensionNumbers:
        r = len(self.operand_shape)
        if self.kind == "elements":
            # each update a window of one element (updates viewed (n, 1)): the form XLA
            # rewrites every scatter to, so that it uses the updates in place (with the window
            # inserted, it copies them first: a pass over the updates, and one more kernel)
            return lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(),
                                               scatter_dims_to_operand_dims=(0,))
        if self.kind == "rows":
            return lax.ScatterDimensionNumbers(
                update_window_dims=tuple(d for d in range(r) if d != self.axis),
                inserted_window_dims=(self.axis,), scatter_dims_to_operand_dims=(self.axis,))
        k = self.k
        return lax.ScatterDimensionNumbers(
            update_window_dims=tuple(range(1, 1 + r - k)), inserted_window_dims=tuple(range(k)),
            scatter_dims_to_operand_dims=tuple(range(k)))

    def _gather(self) -> tuple[lax.GatherDimensionNumbers, tuple[int, ...]]:
        r = len(self.operand_shape)
        if self.kind == "elements":
            return (lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                               start_index_map=(0,)), (1,))
        if self.kind == "rows":
            sizes = tuple(1 if d == self.axis else n for d, n in enumerate(self.operand_shape))
            return (lax.GatherDimensionNumbers(
                offset_dims=tuple(d for d in range(r) if d != self.axis),
                collapsed_slice_dims=(self.axis,), start_index_map=(self.axis,)), sizes)
        k = self.k
        return (lax.GatherDimensionNumbers(
            offset_dims=tuple(range(1, 1 + r - k)), collapsed_slice_dims=tuple(range(k)),
            start_index_map=tuple(range(k))), (1,) * k + tuple(self.operand_shape[k:]))

    # The "elements" form works on the operand viewed 1-D and the updates viewed 1-D.
    def _operand_in(self, a: jax.Array) -> jax.Array:
        return a.reshape(-1) if self.kind == "elements" else a

    def _updates_in(self, a: jax.Array) -> jax.Array:
        if self.kind == "elements":
            return a.reshape(-1, 1)
        if self.kind == "slices":
            window = tuple(self.operand_shape[self.k:])
            n = math.prod(self.updates_shape[:len(self.updates_shape) - len(window)])
            return a.reshape((n,) + window)
        return a

    def per_element(self, index) -> tuple[Geometry, jax.Array]:
        """A `detect` geometry as the `elements` one, with the flat offsets of its index; any
        other geometry and its index as they are. A caller that runs several operations on the
        per-element form builds the offsets once with this."""
        if self.kind != "detect":
            return self, index
        _, _, indices = index
        size = self.operand_shape[self.axis]
        norm = normalised(indices, size, signed_index_dtype(size))
        flat = element_offsets(norm, self.operand_shape, self.axis,
                               signed_index_dtype(math.prod(self.operand_shape)))
        geom = Geometry("elements", self.operand_shape, self.updates_shape, keys=self.keys)
        return geom, flat

    def scatter_fast(self, combine: str, operand: jax.Array, index, values: jax.Array,
                     elements=None) -> jax.Array:
        """`scatter`, through the row form when a `detect` index has constant rows; the
        per-element scatter is ``elements(geometry, operand, index, values)`` when given."""
        if self.kind != "detect":
            if self.kind == "elements" and elements is not None:
                return elements(self, operand, index, values)
            return self.scatter(combine, operand, index, values)
        each_flag, ids, _ = index
        by_rows = Geometry("rows", self.operand_shape, self.updates_shape, axis=self.axis,
                           keys=self.keys)

        def rows(operand, index, values):
            return by_rows.scatter(combine, operand, index[1], values)

        def each(operand, index, values):
            geom, flat = self.per_element(index)
            if elements is not None:
                return elements(geom, operand, flat, values)
            return geom.scatter(combine, operand, flat, values)

        return when(each_flag, each, rows, operand, index, values)

    def scatter(self, combine: str, operand: jax.Array, index,
                values: jax.Array) -> jax.Array:
        """`operand` combined (``"max"``, ``"min"`` or ``"add"``, or a floating combine of
        `scatter_combiner.KINDS`) with the update-shaped `values` at their targets; dropped
        targets leave it unchanged. A floating ``"max"`` is the IEEE-754-2019 ``maximum`` (NaN
        wins, ``+0`` beats ``-0``), computed on ordered integer keys."""
        if self.kind == "detect":
            geom, flat = self.per_element(index)
            return geom.scatter(combine, operand, flat, values)
        if combine in scatter_combiner.KINDS:
            out = scatter_combiner.scatter(combine, self._operand_in(operand), index,
                                           self._updates_in(values), self._scatter_dnums())
            return out.reshape(self.operand_shape)
        if combine == "max" and self.keys and jnp.issubdtype(operand.dtype, jnp.floating):
            start = ieee_key(operand)
            out = self.scatter("max", start, index, ieee_key(values))
            # where the operand's key survived, its own bits do: a key drops a NaN's sign
            kept = lax.bitcast_convert_type(operand, start.dtype)
            bits = jnp.where(out == start, kept, jnp.where(out < 0, out ^ _top(out), out))
            return lax.bitcast_convert_type(bits, operand.dtype)
        fn = {"max": lax.scatter_max, "min": lax.scatter_min, "add": lax.scatter_add}[combine]
        out = fn(self._operand_in(operand), index, self._updates_in(values),
                 self._scatter_dnums(), indices_are_sorted=False, unique_indices=False,
                 mode=_DROP)
        return out.reshape(self.operand_shape)

    def last_positions(self, index: jax.Array, dtype) -> jax.Array:
        """Operand-shaped: the position (1 + row-major offset into the updates) of the last
        update reaching each element, 0 where none does. The row and slice forms find the last
        row per target on the index alone (a scatter of row numbers, not of every element)."""
        if self.kind == "detect":
            geom, flat = self.per_element(index)
            return geom.last_positions(flat, dtype)
        dtype = np.dtype(dtype)
        if self.kind == "elements":
            n = math.prod(self.updates_shape)
            p = (lax.iota(dtype, n) + dtype.type(1)).reshape(self.updates_shape)
            return self.scatter("max", jnp.zeros(self.operand_shape, dtype), index, p)
        rows = index.shape[0]
        if self.kind == "rows":
            targets: tuple[int, ...] = (self.operand_shape[self.axis],)
            strides = [math.prod(self.updates_shape[d + 1:])
                       for d in range(len(self.updates_shape))]
            offset = sum((lax.broadcasted_iota(dtype, self.operand_shape, d) * dtype.type(s)
                          for d, s in enumerate(strides) if d != self.axis),
                         jnp.zeros(self.operand_shape, dtype))
            row_stride = strides[self.axis]
            shape = tuple(n if d == self.axis else 1 for d, n in enumerate(self.operand_shape))
        else:
            targets = tuple(self.operand_shape[:self.k])
            window = tuple(self.operand_shape[self.k:])
            row_stride = math.prod(window)
            offset = lax.iota(dtype, row_stride).reshape((1,) * self.k + window)
            shape = targets + (1,) * len(window)
        dnums = lax.ScatterDimensionNumbers(
            update_window_dims=(), inserted_window_dims=tuple(range(len(targets))),
            scatter_dims_to_operand_dims=tuple(range(len(targets))))
        last_row = lax.scatter_max(jnp.full(targets, -1, dtype), index, lax.iota(dtype, rows),
                                   dnums, mode=_DROP).reshape(shape)
        return jnp.where(last_row >= 0, last_row * dtype.type(row_stride) + offset +
                         dtype.type(1), dtype.type(0))

    def gather(self, operand: jax.Array, index: jax.Array, fill) -> jax.Array:
        """`operand` read at each update's target, update-shaped; `fill` where dropped. Floats
        are read through their bits: a gather the partitioner splits over devices adds the
        devices' parts, and ``-0 + 0`` is ``+0``."""
        if jnp.issubdtype(operand.dtype, jnp.floating):
            fill_bits = np.array(fill, operand.dtype).view(order.unsigned_bits_dtype(
                operand.dtype)).item()
            return order.from_bits(self.gather(order.bits(operand), index, fill_bits),
                                   operand.dtype)
        if self.kind == "detect":
            geom, flat = self.per_element(index)
            return geom.gather(operand, flat, fill)
        dnums, sizes = self._gather()
        out = lax.gather(self._operand_in(operand), index, dnums, sizes, mode=_DROP,
                         fill_value=fill, indices_are_sorted=False, unique_indices=False)
        return out.reshape(self.updates_shape)


# Floating max runs on integer keys unless the caller knows XLA's float max is exact for the
# input: XLA finishes a scatter split over devices with a cross-device max that on CPU drops NaN
# and ignores the sign of zero, and its CPU scatter-max flushes a subnormal result to zero; an
# integer max is exact everywhere, at about 4x the cost of the row scatter itself.
def ieee_key(x: jax.Array) -> jax.Array:
    """The IEEE-754-2019 ``maximum`` order as signed integers: the bits, with the magnitude
    bits of negative numbers flipped (so ``-0 < +0``), and NaN (either sign) above ``+inf``
    with its payload kept."""
    signed = np.dtype(f"int{8 * np.dtype(x.dtype).itemsize}")
    b = lax.bitcast_convert_type(x, signed)
    key = jnp.where(b < 0, b ^ _top(b), b)
    return jnp.where(jnp.isnan(x), b & _top(b), key)


def _top(key: jax.Array):
    """Every bit but the sign, in `key`'s type."""
    return key.dtype.type(np.iinfo(key.dtype).max)


def any_true(mask: jax.Array) -> jax.Array:
    """``jnp.any(mask)`` as a float max: XLA's CPU compiler builds a float reduction several
    times faster than a boolean or integer one, and these checks sit in every compiled scatter."""
    return jnp.max(jnp.where(mask, np.float32(1), np.float32(0)), initial=np.float32(0)) > 0


def when(flag: jax.Array, true_fn, false_fn, *operands):
    """``lax.cond`` taking `true_fn` when the float scalar `flag` is NaN or ``-inf`` (it is
    raised), `false_fn` otherwise.

    XLA:CPU compiles each conditional's predicate as a kernel of its own (about 10 ms of LLVM
    apiece on a loaded machine), but compiles identical kernels once per program. The scatter
    rules ask every flag the same way (``not flag > -inf``), so their predicates are one
    kernel: a flag is a float sum whose terms are NaN or ``-inf`` where the branch is wanted
    and never ``-inf`` elsewhere (a sum keeps a NaN, and a ``-inf`` unless a ``+inf`` makes it
    NaN), or is chosen by another `when` (`either`), never scalar arithmetic on reductions,
    which would be a kernel of its own."""
    return lax.cond(~(flag > -np.inf), true_fn, false_fn, *operands)


def flag(mask: jax.Array) -> jax.Array:
    """A `when` flag: NaN (raised) when `mask` holds a true element, else zero."""
    nan, zero = np.float32(np.nan), np.float32(0)
    return jnp.sum(order.select(mask, nan, zero), dtype=np.float32)


def either(first: jax.Array, second, *operands) -> jax.Array:
    """The `when` flag `first` or, when it is not raised, ``second(*operands)`` (computed only
    then): an or of two flags that adds no scalar kernel."""
    nan = np.float32(np.nan)
    return when(first, lambda *_: jnp.asarray(nan), lambda *a: second(*a).astype(np.float32),
                *operands)


def signed_index_dtype(extent: int) -> np.dtype:
    """int32 when every offset below `extent` (and `extent` itself, the drop sentinel) fits in
    it, else int64 (only available with ``jax_enable_x64``)."""
    return np.dtype(np.int32) if extent < 2**31 - 1 else np.dtype(np.int64)


def normalised(indices: jax.Array, size: int, dtype) -> jax.Array:
    """`indices` into an axis of `size` in `dtype`: ``[-size, -1]`` counts from the end and
    every other value outside ``[0, size)`` becomes `size` (dropped by ``FILL_OR_DROP``), so that
    nothing wraps or clamps; the comparisons run in a type that holds every index value."""
    src = np.dtype(indices.dtype)
    info = np.iinfo(src)
    wide = np.dtype(dtype)
    if info.min >= np.iinfo(wide).min and info.max <= np.iinfo(wide).max:
        idx = indices.astype(wide)  # widened first: `size` may not fit in a narrow index type
        valid = (idx >= -size) & (idx < size)
        return order.select(valid, order.select(idx < 0, idx + wide.type(size), idx),
                            wide.type(size))
    # a wider or unsigned source: compare in its own type, where `size` (< 2**31) fits
    top = src.type(size)
    if info.min < 0:
        valid = (indices >= -top) & (indices < top)
        shifted = jnp.where(indices < 0, indices + top, indices)
    else:
        valid = indices < top
        shifted = indices
    return jnp.where(valid, shifted, top).astype(wide)


def element_offsets(norm: jax.Array, operand_shape: tuple[int, ...], axis: int,
                    dtype) -> jax.Array:
    """Flat operand offsets of every update element (the "elements" index, ``(n, 1)``): the
    normalised index along `axis` and each element's own coordinate on the other axes. A dropped
    index (== ``operand_shape[axis]``) maps to ``size(operand)``, out of range."""
    dtype = np.dtype(dtype)
    strides = [math.prod(operand_shape[d + 1:]) for d in range(len(operand_shape))]
    size = math.prod(operand_shape)
    flat = norm.astype(dtype) * dtype.type(strides[axis])
    for d in range(norm.ndim):
        if d != axis and strides[d]:
            flat = flat + lax.broadcasted_iota(dtype, norm.shape, d) * dtype.type(strides[d])
    flat = order.select(norm == operand_shape[axis], dtype.type(size), flat)
    return flat.reshape(-1, 1)
