"""Max pooling, both values rules (``nan="skip" | "propagate"``) and optional flat indices: the
orchestrator of the pooling pipeline.

geometry (:mod:`~jaxmax._src.lowering.pooling.geometry`) -> taps
(:mod:`~jaxmax._src.lowering.pooling.taps`) -> values (:mod:`~jaxmax._src.lowering.pooling.values`)
-> winners (:mod:`~jaxmax._src.lowering.pooling.winners`) -> tangents
(:mod:`~jaxmax._src.lowering.pooling.tangents`, the values with their derivative). `max_pool`
builds the geometry once, computes the values, then the indices from the values; the taps are
read by each later stage. Jitted as :mod:`jaxmax._src.lowering.reduce` describes.

Which form computes the values:

* windows of more than ``pool_compact.MAX_UNROLLED_TAPS`` taps, and inputs of at most
  ``pool_compact.SMALL_BYTES``: the compact form (:mod:`~jaxmax._src.lowering.pooling.compact`:
  one variadic ``reduce_window``, compiled code independent of the window); with indices,
  values and indices from its one reduction on every platform; values alone under ``"skip"``
  on CPU only (elsewhere as the last item);
* otherwise the phase-sliced taps, on every platform for ``"propagate"`` and on CPU (or with
  dilation, which ``reduce_window`` cannot differentiate) for ``"skip"``, whose scan skips NaN
  by itself and needs no check;
* ``"skip"`` elsewhere: ``reduce_window`` with the identity init (which keeps its dedicated,
  differentiable primitive), NaN-checked on its result (where a window's NaN shows), and on the
  data too when partial results may cross devices, then raised to lowest(T).

An input sharded over ``Explicit`` mesh axes along a pooled axis whose output does not divide
over them (ceil rounding) takes the halo form instead
(:mod:`~jaxmax._src.lowering.pooling.halo`: each device pools its own outputs with this
lowering after a halo exchange, and one integer all-reduce gathers them). On ``Auto`` mesh axes
(several devices in the process, no sharding in the input's type) the pools that sharding could
send there (``pool_halo.may_apply``) choose that form once XLA knows the sharding
(:mod:`jaxmax._src.auto_partition`); every other pool's values are left to XLA's partitioner.
Wherever a pooled axis is sharded, on either kind of axes, the derivative is the halo form's
(each device's outputs' tangents, and each device's cotangent from every window that reads its
block: the one-device bits, `pool_halo.with_tangent`, `_AutoForm.tangent`,
`pool_halo.derivative`).

See docs/semantics.md §5 for the rules and §9 for the jit contract.
"""

from __future__ import annotations

import math

import jax
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, dtypes, explicit_axes, linear_calls
from jaxmax._src.lowering import bit_sum, compile_options, rules
from jaxmax._src.lowering.pooling import compact as pool_compact
from jaxmax._src.lowering.pooling import geometry as pool_geometry
from jaxmax._src.lowering.pooling import halo as pool_halo
from jaxmax._src.lowering.pooling import tangents as pool_tangents
from jaxmax._src.lowering.pooling import winners as pool_winners
from jaxmax._src.lowering.pooling.geometry import Geometry
from jaxmax._src.lowering.pooling.winners import IndexLayout

__all__ = ["IndexLayout", "max_pool"]


def max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
             padding: tuple[tuple[int, int], ...], dilation: tuple[int, ...], *, nan: str,
             index_dtype: np.dtype | None = None, layout: IndexLayout | None = None):
    """Max pooling of `x` over `window` with explicit ``(lo, hi)`` `padding` (negative crops),
    every argument one entry per axis of ``(N, C, *spatial)``, under the values rule `nan`.

    Returns the values; with `index_dtype`, ``(values, indices)``: each window's winner (the
    element that also receives its whole cotangent) as a flat index in `layout` (default: over
    the whole input, row-major, -1 without a winner).
    """
    nan = rules.check_nan_rule(nan)
    layout = IndexLayout() if layout is None else layout
    if layout.no_winner not in pool_winners.NO_WINNER:
        raise ValueError(f"max_pool: no_winner must be one of {pool_winners.NO_WINNER}, "
                         f"got {layout.no_winner!r}")
    # also whether the compact form may take its pairs, which XLA's SPMD partitioner aborts on
    # when a pooled axis is sharded over Explicit mesh axes (pool_compact.winners)
    cross_device = rules.cross_device_possible(x)
    return _max_pool_jit(x, window, strides, padding, dilation, nan, cross_device,
                         None if index_dtype is None else np.dtype(index_dtype), layout,
                         rules.several_devices())


@compile_options.jit(static_argnames=("window", "strides", "padding", "dilation", "nan",
                                   "cross_device", "index_dtype", "layout", "auto", "form"))
