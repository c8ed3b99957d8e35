"""MkDocs hook: show the docstrings' doctests as Python console code blocks.

The public docstrings carry runnable examples as bare doctests (``>>>`` lines, run by pytest's
``--doctest-modules``). Markdown would read ``>>>`` as nested quotes, so a Markdown
preprocessor, which the API reference's docstrings pass through too, fences each doctest (from
its ``>>>`` line to the next blank line) as a ``pycon`` block.
"""

from __future__ import annotations

import re

from markdown import Extension
from markdown.preprocessors import Preprocessor

_FENCE = re.compile(r"^\s*(```|~~~)")
_PROMPT = re.compile(r"^(\s*)>>> ")


class _Doctests(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        in_fence = False
        block: list[str] = []
        indent = ""
        for line in [*lines, ""]:
            if block:
                if line.strip():
                    block.append(line[len(indent):] if line.startswith(indent) else line)
                    continue
                out += ["", f"{indent}```pycon", *(indent + b for b in block), f"{indent}```", ""]
                block = []
            if _FENCE.match(line):
                in_fence = not in_fence
            prompt = None if in_fence else _PROMPT.match(line)
            if prompt:
                indent = prompt.group(1)
                block = [line[len(indent):]]
            else:
                out.append(line)
        return out[:-1] if out and out[-1] == "" and (not lines or lines[-1] != "") else out


class _DoctestExtension(Extension):
    def extendMarkdown(self, md):  # noqa: N802 (Markdown's name)
        md.preprocessors.register(_Doctests(md), "jaxmax_doctests", 29)


def on_config(config):
    config.markdown_extensions.append(_DoctestExtension())
    return config
