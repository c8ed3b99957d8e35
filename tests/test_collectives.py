"""Collectives move outputs, never inputs: the bytes each sharded call moves between devices.

For every case and layout of tests/multiprocess_cases.py (both faces, every function and form,
sharded along the batch, the channels, the pooled / reduced / top-k / segment / scatter axis,
indices and updates sharded), the program jitted on 4 of the session's 8 CPU devices is read
(tests/collectives.py: all-gather, all-reduce, all-to-all, collective-permute, reduce-scatter,
their tuple and ``-start`` forms, each with its result's bytes on one device) and held to two
rules (`collectives.violations`): at most the outputs' bytes (plus the halo rows a window reads
across shards) per device, and no all-gather of a sharded input whole. What the issue found and
no lowering fixes yet is listed in `OVER`, strictly expected to fail with its reason: a change
that fixes one must move it out of the list, and a change that makes another operator gather
its input fails here. docs/multi-host.md holds the table. The same test holds every row to the
same bound on ``Auto`` mesh axes, where XLA chooses the shardings after tracing; the rows over
it there are in `AUTO_OVER`, strictly expected to fail.

Gradients are held the same way (`test_gradients_move_outputs_not_inputs`): for every case
marked ``grad`` and each of its layouts, the gradient tests/test_multiprocess.py checks across
processes, ``d(sum(first output * weights)) / d(first input)`` (`collectives.gradient`), jitted
alone, to `collectives.gradient_violations`: at most the forward's outputs and halo plus the
backward's allowance per device (`collectives.gradient_bound`: the output cotangent, one index
per output element, the halo), and no array of the differentiated input's dtype and size moved
(the input, its cotangent or a partial sum of it, whole). What is over is in `GRADIENT_OVER`,
strictly expected to fail with the measured instruction. The same test holds the gradients on
``Auto`` mesh axes (`AUTO_GRADIENT_OVER`).

The programs are compiled with jaxmax's fast-compile options (LLVM -O0 and the elemental IR
emitter, jaxmax/_src/lowering/compile_options.py): the collectives are placed by XLA's SPMD
partitioner and collective passes, before any code is generated, and those options cut each
compile about fourfold. `test_the_fast_options_move_what_the_default_compile_moves` holds that
claim on a sample of cases that between them move data with every kind of collective but
all-gather, which none of them moves any more, and on a TopK program on an ``Auto`` mesh that
all-gathers; and on a sample of gradients that move data with collective-permute, all-gather,
all-reduce and all-to-all.
"""

from __future__ import annotations

import functools

import collectives
import jax
import numpy as np
import pytest
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from multiprocess_cases import CASES, by_name

from jaxmax._src.lowering import compile_options

ARG_MAX = ("ArgMax along a sharded axis on Explicit axes all-reduces the blocks' best 32-bit "
           "keys (the output's 4 KiB of int32 indices alone) and then their indices, narrowed "
           "to one byte (5 KiB, 8 KiB before): the key that decides the winner is as wide as "
           "the output, so no exchange that picks the winner fits in the output's bytes "
           "(with jax_enable_x64 the int64 output is 8 KiB and the bound holds)")
SEU_12 = ("ScatterElementsUpdate-12 with the updates sharded along the scatter axis: its fold "
          "acc > u ? acc : u restarts at a NaN, so it is no order-free combine (runs [5], "
          "[NaN, 1], [3] on devices 0, 1, 2 give 3, without device 2 1, without device 1 5: "
          "no max of per-device keys of any width orders them), and "
          "lowering/scatter/across.py exchanges the last NaN's device (one byte per target, "
          "128 B) and then the runs' 32-bit keys (512 B): 640 B for a 512 B output, 1.25x "
          "(3.0-6.6 KiB before)")

OVER = {
    ("onnx.arg_max ArgMax-13 axis 1", "channels (reduced)"): ARG_MAX,
    ("onnx.arg_max ArgMax-13 axis 1 select_last_index keepdims 0", "channels (reduced)"):
        ARG_MAX,
    # (the layouts that shard the updates along the scatter axis: "other axis" is that axis
    # for the axis-1 case)
    ("openvino.scatter_elements_update SEU-12 max axis 0", "scatter axis, all three"): SEU_12,
    ("openvino.scatter_elements_update SEU-12 max axis 0", "indices and updates only"): SEU_12,
    ("openvino.scatter_elements_update SEU-12 max axis 1 use_init_val False",
     "other axis, all three"): SEU_12,
}


