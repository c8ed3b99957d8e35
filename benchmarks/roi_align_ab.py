"""RoiAlign ``sampling_ratio=0`` side by side with onnxruntime in one process, interleaved
(medians of 7 after 2 warm-ups), the compile time of each jaxmax program, and the
``sampling_ratio=0`` data shapes (NaN features, ROIs partly outside, mixed sizes) against clean
data, on the anchor of docs/semantics.md §12 (features (1, 256, 50, 50), 300 ROIs, 7x7).

    PYTHONPATH=. python benchmarks/roi_align_ab.py
"""

from __future__ import annotations

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


def main():
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
