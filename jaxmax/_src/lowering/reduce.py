"""ReduceMax (and ReduceLogicalOr) lowering, both values rules (``nan="propagate" | "skip"``,
:mod:`jaxmax._src.lowering.rules`): one jitted function.

Every public function takes canonical static arguments (tuples of Python ints, bools, strings)
that the adapters have validated, adds what the lowering decides itself (whether partial results
may be combined across devices, :func:`jaxmax._src.lowering.rules.cross_device_possible`), and
calls a ``jax.jit(..., inline=True)`` function, so an eager call dispatches a cached executable
and a call inside an outer ``jit`` is inlined into it. Inputs sharded over ``Explicit`` mesh axes
are computed with those axes made ``Auto`` (:mod:`jaxmax._src.explicit_axes`).

The sign of a zero maximum is settled from the data afterwards, only when some result is a zero
(:mod:`jaxmax._src.lowering.signed_zeros`).

Floating data sharded over ``Explicit`` mesh axes along a reduced axis is reduced block by block
and the blocks combined by one integer all-reduce of the output's size
(:mod:`jaxmax._src.lowering.reduce_sharded`).

ReduceMax on one device, on CPU, applies the rule while it reads the data, in one pass
(:mod:`jaxmax._src.lowering.reduce_cpu`), as fast on data with NaN as without.

Elsewhere the plain max runs first with the ``-inf`` identity (so ``lax`` keeps its dedicated max
primitives). Finding NaN: XLA's CPU ``reduce_max`` drops NaN on all but small inputs (jax 0.10
hands such reductions to YNNPACK, ``__ynn_fusion`` in the compiled HLO; docs/semantics.md §9.3),
and so does the cross-device max that combines partial results when a reduced axis is sharded.
So the rule ``nan="skip"`` checks the data's sum too (addition propagates NaN in every order, so
this check is exact; an ``inf + -inf`` can flag NaN-free data, which only sends it down the exact
masked path), and ``nan="propagate"`` finds NaN slices by a sum of squares
(``reduce_cpu.propagating``).
"""

from __future__ import annotations

from functools import partial

import jax
from jax import lax

from jaxmax._src import auto_partition, dtypes, explicit_axes
from jaxmax._src.lowering import compile_options, reduce_cpu, reduce_sharded, rules, signed_zeros


def _max_with_rule(x: jax.Array, axes: tuple[int, ...], nan: str, fold: bool) -> jax.Array:
    """``max`` over `axes` with the values rule `nan`, float data, from the plain reduction (the
    multi-device and non-CPU lowering).

    ``"propagate"``: the plain max is exact on NaN-free slices, and the slices holding a NaN are
    found by a sum of squares, exact across devices too (``reduce_cpu.propagating``).
    ``"skip"``: XLA's ``reduce_max`` and a cross-device max may drop NaN, so the NaN check reads
    the data (a fold of elementwise maxima alone would show every NaN in its result).
    """
    def reducer(v):
        return reduce_cpu.fold_max(v, axes) if fold else reduce_cpu.plain_max(v, axes)

    if nan == "skip":
        return rules.max_skipping_nan(reducer, x, check_data=True)
    return reduce_cpu.propagating(x, axes, reducer)


def _cpu_max(x: jax.Array, axes: tuple[int, ...], nan: str) -> jax.Array:
    """``max`` over `axes` with the values rule `nan`, as fast on data with NaN as without
    (:mod:`jaxmax._src.lowering.reduce_cpu`): the one-device CPU lowering."""
    out = reduce_cpu.max_over(x, axes, nan)
    return rules.at_least_lowest(out) if nan == "skip" else out


def reduce_max(x: jax.Array, axes: tuple[int, ...], keepdims: bool, nan: str) -> jax.Array:
    """Max over `axes` (normalised, unique) with the values rule `nan` (``"propagate"`` or
    ``"skip"``); logical or for bool data (see `_reduce_max_jit`)."""
    return _reduce_max_jit(x, axes, keepdims, rules.check_nan_rule(nan),
                           rules.cross_device_possible(x), rules.several_devices())


