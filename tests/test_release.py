"""The version, the metadata and the changelog agree.

``python -m jaxmax --version`` prints ``jaxmax.__version__``; where the imported jaxmax is an
installed distribution (CI installs the wheel), its metadata carries the same version; the
changelog has a dated section for it; the classifiers list the Python version the suite runs
on (CI's).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import jaxmax

ROOT = Path(__file__).resolve().parent.parent


def test_version_flag_prints_the_version(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    result = subprocess.run([sys.executable, "-m", "jaxmax", "--version"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"jaxmax {jaxmax.__version__}\n"


def _installed_distribution():
    """The distribution that holds the imported jaxmax, or None (a checkout on the path, its
    `jaxmax.egg-info` from a build, or an editable install, whose metadata is written once at
    install time and may be stale)."""
    try:
        dist = importlib.metadata.distribution("jaxmax")
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.read_text("SOURCES.txt") is not None:  # a checkout's egg-info, not an install
        return None
    located = Path(str(dist.locate_file("jaxmax/__init__.py")))
    if located.exists() and located.resolve() == Path(jaxmax.__file__).resolve():
        return dist
    return None


def test_metadata_version_is_the_package_version():
    dist = _installed_distribution()
    if dist is None:
        pytest.skip("the imported jaxmax is not an installed distribution (a checkout or an "
                    "editable install); CI checks this against the wheel")
    assert dist.version == jaxmax.__version__
    assert dist.metadata["Name"] == "jaxmax"
    files = {str(f) for f in dist.files or ()}
    assert "jaxmax/py.typed" in files
    assert not any(f.startswith(("tests/", "benchmarks/")) for f in files)


def test_changelog_has_the_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    version = re.escape(jaxmax.__version__)
    assert re.search(rf"^## \[{version}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M), (
        f"CHANGELOG.md has no dated section for {jaxmax.__version__}")
    assert re.search(rf"^\[{version}\]: ", text, re.M)
    assert re.search(r"^## \[0\.1\.0\] - ", text, re.M)


def _ci_pythons(project) -> set[str]:
    """The CPython versions .ci/run tests: requires-python's lowest (the interpreter it starts
    with) and its NEWEST_PYTHON."""
    lowest = re.fullmatch(r">=\s*(3\.\d+)", project["requires-python"].strip())
    assert lowest, project["requires-python"]
    newest = re.search(r"^NEWEST_PYTHON=(3\.\d+)$", (ROOT / ".ci" / "run").read_text(), re.M)
    assert newest, ".ci/run names no NEWEST_PYTHON"
    return {lowest[1], newest[1]}


def test_classifiers_list_the_python_ci_runs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    python = f"Programming Language :: Python :: {sys.version_info[0]}.{sys.version_info[1]}"
    assert python in project["classifiers"]
    listed = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
              if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    assert listed == _ci_pythons(project)
    assert project["keywords"]
    if sys.platform.startswith("linux"):
        assert "Operating System :: POSIX :: Linux" in project["classifiers"]
