"""Arrays on ``Auto`` mesh axes: a lowering's per-device form, chosen once XLA knows the shardings.

On ``Explicit`` axes a traced array's type names its sharding, so a lowering picks its
per-device form at trace time (:mod:`jaxmax._src.explicit_axes`, ``jax.shard_map``). On ``Auto``
axes the type names none: the sharding is chosen by XLA's propagation, after tracing, and XLA's
partitioner then decides what moves (it gathers the whole input before the CPU ``TopK``, and the
data of a scatter). `call` wraps a one-device computation in
``jax.experimental.custom_partitioning``:

* compiled for one device, the computation is inlined as it is;
* compiled for a mesh, XLA's SPMD partitioner passes the operands' shardings to the caller's
  `Plan` function, which returns the per-device function (the body the ``Explicit`` form runs
  in ``jax.shard_map``, collectives over the mesh axis names included) with the specs it takes
  and gives; or None, and the operands are gathered and every device computes the whole answer
  (what the partitioner does for ``TopK`` on its own). The per-device function is traced with
  no mesh in context: under a ``jax.set_mesh`` of ``Explicit`` axes (a replicated input takes
  this call) JAX 0.12 gave its ops that mesh's sharding, ``Sharding`` annotations XLA then
  found inside the partitioned body (no implementation on the host; some programs aborted in
  the partitioner).

``custom_partitioning`` has no batching or differentiation rules of its own: under ``jax.vmap``
the computation runs as it is (a ``custom_vmap`` rule; the partitioner then decides), and the
caller gives the derivative as a ``jvp`` from the primal outputs (a ``custom_jvp``, whose
tangent may be a linear function planned in turn, :mod:`jaxmax._src.linear_calls`), or asks
for the computation's own reverse mode (a ``custom_vjp``, whose backward may be planned in
turn), or none (not differentiable). A call
whose inputs cannot be on several devices (one device in the process, or concrete arrays on
one device) takes the computation itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_batching import custom_vmap
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxmax._src import explicit_axes, linear_calls

Spec = tuple  # one entry per axis: None, a mesh axis name, or a tuple of names


class Plan(NamedTuple):
    """A per-device form: ``per_device(*blocks)`` on each device's blocks of the operands laid
    out as `in_specs`, giving blocks of the outputs laid out as `out_specs` (every mesh axis
    manual: collectives name the mesh axes)."""

    per_device: Callable[..., Any]
    in_specs: tuple[Spec, ...]
    out_specs: tuple[Spec, ...]


Planner = Callable[[Any, tuple[Spec, ...]], "Plan | None"]


def even(mesh, spec: Spec, shape: Sequence[int]) -> bool:
    """Whether every axis of `shape` divides evenly over its mesh axes in `spec` (per-device
    blocks must all have the one shape the plan was traced for)."""
    return explicit_axes.divisible(mesh, spec, tuple(shape)) == tuple(spec)


def all_even(mesh, specs: Sequence[Spec], shapes: Sequence[Sequence[int]]) -> bool:
    """`even` for every operand."""
    return all(even(mesh, s, shape) for s, shape in zip(specs, shapes, strict=True))


Kept = Sequence[Sequence["tuple[int, int] | tuple[int, int, int] | None"]]
Tied = Sequence[tuple[tuple[int, int], tuple[int, int]]]


def call(plain: Callable[..., tuple], planner: Planner, args: Sequence[jax.Array], *,
         kept: Kept, jvp: Callable | None = None, vjp: bool = False,
         backward: Planner | None = None, tied: Tied = (),
         symbolic_zeros: bool = False) -> tuple:
    """``plain(*args)`` (a tuple of arrays), partitioned by `planner` where the partitioner
    runs: ``planner(mesh, specs)`` with the operands' specs on `mesh` (one entry per axis).
    `kept[r][i]`: the ``(operand, axis)`` whose sharding axis `i` of result `r` takes when the
    plan keeps it (XLA's propagation then lays the result out as the plan gives it), or
    ``(operand, axis, m)`` for a result axis `m` times that axis's length (each of its blocks
    `m` times as long), or None.
    `jvp(primals, tangents, outputs)` gives the output tangents (a ``custom_jvp``; with
    `symbolic_zeros`, the tangents of inputs not differentiated come as JAX's
    ``SymbolicZero``: a linear call over the others, whose transpose needs every operand
    linear, can leave them out); or `vjp`:
    reverse mode only, by `plain`'s own ``jax.vjp`` from the inputs (a ``custom_vjp``, for
    computations whose derivative is a ``custom_vjp`` already: their forward, recomputed,
    is dead code where the backward reads only the inputs); neither: not differentiable.
    With `vjp`, `backward` plans that reverse mode in turn: ``backward(mesh, specs)`` with the
    specs of the inputs and then of the output cotangents, a `Plan` whose per-device function
    takes their blocks and gives the blocks of every floating input's cotangent (an input's
    cotangent keeps that input's sharding; an integer input has none); without it the
    partitioner lays the backward out.
    `tied`: pairs ``((operand, axis), (other, its_axis))`` of operand axes that XLA's
    propagation is to shard alike (a cotangent laid out as the primal it pairs with)."""
    # the computation traced once: its constants (arrays it makes from NumPy values) become
    # replicated operands of the wrapped call, which takes none of its own
    closed = jax.make_jaxpr(lambda *a: tuple(plain(*a)))(*args)
    consts = list(closed.consts)
    outs = closed.out_avals
    n = len(args)
    shapes = [tuple(a.shape) for a in (*args, *consts)]
    rule, sizes = _rule(shapes, kept, tied)

    @custom_partitioning
    def partitioned(*a):
        return tuple(jax.core.eval_jaxpr(closed.jaxpr, a[n:], *a[:n]))

    def planned(mesh, arg_shapes) -> Plan:
        specs = tuple(_spec(s.sharding, len(s.shape)) for s in arg_shapes)
        plan = planner(mesh, specs[:n]) if all(
            isinstance(s.sharding, NamedSharding) for s in arg_shapes) else None
        if plan is None:
            return Plan(lambda *a: tuple(plain(*a[:n])), tuple(() for _ in shapes),
                        tuple(() for _ in outs))
        return Plan(lambda *a: tuple(plan.per_device(*a[:n])),
                    tuple(plan.in_specs) + tuple(() for _ in consts), plan.out_specs)

    def partition(mesh, arg_shapes, result_shape):
        del result_shape
        mesh, arg_shapes = _named(mesh, arg_shapes)
        plan = planned(mesh, arg_shapes)

        def per_device(*a):  # a body for each device, not for the mesh (module docstring)
            with jax.sharding.use_abstract_mesh(_NO_MESH):
                return plan.per_device(*a)
        return (mesh, per_device,
                tuple(NamedSharding(mesh, PartitionSpec(*s)) for s in plan.out_specs),
                tuple(NamedSharding(mesh, PartitionSpec(*s)) for s in plan.in_specs))

    def infer(mesh, arg_shapes, result_shape):  # the GSPMD partitioner (Shardy off)
        del result_shape
        mesh, arg_shapes = _named(mesh, arg_shapes)
        return tuple(NamedSharding(mesh, PartitionSpec(*s))
                     for s in planned(mesh, arg_shapes).out_specs)

    partitioned.def_partition(partition=partition, infer_sharding_from_operands=infer,
                              sharding_rule=rule, **sizes)

    @custom_vmap
    def batchable(*a):
        return partitioned(*a, *consts)

    @batchable.def_vmap
    def _batched(axis_size, in_batched, *a):
        del axis_size
        got = jax.vmap(lambda *v: tuple(plain(*v)),
                       in_axes=tuple(0 if b else None for b in in_batched))(*a)
        return got, tuple(True for _ in got)

    if vjp:
        @jax.custom_vjp
        def reversible(*a):
            return batchable(*a)

        def forward(*a):
            return batchable(*a), a

        def backward_rule(primals, cotangents):
            if backward is None:
                return jax.vjp(lambda *v: tuple(plain(*v)), *primals)[1](tuple(cotangents))
            # the planned call gives the floating inputs' cotangents; an integer input's is
            # float0, outside it
            got = iter(reverse(plain, backward, primals, cotangents))
            return tuple(next(got) if _floating(p) else np.zeros(p.shape, jax.dtypes.float0)
                         for p in primals)

        reversible.defvjp(forward, backward_rule)
        return reversible(*args)
    if jvp is None:
        return batchable(*args)

    @jax.custom_jvp
    def differentiable(*a):
        return batchable(*a)

    def _jvp(primals, tangents):
        out = differentiable(*primals)
        return out, jvp(primals, tangents, out)

    differentiable.defjvp(_jvp, symbolic_zeros=symbolic_zeros)

    return differentiable(*args)


#: The mesh context the per-device functions are traced in: none.
_NO_MESH = jax.sharding.AbstractMesh((), ())


def reverse(plain: Callable[..., tuple], backward: Planner, primals: Sequence[jax.Array],
            cotangents: Sequence[jax.Array]) -> tuple:
    """The cotangents of `plain`'s floating inputs (in their order) at `primals`, from the
    cotangents of its outputs: ``plain``'s own ``jax.vjp``, laid out per device by
    ``backward(mesh, specs)`` (`call`'s `backward`: a `Plan` over the inputs' and then the
    output cotangents' specs, giving the floating inputs' cotangents, each laid out as its
    input)."""
    n = len(primals)
    floats = [i for i in range(n) if _floating(primals[i])]

    def reverse_floats(*a):
        got = jax.vjp(lambda *v: tuple(plain(*v)), *a[:n])[1](tuple(a[n:]))
        return tuple(got[i] for i in floats)

    return call(reverse_floats, backward, (*primals, *cotangents),
                kept=[[(i, a) for a in range(primals[i].ndim)] for i in floats])


def _floating(a) -> bool:
    return jnp.issubdtype(a.dtype, jnp.inexact)


def _named(mesh, arg_shapes):
    """`mesh` and `arg_shapes`; or, when the program names no mesh (the operands' shardings are
    not of one), a 1-D mesh of the operands' devices and no shardings to plan from (the
    operands are then gathered)."""
    if not mesh.empty:
        return mesh, arg_shapes
    devices = sorted({d for s in arg_shapes for d in s.sharding.device_set}, key=lambda d: d.id)
    return Mesh(np.array(devices), ("devices",)), [
        jax.ShapeDtypeStruct(s.shape, s.dtype) for s in arg_shapes]


def _spec(sharding, ndim: int) -> Spec:
    if not isinstance(sharding, NamedSharding):
        return (None,) * ndim
    spec = tuple(sharding.spec)
    return spec + (None,) * (ndim - len(spec))


def _rule(shapes: Sequence[tuple[int, ...]], kept: Kept,
          tied: Tied = ()) -> tuple[str, dict[str, int]]:
    """Shardy's rule and the sizes of its factors that no operand axis gives: a factor for every
    axis of every operand (an axis `tied` to another takes that one's), shared by the result
    axes that keep it (`kept`; a multiple, as the major factor of a compound one whose minor
    factor has that size), and one of its own for each other result axis: propagation takes
    each operand's sharding as it comes and gives the results what the plan keeps."""
    operands = [[f"a{o}x{i}" for i in range(len(s))] for o, s in enumerate(shapes)]
    for (o, i), (other, axis) in tied:
        operands[o][i] = operands[other][axis]
    sizes: dict[str, int] = {}
    results = []
    for r, axes in enumerate(kept):
        factors = []
        for i, k in enumerate(axes):
            if k is None:
                factors.append(f"r{r}x{i}")
            elif len(k) == 3 and k[2] > 1:
                sizes[f"m{r}x{i}"] = k[2]
                factors.append(f"({operands[k[0]][k[1]]} m{r}x{i})")
            else:
                factors.append(operands[k[0]][k[1]])
        results.append(factors)
    return (", ".join(" ".join(f) for f in operands) + " -> "
            + ", ".join(" ".join(f) for f in results)), sizes


# ---- collectives for a per-device function that is differentiated where it runs --------------
# Inside the partitioned call every mesh axis is manual and JAX's transposes of ``psum`` and
# ``psum_scatter`` follow ``shard_map``'s convention (a cotangent summed again over the devices,
# then scaled there): differentiated in the per-device function itself, they would count a
# replicated cotangent once per device. These two take the cotangent as each device holds it.


def linear(plain: Callable[..., jax.Array], residuals: tuple, t: jax.Array, *,
           forward: Planner, transpose: Callable[..., Plan | None], kept: Sequence) -> jax.Array:
    """``plain(*residuals, t)``, linear in `t`, with its forward and its transpose each a
    planned `call` (a linear function of :mod:`jaxmax._src.linear_calls`): ``forward(mesh,
    specs)`` plans ``plain`` over the residuals' and `t`'s specs, its result's axes `kept` as
    `call`'s; ``transpose(mesh, specs, reverse)`` plans the transpose over the residuals' and
    the output cotangent's specs, `reverse` being ``plain``'s own transpose (for the plans that
    run it on each device's block). The transpose's result is laid out as ``residuals[0]``,
    which has `t`'s shape, its batch and channel axes tied to the cotangent's. Where the linear
    call does not work, ``plain`` itself."""
    if not linear_calls.available():
        return plain(*residuals, t)
    n = len(residuals)

    def reverse(*args):
        *res, ct = args
        return jax.vjp(lambda v: plain(*res, v), jnp.zeros(res[0].shape, ct.dtype))[1](ct)

    def fwd(res, lin):
        return call(lambda *a: (plain(*a),), forward, (*res, *lin), kept=(kept,))[0]

    def bwd(res, ct):
        return (call(reverse, lambda mesh, specs: transpose(mesh, specs, reverse), (*res, ct),
                     kept=(tuple((0, a) for a in range(t.ndim)),),
                     tied=(((n, 0), (0, 0)), ((n, 1), (0, 1))))[0],)

    return linear_calls.call(fwd, bwd, tuple(lax.stop_gradient(r) for r in residuals), (t,))


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def psum(v: jax.Array, names: tuple[str, ...]) -> jax.Array:
    """``lax.psum(v, names)``, its result replicated over `names`; transposed, each device
    passes on the (replicated) cotangent it holds."""
    return lax.psum(v, names)


def _psum_fwd(v, names):
    return lax.psum(v, names), None


def _psum_bwd(names, _, ct):
    del names
    return (ct,)


psum.defvjp(_psum_fwd, _psum_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def psum_scatter(v: jax.Array, names: tuple[str, ...], axis: int) -> jax.Array:
    """``lax.psum_scatter(v, names, scatter_dimension=axis, tiled=True)``; transposed, the
    devices' cotangent blocks are all-gathered along `axis`."""
    return lax.psum_scatter(v, names, scatter_dimension=axis, tiled=True)


def _psum_scatter_fwd(v, names, axis):
    return lax.psum_scatter(v, names, scatter_dimension=axis, tiled=True), None


def _psum_scatter_bwd(names, axis, _, ct):
    return (lax.all_gather(ct, names, axis=axis, tiled=True),)


psum_scatter.defvjp(_psum_scatter_fwd, _psum_scatter_bwd)
