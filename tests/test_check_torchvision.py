"""``python -m jaxmax check`` on models torchvision itself exported (tests/data/torchvision/,
written by its export.py with torch 2.14.1 and torchvision 0.29.1, whose compiled ops do not
load beside this project's torch wheel): a whole Faster R-CNN (RPN TopK per FPN level, the
``MultiScaleRoIAlign`` box pooler, the box head), that pooler alone with proposals on all four
FPN levels at ``sampling_ratio`` 2 and 0, and ``RoIPool`` (MaxRoiPool). Each as ONNX run by
onnxruntime and converted to OpenVINO IR run by the CPU plugin: every max-family node exact, or
(IR RoiAlign) each differing element explained by a documented deviation of the runtime.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
ov_runtime = pytest.importorskip("openvino")

from compile_cache import shared_compiles  # noqa: E402,F401 (the fixture)

from jaxmax._src.check import cli  # noqa: E402

pytestmark = pytest.mark.usefixtures("shared_compiles")

DATA = Path(__file__).parent / "data" / "torchvision"


def _check(model: Path, inputs: Path | None = None) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    args = [str(model)] + ([] if inputs is None else ["--inputs", str(inputs)])
    status = cli.main(args, out, err)
    return status, out.getvalue() + err.getvalue()


def _rows(out: str) -> dict[str, list[str]]:
    """Result text per op of each max-family row (op -> results)."""
    rows: dict[str, list[str]] = {}
    for line in out.splitlines():
        m = re.match(r"^\S+\s+([A-Za-z]+-\d+)\s.*\)\s{2,}(\S.*)$", line)
        if m and not m.group(2).startswith("not covered"):
            rows.setdefault(m.group(1), []).append(m.group(2))
    return rows


def _ir(tmp_path: Path, name: str) -> Path:
    xml = tmp_path / (Path(name).stem + ".xml")
    ov_runtime.save_model(ov_runtime.convert_model(str(DATA / name)), str(xml))
    return xml


def _proposals(count: int, seed: int) -> np.ndarray:
    """Boxes 16-700 px in an 800x800 image, so that torchvision's LevelMapper sends proposals
    to each of the four FPN levels (sqrt(area) under 112, 112-224, 224-448, 448 and over)."""
    rng = np.random.default_rng(seed)
    wh = np.exp(rng.uniform(np.log(16), np.log(700), (count, 2)))
    xy = rng.uniform(0, 800 - wh)
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


@pytest.fixture(scope="module")
def pooler_inputs(tmp_path_factory) -> Path:
    rng = np.random.default_rng(7)
    # 40 proposals (18, 12, 8 and 2 per level) reach every level and both sampling-ratio paths
    # as 400 did; the count is not the subject, and each RoiAlign node's run scales with it
    rois = _proposals(40, 12)
    side = np.sqrt((rois[:, 2] - rois[:, 0]) * (rois[:, 3] - rois[:, 1]))
    levels = np.clip(np.floor(4 + np.log2(side / 224) + 1e-6), 2, 5)
    assert set(levels) == {2, 3, 4, 5}  # every FPN level gets proposals
    feeds = {f"p{i + 2}": rng.standard_normal((1, 8, 800 // s, 800 // s)).astype(np.float32)
             for i, s in enumerate((4, 8, 16, 32))}
    feeds["rois"] = rois
    path = tmp_path_factory.mktemp("pooler") / "in.npz"
    np.savez(path, **feeds)
    return path


def test_faster_rcnn_onnx_is_exact():
    status, out = _check(DATA / "faster_rcnn.onnx")
    assert status == 0, out
    rows = _rows(out)
    assert rows["TopK-11"] == ["exact"] * 4, out
    assert rows["RoiAlign-16"] == ["exact"] * 4, out
    assert len(rows["ReduceMax-13"]) == 4 and set(rows["ReduceMax-13"]) == {"exact"}, out
    assert set(rows["Max-13"]) == {"exact"}, out


def test_faster_rcnn_ir(tmp_path):
    status, out = _check(_ir(tmp_path, "faster_rcnn.onnx"))
    assert status == 0, out
    rows = _rows(out)
    assert rows["TopK-11"] == ["exact"] * 4, out
    assert len(rows["ROIAlign-9"]) == 4, out
    for result in rows["ROIAlign-9"]:
        assert result == "exact" or (result.startswith("runtime deviation")
                                     and "fused multiply-add" in result), out


@pytest.mark.parametrize("sr", [2, 0])
def test_pooler_onnx_is_exact(pooler_inputs, sr):
    status, out = _check(DATA / f"pooler_sr{sr}.onnx", pooler_inputs)
    assert status == 0, out
    assert _rows(out)["RoiAlign-16"] == ["exact"] * 4, out
    assert "(0, 8, 7, 7)" not in out, out  # each level pooled some proposals


@pytest.mark.parametrize("sr", [2, 0])
def test_pooler_ir(tmp_path, pooler_inputs, sr):
    status, out = _check(_ir(tmp_path, f"pooler_sr{sr}.onnx"), pooler_inputs)
    assert status == 0, out
    results = _rows(out)["ROIAlign-9"]
    assert len(results) == 4, out
    for result in results:
        assert result == "exact" or (result.startswith("runtime deviation")
                                     and "fused multiply-add" in result), out


def test_roi_pool_onnx_and_ir(tmp_path):
    rng = np.random.default_rng(9)
    rois = _proposals(300, 10)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=rng.standard_normal((1, 8, 50, 50)).astype(np.float32),
             rois=np.concatenate([np.zeros((300, 1), np.float32), rois], 1))
    status, out = _check(DATA / "roi_pool.onnx", inputs)
    assert status == 0, out
    assert _rows(out)["MaxRoiPool-1"] == ["exact"], out
    status, out = _check(_ir(tmp_path, "roi_pool.onnx"), inputs)
    assert status == 0, out
    assert _rows(out)["ROIPooling-2"] == ["exact"], out
