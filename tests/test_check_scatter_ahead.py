"""ScatterElements and ScatterND nodes with reduction max at opsets 16-17: outside the ONNX
schema (max arrives in version 18), written by torch's TorchScript exporter
(``scatter_reduce(..., "amax")`` at ``opset_version=16/17``) and run by onnxruntime with the
version-18 rule. ``onnx.from_node`` binds them with that rule and says so (``note``);
``python -m jaxmax check`` checks them like any other node, the note in the row. Reduction
min (the dynamo exporter's setup scatter) stays not covered, and the public
``onnx.scatter_elements`` / ``onnx.scatter_nd`` keep rejecting max below opset 18
(docs/semantics.md §8.1). The oracle is onnxruntime's run of each node."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from helpers import assert_same  # noqa: E402
from onnx import helper  # noqa: E402
from test_check_deviations import F32, I64, check, corrupt, fails, onnx_model, passes  # noqa: E402
from test_check_scatter import SCATTER_DATA, SCATTER_IDS, SCATTER_UPD  # noqa: E402

from jaxmax import onnx as jonnx  # noqa: E402
from jaxmax._src.node_binding import NodeBindingError  # noqa: E402

NOTE = "outside the ONNX schema at this opset; run as {op}-18, as onnxruntime does"


def _ids(op):
    return SCATTER_IDS if op == "ScatterElements" else SCATTER_IDS[:, None]


def _model(tmp_path, op, opset, reduction="max"):
    node = helper.make_node(op, ["d", "i", "u"], ["y"], reduction=reduction, name="s")
    return onnx_model(tmp_path / f"{op}{opset}.onnx", node,
                      [("d", F32, [7]), ("i", I64, list(_ids(op).shape)), ("u", F32, [8])],
                      [("y", F32)], opset=opset)


@pytest.mark.parametrize("opset", [16, 17])
@pytest.mark.parametrize("op", ["ScatterElements", "ScatterND"])
def test_bound_with_the_version_18_rule(tmp_path, op, opset):
    path = _model(tmp_path, op, opset)
    node = onnx.load(str(path)).graph.node[0]
    f = jonnx.from_node(node, opset=opset)
    assert f.version == 16 and f.attributes["opset"] == 18
    assert f.note == NOTE.format(op=op)
    # duplicate targets, NaN and +-0 in data and updates, a negative index
    data = np.array([0, 5, 8, 0.0, -0.0, np.nan, 2], np.float32)  # target 5: untouched
    ids = np.array([0, 0, 1, 3, 4, 4, -1, 2], np.int64)
    ids = ids if op == "ScatterElements" else ids[:, None]
    upd = np.array([3, -1, 7, -0.0, 0.0, -2, 9, 4], np.float32)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"d": data, "i": ids, "u": upd})
    (got,) = f(data, ids, upd)
    # no NaN in a touched target or update: the values agree (the zero a -0.0/+0.0 tie
    # keeps is onnxruntime's fold order, a documented deviation: docs/semantics.md §8.4)
    assert_same(np.asarray(got), want, zero_signs=False)


@pytest.mark.parametrize("op", ["scatter_elements", "scatter_nd"])
def test_the_public_function_keeps_rejecting_max_below_18(op):
    ids = np.zeros((1,), np.int64) if op == "scatter_elements" else np.zeros((1, 1), np.int64)
    with pytest.raises(ValueError, match="needs opset 18"):
        getattr(jonnx, op)(np.zeros(2, np.float32), ids, np.ones(1, np.float32),
                           reduction="max", opset=16)


@pytest.mark.parametrize("opset", [16, 17])
def test_check_explains_or_proves_exact(tmp_path, monkeypatch, opset):
    path = _model(tmp_path, "ScatterElements", opset)
    # clean inputs: exact
    clean = {"d": np.arange(7, dtype=np.float32), "i": SCATTER_IDS,
             "u": np.arange(8, dtype=np.float32) - 3}
    status, out = check(path, **clean)
    assert status == 0 and "1 of 1 max-family nodes exact" in out, out
    assert f"ScatterElements-16  onnx.scatter_elements(data, indices, updates, reduction='max')  " \
           f"[{NOTE.format(op='ScatterElements')}]" in out, out
    # NaN and +-0: onnxruntime's fold, each difference explained as for version 18
    passes(check(path, d=SCATTER_DATA, i=SCATTER_IDS, u=SCATTER_UPD),
           {"NaN order": 2, "sign of a +-0 tie": 1})
    corrupt(monkeypatch, lambda ys: ys[0].__setitem__(5, 4.0))  # target 5: no NaN, no zero
    fails(check(path, d=SCATTER_DATA, i=SCATTER_IDS, u=SCATTER_UPD), unexplained=1)


def test_min_and_add_stay_not_covered(tmp_path):
    for reduction, reason in (("min", "reduction 'min': jaxmax binds reduction 'max' only"),
                              ("add", "jaxmax has ScatterElements versions [18], not 16")):
        path = _model(tmp_path, "ScatterElements", 17, reduction)
        with pytest.raises(NodeBindingError, match=reason.replace("[", r"\[")):
            jonnx.from_node(onnx.load(str(path)).graph.node[0], opset=17)
        status, out = check(path, d=SCATTER_DATA, i=SCATTER_IDS, u=SCATTER_UPD)
        assert status == 0 and "0 of 0 max-family nodes exact" in out, out
        assert f"ScatterElements-16  -            -        not covered: ONNX node 's' " \
               f"(ScatterElements-16): {reason}" in out, out
