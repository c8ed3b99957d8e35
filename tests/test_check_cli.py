"""``python -m jaxmax check MODEL`` on models built here (no downloads).

* The small PyTorch CNN of tests/torch_cnn.py (ceil-mode and dilated pools, one with
  ``return_indices``; ``maximum``, ``amax``, ``topk``, ``argmax``, ``adaptive_max_pool2d``),
  exported with ``torch.onnx.export(dynamo=False)`` (run by onnxruntime) and converted with
  ``openvino.convert_model`` (run by the CPU plugin): every max-family node is exact, and the
  counts are asserted.
* An ONNX graph with a node jaxmax lacks (Relu): reported as not covered.
* An ONNX graph with a dynamic batch dim: exit 2 without ``--shape``, exact with it.
* Real data with ``--inputs``, a NaN that onnxruntime's MaxPool drops (a runtime-deviation row),
  and the bad-input exits (one line on stderr, status 2, no traceback).

The checks run in-process through ``cli.main`` (which enables x64 only inside its call), and
``python -m jaxmax check`` itself once, as a subprocess, for ``--help`` and a bad input.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys

import numpy as np
import pytest
import torch_cnn

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
openvino = pytest.importorskip("openvino")

from onnx import TensorProto, helper  # noqa: E402 (after the importorskips)

from jaxmax._src.check import cli  # noqa: E402


def check(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = cli.main([str(a) for a in argv], out, err)
    return status, out.getvalue(), err.getvalue()


def closing(text: str) -> tuple[int, int, int, str]:
    """(exact, total, not covered, the op-type list) from the closing line."""
    m = re.search(r"^(\d+) of (\d+) max-family nodes exact.*?, (\d+) not covered(?: \((.*)\))?$",
                  text, re.M)
    assert m, text
    return int(m[1]), int(m[2]), int(m[3]), m[4] or ""


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    pytest.importorskip("torch")
    return torch_cnn.save(tmp_path_factory.mktemp("cnn"))


def _check_exact(path, counts, types):
    """`check` on `path`: exit 0, and the closing line's (exact, total, not covered) counts and
    the types it lists as not covered; returns the printed table."""
    status, out, err = check(path)
    assert status == 0, out + err
    exact, total, not_covered, found = closing(out)
    assert (exact, total, not_covered) == counts, out
    assert found == types, out
    return out


def test_cnn_onnx_every_max_family_node_exact(cnn):
    # MaxPool x5 (ceil with indices; torch's indices trick, a 1x1 MaxPool with indices; the
    # dilated pool; the dilated ceil pool; the adaptive pool exported as a MaxPool), Max,
    # ReduceMax, TopK, ArgMax
    out = _check_exact(cnn[0], (9, 9, 5), "Conv x2, Flatten, Slice, Sub")
    for op in ("MaxPool-12", "Max-13", "ReduceMax-13"):
        assert re.search(rf"^\S+\s+{op}\s+onnx\.", out, re.M), out
    assert "ceil_mode=1" in out and "dilations=[2, 2]" in out and "return_indices=True" in out
    assert "not covered:" not in out
    assert re.search(r"TopK-11\s+onnx\.top_k\(X, \[5\], axis=1", out), out
    assert re.search(r"ArgMax-13\s+onnx\.arg_max\(data, axis=1, keepdims=0", out), out


def test_cnn_openvino_every_max_family_node_exact(cnn):
    # MaxPool-14 x3, Maximum-1, ReduceMax-1, TopK-11 x2 (topk and argmax), AdaptiveMaxPool-8
    out = _check_exact(cnn[1], (8, 8, 7), "Add x2, Convolution x2, Reshape x2, Squeeze")
    assert re.search(r"AdaptiveMaxPool-8\s+ov\.adaptive_max_pool\(data, \[3, 7\]", out), out
    assert len(re.findall(r"TopK-11\s+ov\.top_k\(data, ", out)) == 2, out
    assert "rounding_type='ceil_torch'" in out and "dilations=[2, 2]" in out
    assert re.search(r"MaxPool-14\s+ov\.max_pool", out)


def _save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _pool_graph(path, input_shape, relu=False, dtype=TensorProto.FLOAT):
    nodes = [helper.make_node("MaxPool", ["h" if relu else "x"], ["y", "i"], name="pool",
                              kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)]
    if relu:
        nodes.insert(0, helper.make_node("Relu", ["x"], ["h"], name="act"))
    out_shape = [*input_shape[:2], *[-(-(d - 2) // 2) + 1 for d in input_shape[2:]]]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", dtype, input_shape)],
        [helper.make_tensor_value_info("y", dtype, out_shape),
         helper.make_tensor_value_info("i", TensorProto.INT64, out_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    return _save(model, path)


def test_relu_is_reported_not_covered(tmp_path):
    path = _pool_graph(tmp_path / "relu.onnx", [1, 2, 5, 5], relu=True)
    status, out, err = check(path)
    assert status == 0, out + err
    assert closing(out) == (1, 1, 1, "Relu")
    assert re.search(r"^pool\s+MaxPool-12\s+onnx\.max_pool\(X, kernel_shape=\[2, 2\].*exact$",
                     out, re.M), out


def test_dynamic_batch_needs_shape(tmp_path):
    path = _pool_graph(tmp_path / "dynamic.onnx", ["batch", 2, 5, 5])
    status, out, err = check(path)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "--shape x=" in err and "dynamic" in err, err
    status, out, err = check(path, "--shape", "x=3,2,5,5")
    assert status == 0, out + err
    assert "(3, 2, 5, 5)" in out and closing(out)[:2] == (1, 1)
    # a wrong rank or a fixed dim changed
    for bad in ("x=3,2,5", "x=3,4,5,5", "y=1,2,5,5", "x=a,b"):
        status, out, err = check(path, "--shape", bad)
        assert status == 2 and err.startswith("jaxmax check: --shape"), (bad, err)


def test_real_inputs_and_a_runtime_deviation(tmp_path):
    path = _pool_graph(tmp_path / "pool.onnx", [1, 1, 4, 4])
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    np.savez(tmp_path / "ok.npz", x=x)
    status, out, err = check(path, "--inputs", tmp_path / "ok.npz")
    assert status == 0 and closing(out)[:2] == (1, 1), out + err
    # onnxruntime's MaxPool (MLAS, no Indices... here the index path) lets a later number beat
    # a NaN; jaxmax propagates it: a documented runtime deviation, still counted
    x[0, 0, 0, 1] = np.nan
    np.savez(tmp_path / "nan.npz", x=x)
    status, out, err = check(path, "--inputs", tmp_path / "nan.npz")
    assert status == 0, out + err
    assert re.search(r"runtime deviation, 2 differ, each explained: 2 elements: NaN order "
                     r"\(.*; docs/semantics.md §5.5\) \(output 0: first at \[0, 0, 0, 0\]: "
                     r"jaxmax nan, runtime 5.0", out), out
    assert "0 of 1 max-family nodes exact, 1 runtime deviation(s)" in out


def test_a_mismatch_exits_1(tmp_path, monkeypatch):
    path = _pool_graph(tmp_path / "pool.onnx", [1, 1, 4, 4])
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 0, 1] = np.nan
    np.savez(tmp_path / "nan.npz", x=x)
    real = cli.jaxmax_outputs

    def corrupted(*args):  # a wrong value in the last window, which holds no NaN
        y, i = real(*args)
        y = y.copy()
        y[0, 0, 1, 1] += 1
        return [y, i]

    monkeypatch.setattr(cli, "jaxmax_outputs", corrupted)
    status, out, err = check(path, "--inputs", tmp_path / "nan.npz")
    assert status == 1, out
    assert re.search(r"3 differ, 1 unexplained \(output 0: first at \[0, 0, 1, 1\]: jaxmax 16.0, "
                     r"runtime 15.0\); explained: 2 elements: NaN order", out), out
    assert "0 of 1 max-family nodes exact, 1 differ or failed" in out


def test_bad_inputs_exit_2_with_one_line(tmp_path, monkeypatch):
    path = _pool_graph(tmp_path / "pool.onnx", [1, 1, 4, 4])
    (tmp_path / "garbage.onnx").write_bytes(b"\x00not a model\xff" * 10)
    (tmp_path / "garbage.xml").write_text("<net><layers></net>")
    (tmp_path / "model.txt").write_text("hello")
    np.savez(tmp_path / "wrong.npz", input=np.zeros((1, 1, 4, 4), np.float32))
    np.savez(tmp_path / "dtype.npz", x=np.zeros((1, 1, 4, 4), np.float64))
    np.save(tmp_path / "plain.npy", np.zeros(3))
    cases = [
        ((tmp_path / "missing.onnx",), "no such file"),
        ((tmp_path / "garbage.onnx",), "cannot read"),
        ((tmp_path / "garbage.xml",), "cannot read"),
        ((tmp_path / "model.txt",), "cannot read a .txt file"),
        ((path, "--inputs", tmp_path / "nope.npz"), "no such file"),
        ((path, "--inputs", tmp_path / "wrong.npz"), "do not match the model's inputs"),
        ((path, "--inputs", tmp_path / "dtype.npz"), "dtype float64"),
        ((path, "--inputs", tmp_path / "plain.npy"), "not a .npz archive"),
        ((path, "--inputs", tmp_path / "model.txt"), "not a readable .npz"),
        ((path, "--inputs", tmp_path / "wrong.npz", "--shape", "x=1,1,4,4"), "do not combine"),
    ]
    for argv, message in cases:
        status, out, err = check(*argv)
        assert status == 2 and out == "", (argv, out, err)
        assert err.startswith("jaxmax check: ") and err.count("\n") == 1, (argv, err)
        assert message in err, (argv, err)
        assert "Traceback" not in err
    # a runtime that is not installed names the extra
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    status, out, err = check(path)
    assert status == 2 and 'pip install "jaxmax[runtimes]"' in err and err.count("\n") == 1


def test_progress_bar_on_stderr(tmp_path):
    nodes = [helper.make_node("Max", [f"t{k}", "x"], [f"t{k + 1}"], name=f"max{k}")
             for k in range(12)]
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                               helper.make_tensor_value_info("t0", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("t12", TensorProto.FLOAT, [3])])
    path = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                   ir_version=10), tmp_path / "chain.onnx")
    status, out, err = check(path, "--progress", "always", "--seed", "3")
    assert status == 0 and closing(out) == (12, 12, 0, ""), out
    assert "12/12" in err and "[#" in err
    status, out, err = check(path)  # auto: stderr is not a terminal here
    assert status == 0 and err == ""


def test_the_module_entry_point():
    help_text = subprocess.run([sys.executable, "-m", "jaxmax", "check", "--help"],
                               capture_output=True, text=True, check=True).stdout
    for option in ("MODEL", "--inputs", "--seed", "--shape", "--progress", "Exit status",
                   "runtime deviation"):
        assert option in help_text
    bad = subprocess.run([sys.executable, "-m", "jaxmax", "check", "nowhere.onnx"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == "jaxmax check: nowhere.onnx: no such file\n"


def test_shape_deciding_input_computed_in_the_graph(tmp_path):
    # ReduceMax-18's axes comes from an Identity of an initializer: not a constant in the
    # graph, so check reads its value from the run and says so
    nodes = [helper.make_node("Identity", ["axes0"], ["axes"], name="id"),
             helper.make_node("ReduceMax", ["x", "axes"], ["y"], name="rm", keepdims=0)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[onnx.numpy_helper.from_array(np.array([1], np.int64), "axes0")])
    path = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                   ir_version=10), tmp_path / "computed.onnx")
    status, out, err = check(path)
    assert status == 0, out + err
    assert closing(out) == (1, 1, 1, "Identity")
    assert re.search(r"onnx\.reduce_max\(data, axes=\[1\].*\[axes taken from this run\]", out)


def test_openvino_nan_rows(tmp_path):
    # NaN in the data: the CPU plugin's ReduceMax and Maximum are order-dependent (deviation
    # rows), its MaxPool-8 follows the spec (exact)
    import openvino.opset1 as ops1
    import openvino.opset8 as ops8

    x = ops1.parameter([2, 3, 9, 9], openvino.Type.f32, name="x")
    y = ops1.parameter([2, 3, 9, 9], openvino.Type.f32, name="y")
    pool = ops8.max_pool(x, [1, 1], [1, 1], [1, 1], [1, 1], [3, 3])
    pool.set_friendly_name("pool")
    reduce = ops1.reduce_max(x, ops1.constant(np.array([2, 3])))
    reduce.set_friendly_name("reduce")
    maximum = ops1.maximum(x, y)
    maximum.set_friendly_name("maximum")
    model = openvino.Model([pool.output(0), pool.output(1), reduce.output(0),
                            maximum.output(0)], [x, y])
    openvino.save_model(model, str(tmp_path / "nan.xml"))
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 2, 3, 9, 9)).astype(np.float32)
    data[0][rng.random(data[0].shape) < 0.2] = np.nan
    np.savez(tmp_path / "nan.npz", x=data[0], y=data[1])
    status, out, err = check(tmp_path / "nan.xml", "--inputs", tmp_path / "nan.npz")
    assert status == 0, out + err
    assert re.search(r"^pool\s+MaxPool-8\s.*exact$", out, re.M), out
    for name, op in (("reduce", "ReduceMax-1"), ("maximum", "Maximum-1")):
        assert re.search(rf"^{name}\s+{op}\s.*runtime deviation, (\d+) differ, each explained: "
                         rf"\1 elements: NaN order ", out, re.M), out
    assert "1 of 3 max-family nodes exact, 2 runtime deviation(s), 0 not covered" in out


def test_onnx_every_operator_with_and_without_nan(tmp_path):
    """One node of each ONNX operator: exact on clean data; with NaN, onnxruntime's documented
    NaN deviations are rows of their own (TopK and Max agree with the spec on NaN)."""
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [
        helper.make_node("ReduceMax", ["x", "axes"], ["r"], name="reduce", keepdims=0),
        helper.make_node("MaxPool", ["x"], ["p", "i"], name="pool", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["x"], ["q", "j"], name="pool2", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("MaxUnpool", ["y2", "j", "ushape"], ["u"], name="unpool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalMaxPool", ["x"], ["g"], name="global"),
        helper.make_node("Max", ["x", "y"], ["m"], name="max"),
        helper.make_node("ArgMax", ["x"], ["a"], name="argmax", axis=3),
        helper.make_node("TopK", ["x", "k"], ["tv", "ti"], name="topk", axis=3),
        helper.make_node("TopK", ["x", "k"], ["sv", "si"], name="topk_unsorted", axis=3,
                         sorted=0),
    ]
    shapes = {"r": [2, 3], "p": [2, 3, 9, 9], "i": [2, 3, 9, 9], "u": [2, 3, 9, 9],
              "g": [2, 3, 1, 1], "m": [2, 3, 9, 9], "a": [2, 3, 9, 1], "tv": [2, 3, 9, 4],
              "sv": [2, 3, 9, 4]}
    graph = helper.make_graph(
        nodes, "all", [helper.make_tensor_value_info("x", f32, [2, 3, 9, 9]),
                       helper.make_tensor_value_info("y", f32, [2, 3, 9, 9]),
                       helper.make_tensor_value_info("y2", f32, [2, 3, 4, 4])],
        [helper.make_tensor_value_info(name, i64 if name in "ia" else f32, shape)
         for name, shape in shapes.items()],
        initializer=[onnx.numpy_helper.from_array(np.array([2, 3], np.int64), "axes"),
                     onnx.numpy_helper.from_array(np.array([4], np.int64), "k"),
                     onnx.numpy_helper.from_array(np.array([2, 3, 9, 9], np.int64), "ushape")])
    path = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                   ir_version=10), tmp_path / "all.onnx")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 2, 3, 9, 9)).astype(np.float32)
    y2 = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    np.savez(tmp_path / "clean.npz", x=x, y=y, y2=y2)
    status, out, err = check(path, "--inputs", tmp_path / "clean.npz")
    assert status == 0, out + err
    assert re.search(r"^topk_unsorted .*runtime deviation, (\d+) differ, each explained: \1 "
                     r"elements: sorted=0 .*§6.3", out, re.M), out
    assert "8 of 9 max-family nodes exact, 1 runtime deviation(s), 0 not covered" in out
    x[rng.random(x.shape) < 0.2] = np.nan
    np.savez(tmp_path / "nan.npz", x=x, y=y, y2=y2)
    status, out, err = check(path, "--inputs", tmp_path / "nan.npz")
    assert status == 0, out + err
    for name in ("reduce", "pool", "global", "argmax"):
        assert re.search(rf"^{name} .*runtime deviation, (\d+) differ, each explained: \1 "
                         rf"elements?: NaN order", out, re.M), (name, out)
    for name in ("max", "topk", "unpool"):
        assert re.search(rf"^{name} .*exact$", out, re.M), (name, out)
