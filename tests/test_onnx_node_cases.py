"""The ONNX backend node test cases for MaxPool and GlobalMaxPool, regenerated from the installed
``onnx.backend.test`` definitions (the wheel no longer ships their .pb files), must pass exactly:
``Y`` and, where the node has a second output, ``Indices``.

None of the 21 depends on one of ``onnx.reference``'s known bugs (SAME_LOWER with strides, NaN,
the plane offset of indices on its stride-1 path), so every expected value is the case's own.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
node_cases = pytest.importorskip("onnx.backend.test.case.node")

from jaxmax import onnx as jonnx  # noqa: E402 (after the importorskips)


def _cases():
    # collect_testcases imports the case modules once (later calls return what the first one
    # collected), so collect every operator's cases in one call and keep the two wanted here
    return {case.name: case for case in node_cases.collect_testcases(None)
            if case.model.graph.node[0].op_type in ("MaxPool", "GlobalMaxPool")
            and case.data_sets}


CASES = _cases()


def test_all_node_cases_are_collected():
    assert len(CASES) == 21, sorted(CASES)


def _attributes(node):
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if "auto_pad" in attrs:
        attrs["auto_pad"] = attrs["auto_pad"].decode()
    return attrs


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_case(name):
    case = CASES[name]
    node = case.model.graph.node[0]
    opset = case.model.opset_import[0].version
    (inputs, outputs), = case.data_sets[:1]
    x = inputs[0]
    if node.op_type == "GlobalMaxPool":
        got = (jonnx.global_max_pool(x, opset=opset),)
    else:
        got = jonnx.max_pool(x, opset=opset, return_indices=len(outputs) == 2,
                             **_attributes(node))
        got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(outputs)
    for actual, expected in zip(got, outputs, strict=True):
        np.testing.assert_array_equal(np.asarray(actual), expected, err_msg=name)
