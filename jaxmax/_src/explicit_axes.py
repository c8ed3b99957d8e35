"""Computations on arrays sharded over ``Explicit`` mesh axes.

``jax.make_mesh`` builds ``AxisType.Explicit`` axes by default (jax 0.10). On such axes every
intermediate has a sharding in its type, and the CPU lowerings' reshapes, row slices and
scatters have none that JAX can infer (``ShardingTypeError``). `run` therefore computes with
those axes made ``Auto`` (``jax.sharding.auto_axes``), where the partitioner chooses the
intermediate shardings as for any ``Auto`` mesh, and states the output's sharding, which the
operators document:

* reductions keep the sharding of every kept axis (a reduced axis is gone, or has size 1 and is
  replicated with ``keep_dims``);
* pooling keeps the batch and channel axes' sharding, and a spatial axis' sharding when the
  output length divides evenly over its mesh axes (otherwise that axis is replicated);
* SegmentMax replicates the segment axis and keeps the sharding of the trailing axes.

Inputs whose type names no ``Explicit`` axis (unsharded arrays, ``Auto`` meshes) run as they are.

On ``Explicit`` axes the sharding is known at trace time, so a computation along one axis that
is independent across the others can also run block by block (`blockwise`, ``jax.shard_map``)
where the partitioner would move the input (TopK), and `explicit_only` tells a lowering which
mesh axes split its own axis (ArgMax combines its blocks' answers itself).

A lowering whose multi-result operation may be partitioned (MaxPool's variadic
``reduce_window``) passes its results through `open_results`, so that a sharding constraint on
one of them (`run`'s output sharding, or the caller's) cannot leave them sharded differently.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.sharding import AxisType, NamedSharding, PartitionSpec

Spec = tuple  # one entry per axis: None, a mesh axis name, or a tuple of names


def entry_names(entry) -> tuple[str, ...]:
    """The mesh axis names of one partition-spec entry (None, a name, or a tuple of names)."""
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def devices_along(mesh, names: Sequence[str]) -> int:
    """How many devices the mesh axes `names` of `mesh` span together."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes, strict=True))
    return math.prod(sizes[n] for n in names)


def spec_of(x: jax.Array) -> Spec:
    """The partition spec of `x`'s type, one entry per axis."""
    spec = tuple(jax.typeof(x).sharding.spec)
    return spec + (None,) * (x.ndim - len(spec))


def _explicit_names(x: jax.Array) -> tuple[str, ...]:
    mesh = jax.typeof(x).sharding.mesh
    explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types, strict=True)
                if t == AxisType.Explicit}
    return tuple(sorted({n for entry in spec_of(x) for n in entry_names(entry)} & explicit))


def run(compute: Callable[..., Any], args: Sequence[jax.Array],
        out_spec: Callable[[Any], Spec], outputs: int = 1) -> Any:
    """``compute(*args)``, with the ``Explicit`` mesh axes the arguments are sharded over made
    ``Auto`` inside it and the output sharded as ``out_spec(mesh)`` says (each of `outputs`
    outputs of the same shape, when `compute` returns a tuple)."""
    names = tuple(sorted({n for a in args for n in _explicit_names(a)}))
    if not names:
        return compute(*args)
    mesh = next(jax.typeof(a).sharding.mesh for a in args if _explicit_names(a))
    sharding = NamedSharding(mesh, PartitionSpec(*out_spec(mesh)))
    out_sharding = sharding if outputs == 1 else (sharding,) * outputs
    return jax.sharding.auto_axes(compute, axes=names, out_sharding=out_sharding)(*args)


def names_of(x: jax.Array) -> tuple[str, ...]:
    """Every mesh axis name `x`'s sharding type names."""
    return tuple(sorted({n for entry in spec_of(x) for n in entry_names(entry)}))


def explicit_only(x: jax.Array, axis: int) -> tuple[str, ...]:
    """The mesh axes `x` is sharded over along `axis`, when every mesh axis `x` is sharded over
    is ``Explicit`` (then ``jax.shard_map`` can compute block by block); ``()`` otherwise."""
    spec = spec_of(x)
    names = {n for entry in spec for n in entry_names(entry)}
    if not names or set(_explicit_names(x)) != names or not _even(x):
        return ()
    return entry_names(spec[axis])


def _even(x: jax.Array) -> bool:
    """Whether every sharded axis of `x` divides evenly over its mesh axes (``jax.shard_map``
    needs equal blocks)."""
    mesh = jax.typeof(x).sharding.mesh
    return divisible(mesh, spec_of(x), tuple(x.shape)) == spec_of(x)


def blockwise(compute: Callable[[jax.Array], Any], x: jax.Array, axis: int,
              out_spec: Callable[[Any], Spec], outputs: int = 1) -> Any:
    """``compute(x)`` for a computation along `axis` that is independent across every other
    axis: when `x` is sharded over ``Explicit`` mesh axes only, and not along `axis`, each
    device computes its own block (``jax.shard_map``, no collective: XLA's partitioner gathers
    the whole input before some primitives, ``lax.top_k`` on CPU among them); otherwise as
    `run`. The output of each block keeps `x`'s sharding."""
    spec = spec_of(x)
    names = {n for entry in spec for n in entry_names(entry)}
    if not names or spec[axis] is not None or set(_explicit_names(x)) != names \
            or not _even(x):
        return run(compute, (x,), out_spec, outputs)
    mesh = jax.typeof(x).sharding.mesh
    block = PartitionSpec(*spec)
    return jax.shard_map(compute, mesh=mesh, in_specs=(block,),
                         out_specs=block if outputs == 1 else (block,) * outputs)(x)


def reduced(spec: Spec, axes: tuple[int, ...], keepdims: bool) -> Spec:
    """The output spec of a reduction over `axes`."""
    if keepdims:
        return tuple(None if i in axes else e for i, e in enumerate(spec))
    return tuple(e for i, e in enumerate(spec) if i not in axes)


def divisible(mesh, spec: Spec, shape: tuple[int, ...]) -> Spec:
    """`spec` for an output of `shape`, each axis replicated unless it divides evenly over its
    axes of `mesh`."""
    return tuple(e if n % devices_along(mesh, entry_names(e)) == 0 else None
                 for e, n in zip(spec, shape, strict=True))


def open_results(like: jax.Array, *results: jax.Array) -> tuple[jax.Array, ...]:
    """`results` (the outputs of one multi-result operation on `like`), each under a sharding
    constraint that leaves every axis to the partitioner, when `like` is typed on a mesh with
    ``Auto`` axes (as inside `run`); unchanged otherwise.

    Shardy moves a sharding constraint whose input has no other use onto the operation that
    produces the input. On a variadic ``reduce_window`` that gives the one constrained result
    its own sharding (replicated, when the pool's output does not divide over the devices:
    `divisible`) and the others their operands', and XLA's SPMD partitioner aborts the process
    on such a mixed tuple (``Check failed: !target.IsReplicatedOrSingleDevice()``). With an open
    constraint in between, every result takes the sharding propagation gives them all.
    """
    mesh = jax.typeof(like).sharding.mesh
    if mesh.empty or AxisType.Auto not in mesh.axis_types:
        return results
    return tuple(jax.lax.with_sharding_constraint(
        r, NamedSharding(mesh, PartitionSpec(*[PartitionSpec.UNCONSTRAINED] * r.ndim)))
        for r in results)