def _max_pool_jit(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
                  padding: tuple[tuple[int, int], ...], dilation: tuple[int, ...], nan: str,
                  cross_device: bool, index_dtype: np.dtype | None, layout: IndexLayout,
                  auto: bool = False, form: bool | None = None):
    """`max_pool`; `form`: whether the compact form computes it (None: as
    `pool_compact.applies` says), given to each device's part of a sharded input, which then
    takes the whole input's form (the same derivative, its sums in the same order)."""
    g = pool_geometry.geometry(x.shape, window, strides, padding, dilation,
                               sharded=cross_device)
    compact = pool_compact.applies(g, x.dtype.itemsize) if form is None else form

    def local(block, block_padding, with_indices):
        return _max_pool_jit(block, window, strides, block_padding, dilation, nan, False,
                             index_dtype if with_indices else None, IndexLayout(),
                             form=compact)

    if pool_halo.applies(x, g):  # a pooled axis sharded whose output does not divide
        return pool_halo.max_pool(x, g, index_dtype, layout, local)
    # a pooled axis sharded over Explicit mesh axes: the derivative per device (pool_halo);
    # where that form does not fit, the compact form's derivative tap by tap when every stride
    # is 1 and the window has few taps (pool_compact.pooled, `by_taps`; the flat gather moves
    # output-sized arrays only at larger strides)
    form_of_x = pool_halo.explicit_form(x, g, local)
    by_taps = (compact and max(g.strides) == 1
               and math.prod(g.window) <= pool_compact.MAX_UNROLLED_TAPS
               and _pooled_axis_sharded(x, g) and form_of_x is None)

    def compute(x):
        if index_dtype is None:
            return _values(x, g, nan, cross_device, compact, by_taps)
        dtype = index_dtype.type
        if compact:
            # values and indices from one reduction, on every platform: the indices need the
            # compact form's winners wherever it runs, so the values are read from them (a
            # platform choice for the values alone kept a second program in every new
            # shape's jaxpr, and XLA could not share the reduction across it)
            values, index = pool_compact.pooled(x, g, nan, pairs=not cross_device,
                                                by_taps=by_taps)
            return values, pool_compact.indices(index, g, layout, dtype)
        values = _values(x, g, nan, cross_device, compact, False)
        return values, pool_winners.indices(lax.stop_gradient(x), g, lax.stop_gradient(values),
                                            nan, layout, dtype)

    def out_spec(mesh):
        return explicit_axes.divisible(mesh, explicit_axes.spec_of(x), g.out_shape)

    outputs = 1 if index_dtype is None else 2
    if auto and not explicit_axes.names_of(x):
        if pool_halo.may_apply(x, g, jax.device_count()):
            return _on_auto_axes(x, g, compute, index_dtype, layout, local)
        if (dtypes.is_floating(x.dtype)
                and pool_halo.may_apply(x, g, jax.device_count(), divided=True)):
            # the values left to the partitioner (halo rows only), the derivative per device
            auto_form = _AutoForm(x, g, None, layout, local)
            return pool_halo.with_tangent(compute, x,
                                          lambda v, t: auto_form.tangent(v, t, compute),
                                          outputs)
    if form_of_x is not None:  # the partitioner's values, the derivative per device
        mesh = jax.typeof(x).sharding.mesh
        return pool_halo.with_tangent(
            lambda v: explicit_axes.run(compute, (v,), out_spec, outputs=outputs), x,
            lambda v, t: pool_halo.derivative(form_of_x, mesh, v, t), outputs)
    return explicit_axes.run(compute, (x,), out_spec, outputs=outputs)


