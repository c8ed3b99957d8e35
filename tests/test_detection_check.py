"""``check`` on detection heads: a MaxRoiPool head as torchvision's ``roi_pool`` exports it
(opset 11) and the same converted to OpenVINO IR (ROIPooling), and a Hardmax graph. Exact on
clean data; with NaN, ``-0.0`` and ROIs partly outside the image every differing element is
explained by its documented runtime deviation (docs/semantics.md §11.5), and a wrong jaxmax
value is not."""

from __future__ import annotations

import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
openvino = pytest.importorskip("openvino")

from compile_cache import shared_compiles  # noqa: E402,F401 (the fixture)
from onnx import TensorProto, helper  # noqa: E402 (after the importorskips)
from test_check_cli import check  # noqa: E402 (the CLI called in-process)

from jaxmax._src.check import roi_contract  # noqa: E402

pytestmark = pytest.mark.usefixtures("shared_compiles")


def _head(path, features=(1, 16, 20, 20), rois=40):
    node = helper.make_node("MaxRoiPool", ["features", "rois"], ["pooled"], name="roi_pool",
                            pooled_shape=[7, 7], spatial_scale=1 / 16)
    flat = helper.make_node("Flatten", ["pooled"], ["flat"], axis=1)
    graph = helper.make_graph(
        [node, flat], "box_head",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, list(features)),
         helper.make_tensor_value_info("rois", TensorProto.FLOAT, [rois, 5])],
        [helper.make_tensor_value_info("flat", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 8
    onnx.save(model, path)
    xml = path.with_suffix(".xml")
    openvino.save_model(openvino.convert_model(str(path)), str(xml))
    return path, xml


def _inputs(tmp_path, features=(1, 16, 20, 20), rois=40, special=False):
    rng = np.random.default_rng(1)
    image = features[2] * 16
    wh = rng.uniform(16, image / 2, (rois, 2))
    xy = rng.uniform(0, image - wh, (rois, 2))
    boxes = np.concatenate([np.zeros((rois, 1)), xy, xy + wh], 1).astype(np.float32)
    x = rng.standard_normal(features).astype(np.float32)
    if special:
        x[0, :, 3:5, 3:6] = np.nan
        x[0, :4, 8, 8] = -0.0
        x[0, :4, 8, 9] = 0.0
        x[0, 5, 10:14, 10:14] = -np.inf
        boxes[::5, 3:] += image / 2  # partly outside the image
    path = tmp_path / ("special.npz" if special else "clean.npz")
    np.savez(path, features=x, rois=boxes)
    return path


def test_roi_pool_head_exact_and_explained(tmp_path):
    onnx_path, xml_path = _head(tmp_path / "head.onnx")
    clean = _inputs(tmp_path)
    special = _inputs(tmp_path, special=True)
    for path in (onnx_path, xml_path):
        status, out, err = check(path, "--inputs", clean)
        assert status == 0 and "1 of 1 max-family nodes exact" in out, out + err
        status, out, err = check(path, "--inputs", special)
        assert status == 0, out + err
        assert re.search(r"runtime deviation, (\d+) differ, each explained: \1 elements: bin "
                         r"fold.*docs/semantics.md §11.5", out), out


def test_the_fold_rule_explains_only_its_own_elements(tmp_path, monkeypatch):
    """A jaxmax value that is not the contract's is never excused."""
    onnx_path, _ = _head(tmp_path / "head.onnx")
    special = _inputs(tmp_path, special=True)
    real = roi_contract.roi_pool

    def shifted(binding, x, rois, fold, exact_edges=False):
        out = real(binding, x, rois, fold, exact_edges)
        if fold == "onnx" and out is not None:  # the contract moved: jaxmax no longer matches
            out = np.where(np.isnan(out), np.float32(7), out)
        return out

    monkeypatch.setattr(roi_contract, "roi_pool", shifted)
    status, out, _ = check(onnx_path, "--inputs", special)
    assert status == 1, out


def test_hardmax_nan_rows_explained(tmp_path):
    x = np.random.default_rng(2).integers(0, 4, (6, 10)).astype(np.float32)
    for opset, axis in ((13, -1), (11, 1)):
        node = helper.make_node("Hardmax", ["x"], ["y"], name="hm", axis=axis)
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        path = tmp_path / f"hardmax{opset}.onnx"
        onnx.save(model, path)
        np.savez(tmp_path / "clean.npz", x=x)
        status, out, err = check(path, "--inputs", tmp_path / "clean.npz")
        assert status == 0 and "1 of 1 max-family nodes exact" in out, out + err
        nan_x = x.copy()
        nan_x[::2, 0] = np.nan
        nan_x[1, 4] = np.nan
        np.savez(tmp_path / "nan.npz", x=nan_x)
        status, out, err = check(path, "--inputs", tmp_path / "nan.npz")
        assert status == 0 and "runtime deviation" in out and "§11.5" in out, out + err
