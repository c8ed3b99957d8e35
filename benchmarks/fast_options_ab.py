"""A new small shape called eagerly, with the fast-compile options of small eager calls
(``compile_options.fast_compile()``) and with one option left out, side by side in one process:
the first call's process CPU seconds (XLA's compile threads included) and resident memory
growth, medians over `--rounds` fresh shapes per row (the two sets alternated, each shape's
outputs asserted bit-equal under both).

Run: ``PYTHONPATH=$PWD python benchmarks/fast_options_ab.py [--rounds 8] [--leave-out
xla_cpu_parallel_codegen_split_count] [--only SUBSTRING]``.

``--ahead`` compares instead where the fast programs live (`compile_options.jit`): in
``jax.jit`` caches (``jax_caches.USE = False``, the fallback) and compiled ahead of time
(the default): per fresh shape, the first call's process CPU seconds, the resident memory it
leaves after ``gc.collect()`` and glibc's ``malloc_trim(0)``, from a trimmed start (untrimmed
figures from one call depend on what the allocator kept free before it: ``--growth``
measures them over many shapes), and the median wall time of its calls 2 to 6 (the fast
program's dispatch and run, microseconds); each shape's output asserted bit-equal between the
two.

``--growth N`` measures the memory a long run keeps instead: a child process per form and
row (the forms alternated, `--rounds` children each) calls N fresh shapes after three warm-up
shapes and reports the resident memory growth per shape, untrimmed (``gc.collect()`` only:
what the process shows) and, in another child, from a trimmed start to a trimmed end.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from jaxmax import onnx  # noqa: E402
from jaxmax import openvino as ov  # noqa: E402
from jaxmax._src.lowering import compile_options, jax_caches  # noqa: E402


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


def _settled_mb(trim: bool) -> float:
    gc.collect()
    if trim:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return _resident_mb()


def _ahead(rounds: int, only: str) -> None:
    """The fast programs in ``jax.jit`` caches (jit) against compiled ahead of time (ahead)."""
    print(f"fast options {compile_options.fast_compile()}; load {os.getloadavg()}")
    print("| row | CPU s jit | CPU s ahead | ratio | trimmed MB jit | trimmed MB ahead | "
          "2nd-6th call us jit | us ahead |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    shape = 0
    forms = [("jit", False), ("ahead", True)]
    for name, f in ROWS.items():
        if only and only not in name:
            continue
        got: dict[str, dict[str, list]] = {t: {"cpu": [], "trim": [], "us": []}
                                           for t, _ in forms}
        for r in range(rounds):
            outs = {}
            shape += 1
            for tag, use in forms if r % 2 == 0 else forms[::-1]:
                # each form its own fresh shape (the other's would hit JAX's inner caches)
                h, w, c = 8 + shape % 13, 9 + (shape * 7) % 11, 1 + (shape + (tag == "jit")) % 5
                x = np.random.default_rng(shape).standard_normal((1, c, h, w)).astype(np.float32)
                jax_caches.USE = use
                t0 = _settled_mb(True)
                c0 = time.process_time()
                out = jax.block_until_ready(f(x))
                got[tag]["cpu"].append(time.process_time() - c0)
                got[tag]["trim"].append(_settled_mb(True) - t0)
                walls = []
                for _ in range(5):
                    w0 = time.perf_counter()
                    jax.block_until_ready(f(x))
                    walls.append(time.perf_counter() - w0)
                got[tag]["us"].append(statistics.median(walls) * 1e6)
                outs[tag] = (x, out)
            for tag, use in forms:  # the other form's program on the same shape: same bits
                x, out = outs[tag]
                jax_caches.USE = not use
                again = f(x)
                for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(again), strict=True):
                    assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), name
            jax_caches.USE = None
        m = {t: {k: statistics.median(v) for k, v in d.items()} for t, d in got.items()}
        j, a = m["jit"], m["ahead"]
        print(f"| {name} | {j['cpu']:.3f} | {a['cpu']:.3f} | {a['cpu'] / j['cpu']:.2f} | "
              f"{j['trim']:+.2f} | {a['trim']:+.2f} | "
              f"{j['us']:.0f} | {a['us']:.0f} |", flush=True)


def _grow(name: str, use: bool, shapes: int, trim: bool) -> float:
    """In this process: the resident MB per fresh shape of row `name` over `shapes` calls."""
    f = ROWS[name]
    jax_caches.USE = use

    def call(i: int) -> None:
        x = np.random.default_rng(i).standard_normal((1, 3, 9 + i % 17, 40 + i // 17))
        jax.block_until_ready(f(x.astype(np.float32)))

    for i in range(3):
        call(1000 + i)
    start = _settled_mb(trim)
    for i in range(shapes):
        call(i)
    return (_settled_mb(trim) - start) / shapes


def _growth(rounds: int, only: str, shapes: int) -> None:
    print(f"fresh shapes per child {shapes}; load {os.getloadavg()}")
    print("| row | MB/shape jit | MB/shape ahead | trimmed jit | trimmed ahead |")
    print("|---|---:|---:|---:|---:|")
    for name in ROWS:
        if only and only not in name:
            continue
        got: dict[tuple, list] = {}
        for r in range(rounds):
            for use in (False, True) if r % 2 == 0 else (True, False):
                for trim in (False, True):
                    out = subprocess.run(
                        [sys.executable, __file__, "--child", name, str(int(use)),
                         str(shapes), str(int(trim))], capture_output=True, text=True,
                        check=True).stdout
                    got.setdefault((use, trim), []).append(float(out.split()[-1]))
        m = {k: statistics.median(v) for k, v in got.items()}
        print(f"| {name} | {m[False, False]:+.2f} | {m[True, False]:+.2f} | "
              f"{m[False, True]:+.2f} | {m[True, True]:+.2f} |", flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        name, use, shapes, trim = sys.argv[2:6]
        print(_grow(name, bool(int(use)), int(shapes), bool(int(trim))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--leave-out", default="xla_cpu_parallel_codegen_split_count")
    parser.add_argument("--only", default="")
    parser.add_argument("--ahead", action="store_true",
                        help="compare jax.jit caches with programs compiled ahead of time")
    parser.add_argument("--growth", type=int, default=0,
                        help="fresh shapes per child process (memory kept by a long run)")
    args = parser.parse_args()
    if args.growth:
        _growth(args.rounds, args.only, args.growth)
        return
    if args.ahead:
        _ahead(args.rounds, args.only)
        return
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
