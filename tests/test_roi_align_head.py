"""``python -m jaxmax check`` on a detector's box head (tests/roi_head_model.py): the ONNX graph
run by onnxruntime at opset 16, and the same graph (opsets 16 and 22) converted to OpenVINO IR
with ``openvino.convert_model`` and run by the CPU plugin. Every RoiAlign/ROIAlign node must be
exact or differ only where a documented runtime deviation explains each element.

onnxruntime 1.32 implements no RoiAlign-22 (NOT_IMPLEMENTED), so the opset-22 graph is checked
through OpenVINO only.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
ov_runtime = pytest.importorskip("openvino")

import roi_head_model  # noqa: E402

from jaxmax._src.check import cli  # noqa: E402


def _check(model, inputs) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main([str(model), "--inputs", str(inputs)], out, err)
    return status, out.getvalue() + err.getvalue()


def _rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if re.match(r"^\S+\s+[A-Za-z]+-\d+\s", line)]


#: (opset, proposals) -> whether the tests read its converted IR: the ONNX graphs at opset 16
#: (onnxruntime has no RoiAlign-22) and the IRs of the 300-proposal graphs (opsets 16 and 22)
USED = {(16, 300): True, (16, 1000): False, (22, 300): True}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The graphs, IRs and inputs the tests read, each written once (the 1000-proposal
    graph at opset 22 and the IR of the opset-16 one, which no test reads, are not made)."""
    root = tmp_path_factory.mktemp("roi_head")
    rng = np.random.default_rng(5)
    made = {}
    for rois in (300, 1000):
        feeds = {"p2": rng.standard_normal(roi_head_model.FEATURES[0]).astype(np.float32),
                 "p3": rng.standard_normal(roi_head_model.FEATURES[1]).astype(np.float32),
                 "rois": roi_head_model.proposals(rois, seed=rois)}
        np.savez(root / f"in{rois}.npz", **feeds)
        for opset in (16, 22):
            if (opset, rois) not in USED:
                continue
            path = root / f"head{opset}_{rois}.onnx"
            onnx.save(roi_head_model.box_head(opset, rois), path)
            xml = root / f"head{opset}_{rois}.xml"
            if USED[opset, rois]:
                ov_runtime.save_model(ov_runtime.convert_model(str(path)), str(xml))
            made[opset, rois] = (path, xml, root / f"in{rois}.npz")
    return made


@pytest.mark.parametrize("rois", [300, 1000])
def test_onnx_box_head_is_exact(files, rois):
    path, _, inputs = files[16, rois]
    status, out = _check(path, inputs)
    assert status == 0, out
    rows = _rows(out)
    assert len(rows) == 2 and all("exact" in r for r in rows), out


@pytest.mark.parametrize("opset", [16, 22])
def test_converted_box_head(files, opset):
    _, xml, inputs = files[opset, 300]
    status, out = _check(xml, inputs)
    assert status == 0, out
    rows = _rows(out)
    assert len(rows) == 2 and all("ROIAlign-9" in r for r in rows), out
