"""RoiAlign ``sampling_ratio=0`` side by side with onnxruntime in one process, interleaved
(medians of 7 after 2 warm-ups), the compile time of each jaxmax program, and the
``sampling_ratio=0`` data shapes (NaN features, ROIs partly outside, mixed sizes) against clean
data, on the anchor of docs/semantics.md §12 (features (1, 256, 50, 50), 300 ROIs, 7x7).

``--compile``: instead, the compile time of the sr=0 programs (``jax.clear_caches();
jax.jit(f).lower(*specs).compile()``, best of 3, wall and process CPU seconds) beside a trivial
program and compile_rows.py's plain-JAX formulation, with the kernel count of each program
(XLA:CPU compiles each kernel on its own: compile time follows it) and its optimised HLO size,
for 300 and 1000 ROIs, a 14x14 output and a 200x200 map (neither may grow them); then a new
small shape called eagerly (features (1, c, h, w) of under 64 KiB, 2 ROIs, 3x3: CPU, wall and
resident memory added per shape, medians of 12 shapes).

    PYTHONPATH=. python benchmarks/roi_align_ab.py [--compile]
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time

import jax
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from jaxmax import onnx as jonnx

RNG = np.random.default_rng(0)
X = RNG.standard_normal((1, 256, 50, 50)).astype(np.float32)
BATCH = np.zeros(300, np.int64)


def boxes(count, low=16.0, high=400.0, spill=0.0):
    wh = RNG.uniform(low, high, (count, 2))
    xy = RNG.uniform(-spill, 800 - wh + spill)
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


def ort_run(mode, sr, x, rois):
    node = helper.make_node("RoiAlign", ["X", "rois", "b"], ["Y"], mode=mode, output_height=7,
                            output_width=7, sampling_ratio=sr, spatial_scale=1 / 16)
    inputs = [helper.make_tensor_value_info(n, t, None) for n, t in
              (("X", TensorProto.FLOAT), ("rois", TensorProto.FLOAT), ("b", TensorProto.INT64))]
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return lambda: session.run(None, {"X": x, "rois": rois, "b": BATCH})[0]


def jax_run(mode, sr, x, rois):
    def call(x, r, b):
        return jonnx.roi_align(x, r, b, mode=mode, output_height=7, output_width=7,
                               sampling_ratio=sr, spatial_scale=1 / 16)
    f = jax.jit(call)
    args = [jax.device_put(a) for a in (x, rois, BATCH)]
    t0 = time.perf_counter()
    compiled = f.lower(*args).compile()
    seconds = time.perf_counter() - t0
    return (lambda: f(*args).block_until_ready()), seconds, len(compiled.as_text())


def medians(runs, reps=7):
    times = [[] for _ in runs]
    for run in runs:
        run()
        run()
    for _ in range(reps):
        for k, run in enumerate(runs):
            t0 = time.perf_counter()
            run()
            times[k].append(time.perf_counter() - t0)
    return [float(np.median(t)) * 1e3 for t in times]


def compile_seconds(f, specs, rounds=3):
    """(wall s, CPU s, kernels, HLO characters) of the best of `rounds` fresh compiles."""
    wall = cpu = float("inf")
    for _ in range(rounds):
        jax.clear_caches()
        start, start_cpu = time.perf_counter(), time.process_time()
        text = jax.jit(f).lower(*specs).compile().as_text()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu, len(re.findall(r"kind=k", text)), len(text)


def resident_mb():
    pages = int(open("/proc/self/statm").read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def compile_main():
    from compile_rows import plain_roi_align  # noqa: PLC0415 (a sibling script)

    spec = jax.ShapeDtypeStruct
    f32, i32 = np.float32, np.int32
    print(f"load {os.getloadavg()[0]:.1f}")
    trivial = compile_seconds(lambda v: v * 2 + 1, (spec((8, 8), f32),))
    anchor = (spec((1, 256, 50, 50), f32), spec((300, 4), f32), spec((300,), i32))
    plain = compile_seconds(plain_roi_align, anchor)
    for name, row in (("trivial x*2+1", trivial), ("plain JAX bilinear avg", plain)):
        print(f"{name}: {row[0]:.3f} s wall, {row[1]:.3f} s CPU, {row[2]} kernels")
    for mode in ("avg", "max"):
        for label, (hw, count, out) in (("anchor", (50, 300, 7)), ("1000 ROIs", (50, 1000, 7)),
                                        ("14x14", (50, 300, 14)), ("200x200 map", (200, 300, 7))):
            specs = (spec((1, 256, hw, hw), f32), spec((count, 4), f32), spec((count,), i32))
            wall, cpu, kernels, size = compile_seconds(
                lambda x, r, b, mode=mode, out=out: jonnx.roi_align(
                    x, r, b, mode=mode, output_height=out, output_width=out, sampling_ratio=0,
                    spatial_scale=1 / 16), specs)
            print(f"{mode} sr=0 {label}: {wall:.3f} s wall, {cpu:.3f} s CPU, {kernels} kernels,"
                  f" HLO {size} chars")
    small = np.array([[1.0, 1.0, 6.0, 5.0], [0.0, 2.0, 7.0, 6.5]], np.float32)
    for mode in ("avg", "max"):
        rows = []
        for c in range(1, 4):
            for h, w in ((8, 9), (11, 10), (13, 15), (17, 20)):
                x = RNG.standard_normal((1, c, h, w)).astype(np.float32)
                mb, start, start_cpu = resident_mb(), time.perf_counter(), time.process_time()
                jax.block_until_ready(jonnx.roi_align(x, small, np.zeros(2, np.int64),
                                                      mode=mode, output_height=3,
                                                      output_width=3, sampling_ratio=0))
                rows.append((time.process_time() - start_cpu, time.perf_counter() - start,
                             resident_mb() - mb))
        cpu, wall, mb = (statistics.median(v) for v in zip(*rows, strict=True))
        print(f"new small shape {mode} sr=0: {cpu:.3f} s CPU, {wall:.3f} s wall, "
              f"+{mb:.2f} MB resident")


def main():
    if "--compile" in sys.argv:
        compile_main()
        return
    rois = boxes(300)
    for mode in ("max", "avg"):
        run, seconds, size = jax_run(mode, 0, X, rois)
        ours, theirs = medians([run, ort_run(mode, 0, X, rois)])
        print(f"anchor {mode} sr=0: jax {ours:.1f} ms ort {theirs:.1f} ms ratio "
              f"{ours / theirs:.2f}; compile {seconds:.2f} s, HLO {size} chars", flush=True)
    nan = X.copy()
    nan.reshape(-1)[RNG.choice(nan.size, nan.size // 100, replace=False)] = np.nan
    runs = [jax_run("avg", 0, x, r)[0] for x, r in
            ((X, rois), (nan, rois), (X, boxes(300, spill=200)), (X, boxes(300, 8, 800)))]
    clean, with_nan, outside, mixed = medians(runs)
    print(f"data shapes sr=0 avg: clean {clean:.1f} ms, NaN {with_nan / clean:.2f}x, "
          f"outside {outside / clean:.2f}x, mixed {mixed / clean:.2f}x")


if __name__ == "__main__":
    main()
