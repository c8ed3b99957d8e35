"""A new small shape called eagerly, with the fast-compile options of small eager calls
(``compile_options.fast_compile()``) and with one option left out, side by side in one process:
the first call's process CPU seconds (XLA's compile threads included) and resident memory
growth, medians over `--rounds` fresh shapes per row (the two sets alternated, each shape's
outputs asserted bit-equal under both).

Run: ``PYTHONPATH=$PWD python benchmarks/fast_options_ab.py [--rounds 8] [--leave-out
xla_cpu_parallel_codegen_split_count] [--only SUBSTRING]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from jaxmax import onnx  # noqa: E402
from jaxmax import openvino as ov  # noqa: E402
from jaxmax._src.lowering import compile_options  # noqa: E402


def _resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _rois(h: int, w: int) -> np.ndarray:
    return np.array([[0, 1.0, 1.0, w - 2.0, h - 3.0], [0, 0.0, 2.0, w - 1.0, h - 2.0]],
                    np.float32)


ROWS = {
    "ONNX MaxRoiPool": lambda x: onnx.max_roi_pool(x, _rois(*x.shape[2:]), pooled_shape=(3, 3)),
    "ROIPooling-1": lambda x: ov.roi_pooling(x, _rois(*x.shape[2:]), pooled_h=3, pooled_w=3,
                                             spatial_scale=1.0),
    "ONNX RoiAlign avg sr 0": lambda x: onnx.roi_align(
        x, _rois(*x.shape[2:])[:, 1:], np.zeros(2, np.int64), output_height=3,
        output_width=3, sampling_ratio=0),
    "ONNX RoiAlign max sr 2": lambda x: onnx.roi_align(
        x, _rois(*x.shape[2:])[:, 1:], np.zeros(2, np.int64), mode="max", output_height=3,
        output_width=3, sampling_ratio=2),
    "MaxPool-1 k3 s2": lambda x: ov.max_pool(x, kernel=(3, 3), strides=(2, 2)),
    "ONNX ArgMax axis 1": lambda x: onnx.arg_max(x, axis=1),
    "ONNX TopK k=2 last axis": lambda x: onnx.top_k(x, np.array([2]), axis=3),
    "ONNX Hardmax": onnx.hardmax,
    "ONNX ReduceMax axes (2, 3)": lambda x: onnx.reduce_max(x, axes=[2, 3]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--leave-out", default="xla_cpu_parallel_codegen_split_count")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    full = dict(compile_options.fast_compile())
    less = {k: v for k, v in full.items() if k != args.leave_out}
    print(f"fast options {full}; without: {less}; load {os.getloadavg()[0]:.1f}")
    print("| row | CPU s without | CPU s with | ratio | MB without | MB with |")
    print("|---|---:|---:|---:|---:|---:|")
    shape = 0
    for name, f in ROWS.items():
        if args.only and args.only not in name:
            continue
        cpu: dict[str, list] = {"without": [], "with": []}
        mem: dict[str, list] = {"without": [], "with": []}
        for r in range(args.rounds):
            order = [("without", less), ("with", full)]
            for tag, options in order if r % 2 == 0 else order[::-1]:
                shape += 1
                h, w, c = 8 + shape % 13, 9 + (shape * 7) % 11, 1 + shape % 5
                x = np.random.default_rng(shape).standard_normal((1, c, h, w)).astype(np.float32)
                compile_options.fast_compile = (lambda o=options: o)  # what options_for reads
                m0, c0 = _resident_mb(), time.process_time()
                got = jax.block_until_ready(f(x))
                cpu[tag].append(time.process_time() - c0)
                mem[tag].append(_resident_mb() - m0)
                other = full if tag == "without" else less
                compile_options.fast_compile = (lambda o=other: o)
                for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(f(x)), strict=True):
                    assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), name
        a, b = statistics.median(cpu["without"]), statistics.median(cpu["with"])
        ma, mb = statistics.median(mem["without"]), statistics.median(mem["with"])
        print(f"| {name} | {a:.3f} | {b:.3f} | {b / a:.2f} | {ma:+.2f} | {mb:+.2f} |", flush=True)


if __name__ == "__main__":
    main()
