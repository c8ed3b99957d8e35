"""The report: header lines, the results table with its ratio columns and "differs" checks, the
cases' requested row ratios (e.g. NaN / NaN-free), and the text and markdown renderings.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import time

from . import timing
from .cases import COMPETITOR, FLOOR, INFO, JAXMAX, Case, Ratio, reps
from .workers import TORCH_OMP_WAIT_POLICY, Results

COLUMNS = ["case", "implementation", "median ms", "x floor", "x best"]
RATIO_COLUMNS = ["case", "ratio", "wall time", "CPU time"]
# Shown when some row's compile cost was measured (`compile_cost`): best-of-3 compile seconds
# (">N s": killed at the limit), its ratio to the fastest-compiling plain JAX row of the case,
# the executable's temporary buffers, and resident memory growth (per new shape in the
# many_shapes group, whose "median ms" is the time per new shape).
COMPILE_COLUMNS = ["compile s", "x JAX compile", "temp MB", "RSS MB"]
_COMPILE_KEYS = ("compile_s", "compile_over", "compile_over_mb", "rss_mb", "compile_err")
PLAIN_JAX = ("jnp.", "lax.", "jax.ops.", "jax.grad of reduce_window")


def header_lines(quick: bool) -> list[str]:
    def ver(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    libs = ", ".join(f"{d} {ver(d)}" for d in
                     ("jaxmax", "jax", "jaxlib", "numpy", "ml_dtypes", "onnx", "onnxruntime",
                      "openvino", "torch"))
    warmup, min_reps, max_reps, _ = reps(quick)
    omp = os.environ.get("OMP_WAIT_POLICY", TORCH_OMP_WAIT_POLICY)
    return [
        f"jaxmax benchmarks ({'quick' if quick else 'full'} sizes), "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}",
        f"machine: {platform.machine()}, {cpu}, {os.cpu_count()} logical cores "
        f"({usable} usable), load average {load}; Python {platform.python_version()}",
        f"libraries: {libs}",
        f"timing: median of {min_reps}-{max_reps} samples (3 for calls over 0.5 s) after "
        f"{warmup + 1} untimed calls, a case's implementations sampled in turn within a worker, "
        f"each sample after {timing.LEAD_IN_S * 1e3:.0f} ms of untimed calls of its own; "
        f"'x floor' = median / read floor of the same data; 'x best' = median / fastest "
        f"competitor (not jaxmax, not a floor) in the case",
        f"runtimes use their default thread counts; each runs in its own worker process, one "
        f"after another; OMP_WAIT_POLICY={omp} (torch)",
    ]


def _ms(results: Results, case: Case, label: str) -> float | None:
    return results.get((case.name, label), {}).get("ms")


def has_compile(results: Results) -> bool:
    return any(k in r for r in results.values() for k in _COMPILE_KEYS)


def _compile_cells(r: dict, plain_s: float | None) -> list[str]:
    if "compile_over" in r:
        seconds = f">{r['compile_over']:.0f}"
    elif "compile_over_mb" in r:
        seconds = f"killed at {r['compile_over_mb']} MB"
    elif r.get("compile_s") is not None:
        seconds = f"{r['compile_s']:.3f}"
    else:
        seconds = ""
    ratio = r["compile_s"] / plain_s if r.get("compile_s") is not None and plain_s else None
    temp, rss = r.get("temp_mb"), r.get("rss_mb")
    return [seconds, timing.fmt_ratio(ratio), "" if temp is None else f"{temp:.1f}",
            "" if rss is None else f"{rss:.1f}"]


def build_table(cases: list[Case], results: Results, notes: list[str],
                with_compile: bool = False) -> list[list[str]]:
    """One row per implementation: case, label, median ms, x floor, x best (and with
    `with_compile` the `COMPILE_COLUMNS`). Appends notes for results that differ within a case
    and for rows without a time."""
    rows: list[list[str]] = []
    floor_ms = {case.name: _ms(results, case, impl.label)
                for case in cases for impl in case.impls if impl.role == FLOOR}
    missing: dict[tuple[str, str], list[str]] = {}
    for case in cases:
        rs = [(impl, results.get((case.name, impl.label),
                                 {"ms": None, "err": "not measured"})) for impl in case.impls]
        comp = [r["ms"] for impl, r in rs if impl.role == COMPETITOR and r.get("ms") is not None]
        best = min(comp) if comp else None
        fl = floor_ms.get(case.floor)
        checked = [(impl, r) for impl, r in rs
                   if impl.role in (JAXMAX, COMPETITOR) and r.get("digest") is not None]
        ref = checked[0][1]["digest"] if checked else None
        ref_label = checked[0][0].label if checked else None
        plain = [r["compile_s"] for impl, r in rs if impl.backend == "jax"
                 and impl.role == COMPETITOR and impl.label.startswith(PLAIN_JAX)
                 and r.get("compile_s") is not None]
        plain_s = min(plain) if plain else None
        for impl, r in rs:
            ms = r.get("ms")
            label = impl.label
            if impl.role in (FLOOR, INFO):
                label = f"[{impl.role}] {label}"
            if ms is None:
                missing.setdefault((impl.label, str(r.get("err"))), []).append(case.name)
            if case.check and case.floor != case.name and ref is not None \
                    and impl.role in (JAXMAX, COMPETITOR) and r.get("digest") is not None \
                    and not timing.same_digest(ref, r["digest"]):
                notes.append(f"{case.name} | {impl.label}: result differs from {ref_label} "
                             f"(digest {r['digest']} vs {ref})")
                label += " (result differs!)"
            xf = ms / fl if ms is not None and fl else None
            xb = ms / best if ms is not None and best and impl.role in (JAXMAX, COMPETITOR) \
                else None
            if r.get("shapes") is not None:
                split = r.get("split_ms") or {}
                # the goal is 2 MB per shape: two decimals, which the table's column rounds off
                rss = r.get("rss_mb")
                notes.append(f"{case.name} | {impl.label}: over {r['shapes']} new shapes"
                             + ("" if rss is None else f", {rss:.2f} MB resident each")
                             + "".join(f"; {k} {v:.1f}" for k, v in split.items())
                             + (f" ms per shape; {r['hlo_lines']} StableHLO lines"
                                if split else ""))
            if with_compile and r.get("compile_err"):
                notes.append(f"{case.name} | {impl.label}: compile cost not measured: "
                             f"{r['compile_err']}")
            cells = [case.name, label, timing.fmt_ms(ms), timing.fmt_ratio(xf),
                     timing.fmt_ratio(xb)]
            rows.append(cells + (_compile_cells(r, plain_s) if with_compile else []))
    for (label, err), where in missing.items():
        cases_txt = "; ".join(where) if len(where) <= 3 else f"{len(where)} cases"
        notes.append(f"{label}: n/a in {cases_txt}: {err}")
    return rows


def ratio_rows(cases: list[Case], results: Results) -> list[list[str]]:
    """The ratios the cases ask for (`Case.ratios`): case, title, value of the wall times and
    of the process CPU times ("n/a" if a row is missing). Both rows of a ratio come from one
    worker and were sampled in turn."""
    def of(key: str, ratio: Ratio, case: Case) -> str:
        num = results.get((case.name, ratio.num), {}).get(key)
        den = results.get((case.name, ratio.den), {}).get(key)
        return timing.fmt_ratio(num / den) if num is not None and den else "n/a"

    return [[case.name, ratio.title, of("ms", ratio, case), of("cpu_ms", ratio, case)]
            for case in cases for ratio in case.ratios]


def chart_rows(cases: list[Case], results: Results
               ) -> list[tuple[str, float | None, float | None]]:
    """Per case with competitors: (case, jaxmax's first row / best competitor, plain JAX's)."""
    out = []
    for case in cases:
        ms = {impl.label: _ms(results, case, impl.label) for impl in case.impls}
        comp = [t for i in case.impls if i.role == COMPETITOR and (t := ms[i.label])]
        if not comp:
            continue
        best = min(comp)
        ours = next((t for i in case.impls if i.role == JAXMAX and (t := ms[i.label])), None)
        plain = next((t for i in case.impls if i.role == COMPETITOR and (t := ms[i.label])
                      and i.backend == "jax" and i.label.startswith(PLAIN_JAX)), None)
        out.append((case.name, ours / best if ours else None, plain / best if plain else None))
    return out


def render_chart(chart: list[tuple[str, float | None, float | None]]) -> str:
    """Text bars of time / fastest other implementation ('#' = 0.25; '>' = cut at 12)."""
    lines = ["time / fastest other implementation of the case (1.00 = as fast as the best; "
             "'#' = 0.25)"]
    for name, ours, plain in chart:
        lines.append(name)
        for label, ratio in (("jaxmax", ours), ("plain JAX", plain)):
            if ratio is None:
                continue
            bar = "#" * min(48, round(ratio * 4)) + (">" if ratio > 12 else "")
            lines.append(f"  {label:<10}{ratio:6.2f} {bar}")
    return "\n".join(lines)


def render_text(rows: list[list[str]], columns: list[str] = COLUMNS) -> str:
    """An aligned text table; numeric columns (from the third on) right-aligned, the case name
    shown once per case with a blank line between cases."""
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i >= 2 else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [line(columns), line(["-" * w for w in widths])]
    prev = None
    for r in rows:
        if prev is not None and r[0] != prev:
            out.append("")
        out.append(line([r[0] if r[0] != prev else ""] + r[1:]))
        prev = r[0]
    return "\n".join(out)


def _markdown_table(rows: list[list[str]], columns: list[str]) -> list[str]:
    out = ["| " + " | ".join(columns) + " |",
           "|" + "|".join(["---"] * 2 + ["---:"] * (len(columns) - 2)) + "|"]
    prev = None
    for r in rows:
        out.append("| " + " | ".join([r[0] if r[0] != prev else ""] + r[1:]) + " |")
        prev = r[0]
    return out


RATIOS_TITLE = "Ratios between rows of one case (both rows sampled in turn in one worker):"


def render_ratios(rows: list[list[str]]) -> str:
    return f"{RATIOS_TITLE}\n{render_text(rows, RATIO_COLUMNS)}" if rows else ""


def render_markdown(header: list[str], rows: list[list[str]], notes: list[str],
                    chart: str = "", ratios: list[list[str]] | None = None,
                    columns: list[str] = COLUMNS) -> str:
    out = [f"# {header[0]}", ""] + [f"- {h}" for h in header[1:]] + [""]
    if chart:
        out += ["```text", chart, "```", ""]
    out += _markdown_table(rows, columns)
    if ratios:
        out += ["", RATIOS_TITLE, ""] + _markdown_table(ratios, RATIO_COLUMNS)
    if notes:
        out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"
