"""``python -m jaxmax check``'s runtime-deviation rules, each a proof over single elements.

For every rule: a positive case, a one-node model whose real runtime run (onnxruntime, or
OpenVINO's CPU plugin) shows the documented deviation, which ``check`` excuses element by
element (exit 0, the row counting the elements and citing docs/semantics.md); and negative
cases, built by corrupting jaxmax's output (``cli.jaxmax_outputs``) or its binding (a binder
that drops or flips an attribute): a wrong value where the element's window does not hold what
the deviation is about, a value that is not the contract's where it does, a shape change on
NaN input. Each negative case must fail the node with exit status 1.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
openvino = pytest.importorskip("openvino")

import openvino.opset1 as ov1  # noqa: E402 (after the importorskips)
import openvino.opset8 as ov8  # noqa: E402
import openvino.opset11 as ov11  # noqa: E402
import openvino.opset16 as ov16  # noqa: E402
from compile_cache import shared_compiles  # noqa: E402,F401 (the fixture)
from onnx import TensorProto, helper  # noqa: E402

from jaxmax._src.check import cli, fields  # noqa: E402
from jaxmax._src.onnx import node as onnx_node  # noqa: E402
from jaxmax._src.openvino import node as ov_node  # noqa: E402

pytestmark = pytest.mark.usefixtures("shared_compiles")

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def check(path, **arrays) -> tuple[int, str]:
    np.savez(f"{path}.npz", **arrays)
    out, err = io.StringIO(), io.StringIO()
    status = cli.main([str(path), "--inputs", f"{path}.npz"], out, err)
    return status, out.getvalue() + err.getvalue()


def explained(out: str) -> dict[str, int]:
    """What the (single) node's row explained: deviation name -> element count."""
    return {what: int(n) for n, what in re.findall(r"(\d+) elements?: ([^(;]+?) \(", out)}


def passes(out_status: tuple[int, str], want: dict[str, int]) -> str:
    """Assert exit 0 and a deviation row whose differences are all explained, `want` (deviation
    name -> elements) exactly."""
    status, out = out_status
    assert status == 0, out
    m = re.search(r"runtime deviation, (\d+) differ, each explained: ", out)
    assert m, out
    got = explained(out)
    assert got == want, out
    assert sum(got.values()) == int(m[1]), out
    return out


def fails(out_status: tuple[int, str], unexplained: int | None = None) -> str:
    status, out = out_status
    assert status == 1, out
    assert "1 differ or failed" in out, out
    if unexplained is not None:
        assert re.search(rf"\d+ differ, {unexplained} unexplained \(", out), out
    return out


def corrupt(monkeypatch, edit):
    """Make jaxmax's outputs `edit(outputs)` (a list of NumPy arrays, edited in place)."""
    real = cli.jaxmax_outputs

    def outputs(*args):
        ys = [np.array(y) for y in real(*args)]
        edit(ys)
        return ys

    monkeypatch.setattr(cli, "jaxmax_outputs", outputs)


def break_binder(monkeypatch, module, op_type, change):
    """Make `module`'s binder for `op_type` return keywords changed by `change(keywords)`."""
    real = module._BINDERS[op_type]

    def binder(*args):
        function, positional, keywords = real(*args)
        return function, positional, change(dict(keywords))

    monkeypatch.setitem(module._BINDERS, op_type, binder)


class Case:
    """A saved one-node model and the arrays ``check`` feeds it."""

    def __init__(self, path, **arrays):
        self.path, self.arrays = path, arrays

    def check(self) -> tuple[int, str]:
        return check(self.path, **self.arrays)

    def explained(self) -> tuple[dict[str, int], str]:
        """Exit 0; what the row explained (see `explained`) and the printed output."""
        status, out = self.check()
        assert status == 0, out
        return explained(out), out


