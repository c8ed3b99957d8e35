"""Max-scatter from graph nodes: the ONNX backend node cases (regenerated from the installed
``onnx.backend.test`` definitions) through ``onnx.from_node`` and the direct call, and
OpenVINO ScatterElementsUpdate-12 / ScatterNDUpdate-15 nodes through ``openvino.from_node``
against ``Node.evaluate``; other reductions are not bound (``NodeBindingError``)."""

from __future__ import annotations

import numpy as np
import pytest
from test_scatter import assert_bits

onnx = pytest.importorskip("onnx")
ov_reference = pytest.importorskip("ov_reference")
import onnx_node_cases  # noqa: E402
import openvino.opset12 as ov12  # noqa: E402
import openvino.opset15 as ov15  # noqa: E402

from jaxmax import onnx as jonnx  # noqa: E402
from jaxmax import openvino as jov  # noqa: E402
from jaxmax._src.node_binding import NodeBindingError  # noqa: E402

_OPS = ("ScatterElements", "ScatterND")


CASES = onnx_node_cases.generated(*_OPS)


def _reduction(node):
    for a in node.attribute:
        if a.name == "reduction":
            return a.s.decode()
    return "none"


MAX_CASES = sorted(n for n, c in CASES.items() if _reduction(c.model.graph.node[0]) == "max")
OTHER_CASES = sorted(n for n in CASES if n not in MAX_CASES)


def test_the_max_node_cases_are_collected():
    assert MAX_CASES == ["test_scatter_elements_with_reduction_max", "test_scatternd_max",
                         "test_scatternd_max_with_element_indices"]
    assert len(OTHER_CASES) >= 8, OTHER_CASES


@pytest.mark.parametrize("name", MAX_CASES)
def test_max_node_case(name):
    case = CASES[name]
    node = case.model.graph.node[0]
    opset = case.model.opset_import[0].version
    (inputs, outputs), = case.data_sets[:1]
    fn = jonnx.from_node(node, opset=opset)
    (got,) = fn(*inputs)
    np.testing.assert_array_equal(np.asarray(got), outputs[0], err_msg=name)
    function = "scatter_nd" if node.op_type == "ScatterND" else "scatter_elements"
    assert fn.call.startswith(f"onnx.{function}(")


@pytest.mark.parametrize("name", OTHER_CASES)
def test_other_reductions_are_not_bound(name):
    case = CASES[name]
    node = case.model.graph.node[0]
    with pytest.raises(NodeBindingError) as info:
        jonnx.from_node(node, opset=case.model.opset_import[0].version)
    assert "ScatterElements" in info.value.missing or "ScatterND" in info.value.missing \
        or "reduction" in info.value.missing


def test_onnx_node_with_constant_indices():
    node = onnx.helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1,
                                 reduction="max")
    fn = jonnx.from_node(node, opset=18, constants={"i": np.array([[2, 2], [0, 1]])})
    assert fn.input_names == ("d", "u")
    (got,) = fn(np.zeros((2, 3), np.float32), np.array([[1, 5], [2, 3]], np.float32))
    assert_bits(got, np.array([[0, 0, 5], [2, 3, 0]], np.float32))


def _seu(use_init_val):
    def factory(d, i, u, a):
        return ov12.scatter_elements_update(d, i, u, a, reduction="max",
                                            use_init_val=use_init_val)
    return factory


@pytest.mark.parametrize("use_init_val", [True, False])
def test_openvino_scatter_elements_update_node(use_init_val):
    rng = np.random.default_rng(3)
    data = rng.choice(np.array([np.nan, -0.0, 0.0, 1.0, -1.0]), (3, 4)).astype(np.float32)
    idx = rng.integers(0, 3, (5, 4)).astype(np.int32)
    upd = rng.choice(np.array([np.nan, -0.0, 0.0, 1.0, -1.0]), (5, 4)).astype(np.float32)
    axis = ov_reference.Const(np.array(0, np.int64))
    node, _, _ = ov_reference._build(_seu(use_init_val), (data, idx, upd, axis))
    fn = jov.from_node(node)
    assert fn.call.startswith("ov.scatter_elements_update(")
    (got,) = fn(data, idx, upd)
    (expected,) = ov_reference.evaluate(_seu(use_init_val), data, idx, upd, axis)
    assert_bits(got, expected)


def test_openvino_scatter_nd_update_node():
    rng = np.random.default_rng(4)
    data = rng.choice(np.array([np.nan, -0.0, 0.0, 1.0]), (3, 2)).astype(np.float32)
    idx = rng.integers(-3, 3, (6, 1)).astype(np.int32)
    upd = rng.choice(np.array([np.nan, -0.0, 0.0, 1.0]), (6, 2)).astype(np.float32)

    def factory(d, i, u):
        return ov15.scatter_nd_update(d, i, u, reduction="max")

    node, _, _ = ov_reference._build(factory, (data, idx, upd))
    (got,) = jov.from_node(node)(data, idx, upd)
    assert_bits(got, ov_reference.evaluate(factory, data, idx, upd)[0])


@pytest.mark.parametrize("reduction", ["sum", "min", "none"])
def test_openvino_other_reductions_are_not_bound(reduction):
    data, idx, upd = np.zeros(3, np.float32), np.zeros(1, np.int32), np.ones(1, np.float32)

    def factory(d, i, u, a):
        return ov12.scatter_elements_update(d, i, u, a, reduction=reduction)

    node, _, _ = ov_reference._build(factory, (data, idx, upd,
                                               ov_reference.Const(np.array(0, np.int64))))
    with pytest.raises(NodeBindingError, match="binds reduction 'max' only"):
        jov.from_node(node)