# On ``Auto`` mesh axes a traced array's type names no sharding: TopK, SegmentMax, the ROI
# operators, AdaptiveMaxPool, MaxUnpool, the ceil-mode pools, the scatters, the reductions and
# ArgMax choose their per-device forms once XLA's partitioner knows it
# (jaxmax/_src/auto_partition.py). Each row over the bound there is listed, strictly expected to
# fail with the reason of its operator's family (the first prefix of its name in `AUTO_REASONS`).
AUTO_REASONS = {
    "onnx.top_k": "TopK along its own sharded axis gathers no input (one all-to-all moves the "
                  "top-k axis's mesh axes to another axis, lowering/top_k_sharded.py), but XLA's "
                  "propagation lays the output out replicated and all-gathers it on top",
    "openvino.top_k": "as onnx.top_k",
    "onnx.arg_max": "as on Explicit axes: " + ARG_MAX,
    "openvino.scatter_elements_update": "as on Explicit axes: " + SEU_12,
}
AUTO_OVER_ROWS = [
    ('onnx.arg_max ArgMax-13 axis 1', 'channels (reduced)'),
    ('onnx.arg_max ArgMax-13 axis 1 select_last_index keepdims 0', 'channels (reduced)'),
    ('onnx.top_k TopK-24 K 3 axis 1', 'channels (reduced)'),
    ('onnx.top_k TopK-24 K 5 axis 1 smallest unsorted', 'channels (reduced)'),
    ('onnx.top_k TopK-1 k 2 last axis', 'W (top-k axis)'),
    ('openvino.top_k TopK-11 k 3 axis 1 max value', 'channels (reduced)'),
    ('openvino.top_k TopK-11 k 4 axis 1 min index stable i64', 'channels (reduced)'),
    ('openvino.top_k TopK-3 k 2 axis 3 max none', 'W (top-k axis)'),
    ('openvino.scatter_elements_update SEU-12 max axis 0', 'scatter axis, all three'),
    ('openvino.scatter_elements_update SEU-12 max axis 0', 'indices and updates only'),
    ('openvino.scatter_elements_update SEU-12 max axis 1 use_init_val False',
     'other axis, all three'),
]
AUTO_OVER = {row: "on Auto axes: " + next(r for p, r in AUTO_REASONS.items()
                                          if row[0].startswith(p + " "))
             for row in AUTO_OVER_ROWS}


GRADIENTS = [(c, layout) for c in CASES if c.grad for layout in c.layouts]


# no gradient row is over the bound any more (the pools sharded along a pooled axis take their
# derivative per device, each device's cotangent from every window that reads its block,
# lowering/pooling/halo.py; the scatters along their order axis take theirs in blocks,
# lowering/scatter/across.py): a row that goes over is listed here, strictly expected to fail
# with its instruction
GRADIENT_OVER: dict[tuple[str, str], str] = {}

# On ``Auto`` axes a planned call's derivative is a computation of its own: the ROI poolings' and
# RoiAlign's reverse mode is planned too (each device's images or channels,
# lowering/roi_sharded.py), and
# so are the tangents and their transposes of AdaptiveMaxPool, MaxUnpool and the window pools
# (lowering/plane_take.py, lowering/unpool.py, lowering/pooling/max_pool.py), and the along-axis
# scatters' reverse mode (lowering/scatter/auto_derivative.py); the other families' derivatives
# run outside the planned call (custom_partitioning has no differentiation rule)
# and XLA's partitioner lays them out. The rows over the bound there, strictly expected to
# fail with their family's reason:
AUTO_GRADIENT_REASONS = {
    "onnx.global_max_pool": "the derivative's max, tie count and shared sum (each "
                            "output-sized) all-reduced by the partitioner once per mesh axis "
                            "(H and W on two): 768 B for a bound of 384 B (planned per device "
                            "it moved 256 B, for 30-50% more compile on every gradient)",
    "onnx.reduce_max": "as onnx.global_max_pool",
}
AUTO_GRADIENT_OVER_ROWS = [
    ('onnx.global_max_pool GlobalMaxPool-22', 'H and W'),
    ('onnx.reduce_max ReduceMax-13 all axes', 'H and W (reduced)'),
]
AUTO_GRADIENT_OVER = {
    row: "on Auto axes: " + next(r for p, r in AUTO_GRADIENT_REASONS.items()
                                 if row[0].startswith(p + " "))
    for row in AUTO_GRADIENT_OVER_ROWS}


