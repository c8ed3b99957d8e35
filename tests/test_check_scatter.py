"""``python -m jaxmax check``'s scatter rules, each a proof over single elements (the method of
tests/test_check_deviations.py, whose helpers this file uses): onnxruntime's ScatterElements /
ScatterND max fold, the CPU plugin's ScatterElementsUpdate-12 fold, float16 lowest and 64-bit
data, and its ScatterNDUpdate-15 (k = 0 updates ignored, 64-bit data). Each positive case is a
real runtime run; each negative case corrupts jaxmax's output, the runtime's output or the
contract's fold, and must fail the node (docs/semantics.md §8.4)."""

from __future__ import annotations

import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
openvino = pytest.importorskip("openvino")

import openvino.opset1 as ov1  # noqa: E402 (after the importorskips)
import openvino.opset12 as ov12  # noqa: E402
import openvino.opset15 as ov15  # noqa: E402
from compile_cache import shared_compiles  # noqa: E402,F401 (the fixture)
from onnx import helper  # noqa: E402
from test_check_deviations import (  # noqa: E402
    F32,
    I64,
    Case,
    check,
    corrupt,
    fails,
    onnx_model,
    ov_model,
    passes,
    rejects,
)

from jaxmax._src.check import deviations, fields  # noqa: E402

pytestmark = pytest.mark.usefixtures("shared_compiles")

# --- onnxruntime: ScatterElements / ScatterND max (the scatter helper's block) ------------------

# Per target: 0 updates [NaN, 2] (onnxruntime 2), 1 updates [2, NaN] (NaN, agrees), 2 data NaN
# and update 1 (onnxruntime 1), 3 data +0 and update -0 (onnxruntime -0), 4 untouched, 5 data 1
# and update 3, 6 data -0 and update +0 (onnxruntime +0, agrees)
SCATTER_DATA = np.array([0, 0, np.nan, 0.0, 7, 1, -0.0], np.float32)
SCATTER_IDS = np.array([0, 0, 1, 1, 2, 3, 5, 6], np.int64)
SCATTER_UPD = np.array([np.nan, 2, 2, np.nan, 1, -0.0, 3, 0.0], np.float32)


@pytest.fixture(params=["ScatterElements", "ScatterND"])
def scatter_run(request, tmp_path):
    op = request.param
    ids = SCATTER_IDS if op == "ScatterElements" else SCATTER_IDS[:, None]
    node = helper.make_node(op, ["d", "i", "u"], ["y"], reduction="max")
    path = onnx_model(tmp_path / "scatter.onnx", node,
                      [("d", F32, [7]), ("i", I64, list(ids.shape)), ("u", F32, [8])],
                      [("y", F32)])
    return lambda: check(path, d=SCATTER_DATA, i=ids, u=SCATTER_UPD)


def test_onnxruntime_scatter_nan_and_zero_tie(scatter_run):
    out = passes(scatter_run(), {"NaN order": 2, "sign of a +-0 tie": 1})
    assert "first at [0]: jaxmax nan, runtime 2.0" in out and "§8.4)" in out, out


@pytest.mark.parametrize(("at", "value", "why"), [
    (5, 4.0, "no NaN and no zero routed to target 5"),
    (2, 5.0, "a NaN routed there, but 5 is not the contract's NaN"),
    (6, -0.0, "zeros of both signs there, but -0 is not the contract's +0"),
])
def test_onnxruntime_scatter_negatives(scatter_run, monkeypatch, at, value, why):
    corrupt(monkeypatch, lambda ys: ys[0].__setitem__(at, value))
    fails(scatter_run(), unexplained=1)


def test_onnxruntime_scatter_unproven_window_excuses_nothing(scatter_run, monkeypatch):
    monkeypatch.setattr(fields, "_run", lambda *args: None)
    fails(scatter_run(), unexplained=3)


# --- OpenVINO's CPU plugin: ScatterElementsUpdate-12 max -----------------------------------
# The same targets as above; the CPU plugin folds `acc < u ? u : acc` (docs/semantics.md §8.4):
# target 1 (updates [2, NaN]) gives 2 and target 2 (data NaN) NaN where the contract's fold
# gives NaN and 1; targets 3 and 6 keep the data's zero where the contract takes the update's.
# Target 7 (data -0, updates [+0, -0]) gives -0 in both folds.
CPU_SCATTER_DATA = np.append(SCATTER_DATA, np.float32(-0.0))
CPU_SCATTER_IDS = np.append(SCATTER_IDS, [7, 7])
CPU_SCATTER_UPD = np.append(SCATTER_UPD, np.array([0.0, -0.0], np.float32))

