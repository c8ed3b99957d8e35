"""Every notebook in colab/ runs top to bottom on a CPU, and is saved ready for Colab.

Each notebook asserts its own results in its cells, so executing it is the test: any cell error
fails it. The kernel is the interpreter running pytest (a throwaway kernelspec pointing at
``sys.executable``), started in ``colab/``. A notebook whose optional runtime (openvino,
onnxruntime) is missing skips those cells itself and prints that it did.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402 (after the importorskips)
from jupyter_client.manager import KernelManager  # noqa: E402

COLAB = Path(__file__).resolve().parent.parent / "colab"
NOTEBOOKS = sorted(COLAB.glob("*.ipynb"))
BADGE = ("[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
         "(https://colab.research.google.com/github/jaxmax/jaxmax/blob/main/colab/{name})")
INSTALL = '%pip install -q git+https://github.com/jaxmax/jaxmax'


def test_the_three_notebooks_exist():
    assert [p.name for p in NOTEBOOKS] == ["01_tour.ipynb", "02_pictures.ipynb", "03_porting.ipynb"]


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory) -> Path:
    """A kernelspec directory whose one kernel runs the current interpreter."""
    root = tmp_path_factory.mktemp("kernels")
    spec = root / "jaxmax-test"
    spec.mkdir()
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "jaxmax test", "language": "python"}))
    return root


def _outputs(nb, kind: str) -> list:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
            if o.output_type == kind or kind in o.get("data", {})]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_notebook_is_ready_for_colab(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    first, install = nb.cells[0], nb.cells[1]
    assert first.cell_type == "markdown"
    assert first.source.startswith(BADGE.format(name=path.name))
    assert install.cell_type == "code"
    # installs only when the import fails
    assert re.search(r"try:\s+import jaxmax\s+except ImportError:", install.source)
    assert INSTALL.split(" ", 1)[1] in install.source and '"pip"' in install.source
    code = [c for c in nb.cells if c.cell_type == "code"]
    # saved with outputs, executed in order, without errors
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    assert not _outputs(nb, "error")
    assert sum(len(c.outputs) for c in code) >= len(code) // 2
    assert all(o.name == "stdout" for o in _outputs(nb, "stream")), "stderr noise was saved"
    if path.name == "02_pictures.ipynb":
        assert len(_outputs(nb, "image/png")) >= 3


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom(path, kernel_dir):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # run from a clean slate, not from the saved outputs
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    km = KernelManager(kernel_name="jaxmax-test",
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernel_dir)]))
    client = nbclient.NotebookClient(nb, km=km, timeout=300, allow_errors=False,
                                     resources={"metadata": {"path": str(COLAB)}})
    # Run as a user would, outside CI: OpenVINO's import then sends telemetry from a forked
    # process, which must not make JAX warn (the notebooks import the runtimes before JAX starts).
    env = {name: value for name, value in os.environ.items() if name != "CI"}
    client.execute(env=env)  # raises CellExecutionError on a failing cell

    assert not _outputs(nb, "error")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    text = "".join(o.text for o in _outputs(nb, "stream"))
    stderr = "".join(o.text for o in _outputs(nb, "stream") if o.name == "stderr")
    assert not stderr, f"the notebook printed to stderr (a warning a user would see): {stderr}"
    if path.name == "02_pictures.ipynb":
        assert len(_outputs(nb, "image/png")) >= 3
    if path.name == "03_porting.ipynb":
        # each runtime was either compared or explicitly skipped
        assert ("OpenVINO" in text and "== jaxmax" in text) or "skipped the OpenVINO" in text
        assert "onnxruntime" in text and ("== jaxmax" in text or "skipped the onnxruntime" in text)