class _AutoForm:
    """The halo form's per-device parts on ``Auto`` axes, once XLA knows the sharding
    (`pool_halo.per_device`): the input's blocks along pooled axes that fit the exchange, the
    pooled axes of the output replicated as the sharding rule keeps them (a pooled output
    axis has a length of its own; `kept`); along the other axes only, each device pools its
    own block (the same part without an exchange)."""

    def __init__(self, x, g, index_dtype, layout, local):
        self.shape, self.g = tuple(x.shape), g
        self.index_dtype, self.layout, self.local = index_dtype, layout, local
        self.identity = [(a.k, a.s, a.lo, a.hi, a.d) == (1, 1, 0, 0, 1) for a in g.axes]
        self.kept = tuple((0, i) if same else None for i, same in enumerate(self.identity))

    def part(self, mesh, spec, with_indices: bool):
        """The per-device part for an input laid out as `spec`, and the output's spec; None
        where the input is to be gathered."""
        if not auto_partition.even(mesh, spec, self.shape):
            return None
        found = pool_halo.splits(spec, mesh, self.g, uneven=False)
        if found is None:
            return None
        out_spec = tuple(e if same else None
                         for e, same in zip(spec, self.identity, strict=True))
        return pool_halo.per_device(self.g, spec, out_spec, mesh, found,
                                    self.index_dtype if with_indices else None, self.layout,
                                    self.local), out_spec

    def tangent(self, x: jax.Array, t: jax.Array, compute) -> jax.Array:
        """The tangent of the values of ``compute(x)`` along `t`: a linear function of `t`
        (:mod:`jaxmax._src.linear_calls`) whose forward and transpose are each laid out per
        device once XLA knows the sharding. Forward: each device's outputs' tangents from its
        block and halo, the devices' parts added as integer bits (`bit_sum.owner_sum`:
        exact, a ``-0.0`` kept); transpose: each device's cotangent from every output whose
        window reads its block (`pool_halo`'s ``cotangent``: the one-device sums, in the same
        order). XLA's partitioner, given the one-device derivative, all-reduced an input-sized
        cotangent, and summed it in another order. Where no per-device form applies (one
        device) both are the one-device derivative."""
        def values(v):
            return jax.tree.leaves(compute(v))[0]

        if not linear_calls.available():
            return jax.jvp(values, (x,), (t,))[1]
        # traced once, for the forward and the transpose alike (the pool's trace is the
        # larger part of its compile)
        closed = jax.make_jaxpr(lambda v, w: jax.jvp(values, (v,), (w,))[1])(x, t)

        def one_device(v, w):
            return jax.core.eval_jaxpr(closed.jaxpr, closed.consts, v, w)[0]

        def forward(mesh, specs):
            spec, t_spec = specs
            got = self.part(mesh, t_spec, False) if spec == t_spec else None
            if got is None:
                return None
            part, out_spec = got
            return auto_partition.Plan(
                lambda v, w: (part.tangent(v, w, bit_sum.owner_sum),), specs, (out_spec,))

        def transpose(mesh, specs, reverse):
            del reverse  # (the per-device part transposes every layout it takes)
            got = self.part(mesh, specs[0], False)
            if got is None:
                return None
            part, out_spec = got
            return auto_partition.Plan(lambda v, ct: (part.cotangent(v, ct),),
                                       (specs[0], out_spec), (specs[0],))

        return auto_partition.linear(one_device, (x,), t, forward=forward,
                                     transpose=transpose, kept=self.kept)


def _on_auto_axes(x: jax.Array, g: Geometry, compute, index_dtype: np.dtype | None,
                  layout: IndexLayout, local):
    """``compute(x)`` where XLA chooses the sharding (:mod:`jaxmax._src.auto_partition`), for
    the pools the halo form may take (`pool_halo.may_apply`): sharded along pooled axes that
    fit the exchange, that form's per-device part (`_AutoForm`); the input is gathered
    otherwise. The derivative is the one-device form's, laid out the same way
    (`_AutoForm.tangent`)."""
    outputs = 1 if index_dtype is None else 2
    form = _AutoForm(x, g, index_dtype, layout, local)

    def plain(v):
        out = compute(v)
        return (out,) if outputs == 1 else tuple(out)

    def planner(mesh, specs):
        got = form.part(mesh, specs[0], True)
        if got is None:
            return None
        part, out_spec = got

        def per_device(block):
            out = part.primal(block)
            return (out,) if outputs == 1 else tuple(out)
        return auto_partition.Plan(per_device, (specs[0],), (out_spec,) * outputs)

    def jvp(primals, tangents, out):
        del out
        (v,), (t,) = primals, tangents
        tangent = form.tangent(v, t, compute)
        return (tangent,) if outputs == 1 else (
            tangent, np.zeros(g.out_shape, jax.dtypes.float0))

    got = auto_partition.call(plain, planner, (x,), kept=(form.kept,) * outputs, jvp=jvp)
    return got[0] if outputs == 1 else got


def _pooled_axis_sharded(x: jax.Array, g: Geometry) -> bool:
    """Whether `x`'s type shards a pooled axis (one with a window, a stride or padding) over
    ``Explicit`` mesh axes (known at trace time; on ``Auto`` axes the partitioner decides)."""
    spec = explicit_axes.spec_of(x)
    return any(explicit_axes.explicit_only(x, axis) for axis in range(g.lead, x.ndim)
               if spec[axis] is not None)


def _values(x: jax.Array, g: Geometry, nan: str, cross_device: bool,
            compact: bool, by_taps: bool) -> jax.Array:
    """The differentiable pooled values, by the form the module docstring lists (`by_taps`:
    the compact form's derivative tap by tap, `pool_compact.pooled`)."""
    def sliced(v):
        if compact:  # large windows and small inputs: no per-tap code
            return pool_compact.max_pool(v, g, nan, pairs=not cross_device, by_taps=by_taps)
        return pool_tangents.pooled(v, g, nan)

    if nan == "propagate" or max(g.dilation) > 1:
        return sliced(x)
    init = dtypes.max_identity(x.dtype)

    def reduce_window(v):
        return lax.reduce_window(v, init, lax.max, g.window, g.strides, g.padding)

    return rules.by_platform(
        x, cpu=sliced,
        default=lambda v: rules.max_skipping_nan(reduce_window, v, check_data=cross_device))