@pytest.fixture
def cpu_scatter_run(tmp_path):
    d = ov1.parameter([8], np.float32, name="d")
    i = ov1.parameter([10], np.int64, name="i")
    u = ov1.parameter([10], np.float32, name="u")
    node = ov12.scatter_elements_update(d, i, u, ov1.constant(np.array(0, np.int64)),
                                        reduction="max")
    path = ov_model(tmp_path / "seu.xml", [node.output(0)], [d, i, u])
    return Case(path, d=CPU_SCATTER_DATA, i=CPU_SCATTER_IDS, u=CPU_SCATTER_UPD)


def test_cpu_scatter_elements_update_nan_and_zero_tie(cpu_scatter_run, monkeypatch):
    out = passes(cpu_scatter_run.check(), {"NaN order": 2, "sign of a +-0 tie": 2})
    assert "first at [1]: jaxmax nan, runtime 2.0" in out and "§8.4)" in out, out
    rejects(monkeypatch, cpu_scatter_run,
            (0, 5, 4.0),  # no NaN and no zero routed to target 5
            (0, 2, 5.0),  # a NaN there, but 5 is not the contract's 1
            (0, 7, 0.0))  # zeros of both signs, but +0 is not the contract's -0


# --- OpenVINO's CPU plugin: ScatterNDUpdate-15 max ------------------------------------------
# k = 0 (indices' last dim 0): each update tuple names the whole tensor; the CPU plugin returns
# data unchanged where the spec folds every update in (docs/semantics.md §8.4). Data (2, 3):
# element 0 NaN (kept), 1 +0 against -0 (kept), 2 -0 against +0 (kept: -0 < +0 is false),
# 3 1 against [NaN, 2] (2, the NaN ignored), 4 5 against [4, 5] (kept), 5 -inf against [-1, -1]
# (-1).
ND_DATA = np.array([[np.nan, 0.0, -0.0], [1, 5, -np.inf]], np.float32)
ND_UPD = np.array([[[2, -0.0, 0.0], [np.nan, 4, -1]], [[3, -0.0, -0.0], [2, 5, -1]]],
                  np.float32)


@pytest.fixture
def cpu_scatter_nd_run(tmp_path):
    d = ov1.parameter([2, 3], np.float32, name="d")
    i = ov1.parameter([2, 0], np.int64, name="i")
    u = ov1.parameter([2, 2, 3], np.float32, name="u")
    node = ov15.scatter_nd_update(d, i, u, reduction="max")
    path = ov_model(tmp_path / "sndu.xml", [node.output(0)], [d, i, u])
    return Case(path, d=ND_DATA, i=np.zeros((2, 0), np.int64), u=ND_UPD)


def corrupt_runtime(monkeypatch, edit):
    """Make the CPU plugin's outputs `edit(outputs)` (edited in place) before the comparison."""
    from jaxmax._src.check.runners import OpenVinoModel

    real = OpenVinoModel.run

    def run(self, feeds, entries):
        real(self, feeds, entries)
        for entry in entries:
            edit(entry.outputs)

    monkeypatch.setattr(OpenVinoModel, "run", run)


def test_cpu_scatter_nd_update_k0_ignored(cpu_scatter_nd_run, monkeypatch):
    # the spec's fold (tests/scatter_oracle.py), not the contract module, says which differ
    from scatter_oracle import scatter_nd
    want = scatter_nd(ND_DATA, np.zeros((2, 0), np.int64), ND_UPD, "acc_lt")
    n = int(deviations.differing(want, ND_DATA).sum())
    assert n == 2  # elements 3 and 5
    out = passes(cpu_scatter_nd_run.check(), {"k = 0": n})
    assert "first at [1, 0]: jaxmax 2.0, runtime 1.0" in out and "§8.4)" in out, out
    rejects(monkeypatch, cpu_scatter_nd_run,
            (0, (1, 1), 6.0),  # kept by the fold (5 against [4, 5]): 6 is no one's value
            (0, (1, 0), np.nan),  # the fold ignores the NaN update: not the contract's 2
            (0, (0, 1), -0.0),  # the fold keeps the data's +0 on the tie
            (0, (1, 2), -2.0))  # not the fold's -1
    # the runtime's value must be the data element: a plugin that applied some other rule is
    # not the documented deviation
    for at, value in (((1, 0), 1.5), ((1, 2), -3.0), ((0, 2), 0.5)):
        corrupt_runtime(monkeypatch, lambda ys, a=at, v=value: ys[0].__setitem__(a, v))
        fails(cpu_scatter_nd_run.check(), unexplained=1)
        monkeypatch.undo()


