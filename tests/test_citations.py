"""Every citation in the repository points inside it.

docs/semantics.md is the one contract shipped with jaxmax; code, tests, printed output and docs
cite it as ``docs/semantics.md §5.5``. These tests read every tracked file (``git ls-files``,
or a walk of the source folders outside a git checkout) and fail when one

* cites the team's working contract file instead of docs/semantics.md, or a path outside the
  repository (a sibling ``shared/`` folder, a design guide, an absolute machine path);
* cites a section ``§N`` or ``§N.M`` that is not a numbered heading of docs/semantics.md;
* links, in Markdown, to a relative path that leaves the repository or does not exist.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "docs" / "semantics.md"

# Written in pieces so that this file does not match its own patterns.
_OUTSIDE = [
    re.compile(r"\b" + "SEMANTICS" + r"\b"),          # the working contract, not shipped
    re.compile(r"\.\./" + "shared"),
    re.compile(r"(?<![\w.])" + "shared/" + r"[A-Z]"),
    re.compile(r"\b" + "DESIGN" + r"\.md\b"),
    re.compile(r"(?<![\w:/])/" + "work" + r"/"),       # an absolute path on the build machine
]
_HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)
_SECTION = re.compile(r"§(\d+(?:\.\d+)?)(?:-§?(\d+(?:\.\d+)?))?")
_MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
#: snippets another page includes (pymdownx.snippets): their links resolve from that page
_INCLUDED_FROM = {"docs/plots/tables.md": "docs/performance.md"}


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode()
        names = [n for n in out.split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
    if not names:  # an unpacked sdist: no git metadata, walk the shipped folders instead
        for top in ("jaxmax", "tests", "docs", "benchmarks", "colab"):
            for base, _, files in os.walk(ROOT / top):
                names += [os.path.relpath(os.path.join(base, f), ROOT) for f in files]
        names += [n for n in ("README.md", "pyproject.toml") if (ROOT / n).exists()]
    return [ROOT / n for n in names if (ROOT / n).is_file()]


def _texts() -> list[tuple[str, str]]:
    texts = []
    for path in _tracked_files():
        if path == Path(__file__).resolve():  # its own examples are bad on purpose
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # binary files cite nothing
            continue
        texts.append((path.relative_to(ROOT).as_posix(), text))
    return texts


def contract_sections(text: str) -> set[str]:
    """The section numbers of docs/semantics.md: ``## 5. ...`` gives "5", ``### 5.5 ...`` "5.5"."""
    return set(_HEADING.findall(text))


def bad_citations(name: str, text: str, sections: set[str]) -> list[str]:
    """Each citation in ``text`` that points outside the repository or at a missing section."""
    bad = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for pattern in _OUTSIDE:
            if pattern.search(line):
                bad.append(f"{name}:{lineno}: cites outside the repository: {line.strip()}")
        for match in _SECTION.finditer(line):
            for number in match.groups():
                if number is not None and number not in sections:
                    bad.append(f"{name}:{lineno}: §{number} is not a heading of "
                               f"docs/semantics.md: {line.strip()}")
        if name.endswith(".md"):
            for target in _MD_LINK.findall(line):
                if "://" in target or target.startswith("mailto:"):
                    continue
                page = _INCLUDED_FROM.get(name, name)
                resolved = (ROOT / page).parent.joinpath(target).resolve()
                if not resolved.is_relative_to(ROOT) or not resolved.exists():
                    bad.append(f"{name}:{lineno}: link to {target} leaves the repository or "
                               f"does not exist")
    return bad


def test_the_contract_has_its_numbered_sections():
    sections = contract_sections(CONTRACT.read_text(encoding="utf-8"))
    assert {str(n) for n in range(1, 11)} <= sections
    assert {"5.5", "6.5", "7.3", "9.1"} <= sections


@pytest.mark.parametrize("name,text", [pytest.param("bad.py", "see SEMANTICS" + ".md 5.5"),
                                       pytest.param("bad.py", "see docs/semantics.md §5.9"),
                                       pytest.param("bad.py", "see docs/semantics.md §4-§19"),
                                       pytest.param("bad.py", "from ../" + "shared/x.md"),
                                       pytest.param("bad.md", "[x](../../outside.md)")])
def test_the_checker_catches_each_kind(name, text):
    # The checker itself, on one bad line of each kind (so the repository test below cannot
    # pass by accepting everything).
    sections = contract_sections(CONTRACT.read_text(encoding="utf-8"))
    assert bad_citations(name, text, sections)
    assert not bad_citations(name, "see docs/semantics.md §5.5 and §6.1-§6.4", sections)


def test_every_citation_points_inside_the_repository():
    sections = contract_sections(CONTRACT.read_text(encoding="utf-8"))
    texts = _texts()
    assert any(name == "docs/semantics.md" for name, _ in texts)
    bad = [b for name, text in texts for b in bad_citations(name, text, sections)]
    assert not bad, "\n".join(bad)