def _params(pairs, over, *axis_type):
    """pytest params of (case, layout) `pairs` (and the mesh `axis_type`, when given), strictly
    xfailed with their reason in `over`."""
    suffix = f" on {axis_type[0]} axes" if axis_type and axis_type[0] != "Explicit" else ""
    for case, layout in pairs:
        marks = ()
        reason = over.get((case.name, layout))
        if reason is not None:
            marks = (pytest.mark.xfail(strict=True, reason=reason),)
        yield pytest.param(case, layout, *axis_type, marks=marks,
                           id=f"{case.name} [{layout}]{suffix}")


@functools.cache
def _measured(name: str, layout: str, grad: bool = False,
              axis_type: str = "Explicit") -> collectives.Row:
    """Case `name` on `layout` over 4 devices of a mesh of `axis_type` axes (its gradient with
    `grad`), compiled with the fast options (once a process: the sample tests below read the
    same rows)."""
    return collectives.measure(by_name(name), layout, jax.devices()[:4],
                               compile_options.fast_compile(), grad=grad, axis_type=axis_type)


ROWS = [(c, layout) for c in CASES for layout in c.layouts]


@pytest.mark.parametrize("case,layout,axis_type", [*_params(ROWS, OVER, "Explicit"),
                                                   *_params(ROWS, AUTO_OVER, "Auto")])
def test_collectives_move_outputs_not_inputs(case, layout, axis_type):
    """Every row on ``Explicit`` mesh axes, and on ``Auto`` ones, where XLA chooses every
    sharding after tracing."""
    row = _measured(case.name, layout, axis_type=axis_type)
    problems = collectives.violations(row, case)
    assert not problems, f"{row.case} [{row.layout}] on {axis_type} axes: " + \
        "; ".join(problems) + "\n" + "\n".join(c.shape + " " + c.kind for c in row.collectives)


@pytest.mark.parametrize("case,layout,axis_type",
                         [*_params(GRADIENTS, GRADIENT_OVER, "Explicit"),
                          *_params(GRADIENTS, AUTO_GRADIENT_OVER, "Auto")])
def test_gradients_move_outputs_not_inputs(case, layout, axis_type):
    row = _measured(case.name, layout, True, axis_type)
    problems = collectives.gradient_violations(row, case)
    assert not problems, f"{row.case} [{row.layout}] on {axis_type} axes: " + \
        "; ".join(problems) + "\n" + \
        "\n".join(f"{c.shape} {c.kind} ({c.op_name})" for c in row.collectives)


def test_every_gradient_over_entry_is_a_gradient_row():
    rows = {(c.name, layout) for c, layout in GRADIENTS}
    assert set(GRADIENT_OVER) <= rows
    assert set(AUTO_GRADIENT_OVER) <= rows


