"""``python -m jaxmax check`` on the suite's PyTorch CNN (tests/torch_cnn.py: ceil-mode and
dilated pools, one padded, and the other max-family layers), exported to ONNX (run by
onnxruntime) and converted to OpenVINO IR (run by the CPU plugin).

Each model is checked with a seeded image, then with the same image carrying NaN and -0.0
(``--inputs``): both exit 0, every row exact or a deviation whose every differing element a
documented deviation explains. A binding that drops the pools' padding fails the run (exit 1).
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")

import torch_cnn  # noqa: E402 (after the importorskips)
from compile_cache import shared_compiles  # noqa: E402,F401 (the fixture)

from jaxmax._src.check import cli  # noqa: E402
from jaxmax._src.onnx import node as onnx_node  # noqa: E402
from jaxmax._src.openvino import node as ov_node  # noqa: E402

pytestmark = pytest.mark.usefixtures("shared_compiles")

SHAPE = torch_cnn.SHAPE
# max-family nodes: ONNX has five MaxPool nodes (torch's indices trick adds a 1x1 one, the
# adaptive pool is exported as one), OpenVINO three
NODES = {"onnx": 9, "xml": 8}


@pytest.fixture(scope="module")
def models(tmp_path_factory, cnn_files):
    root = tmp_path_factory.mktemp("converted")
    onnx_path, xml_path = cnn_files
    image = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    marked = image.copy()
    rng = np.random.default_rng(1)
    marked[rng.random(SHAPE) < 0.01] = np.nan
    marked[rng.random(SHAPE) < 0.05] = -0.0
    files = {}
    for name, data in (("seeded", image), ("nan", marked)):
        files[name] = root / f"{name}.npz"
        np.savez(files[name], x=data)
    return {"onnx": onnx_path, "xml": xml_path}, files


def check(model, inputs) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main([str(model), "--inputs", str(inputs)], out, err)
    return status, out.getvalue() + err.getvalue()


def rows(out: str) -> list[str]:
    """The table's node rows (node name, op-version, call, ...)."""
    return [line for line in out.splitlines() if re.match(r"^\S+\s+[A-Za-z]+-\d+\s", line)]


@pytest.mark.parametrize("kind", ["onnx", "xml"])
@pytest.mark.parametrize("image", ["seeded", "nan"])
def test_every_row_exact_or_explained(models, kind, image):
    paths, files = models
    status, out = check(paths[kind], files[image])
    assert status == 0, out
    found = rows(out)
    assert len(found) == NODES[kind], out
    for row in found:
        assert row.endswith("  exact") or re.search(
            r"runtime deviation, (\d+) differ, each explained: ", row), row
        if "runtime deviation" in row:
            total = int(re.search(r"runtime deviation, (\d+) differ", row)[1])
            counts = [int(n) for n in re.findall(r"(\d+) elements?: ", row)]
            assert sum(counts) == total and "docs/semantics.md §" in row, row
    assert re.search(rf"^\d of {NODES[kind]} max-family nodes exact", out, re.M), out
    assert "differ or failed" not in out, out
    if kind == "onnx" and image == "nan":
        # onnxruntime's MaxPool drops NaN or lets a window's first element decide, in every
        # pool of more than one element: explained element by element, not hidden
        pools = [row for row in found if re.search(r"MaxPool-\d+\s", row)
                 and "kernel_shape=[1, 1]" not in row]
        assert len(pools) == 4, out
        assert all("elements: NaN order (onnxruntime" in row for row in pools), out
    else:  # no NaN, or the CPU plugin, which follows the contract with NaN here
        assert all(row.endswith("  exact") for row in found), out


@pytest.mark.parametrize("kind", ["onnx", "xml"])
def test_a_broken_binding_fails(models, monkeypatch, kind):
    paths, files = models
    module, drop = ((onnx_node, {"pads"}) if kind == "onnx"
                    else (ov_node, {"pads_begin", "pads_end"}))
    real = module._BINDERS["MaxPool"]

    def without_pads(*args):
        function, positional, keywords = real(*args)
        return function, positional, {k: v for k, v in keywords.items() if k not in drop}

    monkeypatch.setitem(module._BINDERS, "MaxPool", without_pads)
    status, out = check(paths[kind], files["nan"])
    assert status == 1, out
    assert re.search(r"shape \(2, 8, 7, 8\) != runtime \(2, 8, 8, 9\)", out), out
    assert "differ or failed" in out
