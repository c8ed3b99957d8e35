"""Gradients move outputs, never inputs: the bytes each sharded gradient moves between devices.

For every case of tests/multiprocess_cases.py marked ``grad`` and each of its layouts, the
gradient tests/test_multiprocess.py checks across processes, ``d(sum(first output * weights))
/ d(first input)`` (`collectives.gradient`), is jitted alone on 4 of the session's 8 CPU devices
of an ``Explicit`` mesh and its compiled program read (tests/collectives.py). It is held to
`collectives.gradient_violations`: at most the forward's outputs and halo plus the backward's
allowance per device (`collectives.gradient_bound`: the output cotangent, one index per output
element, the halo), and nothing of the differentiated input's size moved (the input, its
cotangent or a partial sum of it, whole). What is over and no lowering fixes yet is listed in
`OVER`, strictly expected to fail with its measured reason: a change that fixes one must move
it out of the list, and a change that makes another gradient move its input fails here.

The programs are compiled with jaxmax's fast-compile options, as tests/test_collectives.py
compiles the values' programs (the collectives are placed before any code is generated);
`test_the_fast_options_move_what_the_default_compile_moves` holds that on a sample of gradients
that between them move data with collective-permute, all-gather, all-reduce and all-to-all.
"""

from __future__ import annotations

import functools

import collectives
import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P
from multiprocess_cases import CASES, by_name

from jaxmax._src.lowering import compile_options

STRIDE_ONE = (
    "MaxPool's derivative takes the tangent at each window's winner by its index flat over the "
    "(H, W) plane (lowering/pooling/compact.py `_gather`, a take_along_axis): along a sharded "
    "spatial axis XLA's partitioner cannot split that gather and its transposed scatter-add by "
    "rows, so along H it sums a whole f32[4,8,256] partial input cotangent across devices "
    "(all-reduce, op transpose(jvp(take_along_axis))/scatter-add) and along W it all-gathers "
    "the cotangent whole (f32[4,8,16,16], op transpose(jvp())/reshape; the winners too, "
    "s32). At stride 2 the same collectives carry the output's size (f32[4,8,64]), within "
    "the bound; a backward by window taps, whose slices the partitioner splits with halo "
    "exchanges as it does the forward's reduce_window, would move the halo alone")
SCATTER = (
    "the scatter's derivative (lowering/scatter/rules.py `gradients`) runs under auto_axes, "
    "the partitioner's form (lowering/scatter/across.py `_with_gradients`): it scatters the "
    "winners' positions over the updates and gathers them back at the targets, and with the "
    "data and the updates sharded XLA all-gathers data-sized position and key arrays and the "
    "data cotangent whole (u32/s32/f32[128] or [16,8], ops transpose(jvp())/gather, "
    "/scatter-max, /scatter-add, /reshape): 2.0-3.6 KiB for a 1.5 KiB bound, where each "
    "device's block of the data gradient needs its block's cotangent and one all-reduce of "
    "output-sized keys")
SEU_12 = (
    "ScatterElementsUpdate-12's forward already moves more than its output with the updates "
    "sharded along the scatter axis (tests/test_collectives.py: the last NaN's device and the "
    "runs' keys, 640 B for a 512 B output), and its backward all-reduces two data-sized "
    "position arrays (s32[128], op transpose(jvp())/scatter-max; XLA fuses one with the "
    "forward's pmax into a tuple all-reduce): 1664 B for a 1536 B bound")

OVER = {
    ("openvino.max_pool MaxPool-1 k3 s1 p1 (stride 1)", "H"): STRIDE_ONE,
    ("openvino.max_pool MaxPool-1 k3 s1 p1 (stride 1)", "W"): STRIDE_ONE,
    ("onnx.max_pool MaxPool-1 k3 s1 same_lower", "H"): STRIDE_ONE,
    ("onnx.max_pool MaxPool-1 k3 s1 same_lower", "W"): STRIDE_ONE,
    ("onnx.scatter_elements ScatterElements-18 max axis 0", "scatter axis, all three"): SCATTER,
    ("onnx.scatter_elements ScatterElements-18 max axis 1", "other axis, all three"): SCATTER,
    ("openvino.scatter_elements_update SEU-12 max axis 0", "scatter axis, all three"): SCATTER,
    ("openvino.scatter_elements_update SEU-12 max axis 0", "indices and updates only"): SEU_12,
    ("openvino.scatter_elements_update SEU-12 max axis 1 use_init_val False",
     "other axis, all three"): SCATTER,
}

GRADIENTS = [(c, layout) for c in CASES if c.grad for layout in c.layouts]


def _params():
    for case, layout in GRADIENTS:
        marks = ()
        reason = OVER.get((case.name, layout))
        if reason is not None:
            marks = (pytest.mark.xfail(strict=True, reason=reason),)
        yield pytest.param(case, layout, marks=marks, id=f"{case.name} [{layout}]")


@functools.cache
def _measured(name: str, layout: str) -> collectives.Row:
    """The gradient of case `name` on `layout` over 4 devices, compiled with the fast options
    (once a process: the sample test reads the same rows)."""
    return collectives.measure(by_name(name), layout, jax.devices()[:4],
                               compile_options.fast_compile(), grad=True)


@pytest.mark.parametrize("case,layout", list(_params()))
def test_gradients_move_outputs_not_inputs(case, layout):
    row = _measured(case.name, layout)
    problems = collectives.gradient_violations(row, case)
    assert not problems, f"{row.case} [{row.layout}]: " + "; ".join(problems) + "\n" + \
        "\n".join(f"{c.shape} {c.kind} ({c.op_name})" for c in row.collectives)


def test_every_over_entry_is_a_gradient_row():
    assert set(OVER) <= {(c.name, layout) for c, layout in GRADIENTS}


# (case, layout): between them collective-permute (a pool's halo), all-gather and all-reduce
# (the scatter's backward, run by the partitioner), and all-to-all (TopK's forward)
SAMPLE = [
    ("openvino.max_pool MaxPool-1 k3 s2 same_upper", "H"),
    ("onnx.top_k TopK-24 K 3 axis 1", "channels (reduced)"),
    ("onnx.scatter_elements ScatterElements-18 max axis 0", "scatter axis, all three"),
]


@pytest.mark.parametrize("name,layout", SAMPLE, ids=[f"{n} [{lay}]" for n, lay in SAMPLE])
def test_the_fast_options_move_what_the_default_compile_moves(name, layout):
    """The same collectives, of the same shapes, with XLA's default options as with the fast
    ones the test above compiles with."""
    fast = _measured(name, layout)
    default = collectives.measure(by_name(name), layout, jax.devices()[:4], grad=True)
    assert default.collectives, f"{name} [{layout}] moves nothing: not a sample"
    assert fast.collectives == default.collectives, f"{name} [{layout}]"


def test_the_sample_holds_every_kind_a_gradient_moves():
    kinds = {c.kind for name, layout in SAMPLE for c in _measured(name, layout).collectives}
    assert kinds == {"collective-permute", "all-gather", "all-reduce", "all-to-all"}, kinds


def test_the_bound_reads_the_backward_apart():
    """`collectives.backward` tells the backward's collectives by JAX's ``transpose(...)`` op
    names: a pool's forward halo exchange is not, its transposed gather is."""
    row = _measured("openvino.max_pool MaxPool-1 k3 s2 same_upper", "H")
    kinds = {(c.kind, collectives.backward(c)) for c in row.collectives}
    assert ("collective-permute", False) in kinds and ("all-gather", True) in kinds, kinds


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
