"""``python -m jaxmax check`` never ends in a traceback: a failure of check's own code (a bug,
injected here, since no model reaches one) names the node, or the stage, on one line of stderr
and exits with its own status, 3, after the table of the other nodes."""

from __future__ import annotations

import io

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from jaxmax._src.check import cli, deviations, runners  # noqa: E402

F32 = TensorProto.FLOAT


@pytest.fixture
def model(tmp_path):
    """Two nodes: `both` (Max, a +-0 tie onnxruntime signs otherwise: a deviation to explain)
    and `reduce` (ReduceMax, exact)."""
    graph = helper.make_graph(
        [helper.make_node("Max", ["a", "b"], ["m"], name="both"),
         helper.make_node("ReduceMax", ["m"], ["y"], name="reduce", keepdims=0)],
        "g", [helper.make_tensor_value_info(n, F32, [8]) for n in "ab"],
        [helper.make_tensor_value_info("y", F32, None)])
    path = tmp_path / "two.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=10), str(path))
    np.savez(tmp_path / "in.npz", a=np.array([0.0, 1, -0.0, 3, 0, 0, 6, 7], np.float32),
             b=np.array([-0.0, 2, 0.0, 1, 0, 0, 6, 7], np.float32))
    return [str(path), "--inputs", str(tmp_path / "in.npz")]


def run(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(argv, out, err)
    return status, out.getvalue(), err.getvalue()


def test_the_model_is_checked_without_a_failure(model):
    status, out, err = run(model)
    assert status == 0 and "runtime deviation" in out and "1 of 2" in out, out + err
    assert err == ""


def test_an_error_in_a_rule_names_the_node(model, monkeypatch):
    def broken(runtime, case):
        raise IndexError("list index out of range")

    monkeypatch.setattr(deviations, "explain", broken)
    status, out, err = run(model)
    assert status == cli.INTERNAL_ERROR == 3, out + err
    # the row of the failing node, the other node checked, the closing line, one stderr line
    assert "internal error in check: IndexError: list index out of range" in out, out
    assert "1 of 2 max-family nodes exact, 1 not checked (internal error)" in out, out
    assert err.splitlines() == [
        "jaxmax check: internal error on node 'both' (Max-13): IndexError: list index out of "
        "range (a bug in jaxmax check, not in the model or in jaxmax's operators: please "
        "report it)"], err
    assert "Traceback" not in out + err


def test_an_error_outside_the_nodes_names_the_stage(model, monkeypatch):
    def broken(self, feeds, entries):
        raise RuntimeError("lost\nits way")

    monkeypatch.setattr(runners.OnnxModel, "run", broken)
    status, out, err = run(model)
    assert status == 3 and out == "", out + err
    assert err == ("jaxmax check: internal error while running the model in onnxruntime: "
                   "RuntimeError: lost its way (a bug in jaxmax check, not in the model or in "
                   "jaxmax's operators: please report it)\n"), err


def test_bad_input_keeps_status_2(tmp_path):
    status, out, err = run([str(tmp_path / "missing.onnx")])
    assert status == 2 and "no such file" in err and "internal" not in err
