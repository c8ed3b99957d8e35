"""Worker subprocesses: each runtime's rows are measured in a process of its own.

`run_backend` (in the parent) starts ``run.py --worker NAME --only GROUPS`` and collects the
JSON lines that `worker` (in the child) prints, one per measured row and one ``{"done": group}``
per finished group. onnxruntime and OpenVINO are never loaded in the same process (a heap
corruption was once seen when both ran large inputs in one process). A worker that dies or
hangs loses only its current group: its rows get an error and the next worker carries on with
the groups left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from . import compile_cost, timing
from .cases import Ctx, reps, sizes
from .groups import CASE_BUILDERS

BACKENDS = ("jax", "numpy", "ort", "ov", "torch")
BACKEND_MODULE = {"jax": "jax", "numpy": "numpy", "ort": "onnxruntime", "ov": "openvino",
                  "torch": "torch"}

# PyTorch's OpenMP threads spin-wait between parallel regions by default; when another process
# holds a core (a shared CI machine) a 0.1 ms torch.amax then takes ~50 ms. PASSIVE makes them
# sleep instead. Only torch uses OpenMP here; an OMP_WAIT_POLICY already set is kept.
TORCH_OMP_WAIT_POLICY = "PASSIVE"

RUN_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "run.py")

Results = dict[tuple[str, str], dict[str, Any]]


# ----------------------------------------------------------------------------------------------
# Child: measure one backend's rows for some groups; one JSON object per line on stdout.

def worker(backend: str, groups: list[str], quick: bool, compile_all: bool = False,
           compile_limit_s: float = compile_cost.DEFAULT_LIMIT_S) -> None:
    """Measure `backend`'s rows of `groups`. With `compile_all`, every JAX row's compile cost
    is measured first (in a child, `compile_cost.in_child`), as it always is in cases that ask
    for it (`Case.compile_first`); a row whose compile exceeds `compile_limit_s` is not
    timed, so the worker never compiles it itself."""
    sz = sizes(quick)
    warmup, min_reps, max_reps, budget = reps(quick)
    emit_stream = sys.stdout
    sys.stdout = sys.stderr  # anything a library prints goes to stderr, not into the JSON stream

    def emit(obj: dict[str, Any]) -> None:
        emit_stream.write(json.dumps(obj) + "\n")
        emit_stream.flush()

    import_error = None
    try:
        __import__(BACKEND_MODULE[backend])
        if backend == "jax":
            import jaxmax  # noqa: F401
    except Exception as e:  # noqa: BLE001
        import_error = f"{BACKEND_MODULE[backend]} not importable ({type(e).__name__})"

    for group in groups:
        ctxs: dict[str, Ctx] = {}
        for case in CASE_BUILDERS[group](sz):
            needed = {impl.inputs or case.inputs for impl in case.impls}
            for key in [k for k in ctxs if k not in needed]:  # the data-shape sets are many
                del ctxs[key]
            rows: list[dict[str, Any]] = []
            runs: list[Callable[[], Any] | None] = []
            for impl in case.impls:
                if impl.backend != backend:
                    continue
                row: dict[str, Any] = {"case": case.name, "impl": impl.label, "ms": None,
                                       "err": None}
                rows.append(row)
                runs.append(None)
                if import_error:
                    row["err"] = import_error
                    continue
                try:
                    key = impl.inputs or case.inputs
                    if key not in ctxs:
                        ctxs[key] = Ctx(key, sz)
                    run = impl.build(ctxs[key])
                    if isinstance(run, compile_cost.ShapeSweep | compile_cost.JaxRun) and (
                            compile_all or case.compile_first):
                        limit = compile_limit_s + (  # a sweep runs for its budget first
                            run.budget_s if isinstance(run, compile_cost.ShapeSweep) else 0)
                        row.update(compile_cost.in_child(group, case.name, impl.label, quick,
                                                         limit))
                        if "compile_over" in row or "compile_over_mb" in row:
                            row["err"] = "compile over the limit: not timed"
                            continue
                        if isinstance(run, compile_cost.ShapeSweep):  # the child measured it
                            row["err"] = row.get("compile_err")
                            continue
                    run()  # fails here rather than in the middle of the timing rounds
                    runs[-1] = run
                except Exception as e:  # noqa: BLE001
                    row["err"] = _error(e)
            built = [(row, run) for row, run in zip(rows, runs, strict=True) if run is not None]
            try:
                timings = timing.measure([run for _, run in built], warmup=warmup,
                                         min_reps=min_reps, max_reps=max_reps, budget_s=budget)
                for (row, run), (ms, n, inner, cpu_ms) in zip(built, timings, strict=True):
                    row.update(ms=ms, n=n, inner=inner, cpu_ms=cpu_ms)
                    if case.check:
                        row["digest"] = timing.digest(run())
            except Exception as e:  # noqa: BLE001
                for row, _ in built:
                    row.update(ms=None, err=_error(e))
            del runs, built
            for row in rows:
                emit(row)
        ctxs.clear()
        emit({"done": group})


def _error(e: Exception) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0][:160] if msg else ''}"


# ----------------------------------------------------------------------------------------------
# Parent: run one backend's worker (restarting it after a death) and collect its rows.

def run_backend(backend: str, groups: list[str], quick: bool, results: Results,
                notes: list[str], timeout_s: float, extra: list[str] | None = None) -> None:
    pending = list(groups)
    while pending:
        cmd = [sys.executable, RUN_SCRIPT, "--worker", backend,
               "--only", ",".join(pending)] + (["--quick"] if quick else []) + (extra or [])
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
        env.setdefault("OMP_WAIT_POLICY", TORCH_OMP_WAIT_POLICY)
        t_start = time.perf_counter()
        with tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
            timed_out = threading.Event()

            def kill(proc: subprocess.Popen = proc, timed_out: threading.Event = timed_out
                     ) -> None:
                timed_out.set()
                proc.kill()

            limit_s = timeout_s * len(pending)
            timer = threading.Timer(limit_s, kill)
            timer.start()
            try:
                assert proc.stdout is not None
                for line in proc.stdout:
                    line = line.strip()
                    if not line.startswith("{"):
                        continue
                    obj = json.loads(line)
                    if "done" in obj:
                        pending.remove(obj["done"])
                        continue
                    results[(obj["case"], obj["impl"])] = obj
                    shown = obj["err"] if obj["ms"] is None else f"{timing.fmt_ms(obj['ms'])} ms"
                    print(f"  [{backend}] {obj['case']} | {obj['impl']}: {shown}",
                          file=sys.stderr, flush=True)
                rc = proc.wait()
            finally:
                timer.cancel()
                if proc.poll() is None:  # interrupted: do not leave the worker running
                    proc.kill()
                    proc.wait()
            print(f"[{backend}] worker finished in {time.perf_counter() - t_start:.0f} s "
                  f"(exit code {rc})", file=sys.stderr, flush=True)
            if pending:  # the worker stopped before finishing its groups
                err.seek(0)
                tail = " | ".join(err.read().strip().splitlines()[-3:])[-300:]
                why = (f"killed after {limit_s:.0f} s" if timed_out.is_set()
                       else f"exit code {rc}")
                group = pending.pop(0)
                notes.append(f"{backend} worker died in group {group} ({why}): {tail}")
                for case in CASE_BUILDERS[group](sizes(quick)):
                    for impl in case.impls:
                        if impl.backend == backend and (case.name, impl.label) not in results:
                            results[(case.name, impl.label)] = {
                                "case": case.name, "impl": impl.label, "ms": None,
                                "err": f"{backend} worker died ({why})"}