def test_cpu_scatter_nd_update_k0_mutated_contract(cpu_scatter_nd_run, monkeypatch):
    from jaxmax._src.check import contract

    real = contract.ov_scatter_nd_update

    def folds_ieee(binding, inputs):  # the ONNX rule: NaN propagates, +0 beats -0
        want = real(binding, inputs)
        want[0, 2], want[1, 0] = 0.0, np.nan
        return want

    monkeypatch.setattr(contract, "ov_scatter_nd_update", folds_ieee)
    fails(cpu_scatter_nd_run.check(), unexplained=1)  # element (1, 0): jaxmax 2, contract NaN
    monkeypatch.setattr(contract, "ov_scatter_nd_update", lambda *args: None)
    fails(cpu_scatter_nd_run.check(), unexplained=2)  # no contract value: nothing excused


def test_cpu_scatter_nd_update_k1_has_no_excuse(tmp_path, monkeypatch):
    d = ov1.parameter([2, 3], np.float32, name="d")
    i = ov1.parameter([2, 1], np.int64, name="i")
    u = ov1.parameter([2, 3], np.float32, name="u")
    node = ov15.scatter_nd_update(d, i, u, reduction="max")
    path = ov_model(tmp_path / "sndu1.xml", [node.output(0)], [d, i, u])
    case = Case(path, d=ND_DATA, i=np.array([[1], [-1]], np.int64), u=ND_UPD[1])
    status, out = case.check()
    assert status == 0 and "1 of 1 max-family nodes exact" in out, out  # k = 1: the plugin
    # folds the spec's rule (NaN data kept, -0 and +0 ties kept, duplicates, a negative index)
    rejects(monkeypatch, case, (0, (1, 0), 2.5), (0, (0, 0), 1.0))


@pytest.mark.parametrize(("dtype", "data", "updates", "want"), [
    # float64: the plugin's f32 conversion saturates infinities and rounds 1 + 2**-40
    (np.float64, [np.inf, -np.inf, 1 + 2**-40, 0.0], [-np.inf, 1.0, -np.inf, np.inf],
     {"64-bit data": 1, "float64 infinity": 2}),
    # int64: the plugin truncates to int32
    (np.int64, [2**40 + 1, 3, 0, 2**31], [2**40, -7, 5, 0], {"64-bit data": 2}),
], ids=["f64", "i64"])
def test_cpu_scatter_nd_update_64_bit(tmp_path, monkeypatch, dtype, data, updates, want):
    d = ov1.parameter([4], dtype, name="d")
    i = ov1.parameter([4, 1], np.int64, name="i")
    u = ov1.parameter([4], dtype, name="u")
    path = ov_model(tmp_path / "sndu64.xml",
                    [ov15.scatter_nd_update(d, i, u, reduction="max").output(0)], [d, i, u])
    case = Case(path, d=np.array(data, dtype), i=np.array([[3], [2], [1], [0]], np.int64),
                u=np.array(updates, dtype))
    passes(case.check(), want)
    clean = Case(path, d=np.array([1, 2, 3, 4], dtype), i=case.arrays["i"],
                 u=np.array([0, 5, 0, 0], dtype))
    rejects(monkeypatch, clean, (0, 2, 7))  # no 64-bit value and no infinity there
    if dtype == np.float64:  # element 0: jaxmax inf; a runtime 1.0 is no saturated infinity
        corrupt_runtime(monkeypatch, lambda ys: ys[0].__setitem__(0, 1.0))
        fails(case.check(), unexplained=1)