# (case, layout): between them every kind of collective but all-gather (collective-permute for
# halos, all-reduce, all-to-all, reduce-scatter), which no case moves any more on Explicit axes:
# `_gathering` is a program that does
SAMPLE = [
    ("openvino.max_pool MaxPool-1 k3 s1 p1 (stride 1)", "H"),
    ("openvino.max_pool MaxPool-14 k3 s2 ceil_torch", "H and W"),
    ("openvino.adaptive_max_pool AdaptiveMaxPool-8 (5, 3)", "H and W"),
    ("onnx.reduce_max ReduceMax-20 axes [1, 2]", "channels (reduced)"),
    ("onnx.arg_max ArgMax-13 axis 1", "channels (reduced)"),
    ("onnx.top_k TopK-24 K 3 axis 1", "channels (reduced)"),
    ("openvino.segment_max SegmentMax-16 ZERO num_segments 12", "rows (segment axis), ids sharded"),
    ("openvino.scatter_nd_update ScatterNDUpdate-15 max k 2", "indices and updates"),
    ("onnx.scatter_elements ScatterElements-18 max axis 0", "scatter axis, all three"),
    ("onnx.max_unpool MaxUnpool-22 k2 s2", "H"),
]
# gradients: between them collective-permute (a pool's backward halo rows, and those of its
# output cotangent, lowering/pooling/halo.py), all-gather (MaxUnpool's backward), all-to-all
# (TopK's forward), all-reduce and reduce-scatter (the scatter's forward keys and its
# backward's counts, lowering/scatter/across.py)
GRADIENT_SAMPLE = [
    ("openvino.max_pool MaxPool-1 k3 s2 same_upper", "H"),
    ("onnx.max_unpool MaxUnpool-22 k2 s2", "H"),
    ("onnx.top_k TopK-24 K 3 axis 1", "channels (reduced)"),
    ("onnx.scatter_elements ScatterElements-18 max axis 0", "scatter axis, all three"),
]


@pytest.mark.parametrize("name,layout,grad", [(n, lay, False) for n, lay in SAMPLE]
                         + [(n, lay, True) for n, lay in GRADIENT_SAMPLE],
                         ids=[f"{n} [{lay}]" for n, lay in SAMPLE]
                         + [f"gradient {n} [{lay}]" for n, lay in GRADIENT_SAMPLE])
def test_the_fast_options_move_what_the_default_compile_moves(name, layout, grad):
    """The same collectives, of the same shapes, with XLA's default options as with the fast
    ones the tests above compile with."""
    fast = _measured(name, layout, grad)
    default = collectives.measure(by_name(name), layout, jax.devices()[:4], grad=grad)
    assert default.collectives, f"{name} [{layout}] moves nothing: not a sample"
    assert fast.collectives == default.collectives, f"{name} [{layout}]"


@functools.cache
def _gathering(options_name: str) -> tuple[collectives.Collective, ...]:
    """The collectives of `lax.top_k` along an axis sharded over 4 devices of an ``Auto`` mesh
    (XLA's partitioner all-gathers the CPU TopK's operand), compiled with the fast options or
    XLA's defaults."""
    mesh = jax.make_mesh((4,), ("d",), axis_types=(AxisType.Auto,), devices=jax.devices()[:4])
    x = jax.device_put(np.arange(256, dtype=np.float32).reshape(4, 64),
                       NamedSharding(mesh, P(None, "d")))
    options = compile_options.fast_compile() if options_name == "fast" else None
    text = jax.jit(lambda v: lax.top_k(v, 3)).lower(x).compile(options).as_text()
    return tuple(collectives.moved(text))


def test_the_fast_options_move_what_the_default_compile_moves_in_a_gather():
    assert "all-gather" in {c.kind for c in _gathering("default")}
    assert _gathering("fast") == _gathering("default")


def test_the_sample_holds_every_kind():
    kinds = {c.kind for name, layout in SAMPLE for c in _measured(name, layout).collectives}
    kinds |= {c.kind for c in _gathering("fast")}
    assert kinds == set(collectives.KINDS), kinds


def test_the_gradient_sample_holds_every_kind_a_gradient_moves():
    kinds = {c.kind for name, layout in GRADIENT_SAMPLE
             for c in _measured(name, layout, True).collectives}
    assert kinds == set(collectives.KINDS), kinds


def test_the_bound_reads_the_backward_apart():
    """`collectives.backward` tells the backward's collectives by JAX's ``transpose(...)`` op
    names: MaxUnpool's forward all-reduce is not, its backward's all-gather is."""
    row = _measured("onnx.max_unpool MaxUnpool-22 k2 s2", "H", True)
    kinds = {(c.kind, collectives.backward(c)) for c in row.collectives}
    assert kinds == {("all-reduce", False), ("all-gather", True)}, kinds


