"""Compile cost: the seconds and memory a JAX row costs before its first result, measured in a
child process (``run.py --compile-row``) so that a compile that takes minutes, or memory that
a compile never gives back, cannot stall or skew the worker; a child over its time limit is
killed and its row shows ">N s".

Rows built by `backends.jax_jit` / `jax_eager` return a `JaxRun`, whose function and arguments
the child compiles again: a jitted row as ``jax.jit(f).lower(*specs).compile()`` after
``jax.clear_caches()``, best of 3; an eager row as its first call after ``jax.clear_caches()``,
best of 3. Beside the seconds: the executable's temporary buffers (XLA's memory analysis) and
the growth of the child's resident memory over its first compile, with the executable held.
Rows of the ``many_shapes`` group return a `ShapeSweep` instead: eager calls on a few hundred
new small shapes, reporting milliseconds and resident MB per new shape.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

# A compile child resident over this is killed (the machine is shared; one AdaptiveMaxPool
# compile was seen to grow past 20 GB).
MAX_RSS_MB = 4096.0
# The time limit of a compile child when the command line sets none.
DEFAULT_LIMIT_S = 60.0

RUN_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "run.py")


class JaxRun:
    """A timed call of `fn` (jitted or not) on `args`, which also exposes both."""

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], jit: bool):
        self.fn, self.args, self.jit = fn, list(args), jit

    def __call__(self) -> Any:
        import jax

        return jax.block_until_ready(self.fn(*self.args))


class ShapeSweep:
    """Eager calls of ``make()`` on inputs of many new shapes (`inputs(rng, shape)` builds the
    arguments of one shape); not a timed call: the worker hands it to a child."""

    def __init__(self, make: Callable[[], Callable[..., Any]],
                 inputs: Callable[[Any, tuple[int, ...]], tuple], shapes: list[tuple[int, ...]],
                 budget_s: float):
        self.make, self.inputs, self.shapes, self.budget_s = make, inputs, shapes, budget_s

    def __call__(self) -> Any:
        raise TypeError("a ShapeSweep is measured by compile_cost.in_child, not timed")


def _rss_mb() -> float:
    return _rss_of(os.getpid())


def measure_compile(run: JaxRun) -> dict[str, Any]:
    """Best-of-3 compile (or first eager call) seconds, temp MB, resident MB growth."""
    import jax
    import jax.numpy as jnp

    jax.jit(lambda v: jnp.sum(v * 2)).lower(jnp.zeros(4)).compile()  # first-use costs
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in run.args]
    best, rss, temp, held = float("inf"), 0.0, None, []
    for rep in range(3):
        jax.clear_caches()
        before = _rss_mb()
        t0 = time.perf_counter()
        if run.jit:
            compiled = run.fn.lower(*specs).compile()  # type: ignore[attr-defined]
            held.append(compiled)
        else:
            held.append(jax.block_until_ready(run.fn(*run.args)))
        best = min(best, time.perf_counter() - t0)
        if rep == 0:
            rss = _rss_mb() - before
            if run.jit:
                stats = compiled.memory_analysis()
                temp = stats.temp_size_in_bytes / 2**20 if stats is not None else None
    return {"compile_s": best, "temp_mb": temp, "rss_mb": rss}


def measure_sweep(sweep: ShapeSweep) -> dict[str, Any]:
    """Milliseconds and resident MB per new shape over `sweep.shapes` (or as many of them as
    `sweep.budget_s` allows), after three untimed shapes outside the list."""
    import jax
    import numpy as np

    rng = np.random.default_rng(0)
    fn = sweep.make()
    for shape in [(1, 1, 40, 41), (2, 1, 39, 40), (1, 2, 41, 39)]:  # first-use costs
        jax.block_until_ready(fn(*sweep.inputs(rng, shape)))
    before = _rss_mb()
    start = time.perf_counter()
    done = 0
    for shape in sweep.shapes:
        args = sweep.inputs(rng, shape)
        jax.block_until_ready(fn(*args))
        done += 1
        if time.perf_counter() - start > sweep.budget_s:
            break
    seconds = time.perf_counter() - start
    result = {"ms": seconds / done * 1e3, "rss_mb": (_rss_mb() - before) / done, "shapes": done}
    result.update(_split(fn, sweep, rng))
    return result


def _split(fn: Callable[..., Any], sweep: ShapeSweep, rng: Any, count: int = 10
           ) -> dict[str, Any]:
    """Where a new shape's time goes: ``jax.jit(fn)`` traced, lowered and compiled (and the
    executable run once more) on `count` further new shapes (the sweep's, 21 rows taller),
    medians in ms; and the lowered program's StableHLO lines."""
    import statistics

    import jax
    import numpy as np

    parts: dict[str, list[float]] = {"trace": [], "lower": [], "compile": [], "run": []}
    lines = 0
    for shape in sweep.shapes[:count]:
        args = sweep.inputs(rng, (shape[0], shape[1], shape[2] + 21) + tuple(shape[3:]))
        arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

        def call(*values: Any, args: tuple = args, arrays: list[int] = arrays) -> Any:
            full = list(args)
            for i, v in zip(arrays, values, strict=True):
                full[i] = v
            return fn(*full)

        specs = [jax.ShapeDtypeStruct(args[i].shape, args[i].dtype) for i in arrays]
        t0 = time.perf_counter()
        traced = jax.jit(call).trace(*specs)
        t1 = time.perf_counter()
        lowered = traced.lower()
        t2 = time.perf_counter()
        compiled = lowered.compile()
        t3 = time.perf_counter()
        values = [args[i] for i in arrays]
        jax.block_until_ready(compiled(*values))
        t4 = time.perf_counter()
        jax.block_until_ready(compiled(*values))
        t5 = time.perf_counter()
        for name, seconds in (("trace", t1 - t0), ("lower", t2 - t1), ("compile", t3 - t2),
                              ("run", t5 - t4)):
            parts[name].append(seconds * 1e3)
        lines = len(lowered.as_text().splitlines())
    return {"split_ms": {k: statistics.median(v) for k, v in parts.items()}, "hlo_lines": lines}


def in_child(group: str, case: str, impl: str, quick: bool, timeout_s: float,
             max_rss_mb: float = MAX_RSS_MB) -> dict[str, Any]:
    """The cost of one row from a child process. A child still running after `timeout_s`, or
    resident over `max_rss_mb` (a compile that grows without bound on a shared machine), is
    killed: ``{"compile_over": seconds}`` or ``{"compile_over_mb": MB}``; a failed one gives
    ``{"compile_err": ...}``."""
    request = json.dumps({"group": group, "case": case, "impl": impl, "quick": quick})
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, RUN_SCRIPT, "--compile-row", request],
                                stdout=out, stderr=err, text=True, env=env)
        start, verdict = time.perf_counter(), None
        while proc.poll() is None:
            if time.perf_counter() - start > timeout_s:
                verdict = {"compile_over": timeout_s}
            elif (rss := _rss_of(proc.pid)) > max_rss_mb:
                verdict = {"compile_over_mb": round(rss)}
            if verdict:
                proc.kill()
                proc.wait()
                return verdict
            time.sleep(0.1)
        out.seek(0)
        err.seek(0)
        lines = [ln for ln in out.read().splitlines() if ln.startswith("{")]
        if proc.returncode or not lines:
            tail = " | ".join(err.read().strip().splitlines()[-2:])[-200:]
            return {"compile_err": f"exit code {proc.returncode}: {tail}"}
    return json.loads(lines[-1])


def _rss_of(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0