@compile_options.jit(static_argnames=("axes", "keepdims", "nan", "cross_device", "auto"))
def _reduce_max_jit(x: jax.Array, axes: tuple[int, ...], keepdims: bool, nan: str,
                    cross_device: bool, auto: bool = False) -> jax.Array:
    """Max over `axes` (normalised, unique); logical or for bool data.

    On CPU, a reduction of leading axes only over a large kept block folds its rows with
    elementwise maxima (XLA's own reduction of outer axes is far slower there); everything else
    is ``lax.reduce_max``. Integers have no NaN and their identity is lowest(T), so both rules
    are the plain max for them. Floating data on ``Auto`` axes (`auto`: several devices in the
    process) takes the same per-device forms once XLA knows the sharding (`_on_auto_axes`).
    """
    if (auto and not explicit_axes.names_of(x)
            and reduce_sharded.combinable(x.dtype, tuple(x.shape), axes, nan)):
        return _on_auto_axes(x, axes, keepdims, nan, cross_device)
    if reduce_sharded.applies(x, axes, nan):  # a reduced axis sharded over Explicit axes
        out = reduce_sharded.reduce_max(
            x, axes, nan, lambda block: _float_max(block, axes, nan, cross_device=False))
        return lax.expand_dims(out, axes) if keepdims else out

    def compute(x):
        return _reduce_max(x, axes, keepdims, nan, cross_device)

    return explicit_axes.run(
        compute, (x,), lambda _: explicit_axes.reduced(explicit_axes.spec_of(x), axes, keepdims))


def _on_auto_axes(x: jax.Array, axes: tuple[int, ...], keepdims: bool, nan: str,
                  cross_device: bool) -> jax.Array:
    """The max of floating `x` where XLA chooses the sharding
    (:mod:`jaxmax._src.auto_partition`): a reduced axis sharded, each device reduces its block
    and one integer all-reduce of the output's size combines the codes
    (``reduce_sharded.combined``, the ``Explicit`` form's per-device function); only kept
    axes sharded, each device reduces its own block and nothing moves. Blocks of unequal
    size are gathered. The derivative is the one-device lowering's (recomputed from the data),
    laid out by the partitioner: planned per device it moved 256 B instead of 768 B on
    GlobalMaxPool and cost every gradient 30-50% more compile on a multi-device host
    (benchmarks/RESULTS.md)."""
    def plain(v, cross=cross_device):
        return (_reduce_max(v, axes, keepdims, nan, cross),)

    def planner(mesh, specs):
        spec = specs[0]
        if not auto_partition.even(mesh, spec, x.shape):
            return None
        out_spec = explicit_axes.reduced(spec, axes, keepdims)
        if not any(explicit_axes.entry_names(spec[a]) for a in axes):
            return auto_partition.Plan(partial(plain, cross=False), (spec,), (out_spec,))

        def per_device(block):
            out = reduce_sharded.combined(
                block, x.shape, spec, axes, nan,
                lambda b: _float_max(b, axes, nan, cross_device=False))
            return (lax.expand_dims(out, axes) if keepdims else out,)
        return auto_partition.Plan(per_device, (spec,), (out_spec,))

    kept = [i for i in range(x.ndim) if i not in axes]
    result = tuple(None if i in axes else (0, i) for i in range(x.ndim)) if keepdims else \
        tuple((0, i) for i in kept)

    def jvp(primals, tangents, outs):
        # the lowering's own derivative (tied maxima share, +0.0 elsewhere), partitioned by XLA
        del outs
        return jax.jvp(plain, primals, tangents)[1]

    return auto_partition.call(plain, planner, (x,), kept=(result,), jvp=jvp)[0]


def _reduce_max(x: jax.Array, axes: tuple[int, ...], keepdims: bool, nan: str,
                cross_device: bool) -> jax.Array:
    if dtypes.is_bool(x.dtype):
        out = lax.reduce_or(x, axes)
    elif not dtypes.is_floating(x.dtype):
        out = rules.by_platform(x, cpu=lambda v: reduce_cpu.max_over(v, axes, nan),
                           default=lambda v: lax.reduce_max(v, axes))
    else:
        out = _float_max(x, axes, nan, cross_device)
        out = signed_zeros.settle(x, axes, out, nan)  # a zero maximum's sign, by the rule
    return lax.expand_dims(out, axes) if keepdims else out


def _float_max(x: jax.Array, axes: tuple[int, ...], nan: str, cross_device: bool) -> jax.Array:
    """The max of floating `x` over `axes` with the rule `nan`, zero signs not settled."""
    def cpu(v):
        if cross_device or not reduce_cpu.one_pass(v.dtype, v.shape, axes, nan):
            # Partial results may meet in a cross-device max, which drops NaN: the plain
            # reduction (never cut into blocks, which would gather a sharded axis) and a
            # check of the data.
            return _max_with_rule(v, axes, nan, reduce_cpu.folds_rows(v.shape, axes))
        return _cpu_max(v, axes, nan)

    return rules.by_platform(x, cpu=cpu,
                             default=lambda v: _max_with_rule(v, axes, nan, fold=False))
