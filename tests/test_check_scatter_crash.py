"""``python -m jaxmax check`` never crashes on the scatter inputs that crash OpenVINO's CPU
plugin (docs/semantics.md §8.4, §10): its ScatterElementsUpdate writes outside its buffer on an
index below -size (-5 on size 4 segfaults) and on an indices shape larger than the data's. Each
is a one-line error, exit status 2, naming the runtime and the node: before the run for indices
fed as model inputs or computed in the model, and through a run in a child process when the
indices come from another scatter. One real ``python -m jaxmax check`` subprocess; the others
run in-process through ``cli.main`` (a crash there would end the test run)."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import numpy as np
import pytest

openvino = pytest.importorskip("openvino")

import openvino.opset1 as ov1  # noqa: E402 (after the importorskip)
import openvino.opset12 as ov12  # noqa: E402

from jaxmax._src.check import cli, scatter_guard  # noqa: E402

AXIS = ov1.constant(np.array(0, np.int64))
DATA = np.arange(4, dtype=np.float32)
ONE_LINE = re.compile(r"^jaxmax check: OpenVINO CPU[^\n]*\(docs/semantics\.md §8\.4\)[^\n]*\n$")


def save(path, outputs, parameters, **arrays):
    openvino.save_model(openvino.Model(outputs, parameters), str(path), compress_to_fp16=False)
    np.savez(f"{path}.npz", **arrays)
    return [str(path), "--inputs", f"{path}.npz"]


def check(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(argv, out, err)
    return status, out.getvalue(), err.getvalue()


def direct(tmp_path, indices, shape=(4,), index_shape=(2,)):
    """SEU-12 max whose indices are a model input."""
    d = ov1.parameter(list(shape), np.float32, name="d")
    i = ov1.parameter(list(index_shape), np.int64, name="i")
    u = ov1.parameter(list(index_shape), np.float32, name="u")
    node = ov12.scatter_elements_update(d, i, u, AXIS, reduction="max")
    node.set_friendly_name("seu")
    return save(tmp_path / "direct.xml", [node.output(0)], [d, i, u],
                d=np.zeros(shape, np.float32), i=np.asarray(indices, np.int64),
                u=np.ones(index_shape, np.float32))


def test_index_minus_5_from_a_graph_input_in_a_real_subprocess(tmp_path):
    argv = direct(tmp_path, [1, -5])
    run = subprocess.run([sys.executable, "-m", "jaxmax", "check", *argv], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 2, run.stdout + run.stderr  # not -11 (SIGSEGV)
    assert ONE_LINE.match(run.stderr), run.stderr
    assert ("node 'seu' (ScatterElementsUpdate-12): index -5 at [1] is outside [-4, 3] "
            "(axis 0)") in run.stderr
    assert "Traceback" not in run.stderr and not list(tmp_path.glob("core*"))


@pytest.mark.parametrize(("indices", "text"), [
    ([4, 0], "index 4 at [0] is outside [-4, 3]"),  # the plugin raises on it: said the same way
    ([0, -100], "index -100 at [1] is outside [-4, 3]"),  # the plugin corrupts its heap
])
def test_out_of_range_input_indices(tmp_path, indices, text):
    status, out, err = check(direct(tmp_path, indices))
    assert status == 2 and ONE_LINE.match(err) and text in err, out + err


def test_indices_shape_larger_than_data(tmp_path):
    status, out, err = check(direct(tmp_path, np.zeros((3, 40)), (2, 2), (3, 40)))
    assert status == 2 and ONE_LINE.match(err), out + err
    assert "indices shape (3, 40) exceeds data shape (2, 2) at dim 1" in err


def test_in_range_indices_run_in_process(tmp_path, monkeypatch):
    def no_child(*args):
        raise AssertionError("a child process for indices that are validated before the run")

    monkeypatch.setattr(scatter_guard, "run_in_child", no_child)
    status, out, err = check(direct(tmp_path, [-4, 3]))
    assert status == 0 and "1 of 1 max-family nodes exact" in out, out + err


def computed(tmp_path, fed):
    """Indices `fed - 1`, computed in the model (no scatter upstream)."""
    d = ov1.parameter([4], np.float32, name="d")
    i = ov1.parameter([2], np.int64, name="i")
    u = ov1.parameter([2], np.float32, name="u")
    node = ov12.scatter_elements_update(d, ov1.subtract(i, ov1.constant(np.array([1]))), u,
                                        AXIS, reduction="max")
    node.set_friendly_name("seu")
    return save(tmp_path / "computed.xml", [node.output(0)], [d, i, u], d=DATA,
                i=np.array(fed, np.int64), u=np.full(2, 9, np.float32))


def test_computed_indices_checked_before_the_run(tmp_path, monkeypatch):
    monkeypatch.setattr(scatter_guard, "run_in_child", None)  # never needed here
    status, out, err = check(computed(tmp_path, [0, -4]))
    assert status == 2 and ONE_LINE.match(err), out + err
    assert "node 'seu' (ScatterElementsUpdate-12): index -5 at [1] is outside [-4, 3]" in err
    status, out, err = check(computed(tmp_path, [0, -3]))  # indices [-1, -4]
    assert status == 0 and "1 of 1 max-family nodes exact" in out, out + err


def nested(tmp_path, first):
    """Indices computed by another ScatterElementsUpdate (max of [first, 1] and -9 at 0)."""
    idx = ov1.parameter([2], np.int64, name="idx")
    low = ov1.parameter([1], np.int64, name="low")
    inner = ov12.scatter_elements_update(idx, ov1.constant(np.array([0])), low, AXIS,
                                         reduction="max")
    d = ov1.parameter([4], np.float32, name="d")
    u = ov1.parameter([2], np.float32, name="u")
    outer = ov12.scatter_elements_update(d, inner, u, AXIS, reduction="max")
    outer.set_friendly_name("outer")
    return save(tmp_path / "nested.xml", [outer.output(0)], [idx, low, d, u],
                idx=np.array([first, 1], np.int64), low=np.array([-9], np.int64), d=DATA,
                u=np.full(2, 9, np.float32))


def test_indices_from_another_scatter_run_in_a_child(tmp_path, monkeypatch):
    calls = []
    real = scatter_guard.run_in_child
    monkeypatch.setattr(scatter_guard, "run_in_child",
                        lambda *args: calls.append(1) or real(*args))
    status, out, err = check(nested(tmp_path, -4))
    assert status == 0 and "2 of 2 max-family nodes exact" in out and calls, out + err
    # -5: the child crashes, or survives a write outside its buffer, which the indices read
    # back from that run show; either way one line naming the runtime and the node
    status, out, err = check(nested(tmp_path, -5))
    assert status == 2 and ONE_LINE.match(err), out + err
    assert re.search(r"crashed \(SIG[A-Z]+\) running the model .* node\(s\) 'outer'|"
                     r"node 'outer' .* index -5 at \[0\]", err), err


@pytest.mark.parametrize("op", ["ScatterElements", "ScatterND"])
def test_onnxruntime_rejects_the_same_indices_with_an_error(tmp_path, op):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    shape = [2] if op == "ScatterElements" else [2, 1]
    node = helper.make_node(op, ["d", "i", "u"], ["y"], reduction="max")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("d", TensorProto.FLOAT, [4]),
                      helper.make_tensor_value_info("i", TensorProto.INT64, shape),
                      helper.make_tensor_value_info("u", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    path = tmp_path / "scatter.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                ir_version=10), str(path))
    np.savez(tmp_path / "in.npz", d=DATA, i=np.array([1, -5]).reshape(shape),
             u=np.ones(2, np.float32))
    status, out, err = check([str(path), "--inputs", str(tmp_path / "in.npz")])
    assert status == 2, out + err
    assert re.match(r"^jaxmax check: onnxruntime could not run the model: .*\n$", err), err