def test_the_parser_reads_every_form():
    text = """
  %all-gather = f32[4,8]{1,0} all-gather(f32[1,8]{1,0} %p), dimensions={0}
  %all-reduce.1 = (f32[2]{0}, s32[2]{0}) all-reduce(f32[2]{0} %a, s32[2]{0} %b), to_apply=%max
  %ags = (f32[1,8]{1,0}, f32[4,8]{1,0}) all-gather-start(f32[1,8]{1,0} %p), dimensions={0}
  %agd = f32[4,8]{1,0} all-gather-done((f32[1,8]{1,0}, f32[4,8]{1,0}) %ags)
  %cp = (bf16[3]{0}, bf16[3]{0}, u32[], u32[]) collective-permute-start(bf16[3]{0} %q)
  ROOT %a2a = pred[16]{0} all-to-all(pred[16]{0} %r), dimensions={0}
  %add = f32[4,8]{1,0} add(f32[4,8]{1,0} %x, f32[4,8]{1,0} %y)
"""
    got = [(c.kind, c.nbytes) for c in collectives.moved(text)]
    assert got == [("all-gather", 128), ("all-reduce", 16), ("all-gather", 128),
                   ("collective-permute", 6), ("all-to-all", 16)]

class _Case:
    """A stand-in for a `multiprocess_cases.Case`: an f32 input of 128 elements sharded, an
    int32 one of 128 replicated."""

    layouts = {"rows": (P("d"), None)}

    @staticmethod
    def inputs():
        return np.zeros((16, 8), np.float32), np.zeros((16, 8), np.int32)


def _row(*collectives_: collectives.Collective) -> collectives.Row:
    return collectives.Row("stand-in", "rows", 4, collectives_, 1024, 512, 0,
                           collectives.gradient_bound(jax.ShapeDtypeStruct((16, 8),
                                                                           np.float32), 0))


def test_the_rules_flag_what_moves_an_input_and_pass_what_moves_outputs():
    """The bound is the outputs' bytes plus the backward's (the output cotangent, an index per
    output element); an array of the sharded input's dtype and size is flagged whatever it
    is, integer keys of that size are not, and the bytes bind them all."""
    bwd = "jit(fn)/transpose(jvp())/scatter-add"
    keys = collectives.Collective("all-reduce", 512, "s32[16,8]{1,0}", "jit(fn)/jvp()/pmax")
    whole = collectives.Collective("all-reduce", 512, "f32[128]{0}", bwd)
    block = collectives.Collective("all-gather", 128, "f32[32]{0}", bwd)
    assert _row().bound == 512 + 512 + 128 * 4
    assert collectives.gradient_violations(_row(keys, block), _Case) == []
    assert collectives.gradient_violations(_row(keys, whole), _Case) == [
        "backward all-reduce f32[128]{0} is sharded input 0 whole (or its cotangent, or a "
        "partial sum of it)"]
    over = collectives.gradient_violations(_row(keys, keys, keys, keys, block), _Case)
    assert over == ["moves 2176 B per device, more than the outputs' 512 B + halo 0 B + the "
                    "backward's 1024 B"]
    assert collectives.backward(whole) and not collectives.backward(keys)



STRIDE_ONE = ["openvino.max_pool MaxPool-1 k3 s1 p1 (stride 1)",
              "onnx.max_pool MaxPool-1 k3 s1 same_lower"]


@functools.cache
def _derivatives(name):
    """The gradient (the cotangent an argument) and the forward-mode tangent of case `name`'s
    first output, each jitted once: the two data sets and the three layouts share the
    one-device programs (a cotangent closed over was a constant, and a program of its own)."""
    fn = by_name(name).fn

    @jax.jit
    def grad(v, w):
        return jax.grad(lambda u: (jax.tree.leaves(fn(u))[0] * w).sum())(v)

    @jax.jit
    def tangent(v, t):
        return jax.jvp(lambda u: jax.tree.leaves(fn(u))[0], (v,), (t,))[1]

    return grad, tangent


