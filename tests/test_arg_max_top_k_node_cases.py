"""The ONNX backend node test cases for ArgMax and TopK, regenerated from the installed
``onnx.backend.test`` definitions (the wheel no longer ships their .pb files), must pass exactly:
``reduced`` for ArgMax, ``Values`` and ``Indices`` for TopK, dtype included (int64 indices, so
the cases run with ``jax_enable_x64``; the uint64 and int64 TopK cases need it for their data).

None of the 23 depends on one of the reference's known bugs (NaN ordering of bfloat16, the
silent empty result of a negative K): their data hold no NaN, no bfloat16 and no negative K, so
every expected value is the case's own; none had to be taken from onnxruntime.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
node_cases = pytest.importorskip("onnx.backend.test.case.node")

from jaxmax import onnx as jonnx  # noqa: E402 (after the importorskips)


def _cases():
    # collect_testcases imports the case modules once (later calls return what the first one
    # collected), so collect every operator's cases in one call and keep the two wanted here
    return {case.name: case for case in node_cases.collect_testcases(None)
            if case.model.graph.node[0].op_type in ("ArgMax", "TopK") and case.data_sets}


CASES = _cases()


def test_all_node_cases_are_collected():
    assert len(CASES) == 23, sorted(CASES)
    assert sum(c.model.graph.node[0].op_type == "ArgMax" for c in CASES.values()) == 16


def _attributes(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_case(name):
    case = CASES[name]
    node = case.model.graph.node[0]
    opset = case.model.opset_import[0].version
    (inputs, outputs), = case.data_sets[:1]
    attrs = _attributes(node)
    with jax.enable_x64(True):
        if node.op_type == "ArgMax":
            got = (jonnx.arg_max(inputs[0], opset=opset, **attrs),)
        else:
            got = jonnx.top_k(inputs[0], inputs[1], opset=opset, **attrs)
        assert len(got) == len(outputs)
        for actual, expected in zip(got, outputs, strict=True):
            actual = np.asarray(actual)
            assert actual.dtype == expected.dtype, (name, actual.dtype, expected.dtype)
            np.testing.assert_array_equal(actual, expected, err_msg=name)
