"""The documentation site and the README cannot drift from the code.

* Every public function of ``jaxmax.onnx`` and ``jaxmax.openvino`` (their ``__all__``) has an
  entry in the API reference (docs/api/*.md), and the reference names nothing else.
* The README's operator table agrees with the ``VERSIONS`` tables that ``from_node`` binds.
* Every python code block of the README and the site's pages runs, each in a fresh interpreter
  (blocks are self-contained: the sharding example must configure JAX before it starts).
* The performance page's tables are the ones docs/plots/make_plots.py makes from
  benchmarks/RESULTS.md, and the notebooks page links every notebook in colab/.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import jaxmax
from jaxmax._src.onnx.node import VERSIONS as ONNX_VERSIONS
from jaxmax._src.openvino.node import VERSIONS as OPENVINO_VERSIONS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FACES = {"onnx": (jaxmax.onnx, ONNX_VERSIONS, "ONNX"),
         "openvino": (jaxmax.openvino, OPENVINO_VERSIONS, "OpenVINO")}
# docs/semantics.md's python blocks are signature summaries (`ov.top_k(data, k, *, axis, ...)`),
# not programs; its examples live on the operator pages, which run.
NOT_PROGRAMS = {DOCS / "semantics.md"}
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def _blocks() -> list[tuple[str, str]]:
    found = []
    for page in _pages():
        if page in NOT_PROGRAMS:
            continue
        for i, match in enumerate(BLOCK.finditer(page.read_text())):
            found.append((f"{page.relative_to(ROOT)}#{i}", match.group(1)))
    return found


@pytest.mark.parametrize("face", sorted(FACES))
def test_api_reference_has_every_public_function(face):
    module, _, _ = FACES[face]
    text = (DOCS / "api" / f"{face}.md").read_text()
    entries = re.findall(rf"^::: jaxmax\.{face}\.(\w+)\s*$", text, re.M)
    missing = sorted(set(module.__all__) - set(entries))
    assert not missing, (f"docs/api/{face}.md has no entry for {missing}: add "
                         + ", ".join(f"'::: jaxmax.{face}.{n}'" for n in missing))
    unknown = sorted(set(entries) - set(module.__all__))
    assert not unknown, f"docs/api/{face}.md documents {unknown}, not in jaxmax.{face}.__all__"
    assert len(entries) == len(set(entries)), f"docs/api/{face}.md repeats an entry"


def _readme_operator_rows() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Operators", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("|")]
    assert rows[0][:4] == ["face", "operator", "versions", "function"], rows[0]
    return rows[2:]


def test_readme_operator_table_matches_the_version_tables():
    labels = {label: face for face, (_, _, label) in FACES.items()}
    table: dict[str, dict[str, tuple[int, ...]]] = {face: {} for face in FACES}
    for face_label, op, versions, function, page in _readme_operator_rows():
        face = labels[face_label]
        assert op not in table[face], f"README lists {face_label} {op} twice"
        table[face][op] = tuple(int(v) for v in versions.split(","))
        module, _, _ = FACES[face]
        name = function.strip("`").rsplit(".", 1)
        assert name[0] == f"jaxmax.{face}" and name[1] in module.__all__, function
        link = re.fullmatch(r"\[[^\]]+\]\((docs/[\w/.-]+\.md)\)", page)
        assert link and (ROOT / link.group(1)).is_file(), page
    for face, (_, versions, label) in FACES.items():
        assert table[face] == dict(versions), (
            f"README's {label} rows {table[face]} differ from VERSIONS {dict(versions)}")


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_code_block_runs(where, code, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the jaxmax under test
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{where} failed:\n{result.stdout}\n{result.stderr}"


def test_every_page_has_a_code_block_that_runs_or_says_why_not():
    """Each operator page shows an example (the brief of the site: examples per family)."""
    for page in sorted((DOCS / "operators").glob("*.md")):
        assert BLOCK.search(page.read_text()), f"{page.name} has no python example"


def _make_plots():
    spec = importlib.util.spec_from_file_location("make_plots", DOCS / "plots" / "make_plots.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_performance_tables_follow_results():
    make_plots = _make_plots()
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    expected = make_plots.tables_markdown(results)
    assert (DOCS / "plots" / "tables.md").read_text() == expected, (
        "docs/plots/tables.md is behind benchmarks/RESULTS.md: run "
        "python docs/plots/make_plots.py")
    names = [group.name for group in make_plots.groups(results)]
    for name in ("reduce", "max_pool", "segment_max", "ArgMax", "TopK", "MaxUnpool"):
        assert name in names
    page = (DOCS / "performance.md").read_text()
    assert '--8<-- "docs/plots/tables.md"' in page


def test_notebooks_page_links_every_notebook():
    text = (DOCS / "notebooks.md").read_text()
    notebooks = sorted(p.name for p in (ROOT / "colab").glob("*.ipynb"))
    assert notebooks
    for name in notebooks:
        assert f"colab.research.google.com/github/jaxmax/jaxmax/blob/main/colab/{name}" in text
