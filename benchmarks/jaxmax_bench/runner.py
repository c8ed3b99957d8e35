"""The command line: parse the options, run one worker per runtime, print (and write) the report.

See ``benchmarks/run.py`` and ``benchmarks/README.md`` for the options.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time

from . import compile_cost, report
from .cases import Ctx, sizes
from .groups import CASE_BUILDERS, GROUPS, group_cases
from .workers import BACKEND_MODULE, BACKENDS, Results, run_backend, worker


def compile_row(request: str) -> int:
    """``run.py --compile-row REQUEST`` (a child of `compile_cost.in_child`): rebuild the row
    REQUEST names and print its cost. Here, not in `compile_cost`, because the group modules
    import `compile_cost` (for `JaxRun` and `ShapeSweep`) and this needs the group registry."""
    req = json.loads(request)
    sz = sizes(req["quick"])
    case = next(c for c in CASE_BUILDERS[req["group"]](sz) if c.name == req["case"])
    impl = next(i for i in case.impls if i.label == req["impl"])
    run = impl.build(Ctx(impl.inputs or case.inputs, sz))
    if isinstance(run, compile_cost.ShapeSweep):
        out = compile_cost.measure_sweep(run)
    elif isinstance(run, compile_cost.JaxRun):
        out = compile_cost.measure_compile(run)
    else:
        out = {"compile_err": "not a JAX row"}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


def _names(arg: str) -> list[str]:
    return [s.strip() for s in arg.split(",") if s.strip()]


def main(argv: list[str] | None = None, description: str = "") -> int:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    ap.add_argument("--only", default=",".join(GROUPS),
                    help=f"comma-separated groups from {', '.join(GROUPS)}")
    ap.add_argument("--backends", default=",".join(BACKENDS),
                    help=f"comma-separated runtimes from {', '.join(BACKENDS)}")
    ap.add_argument("--out", help="also write the table (and header, notes) as markdown here")
    ap.add_argument("--compile", action="store_true",
                    help="also measure every JAX row's compile time and memory (in a child "
                         "process each; rows of long_window and many_shapes always are)")
    ap.add_argument("--compile-timeout", type=float, default=compile_cost.DEFAULT_LIMIT_S,
                    help="seconds after which a compile child is killed and its row shows "
                         "'>N s' (default %(default)s)")
    ap.add_argument("--worker", choices=BACKENDS, help=argparse.SUPPRESS)
    ap.add_argument("--compile-row", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.compile_row:
        return compile_row(args.compile_row)

    groups = _names(args.only)
    bad = [g for g in groups if g not in GROUPS]
    if bad:
        ap.error(f"unknown group(s) {bad}; choose from {GROUPS}")
    if args.worker:
        worker(args.worker, groups, args.quick, args.compile, args.compile_timeout)
        return 0
    backends = _names(args.backends)
    bad = [b for b in backends if b not in BACKENDS]
    if bad:
        ap.error(f"unknown backend(s) {bad}; choose from {BACKENDS}")

    sz = sizes(args.quick)
    cases = group_cases(groups, sz)
    results: Results = {}
    notes: list[str] = []
    header = report.header_lines(args.quick)
    start = time.perf_counter()
    timeout_s = 120 if args.quick else 600  # per group and worker; a hung worker is killed
    if args.compile or {"long_window", "many_shapes"} & set(groups):
        timeout_s += 30 * args.compile_timeout  # each compile child may use its whole limit
    extra = ["--compile-timeout", str(args.compile_timeout)] + (
        ["--compile"] if args.compile else [])
    for backend in backends:
        wanted = [g for g in groups if any(i.backend == backend for c in CASE_BUILDERS[g](sz)
                                           for i in c.impls)]
        if not wanted:
            continue
        if importlib.util.find_spec(BACKEND_MODULE[backend]) is None:
            for c in cases:
                for i in c.impls:
                    if i.backend == backend:
                        results[(c.name, i.label)] = {
                            "ms": None, "err": f"{BACKEND_MODULE[backend]} not importable"}
            continue
        print(f"[{backend}] groups: {', '.join(wanted)}", file=sys.stderr, flush=True)
        run_backend(backend, wanted, args.quick, results, notes, timeout_s, extra)
    for c in cases:  # rows of runtimes left out with --backends are not shown
        c.impls = [i for i in c.impls if i.backend in backends]
    cases = [c for c in cases if c.impls]
    with_compile = report.has_compile(results)
    columns = report.COLUMNS + (report.COMPILE_COLUMNS if with_compile else [])
    rows = report.build_table(cases, results, notes, with_compile)
    ratios = report.ratio_rows(cases, results)
    header.append(f"wall time of this run: {time.perf_counter() - start:.0f} s")
    print("\n".join(header))
    print()
    print(report.render_text(rows, columns))
    if ratios:
        print()
        print(report.render_ratios(ratios))
    if notes:
        print("\nNotes:")
        for n in notes:
            print(f"- {n}")
    if args.out:
        chart = report.render_chart(report.chart_rows(cases, results))
        with open(args.out, "w") as f:
            f.write(report.render_markdown(header, rows, notes, chart, ratios, columns))
    return 0
