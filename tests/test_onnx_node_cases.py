"""The ONNX backend node cases of every operator jaxmax has (collected once, in
tests/onnx_node_cases.py) must pass exactly, dtype and zero signs included, in both call forms:
the public function with the node's attributes, and the callable ``jaxmax.onnx.from_node``
binds from the node itself.

They run under ``jax_enable_x64``, as ONNX is 64-bit (int64 indices, int64/uint64 data). Known,
documented deviation (docs/semantics.md §7.2): ``test_maxunpool_export_with_output_shape``
expects onnx.reference's top-left copy of the inferred block; jaxmax follows onnxruntime and
torch (``I`` indexes the given shape), so that case is compared against onnxruntime and torch.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnx.backend.test.case.node")

import onnx_node_cases as nc  # noqa: E402 (after the importorskips)
from onnx import numpy_helper  # noqa: E402

from jaxmax import onnx as jonnx  # noqa: E402
from jaxmax._src.onnx.node import VERSIONS  # noqa: E402

CASES = nc.cases()
#: how many cases the installed onnx (1.23) defines per operator
COUNTS = {"ArgMax": 16, "TopK": 7, "GlobalMaxPool": 2, "MaxPool": 19, "Max": 14,
          "MaxUnpool": 2, "ReduceMax": 11, "ScatterElements": 1, "ScatterND": 2, "RoiAlign": 3,
          "Hardmax": 7}
#: operators whose cases have their own file: RoiAlign's expected values are typed with 4-5
#: significant digits (tests/test_roi_align_node_cases.py compares them at the runner's
#: tolerance, and names test_roialign_mode_max's deviation)
OWN_FILE = {"RoiAlign"}
#: operators onnx 1.23 has no node case for
NO_CASES = {"MaxRoiPool"}


def test_every_case_is_collected():
    counts: dict[str, int] = {}
    for case in CASES.values():
        counts[nc.op_type(case)] = counts.get(nc.op_type(case), 0) + 1
    assert counts == COUNTS
    assert set(counts) == set(VERSIONS) - NO_CASES


def _call(case, inputs):
    """The public jaxmax function called with the node's attributes and runtime inputs."""
    op, opset, attrs = nc.op_type(case), nc.opset(case), nc.attributes(case)
    node = case.model.graph.node[0]
    if op == "MaxPool":
        return jonnx.max_pool(inputs[0], opset=opset, return_indices=len(node.output) == 2,
                              **attrs)
    if op == "GlobalMaxPool":
        return jonnx.global_max_pool(inputs[0], opset=opset)
    if op == "ArgMax":
        return jonnx.arg_max(inputs[0], opset=opset, **attrs)
    if op == "TopK":
        return jonnx.top_k(*inputs, opset=opset, **attrs)
    if op == "Max":
        return jonnx.max(*inputs, opset=opset)
    if op == "MaxUnpool":
        return jonnx.max_unpool(*inputs, opset=opset, **attrs)
    if op == "ScatterElements":
        return jonnx.scatter_elements(*inputs, opset=opset, **attrs)
    if op == "ScatterND":
        return jonnx.scatter_nd(*inputs, opset=opset, **attrs)
    if op == "Hardmax":
        return jonnx.hardmax(inputs[0], opset=opset, **attrs)
    assert op == "ReduceMax", op
    axes = inputs[1] if len(inputs) > 1 else attrs.pop("axes", None)  # an input from 18
    return jonnx.reduce_max(inputs[0], axes, opset=opset, **attrs)


#: the inputs that decide the output shape: the node cases feed them as graph inputs, a model
#: would hold them as initializers; either way from_node needs their values
SHAPE_INPUTS = {("ReduceMax", 1), ("TopK", 1), ("MaxUnpool", 2)}


def _from_node(case, inputs):
    """The callable `from_node` binds from the node, on the node's runtime inputs."""
    model = case.model
    node = model.graph.node[0]
    constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input]
    for k, tensor in enumerate(node.input):
        if (node.op_type, k) in SHAPE_INPUTS and tensor in graph_inputs:
            constants[tensor] = inputs[graph_inputs.index(tensor)]
    f = jonnx.from_node(node, opset=nc.opset(case), constants=constants)
    by_name = dict(zip(graph_inputs, inputs, strict=True))
    return f(*[by_name[name] for name in f.input_names])


def _expected(name, case, inputs, outputs):
    if name not in nc.ORT_INSTEAD:
        return outputs
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(case.model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    want = session.run(None, dict(zip([i.name for i in case.model.graph.input], inputs,
                                      strict=True)))
    assert not np.array_equal(want[0], outputs[0])  # the documented deviation
    torch = pytest.importorskip("torch")
    x, i, shape = inputs
    by_torch = torch.nn.functional.max_unpool2d(torch.from_numpy(x.copy()),
                                                torch.from_numpy(i.copy()), 2, 2,
                                                output_size=[int(s) for s in shape[2:]])
    np.testing.assert_array_equal(by_torch.numpy(), want[0], strict=True)
    placed = np.zeros(tuple(shape), x.dtype)  # I indexes the given shape
    placed.reshape(-1)[i.reshape(-1)] = x.reshape(-1)
    np.testing.assert_array_equal(placed, want[0], strict=True)
    return want


@pytest.mark.parametrize("form", ["call", "from_node"])
@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items()
                                         if nc.op_type(c) not in OWN_FILE))
def test_node_case(name, form):
    case = CASES[name]
    inputs, outputs = nc.first_data_set(case)
    with jax.enable_x64(True):
        got = (_call if form == "call" else _from_node)(case, inputs)
        got = got if isinstance(got, tuple) else (got,)
        want = _expected(name, case, inputs, outputs)
        assert len(got) == len(want)
        for actual, expected in zip(got, want, strict=True):
            actual = np.asarray(actual)
            np.testing.assert_array_equal(actual, expected, err_msg=name, strict=True)
            if actual.dtype.kind == "f":  # zero signs (assert_array_equal ties -0.0 and +0.0)
                np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected),
                                              err_msg=f"{name}: zero signs")
