"""No import circles in jaxmax/ or benchmarks/.

The graph is read from the source with `ast`, without importing anything: every ``import`` and
``from ... import`` statement, at module level or inside a function, resolved to a module of
the project. A package's ``__init__.py`` is a module of its own (``from . import x`` is an edge
to the submodule ``x`` when there is one, else to the package), and importing ``a.b.c`` is an
edge to ``a.b.c`` only (not to the packages above it, which Python imports first but which
are not what the importing code uses). Module roots: the repository (``jaxmax``) and
``benchmarks/`` (``jaxmax_bench`` and the scripts, which ``benchmarks/run.py`` imports with
that folder on ``sys.path``).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: (folder scanned, folder its dotted names start from)
TREES = ((ROOT / "jaxmax", ROOT), (ROOT / "benchmarks", ROOT / "benchmarks"))

def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    """Dotted name -> file, for every ``.py`` file under the trees."""
    modules: dict[str, Path] = {}
    for folder, base in TREES:
        if not folder.is_dir():  # an installed copy without benchmarks/
            continue
        for path in sorted(folder.rglob("*.py")):
            modules[_module_name(path, base)] = path
    return modules


def _package_of(name: str, path: Path) -> str:
    """The package a module's relative imports start from."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules that ``name``'s source imports, anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: set[str] = set()

    def add(target: str) -> None:
        if target in modules and target != name:
            found.add(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = _package_of(name, path).split(".") if _package_of(name, path) else []
                up = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                base = ".".join(up + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}" if base else alias.name
                if sub in modules:  # `from pkg import submodule`
                    add(sub)
                else:               # `from module import a_name`
                    add(base)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def circles(graph: dict[str, set[str]],
            ignored: set[tuple[str, str]] = frozenset()) -> list[list[str]]:
    """Each strongly connected component of more than one module (or a module importing
    itself), as one circle through it: ``[a, b, ..., a]``."""
    edges = {a: {b for b in bs if (a, b) not in ignored} for a, bs in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm, iterative over each node's edges
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == node:
                            break
                    if len(component) > 1 or node in edges.get(node, ()):
                        components.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_one_circle(c, edges) for c in components]


def _one_circle(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest circle from the component's first module back to it (breadth first)."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for a in frontier:
            for b in sorted(edges[a] & members):
                if b == start:
                    return paths[a] + [start]
                if b not in paths:
                    paths[b] = paths[a] + [b]
                    nxt.append(b)
        frontier = nxt
    raise AssertionError(f"no circle in {component}")  # pragma: no cover


def test_the_graph_sees_the_projects_imports():
    graph = import_graph()
    assert "jaxmax._src.lowering.pooling" in graph  # a package's __init__ is a module
    # module level, function level, relative and `from package import submodule`
    assert "jaxmax._src.lowering.pooling.winners" in graph["jaxmax._src.lowering.pooling.max_pool"]
    assert "jaxmax._src.onnx.node" in graph["jaxmax._src.check.runners"]  # inside a method
    assert "jaxmax_bench.groups" in graph["jaxmax_bench.runner"]
    assert "jaxmax_bench.max_pool" in graph["jaxmax_bench.groups"]
    assert "jaxmax_bench.runner" in graph["run"]


def test_circles_are_found_and_named():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert circles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert circles(graph, {("c", "a"), ("e", "e")}) == []


@pytest.mark.parametrize("tree", ["jaxmax", "benchmarks"])
def test_no_import_circles(tree):
    graph = import_graph()
    prefix = ("jaxmax",) if tree == "jaxmax" else ("jaxmax_bench", "run", "pool_ab",
                                                   "scatter_bench", "elementwise_ab")
    found = [c for c in circles(graph) if c[0].split(".")[0] in prefix]
    assert not found, "import circles: " + "; ".join(" -> ".join(c) for c in found)
