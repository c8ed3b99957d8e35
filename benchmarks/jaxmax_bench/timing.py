"""Timing, result digests and number formatting for the benchmark runner.

No JAX or runtime imports here: workers and the parent process both use this module.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

# A sample shorter than this is timed as a loop of several calls (eager dispatch, tiny inputs).
MIN_SAMPLE_S = 0.005
# Untimed calls of the same implementation, at least this long, precede each sample.
LEAD_IN_S = 0.03
# A call slower than this needs only 3 samples (the median of 3 of a 1 s call is stable enough).
SLOW_CALL_S = 0.5


def measure(runs: list[Callable[[], Any]], *, warmup: int, min_reps: int, max_reps: int,
            budget_s: float) -> list[tuple[float, int, int, float]]:
    """Median milliseconds per call of each of `runs`, sampled in turn (round-robin).

    Each `run` must wait for its own result (``block_until_ready``, a synchronous runtime
    call). After `warmup` untimed calls of each, one more untimed call sizes its loop: a call
    faster than ``MIN_SAMPLE_S`` is timed in loops of ``inner`` calls (one sample = the mean of
    one loop). Then every round takes one sample of each run that still needs one, so a burst
    of load from other processes hits the implementations of a case alike and their ratios stay
    meaningful on a shared machine. Each sample follows untimed calls of the same run lasting at
    least ``LEAD_IN_S``: work a call leaves behind (the kernel unmapping and reclaiming a large
    freed buffer: a call right after one that freed 200 MB took 30 instead of 11 ms, and 12 ms
    after a 20 ms pause) then lands on its own run, not on the next one in the round. A run
    stops at `max_reps` samples, or once it has `min_reps` (3 for a call slower than
    ``SLOW_CALL_S``) and ``budget_s * len(runs)`` seconds have passed. Returns (median ms,
    samples, inner, median CPU ms) per run: the CPU time of the process (all threads) per call,
    which other processes on a loaded machine disturb less than wall time.
    """
    inners, mins = [], []
    for run in runs:
        for _ in range(warmup):
            run()
        t0 = time.perf_counter()
        run()
        once = time.perf_counter() - t0
        inners.append(1 if once >= MIN_SAMPLE_S
                      else min(1000, math.ceil(MIN_SAMPLE_S / max(once, 1e-7))))
        mins.append(min(min_reps, 3) if once >= SLOW_CALL_S else min_reps)
    samples: list[list[float]] = [[] for _ in runs]
    cpu: list[list[float]] = [[] for _ in runs]
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        while True:
            over = time.perf_counter() - start > budget_s * len(runs)
            todo = [i for i, got in enumerate(samples)
                    if len(got) < max_reps and not (over and len(got) >= mins[i])]
            if not todo:
                break
            for i in todo:
                lead_in = time.perf_counter()
                runs[i]()
                while time.perf_counter() - lead_in < LEAD_IN_S:
                    runs[i]()
                c0, t0 = time.process_time(), time.perf_counter()
                for _ in range(inners[i]):
                    runs[i]()
                samples[i].append((time.perf_counter() - t0) / inners[i] * 1e3)
                cpu[i].append((time.process_time() - c0) / inners[i] * 1e3)
    finally:
        if gc_was_enabled:
            gc.enable()
    return [(statistics.median(got), len(got), inner, statistics.median(used))
            for got, inner, used in zip(samples, inners, cpu, strict=True)]


def to_numpy(out: Any) -> np.ndarray:
    """A NumPy copy/view of a JAX array, torch tensor, OpenVINO output or NumPy value."""
    if hasattr(out, "detach"):  # torch
        import torch

        out = out.detach()
        if out.dtype == torch.bfloat16:
            out = out.float()
        return out.numpy()
    return np.asarray(out)


_WEIGHTS: dict[int, np.ndarray] = {}


def digest(out: Any) -> list:
    """[shape, weighted sum, NaN count]: equal arrays give equal digests, whoever computed them.

    The weights (``sin(i)``) make a permuted or shifted result differ from the right one, which
    a plain sum would not. Of a ``(values, indices)`` pair only the values are digested: the
    runtimes number pooling indices differently (torch within each channel plane, ONNX and
    OpenVINO over the whole tensor).
    """
    if isinstance(out, tuple | list):
        out = out[0]
    a = to_numpy(out)
    shape = list(a.shape)
    if a.dtype.kind not in "biuf":  # bfloat16 and friends from ml_dtypes
        a = a.astype(np.float32)
    flat = a.astype(np.float64).ravel()
    nan = np.isnan(flat)
    n_nan = int(nan.sum())
    if n_nan:
        flat = np.where(nan, 0.0, flat)
    size = flat.size
    if size not in _WEIGHTS:
        if len(_WEIGHTS) > 8:
            _WEIGHTS.clear()
        _WEIGHTS[size] = np.sin(np.arange(size, dtype=np.float64))
    return [shape, float(flat @ _WEIGHTS[size]) if size else 0.0, n_nan]


def same_digest(a: list, b: list) -> bool:
    """Whether two digests describe the same array (sums equal to a relative 1e-9)."""
    if a[0] != b[0] or a[2] != b[2]:
        return False
    x, y = a[1], b[1]
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
        return (math.isnan(x) and math.isnan(y)) or x == y
    return abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y))


def fmt_ms(ms: float | None) -> str:
    """Milliseconds with 3 significant-ish digits; "n/a" for a missing time."""
    if ms is None:
        return "n/a"
    if ms < 1:
        return f"{ms:.3f}"
    if ms < 100:
        return f"{ms:.2f}"
    return f"{ms:.1f}"


def fmt_ratio(r: float | None) -> str:
    """A ratio as "1.23x" ("123x" from 100 on); empty for a missing one."""
    if r is None:
        return ""
    return f"{r:.2f}x" if r < 100 else f"{r:.0f}x"