def test_cpu_scatter_elements_update_float16_lowest(tmp_path, monkeypatch):
    d = ov1.parameter([3], np.float16, name="d")
    i = ov1.parameter([3], np.int64, name="i")
    u = ov1.parameter([3], np.float16, name="u")
    node = ov12.scatter_elements_update(d, i, u, ov1.constant(np.array(0, np.int64)),
                                        reduction="max", use_init_val=False)
    path = ov_model(tmp_path / "seu16.xml", [node.output(0)], [d, i, u])
    # target 0 starts at lowest(f16) and takes only -inf: -65504 (jaxmax), -inf (the plugin)
    case = Case(path, d=np.array([5, 1, 2], np.float16), i=np.array([0, 0, 2], np.int64),
                u=np.array([-np.inf, -np.inf, 3], np.float16))
    out = passes(case.check(), {"float16 lowest": 1})
    assert "first at [0]: jaxmax -65504.0, runtime -inf" in out, out
    rejects(monkeypatch, case, (0, 0, -65472.0))  # not lowest exactly


# --- nodes jaxmax does not bind: listed as not covered, never failures -----------------------

def test_openvino_scatter_nodes_with_other_reductions_are_not_covered(tmp_path):
    import openvino.opset3 as ov3
    import openvino.opset4 as ov4

    d = ov1.parameter([4, 3], np.float32, name="d")
    i = ov1.parameter([2, 3], np.int64, name="i")
    u = ov1.parameter([2, 3], np.float32, name="u")
    ind = ov1.parameter([2, 1], np.int64, name="ind")
    axis = ov1.constant(np.array(0, np.int64))
    nodes = [ov12.scatter_elements_update(d, i, u, axis, reduction="max"),
             ov15.scatter_nd_update(d, ind, u, reduction="max"),
             ov12.scatter_elements_update(d, i, u, axis, reduction="sum"),
             ov3.scatter_elements_update(d, i, u, axis),
             ov15.scatter_nd_update(d, ind, u, reduction="min"),
             ov4.scatter_nd_update(d, ind, u)]
    path = ov_model(tmp_path / "scatters.xml", [n.output(0) for n in nodes], [d, i, u, ind])
    status, out = check(path, **_unbound_feeds())
    assert status == 0, out
    assert re.search(r"^2 of 2 max-family nodes exact, 4 not covered "
                     r"\(ScatterElementsUpdate x2, ScatterNDUpdate x2\)$", out, re.M), out
    for text in ("reduction 'sum': jaxmax binds reduction 'max' only",
                 "reduction 'min': jaxmax binds reduction 'max' only"):
        assert text in out, out
    assert len(re.findall(r"not covered: ", out)) == 4, out


def _unbound_feeds() -> dict[str, np.ndarray]:
    """Inputs of the two models of scatter nodes with other reductions and versions."""
    rng = np.random.default_rng(0)
    return {"d": rng.standard_normal((4, 3)).astype(np.float32),
            "i": np.array([[0, 3, -1], [3, 3, 0]], np.int64),
            "u": rng.standard_normal((2, 3)).astype(np.float32),
            "ind": np.array([[2], [-2]], np.int64)}


def test_onnx_scatter_nodes_jaxmax_does_not_bind_are_not_covered(tmp_path):
    # at opset 16 onnxruntime accepts reduction max, which the ONNX schema adds at 18: bound
    # with the version-18 rule (tests/test_check_scatter_ahead.py); add and none are not
    nodes = [helper.make_node("ScatterElements", ["d", "i", "u"], ["y0"], reduction="max"),
             helper.make_node("ScatterND", ["d", "ind", "u"], ["y1"], reduction="add"),
             helper.make_node("ScatterElements", ["d", "i", "u"], ["y2"])]
    for opset, want in ((16, r"1 of 1 max-family nodes exact, 2 not covered "
                             r"\(ScatterElements, ScatterND\)"),
                        (18, r"1 of 1 max-family nodes exact, 2 not covered "
                             r"\(ScatterElements, ScatterND\)")):
        graph = helper.make_graph(
            nodes, "g", [helper.make_tensor_value_info("d", F32, [4, 3]),
                         helper.make_tensor_value_info("i", I64, [2, 3]),
                         helper.make_tensor_value_info("u", F32, [2, 3]),
                         helper.make_tensor_value_info("ind", I64, [2, 1])],
            [helper.make_tensor_value_info(f"y{k}", F32, [4, 3]) for k in range(3)])
        path = tmp_path / f"scatters{opset}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                    ir_version=10), str(path))
        status, out = check(path, **_unbound_feeds())
        assert status == 0, out
        assert re.search(rf"^{want}$", out, re.M), out
        assert ("jaxmax has ScatterElements versions [18], not 16" in out) is (opset == 16)