def with_nan(shape, rate, clean):
    """Normal float32 data, NaN at `rate`; row `clean` holds 0, 1, 2, ... (no NaN)."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shape).astype(np.float32)
    data[rng.random(shape) < rate] = np.nan
    data[clean] = np.arange(shape[1])
    return data


def rejects(monkeypatch, case: Case, *edits) -> None:
    """Each edit of jaxmax's outputs, alone, fails the node with one unexplained difference.
    An edit is ``(output, where, value)``: that element of that output set to `value`."""
    for output, where, value in edits:
        corrupt(monkeypatch, lambda ys, o=output, w=where, v=value: ys[o].__setitem__(w, v))
        fails(case.check(), unexplained=1)
        monkeypatch.undo()


def onnx_model(path, node, inputs, outputs, opset=18, initializers=()):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=10)
    onnx.save(model, str(path))
    return path


def ov_model(path, outputs, parameters):
    openvino.save_model(openvino.Model(outputs, parameters), str(path), compress_to_fp16=False)
    return path


# --- onnxruntime: NaN order ------------------------------------------------------------------

def test_onnxruntime_reduce_max_nan(tmp_path, monkeypatch):
    node = helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=0)
    path = onnx_model(tmp_path / "reduce.onnx", node, [("x", F32, [3, 4])], [("y", F32)],
                      initializers=[onnx.numpy_helper.from_array(np.array([1]), "axes")])
    # onnxruntime lets the first element decide: row 0 gives NaN, row 1 drops its NaN; row 2
    # holds none
    case = Case(path, x=np.array([[np.nan, 1, 2, 3], [4, np.nan, 6, 5], [7, 8, 9, 10]],
                                 np.float32))
    out = passes(case.check(), {"NaN order": 1})
    assert "§4) (output 0: first at [1]: jaxmax nan, runtime 6.0)" in out, out
    rejects(monkeypatch, case,
            (0, 2, 11.0),  # the row without NaN
            (0, 2, np.nan),  # NaN, but none in the row
            (0, 0, 3.0))  # a row with a NaN, but a number, not NaN
    break_binder(monkeypatch, onnx_node, "ReduceMax", lambda k: {**k, "keepdims": 1})
    out = fails(case.check())
    assert "shape (3, 1) != runtime (3,)" in out and "runtime deviation" not in out


def test_onnxruntime_max_pool_nan_with_indices(tmp_path, monkeypatch):
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2],
                            strides=[2, 2], pads=[1, 1, 1, 1])
    path = onnx_model(tmp_path / "pool.onnx", node, [("x", F32, [1, 2, 4, 4])],
                      [("y", F32), ("i", I64)])
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    # in window (1, 1) of plane 0 (rows 1-2, columns 1-2), after its first element: onnxruntime's
    # index path seeds with the first element and drops the NaN
    x[0, 0, 1, 2] = np.nan
    case = Case(path, x=x)
    out = passes(case.check(), {"NaN order": 2})
    assert "output 0: first at [0, 0, 1, 1]: jaxmax nan, runtime 10.0" in out, out
    assert "output 1: first at [0, 0, 1, 1]: jaxmax 6, runtime 10" in out, out
    rejects(monkeypatch, case,
            (1, (0, 0, 1, 1), 5),  # an index, not the first NaN's
            (0, (0, 1, 1, 1), 27.0),  # in the plane without NaN (its maximum: 26)
            (0, (0, 1, 1, 1), np.nan))  # a NaN where the window holds none
    break_binder(monkeypatch, onnx_node, "MaxPool", lambda k: {**k, "pads": (0, 0, 0, 0)})
    out = fails(case.check())
    assert "shape (1, 2, 2, 2) != runtime (1, 2, 3, 3)" in out and "deviation" not in out


def test_onnxruntime_max_pool_nan_column_major_indices(tmp_path):
    # storage_order=1: the first NaN (row 1, column 2 of a 4x4 plane) is index 1 + 2*4 = 9
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2],
                            strides=[2, 2], pads=[1, 1, 1, 1], storage_order=1)
    path = onnx_model(tmp_path / "pool.onnx", node, [("x", F32, [1, 1, 4, 4])],
                      [("y", F32), ("i", I64)])
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 1, 2] = np.nan
    out = passes(check(path, x=x), {"NaN order": 2})
    assert "output 1: first at [0, 0, 1, 1]: jaxmax 9, runtime 10" in out, out


def test_onnxruntime_arg_max_nan(tmp_path, monkeypatch):
    node = helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)
    path = onnx_model(tmp_path / "argmax.onnx", node, [("x", F32, [3, 3])], [("y", I64)])
    # onnxruntime seeds with the first element: [1, NaN, 3] gives 2, the contract 1
    case = Case(path, x=np.array([[1, np.nan, 3], [np.nan, 0, 5], [2, 4, 1]], np.float32))
    out = passes(case.check(), {"NaN order": 1})
    assert "first at [0]: jaxmax 1, runtime 2" in out and "§6.5)" in out
    rejects(monkeypatch, case,
            (0, 0, 0),  # a NaN slice, not its NaN
            # a slice without NaN: index 0 is what a first-NaN search finds there, not its
            # maximum
            (0, 2, 0))


# --- onnxruntime: windows with no number, +-0 ties, sorted=0 ----------------------------------

def test_onnxruntime_window_with_no_input_element(tmp_path, monkeypatch):
    # D=2, k=2, d=3, pads 1: the one window's taps both fall in the padding
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2], dilations=[3],
                            pads=[1, 1])
    path = onnx_model(tmp_path / "empty.onnx", node, [("x", F32, [1, 2, 2])],
                      [("y", F32), ("i", I64)])
    case = Case(path, x=np.array([[[1, 2], [3, 4]]], np.float32))
    # values -inf vs -FLT_MAX in both planes; the index -1 vs plane - 1 (differs in plane 1)
    passes(case.check(), {"a window with no number above -inf": 3})
    rejects(monkeypatch, case,
            (1, (0, 1, 0), 0),  # an index, not -1
            (0, (0, 0, 0), 0.0))  # not -inf


def test_onnxruntime_global_max_pool_nan_and_minus_inf(tmp_path, monkeypatch):
    node = helper.make_node("GlobalMaxPool", ["x"], ["y"])
    path = onnx_model(tmp_path / "global.onnx", node, [("x", F32, [1, 3, 4, 4])], [("y", F32)])
    x = np.random.default_rng(0).standard_normal((1, 3, 4, 4)).astype(np.float32)
    x[0, 0, 1, 1] = np.nan  # dropped by onnxruntime
    x[0, 1] = -np.inf  # -FLT_MAX from onnxruntime
    case = Case(path, x=x)
    passes(case.check(), {"NaN order": 1, "a window with no number above -inf": 1})
    rejects(monkeypatch, case, (0, (0, 2, 0, 0), 0.0))  # channel 2: clean
    # the indicator run fails (as for an operator that rejects it): the NaN and the -inf-only
    # channel, explained above, are now unexplained, never excused by default
    monkeypatch.setattr(fields, "_run", lambda *args: None)
    fails(case.check(), unexplained=2)


def test_onnxruntime_max_zero_tie(tmp_path, monkeypatch):
    node = helper.make_node("Max", ["a", "b"], ["y"])
    path = onnx_model(tmp_path / "max.onnx", node, [("a", F32, [8]), ("b", F32, [8])],
                      [("y", F32)])
    # f32 of length 8: onnxruntime returns the second argument's zero
    case = Case(path, a=np.array([0.0, 1, -0.0, 3, 0.0, -0.0, 6, 7], np.float32),
                b=np.array([-0.0, 2, 0.0, 1, 0.0, -0.0, 6, 7], np.float32))
    out = passes(case.check(), {"sign of a +-0 tie": 1})
    assert "first at [0]: jaxmax 0.0, runtime -0.0" in out and "§7.3)" in out
    rejects(monkeypatch, case,
            (0, 4, -0.0),  # +0 and +0: no -0 there
            (0, 5, 0.0),  # -0 and -0: no tie of signs
            # -0 and +0, where onnxruntime gives the contract's +0: jaxmax's -0 is not the
            # contract's
            (0, 2, -0.0))


def test_onnxruntime_top_k_sorted_0(tmp_path, monkeypatch):
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, sorted=0)
    path = onnx_model(tmp_path / "topk.onnx", node, [("x", F32, [3, 9])], [("v", F32), ("i", I64)],
                      initializers=[onnx.numpy_helper.from_array(np.array([4]), "k")])
    case = Case(path, x=np.random.default_rng(1).standard_normal((3, 9)).astype(np.float32))
    rows, out = case.explained()
    n = rows["sorted=0"]
    assert n > 0 and re.search(rf"runtime deviation, {n} differ", out), out

    def one_value(ys):  # slice 1 no longer holds the runtime's pairs
        ys[0][1, 3] += 1

    corrupt(monkeypatch, one_value)
    out = fails(case.check())
    assert "output 0: first at [1," in out, out


# --- OpenVINO's CPU plugin -------------------------------------------------------------------

def test_cpu_reduce_max_nan(tmp_path, monkeypatch):
    x = ov1.parameter([6, 81], np.float32, name="x")
    node = ov1.reduce_max(x, ov1.constant(np.array([1])))
    node.set_friendly_name("reduce")
    path = ov_model(tmp_path / "reduce.xml", [node.output(0)], [x])
    case = Case(path, x=with_nan((6, 81), 0.2, clean=2))
    # the CPU plugin's NaN handling depends on where the NaN is; each difference is explained
    rows, out = case.explained()
    assert set(rows) == {"NaN order"} and "§3)" in out, out
    rejects(monkeypatch, case,
            (0, 0, np.nan),  # NaN never wins (§3)
            (0, 2, 1.0))  # the row without NaN (row 2)
    break_binder(monkeypatch, ov_node, "ReduceMax", lambda k: {**k, "keep_dims": True})
    out = fails(case.check())
    assert "shape (6, 1) != runtime (6,)" in out


def test_cpu_top_k_nan(tmp_path, monkeypatch):
    x = ov1.parameter([4, 9], np.float32, name="x")
    node = ov11.topk(x, ov1.constant(np.int64(4)), 1, "max", "value", "i32", False)
    path = ov_model(tmp_path / "topk.xml", [node.output(0), node.output(1)], [x])
    case = Case(path, x=with_nan((4, 9), 0.25, clean=3))
    rows, out = case.explained()
    assert rows["NaN order"] > 0 and "§6.5)" in out, out

    def swap_first_two(ys):  # a NaN slice, but not the contract's order
        ys[0][1, :2] = ys[0][1, 1::-1].copy()
        ys[1][1, :2] = ys[1][1, 1::-1].copy()

    corrupt(monkeypatch, swap_first_two)
    fails(case.check())
    monkeypatch.undo()
    rejects(monkeypatch, case, (1, (3, 0), 7))  # the slice without NaN (row 3)


def test_cpu_top_k_tie_order(tmp_path, monkeypatch):
    x = ov1.parameter([4, 40], np.float32, name="x")
    node = ov11.topk(x, ov1.constant(np.int64(10)), 1, "max", "value", "i32", False)
    path = ov_model(tmp_path / "ties.xml", [node.output(0), node.output(1)], [x])
    data = np.random.default_rng(0).integers(0, 3, (4, 40)).astype(np.float32)
    case = Case(path, x=data)
    rows, out = case.explained()
    assert set(rows) == {"tie order"} and "§6.5)" in out, out
    ties = np.flatnonzero(data[0] == data[0].max())
    other = int(np.flatnonzero(data[0] != data[0].max())[0])
    # a tied element, but not the contract's lower index; then an element of another value
    for index in (ties[-1], other):
        corrupt(monkeypatch, lambda ys, i=index: ys[1].__setitem__((0, 0), i))
        fails(case.check())
        monkeypatch.undo()


def test_cpu_maximum_zero_tie(tmp_path, monkeypatch):
    a = ov1.parameter([5], np.float32, name="a")
    b = ov1.parameter([5], np.float32, name="b")
    path = ov_model(tmp_path / "maximum.xml", [ov1.maximum(a, b).output(0)], [a, b])
    case = Case(path, a=np.array([-0.0, 0.0, 1, 2, 0.0], np.float32),
                b=np.array([0.0, -0.0, 3, 1, 0.0], np.float32))
    out = passes(case.check(), {"sign of a +-0 tie": 2})
    assert "first at [0]: jaxmax -0.0, runtime 0.0" in out and "§7.3)" in out
    # +0 and +0 (the CPU plugin's second-argument zero always differs from the contract's
    # first-argument zero, so a zero that is not the contract's is always an unexplained one)
    rejects(monkeypatch, case, (0, 4, -0.0))


def test_cpu_maximum_nan(tmp_path, monkeypatch):
    a = ov1.parameter([4], np.float32, name="a")
    b = ov1.parameter([4], np.float32, name="b")
    path = ov_model(tmp_path / "maximum.xml", [ov1.maximum(a, b).output(0)], [a, b])
    case = Case(path, a=np.array([np.nan, 1, 2, 3], np.float32),
                b=np.array([1, np.nan, 0, 0], np.float32))
    passes(case.check(), {"NaN order": 2})
    # element 0 holds a NaN, but 7 is neither the contract's NaN nor the runtime's 1
    rejects(monkeypatch, case, (0, 0, 7.0))


def test_cpu_64_bit(tmp_path, monkeypatch):
    x = ov1.parameter([3, 4], np.int64, name="x")
    path = ov_model(tmp_path / "i64.xml", [ov1.reduce_max(x, ov1.constant(np.array([1])))
                                           .output(0)], [x])
    case = Case(path, x=np.array([[1, 2, 3, 4], [2**40 + 1, 5, 2**40, 7], [9, 8, 7, 6]],
                                 np.int64))
    out = passes(case.check(), {"64-bit data": 1})
    assert "jaxmax 1099511627777, runtime 7" in out and "§3)" in out
    rejects(monkeypatch, case, (0, 0, 5))  # row 0 fits in 32 bits


def test_cpu_float16_lowest(tmp_path, monkeypatch):
    x = ov1.parameter([3, 3], np.float16, name="x")
    path = ov_model(tmp_path / "f16.xml", [ov1.reduce_max(x, ov1.constant(np.array([1])))
                                           .output(0)], [x])
    case = Case(path, x=np.array([[-np.inf] * 3, [1, 2, 3], [-np.inf] * 3], np.float16))
    out = passes(case.check(), {"float16 lowest": 2})
    assert "first at [0]: jaxmax -65504.0, runtime -inf" in out, out
    rejects(monkeypatch, case, (0, 0, -65472.0))  # not lowest exactly


# --- the CPU plugin's narrower arithmetic on the other operators --------------------------------

BIG = [1, 2**40 + 3, 5, 2**40 + 1]  # int64 values int32 does not hold
INF64 = [1, -np.inf, np.inf, 2]


# each builds a one-node model of parameter `x` (shape [1, 1, 1, 4]; SegmentMax: [4]):
# (outputs, parameters)

def _pool(kind):
    def build(x):
        if kind == "max_pool":
            node = ov8.max_pool(x, [1, 2], [1, 1], [0, 0], [0, 0], [1, 2])
        else:
            node = ov8.adaptive_max_pool(x, ov1.constant(np.array([1, 2])), "i32")
        return [node.output(0), node.output(1)], [x]
    return build


def _segment(x):
    # a runtime `segment_ids` (fed [0, 0, 1, 1])
    ids = ov1.parameter([4], np.int32, name="ids")
    return [ov16.segment_max(x, ids, ov1.constant(np.int32(2)),
                             fill_mode="LOWEST").output(0)], [x, ids]


def _reduce(x):
    return [ov1.reduce_max(x, ov1.constant(np.array([3]))).output(0)], [x]


@pytest.mark.parametrize(("build", "dtype", "values", "want"), [
    (_pool("max_pool"), np.int64, BIG, {"64-bit data": 3}),
    (_pool("max_pool"), np.float16, [-np.inf] * 4, {"float16 lowest": 2}),
    (_pool("adaptive"), np.int64, BIG, {"64-bit data": 3}),
    (_pool("adaptive"), np.float64, [1 + 2**-40, 1, 0, 0.5], {"64-bit data": 1}),
    (_pool("adaptive"), np.int32, [2**24 + 1, 2**24, 3, 2**24 + 3], {"integers": 2}),
    (_segment, np.int64, BIG, {"64-bit data": 2}),
    (_segment, np.float16, [-np.inf] * 4, {"float16 lowest": 2}),
    (_reduce, np.float64, [1 + 2**-40, 1, 0, 0.5], {"64-bit data": 1}),
    # float64 infinities: the plugin's f32 conversion saturates them to +-FLT_MAX
    (_pool("max_pool"), np.float64, INF64, {"float64 infinity": 1}),
    (_pool("adaptive"), np.float64, INF64, {"float64 infinity": 1}),
    (_segment, np.float64, INF64, {"float64 infinity": 1}),
    (_reduce, np.float64, INF64, {"float64 infinity": 1}),
], ids=["max_pool-i64", "max_pool-f16", "adaptive-i64", "adaptive-f64", "adaptive-i32",
        "segment-i64", "segment-f16", "reduce-f64", "max_pool-inf", "adaptive-inf",
        "segment-inf", "reduce-inf"])
def test_cpu_narrower_arithmetic(tmp_path, monkeypatch, build, dtype, values, want):
    shape = [4] if build is _segment else [1, 1, 1, 4]
    path = ov_model(tmp_path / "narrow.xml", *build(ov1.parameter(shape, dtype, name="x")))
    ids = {"ids": np.array([0, 0, 1, 1], np.int32)} if build is _segment else {}
    data = np.array(values, dtype).reshape(shape)
    passes(check(path, x=data, **ids), want)
    # the same wrong value where the window holds nothing the deviation is about
    clean = np.array([1, 2, 3, 4], dtype).reshape(shape)
    corrupt(monkeypatch, lambda ys: ys[0].reshape(-1).__setitem__(0, 7))
    fails(check(path, x=clean, **ids), unexplained=1)
