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
(:mod:`jaxmax._src.auto_partition`); every other pool is left to XLA's partitioner.

See docs/semantics.md §5 for the rules and §9 for the jit contract.
"""

from __future__ import annotations

import math

import jax
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, dtypes, explicit_axes
from jaxmax._src.lowering import compile_options, rules
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
                                   "cross_device", "index_dtype", "layout", "auto"))
def _max_pool_jit(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...],
                  padding: tuple[tuple[int, int], ...], dilation: tuple[int, ...], nan: str,
                  cross_device: bool, index_dtype: np.dtype | None, layout: IndexLayout,
                  auto: bool = False):
    g = pool_geometry.geometry(x.shape, window, strides, padding, dilation,
                               sharded=cross_device)

    def local(block, block_padding, with_indices):
        return _max_pool_jit(block, window, strides, block_padding, dilation, nan, False,
                             index_dtype if with_indices else None, IndexLayout())

    if pool_halo.applies(x, g):  # a pooled axis sharded whose output does not divide
        return pool_halo.max_pool(x, g, index_dtype, layout, local)
    compact = pool_compact.applies(g, x.dtype.itemsize)
    # the compact form's derivative tap by tap where a pooled axis is sharded over Explicit
    # mesh axes, every stride is 1 and the window has few taps (pool_compact.pooled,
    # `by_taps`): at larger strides the flat gather moves output-sized arrays only
    by_taps = (compact and max(g.strides) == 1
               and math.prod(g.window) <= pool_compact.MAX_UNROLLED_TAPS
               and _pooled_axis_sharded(x, g))

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

    if (auto and not explicit_axes.names_of(x)
            and pool_halo.may_apply(x, g, jax.device_count())):
        return _on_auto_axes(x, g, compute, index_dtype, layout, local)
    return explicit_axes.run(compute, (x,), out_spec, outputs=1 if index_dtype is None else 2)


def _on_auto_axes(x: jax.Array, g: Geometry, compute, index_dtype: np.dtype | None,
                  layout: IndexLayout, local):
    """``compute(x)`` where XLA chooses the sharding (:mod:`jaxmax._src.auto_partition`), for
    the pools the halo form may take (`pool_halo.may_apply`): sharded along pooled axes that
    fit the exchange, that form's per-device part (`pool_halo.per_device`), the pooled axes of
    the output replicated as the sharding rule keeps them (a pooled output axis has a length
    of its own); along the others only, each device pools its own block (the same part without
    an exchange). The input is gathered otherwise. The derivative is the one-device form's."""
    identity = [(a.k, a.s, a.lo, a.hi, a.d) == (1, 1, 0, 0, 1) for a in g.axes]
    outputs = 1 if index_dtype is None else 2

    def plain(v):
        out = compute(v)
        return (out,) if outputs == 1 else tuple(out)

    def planner(mesh, specs):
        spec = specs[0]
        if not auto_partition.even(mesh, spec, x.shape):
            return None
        found = pool_halo.splits(spec, mesh, g, uneven=False)
        if found is None:
            return None
        out_spec = tuple(e if same else None for e, same in zip(spec, identity, strict=True))
        form = pool_halo.per_device(g, spec, out_spec, mesh, found, index_dtype, layout, local)

        def per_device(block):
            out = form.primal(block)
            return (out,) if outputs == 1 else tuple(out)
        return auto_partition.Plan(per_device, (spec,), (out_spec,) * outputs)

    def jvp(primals, tangents, out):
        del out
        return jax.jvp(plain, primals, tangents)[1]

    kept = tuple((0, i) if same else None for i, same in enumerate(identity))
    got = auto_partition.call(plain, planner, (x,), kept=(kept,) * outputs, jvp=jvp)
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
