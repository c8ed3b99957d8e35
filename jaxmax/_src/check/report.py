"""Exact comparison, the runtime deviations docs/semantics.md lists, the table, the progress bar."""

from __future__ import annotations

import dataclasses
import sys
from typing import TextIO

import numpy as np


@dataclasses.dataclass
class Outcome:
    status: str  # "exact", "deviation", "mismatch", "error", "not covered"
    text: str


def differing(ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """Mask of the elements that are not identical: NaN equals NaN, ``-0.0`` differs from
    ``+0.0``."""
    if ours.dtype.kind in "fc" or theirs.dtype.kind in "fc":
        a = ours.astype(np.float64) if ours.dtype.kind != "c" else ours
        b = theirs.astype(np.float64) if theirs.dtype.kind != "c" else theirs
        same = (a == b) & (np.signbit(a) == np.signbit(b))
        return ~(same | (np.isnan(a) & np.isnan(b)))
    return ours != theirs


def _first(mask: np.ndarray, ours: np.ndarray, theirs: np.ndarray) -> str:
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
        return max(count, 1), text + (f"; {count} values differ, {_first(mask, ours, theirs)}"
                                      if count else "")
    return count, _first(mask, ours, theirs) if count else ""


# --- the runtime deviations of docs/semantics.md ----------------------------------------

def _has_nan(arrays) -> bool:
    return any(a.dtype.kind == "f" and np.isnan(a).any() for a in arrays)


def _has_64bit_int(arrays) -> bool:
    return any(a.dtype in (np.int64, np.uint64) for a in arrays[:1])


def _zero_sign_only(ours, theirs) -> bool:
    if ours.shape != theirs.shape or ours.dtype != theirs.dtype or ours.dtype.kind != "f":
        return False
    mask = differing(ours, theirs)
    return bool(mask.any()) and bool(((ours == 0) & (theirs == 0))[mask].all())


def _ties_only(inputs, ours, theirs, binding) -> bool:
    """TopK: same values, and every differing index names an element of the same value."""
    if len(ours) != 2 or len(theirs) != 2 or ours[0].shape != theirs[0].shape:
        return False
    if differing(ours[0], theirs[0]).any():
        return False
    data = inputs[0]
    axis = _topk_axis(binding, data.ndim)
    if axis is None:
        return False
    idx = theirs[1].astype(np.int64)
    if (idx < 0).any() or (idx >= data.shape[axis]).any():
        return False
    picked = np.take_along_axis(data, idx, axis=axis)
    return not differing(picked.astype(ours[0].dtype), ours[0]).any()


def _topk_axis(binding, ndim: int) -> int | None:
    call = binding.call
    marker = "axis="
    if marker not in call:
        return ndim - 1  # ONNX TopK's default
    text = call.split(marker, 1)[1].split(",")[0].split(")")[0]
    try:
        return int(text) % ndim
    except ValueError:
        return None


def _sorted0_as_set(ours, theirs, binding) -> bool:
    if "sorted=0" not in binding.call or ours[0].shape != theirs[0].shape:
        return False
    axis = _topk_axis(binding, ours[0].ndim)
    a, b = np.sort(ours[0], axis=axis), np.sort(theirs[0], axis=axis)
    return not differing(a, b).any()


def deviation(runtime: str, op_type: str, binding, inputs, ours, theirs) -> str | None:
    """Which documented runtime deviation explains a mismatch, or None (docs/semantics.md
    §3.4, §4, §5.5, §6.5, §7.3)."""
    nan = _has_nan(inputs)
    if runtime == "onnxruntime":
        if op_type in ("ReduceMax", "MaxPool", "GlobalMaxPool", "ArgMax") and nan:
            return ("NaN order (onnxruntime drops NaN or lets the first element decide, "
                    "docs/semantics.md §4, §5.5, §6.5)")
        if op_type == "Max" and all(_zero_sign_only(a, b) for a, b in zip(ours, theirs,
                                                                           strict=True)
                                    if differing(a, b).any()):
            return "sign of a +-0 tie (onnxruntime Max, docs/semantics.md §7.3)"
        if op_type == "TopK" and _sorted0_as_set(ours, theirs, binding):
            return "sorted=0 returns heap order (equal as a set, docs/semantics.md §6.3)"
        if op_type in ("MaxPool", "GlobalMaxPool"):
            lowest = [np.finfo(o.dtype).min if o.dtype.kind == "f" else None for o in ours[:1]]
            y, t = ours[0], theirs[0]
            if y.shape == t.shape and lowest[0] is not None:
                mask = differing(y, t)
                if mask.any() and (np.isneginf(y[mask]) & (t[mask] == lowest[0])).all():
                    return ("-inf-only or empty window given as -FLT_MAX (onnxruntime MLAS, "
                            "docs/semantics.md §5.5)")
            if len(ours) == 2 and not differing(y, t).any() and (ours[1] == -1).any():
                mask = differing(ours[1], theirs[1])
                if (ours[1][mask] == -1).all():
                    return "index of a window with no input element (docs/semantics.md §5.5)"
            call = binding.call
            if "auto_pad='SAME" in call.upper().replace('"', "'") and (
                    "dilations=" in call or "strides=" in call):
                return "SAME padding with dilations or kernel < stride (docs/semantics.md §5.5)"
        return None
    # OpenVINO's CPU plugin
    # (MaxPool-1/-8/-14 and AdaptiveMaxPool-8 on the CPU plugin follow the spec with NaN too)
    if op_type in ("ReduceMax", "TopK", "Maximum") and nan:
        return "NaN order (the CPU plugin, docs/semantics.md §3.4, §6.5, §7.3)"
    if _has_64bit_int(inputs):
        return "64-bit integers computed in 32 bits (the CPU plugin, docs/semantics.md §3.4, §6.5)"
    if inputs and inputs[0].dtype == np.float16 and any(
            np.isneginf(t).any() for t in theirs if t.dtype == np.float16):
        return "float16 lowest given as -inf (the CPU plugin, docs/semantics.md §3.4)"
    if op_type == "Maximum" and all(_zero_sign_only(a, b) for a, b in zip(ours, theirs,
                                                                           strict=True)):
        return "+-0 tie: the CPU plugin returns the second argument (docs/semantics.md §7.3)"
    if op_type == "TopK" and _ties_only(inputs, ours, theirs, binding):
        return "tie order: the CPU plugin picks another tied element (docs/semantics.md §6.5)"
    return None


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
