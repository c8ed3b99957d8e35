"""A new small shape, called eagerly, with the tiered compile of small eager calls
(``compile_options.jit``: the first ``FAST_CALLS`` calls of a signature with the fast-compile
options, later ones with the plain program, compiled at the switch) and with plain ``jax.jit``
only, side by side in one process, for every public operator.

Each form gets shapes no earlier call used (its first call compiles), interleaved over `--rounds`
fresh shapes, and calls each ``FAST_CALLS + 20`` times. Columns: the first call in process CPU
seconds (XLA's compile threads included), tiered, plain and their ratio; the median wall time of
the calls before the switch (tiered: the fast program's code) and of plain's; the CPU seconds the
tiered form spent in its first ``FAST_CALLS + 1`` calls (the switch included) more than plain did
in as many: what a shape called in a loop pays once. Medians over the rounds. The first outputs
of the two forms are asserted bit-equal. ``SMALL_BYTES`` (64 KiB of arguments) is the limit of
a small call.

Run: ``PYTHONPATH=$PWD python benchmarks/small_eager.py [--rounds 3] [--only SUBSTRING]
[--hw 70]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from collections.abc import Callable

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from jaxmax import onnx  # noqa: E402
from jaxmax import openvino as ov  # noqa: E402
from jaxmax._src.lowering import compile_options  # noqa: E402


def _rois(n):
    return np.array([[0, 1.0, 1.0, 6.0, 5.0], [0, 0.0, 2.0, n - 1.0, n - 2.0]], np.float32)


#: (row, call of a fresh float32 input x (`_shape`) and its draw s)
ROWS: list[tuple[str, Callable]] = [
    ("openvino.reduce_max", lambda x, s: ov.reduce_max(x, [1, 3])),
    ("openvino.max_pool 3x3 s2 same_upper", lambda x, s: ov.max_pool(
        x, kernel=3, strides=2, auto_pad="same_upper")),
    ("onnx.max_pool 2x2 indices", lambda x, s: onnx.max_pool(
        x, kernel_shape=[2, 2], strides=[2, 2], return_indices=True)),
    ("openvino.segment_max", lambda x, s: ov.segment_max(x, np.arange(x.shape[0]) // 2,
                                                          fill_mode="ZERO")),
    ("onnx.arg_max", lambda x, s: onnx.arg_max(x, axis=2)),
    ("openvino.top_k k=3", lambda x, s: ov.top_k(x, 3, axis=3, mode="max", sort="value")),
    ("openvino.adaptive_max_pool (3, 2)", lambda x, s: ov.adaptive_max_pool(x, (3, 2))),
    ("onnx.max (3 inputs)", lambda x, s: onnx.max(x, -x, x[:, :1])),
    ("onnx.hardmax", lambda x, s: onnx.hardmax(x, axis=-1)),
    ("onnx.scatter_elements max", lambda x, s: onnx.scatter_elements(
        x, np.zeros((1, 3, 2, x.shape[3]), np.int64), x[:1, :, :2], axis=2, reduction="max")),
    ("onnx.max_roi_pool 2x2", lambda x, s: onnx.max_roi_pool(x, _rois(x.shape[3]),
                                                            pooled_shape=(2, 2))),
]


def _shape(s: int, hw: int) -> tuple[int, ...]:
    """Draw `s` of a row: (1 + s, 3, 8 + s, 8 + s) by default; with `hw` > 8, (1, 3, hw + s,
    hw + s) (`--hw 70`: about 60 KiB, near the limit of a small call)."""
    return (1 + s, 3, 8 + s, 8 + s) if hw <= 8 else (1, 3, hw + s, hw + s)


def _calls(call, x, s, tiered: bool, count: int) -> tuple[list[float], list[float], object]:
    """(CPU seconds of each of `count` calls, their wall seconds, the first call's output) of a
    form: `tiered` the default, else every call plain (``SMALL_BYTES = -1``)."""
    limit = compile_options.SMALL_BYTES
    compile_options.SMALL_BYTES = limit if tiered else -1
    try:
        cpu, wall, outs = [], [], []
        for _ in range(count):
            start, start_cpu = time.perf_counter(), time.process_time()
            outs.append(jax.block_until_ready(call(x, s)))
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        return cpu, wall, outs[0]
    finally:
        compile_options.SMALL_BYTES = limit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--hw", type=int, default=8, help="spatial size (see _shape)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    print(f"jax {jax.__version__}, fast options {compile_options.fast_compile()}")
    n = compile_options.FAST_CALLS
    print(f"FAST_CALLS = {n}")
    print(f"{'row':38} {'first: tiered':>13} {'plain':>7} {'ratio':>6} {'runs: fast':>11} "
          f"{'plain':>7} {'ratio':>6} {'loop pays once':>14}")
    for name, call in ROWS:
        if args.only not in name:
            continue
        rows: dict[bool, list] = {True: [], False: []}
        for r in range(args.rounds):
            outs = {}
            for tiered in (True, False):  # a fresh shape for each form: both compile
                s = 2 * r + (0 if tiered else 1) + 1
                x = np.random.default_rng(s).standard_normal(
                    _shape(s, args.hw)).astype(np.float32)
                cpu, wall, outs[tiered] = _calls(call, x, s, tiered, n + 20)
                rows[tiered].append((cpu[0], statistics.median(wall[1:n]), sum(cpu[:n + 1])))
                _, _, outs[not tiered] = _calls(call, x, s, not tiered, 1)
                for a, b in zip(*(jax.tree.leaves(outs[t]) for t in (True, False)), strict=True):
                    assert np.array_equal(np.asarray(a).view(np.uint8),
                                          np.asarray(b).view(np.uint8)), name
        t1, tr, tn = (statistics.median(col) for col in zip(*rows[True], strict=True))
        p1, pr, pn = (statistics.median(col) for col in zip(*rows[False], strict=True))
        print(f"{name:38} {t1:12.3f}s {p1:6.3f}s {t1 / p1:6.2f} {tr * 1e6:9.0f}us "
              f"{pr * 1e6:5.0f}us {tr / pr:6.2f} {tn - pn:13.3f}s")


if __name__ == "__main__":
    main()