def _nd_draw(rng, dtype, shape):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.choice(np.array([info.min, 0, 1, 2, info.max], dtype), size=shape)
    pool = np.array([-2, -1, -0.0, 0, 1, 2, np.inf, -np.inf, np.nan], np.float64)
    return rng.choice(pool, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8, np.uint8, np.bool_])
def test_cpu_scatter_nd_update_sweep(tmp_path, dtype):
    """Ranks 1-4, k = 0-3, duplicate and negative indices, NaN, +-0 and infinities in data and
    updates: each node exact, or (k = 0 only) every difference the "k = 0" row."""
    rng = np.random.default_rng(7)
    outputs, params, arrays, k0 = [], [], {}, 0
    for rank, k in ((1, 1), (2, 2), (3, 1), (3, 0), (4, 3)):
        shape = (3, 2, 4, 2)[:rank]
        lead = (5,)
        indices = np.zeros(lead + (k,), np.int64)
        for j in range(k):
            indices[..., j] = rng.integers(-shape[j], shape[j], lead)
        updates = lead + shape[k:]
        names = [f"{x}{len(outputs)}" for x in "diu"]
        d, i, u = (ov1.parameter(list(s), t, name=n) for s, t, n in zip(
            (shape, indices.shape, updates), (dtype, np.int64, dtype), names, strict=True))
        outputs.append(ov15.scatter_nd_update(d, i, u, reduction="max").output(0))
        params += [d, i, u]
        arrays |= dict(zip(names, (_nd_draw(rng, dtype, shape), indices,
                                   _nd_draw(rng, dtype, updates)), strict=True))
        k0 += k == 0
    status, out = check(ov_model(tmp_path / "sweep.xml", outputs, params), **arrays)
    assert status == 0, out
    rows = re.findall(r"^ScatterNDUpdate\S*\s+ScatterNDUpdate-15\s.*$", out, re.M)
    assert len(rows) == 5, out
    deviations_rows = [r for r in rows if "runtime deviation" in r]
    assert len(deviations_rows) == k0 and all(
        re.search(r"each explained: \d+ elements?: k = 0 \(", r) for r in deviations_rows), out
    assert all(r.endswith("exact") for r in rows if r not in deviations_rows), out


def test_the_contract_folds_are_the_specs_sequential_folds():
    """contract.py's vectorised SEU-12 and SNDU-15 folds against tests/scatter_oracle.py's loops
    (one Python step per update), on draws with NaN, +-0, infinities, duplicates, negative
    indices and k = 0."""
    from scatter_oracle import scatter_elements, scatter_nd

    from jaxmax._src.check import contract
    from jaxmax._src.openvino.node import from_node

    rng = np.random.default_rng(11)
    for _ in range(60):
        rank = int(rng.integers(1, 4))
        shape = tuple(int(n) for n in rng.integers(1, 4, rank))
        k = int(rng.integers(0, rank + 1))
        lead = (int(rng.integers(1, 5)),)
        indices = np.zeros(lead + (k,), np.int64)
        for j in range(k):
            indices[..., j] = rng.integers(-shape[j], shape[j], lead)
        data = _nd_draw(rng, np.float32, shape)
        updates = _nd_draw(rng, np.float32, lead + shape[k:])
        node = ov15.scatter_nd_update(*(ov1.parameter(list(a.shape), a.dtype) for a in
                                        (data, indices, updates)), reduction="max")
        got = contract.ov_scatter_nd_update(from_node(node), [data, indices, updates])
        assert not deviations.differing(got, scatter_nd(data, indices, updates, "acc_lt")).any()

        axis = int(rng.integers(0, rank))
        ids = rng.integers(-shape[axis], shape[axis], tuple(
            int(rng.integers(1, 6)) if d == axis else n for d, n in enumerate(shape)))
        updates = _nd_draw(rng, np.float32, ids.shape)
        for use_init_val in (True, False):
            node = ov12.scatter_elements_update(
                *(ov1.parameter(list(a.shape), a.dtype) for a in (data, ids, updates)),
                ov1.constant(np.array(axis)), reduction="max", use_init_val=use_init_val)
            got = contract.ov_scatter_elements_update(from_node(node), [data, ids, updates])
            want = scatter_elements(data, ids, updates, axis, "acc_gt", use_init_val)
            assert not deviations.differing(got, want).any()