@pytest.mark.parametrize("layout", ["H", "W", "H and W"])
@pytest.mark.parametrize("name", STRIDE_ONE)
def test_stride_one_gradients_sharded_along_a_pooled_axis_are_the_unsharded_bits(name, layout):
    """The stride-1 pools' derivatives sharded along H or W (taken per device there, each
    device's cotangent from every window that reads its block, lowering/pooling/halo.py
    `_Form.cotangent`) are the one-device ones bit for bit. The gradient sums each element's
    cotangents in the one-device order: with random normal cotangents (inexact sums, whose order
    shows: the partitioner's all-reduce of per-device partial sums differed in 123-136
    elements along H), and with every cotangent -0.0 on distinct values (an element that wins
    all nine of its windows sums nine -0.0 terms, +0.0 from a +0.0 start). The forward-mode
    tangent of a tangent a third -0.0 is the one-device one too (the partitioner's form gave
    +0.0 for 240-1,373 of them)."""
    case = by_name(name)
    (tricky,) = case.inputs()
    rng = np.random.default_rng(4)
    distinct = rng.permutation(tricky.size).astype(np.float32).reshape(tricky.shape)
    t = np.where(rng.random(tricky.shape) < 0.3, -0.0, rng.standard_normal(tricky.shape))
    t = t.astype(np.float32)
    grad, tangent = _derivatives(name)
    for x, w in ((tricky, rng.standard_normal(tricky.shape).astype(np.float32)),
                 (distinct, np.full(tricky.shape, -0.0, np.float32))):
        xs, ts = collectives.placed(case, layout, jax.devices()[:4], (x, t))
        assert tuple(xs.sharding.spec) == tuple(case.layouts[layout][0])
        for fn, sharded, one in ((grad, (xs, w), (x, w)), (tangent, (xs, ts), (x, t))):
            got = np.asarray(fn(*sharded)).view(np.uint32)
            want = np.asarray(fn(*one)).view(np.uint32)
            assert np.array_equal(got, want), (fn.__name__, int((got != want).sum()))


ORDER_AXIS_SCATTERS = [
    "onnx.scatter_elements ScatterElements-18 max axis 0",
    "onnx.scatter_elements ScatterElements-18 max axis 1",
    "openvino.scatter_elements_update SEU-12 max axis 0",
    "openvino.scatter_elements_update SEU-12 max axis 1 use_init_val False",
]


@pytest.mark.parametrize("axis_type", ["Explicit", "Auto"])
@pytest.mark.parametrize("name", ORDER_AXIS_SCATTERS)
def test_scatter_gradients_in_blocks_are_the_unsharded_bits(name, axis_type):
    """The scatters whose updates are sharded along their order axis take both cotangents
    (data and updates) in blocks (lowering/scatter/across.py `maximum_block`, `acc_gt_block`;
    on ``Auto`` axes planned per device, lowering/scatter/auto_derivative.py): the one-device
    ones bit for bit, on data and updates drawn from a few values (ties everywhere, NaN that
    restarts ScatterElementsUpdate-12's fold on any device, -inf, both zeros), negative
    indices, and a cotangent a fifth -0.0, on every layout that shards the updates."""
    case = by_name(name)
    axis = int(name.split("axis ")[1][0])
    values = np.array([-0.0, 0.0, 1.0, np.nan, 2.0, -np.inf, -1.0], np.float32)
    data, updates, indices = case.inputs()

    # the cotangent an argument, jitted once: the three seeds share each layout's program
    @jax.jit
    def grads(d, u, i, w):
        return jax.grad(lambda d, u: (case.fn(d, u, i) * w).sum(), argnums=(0, 1))(d, u)

    for seed in range(3):
        rng = np.random.default_rng(seed)
        d, u = (rng.choice(values, size=a.shape) for a in (data, updates))
        n = data.shape[axis]
        i = rng.integers(-n, n, size=indices.shape).astype(indices.dtype)
        w = np.where(rng.random(data.shape) < 0.2, -0.0, rng.standard_normal(data.shape))
        w = w.astype(np.float32)
        want = [np.asarray(a).view(np.uint32) for a in grads(d, u, i, w)]
        for layout, specs in case.layouts.items():
            if specs[1] is None:
                continue
            args = collectives.placed(case, layout, jax.devices()[:4], None, axis_type)
            args = [jax.device_put(a, b.sharding) for a, b in zip((d, u, i), args, strict=True)]
            got = [np.asarray(a).view(np.uint32) for a in grads(*args, w)]
            for part, g, x in zip(("data", "updates"), got, want, strict=True):
                assert np.array_equal(g, x), (layout, seed, part, int((g != x).sum()))
