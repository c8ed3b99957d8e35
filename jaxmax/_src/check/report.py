"""Exact comparison of one output, the table and the progress bar."""

from __future__ import annotations

import dataclasses
import sys
from typing import TextIO

import numpy as np

from jaxmax._src.check.deviations import differing


@dataclasses.dataclass
class Outcome:
    status: str  # "exact", "deviation", "mismatch", "error", "internal", "not covered"
    text: str


def first(mask: np.ndarray, ours: np.ndarray, theirs: np.ndarray) -> str:
    """The first element `mask` marks, with both values."""
    index = tuple(int(i) for i in np.argwhere(mask)[0])
    return f"first at {list(index)}: jaxmax {ours[index].item()}, runtime {theirs[index].item()}"


def compare_output(ours: np.ndarray, theirs: np.ndarray) -> tuple[int, str]:
    """(number of differing elements, a description of the first); (0, "") when identical."""
    if ours.shape != theirs.shape:
        return max(ours.size, theirs.size), f"shape {ours.shape} != runtime {theirs.shape}"
    mask = differing(ours, theirs)
    count = int(mask.sum())
    if ours.dtype != theirs.dtype:
        text = f"dtype {ours.dtype} != runtime {theirs.dtype}"
        return max(count, 1), text + (f"; {count} values differ, {first(mask, ours, theirs)}"
                                      if count else "")
    return count, first(mask, ours, theirs) if count else ""


# --- output ----------------------------------------------------------------------------------

def table(rows: list[tuple[str, ...]], header: tuple[str, ...], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()
    print(line, file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)


class Progress:
    """A one-line progress bar on stderr, for models with many nodes."""

    def __init__(self, total: int, enabled: bool, stream: TextIO | None = None):
        self.total, self.enabled = total, enabled and total > 0
        self.stream = stream or sys.stderr
        self.done = 0

    def step(self, label: str) -> None:
        if not self.enabled:
            return
        self.done += 1
        width = 30
        filled = width * self.done // self.total
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/"
                          f"{self.total} {label[:40]:<40}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 80 + "\r")
            self.stream.flush()
