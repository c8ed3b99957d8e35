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

``--corners [--base REV] [--rounds N] [--sr 2]``: instead, max on the anchor (``sampling_ratio``
2, or `--sr`), the weighted corners (onnxruntime's rule) and the interpolated max, this tree's
lowering against the base revision's (``roi/{align,samples,adaptive}.py`` from ``git show``,
loaded as a package of their own) and an onnxruntime RoiAlign-16 node, interleaved (medians of
N rounds, process CPU and wall ms); outputs checked bit-equal to the base's, and the gradients
for the data and the ROIs compared (bit-equal, or their largest difference); each program's
compile (best of 3) and kernel count.

``--data [--base REV] [--rounds N]``: instead, ``sampling_ratio=0`` max and avg on the data
shapes (clean, 1 in 100 NaN, ROIs partly outside the image, mixed sizes 8-800 px), this tree's
lowering against the base revision's, interleaved as ``--corners``, outputs checked bit-equal.

``--grad [--base REV] [--rounds N]``: instead, the gradient for the data and the ROIs at the
anchor (avg and max, ``sampling_ratio`` 2 and 0), this tree's lowering against the base's:
compile (best of 3), kernels, and run times interleaved (medians of N rounds).

    PYTHONPATH=. python benchmarks/roi_align_ab.py [--compile | --corners --base main [--sr 0] |
                                                    --data --base REV | --grad --base REV]
"""

from __future__ import annotations

import importlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
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


BASE_MODULES = ("align", "samples", "adaptive")


def load_base(rev: str):
    """The base revision's ``align`` module, its imports of the modules this script compares
    pointed at the base's own copies (the rest of jaxmax is this tree's)."""
    root = tempfile.mkdtemp(prefix="roi_align_base_")
    package = os.path.join(root, "roi_align_base")
    os.makedirs(package)
    open(os.path.join(package, "__init__.py"), "w").close()
    for name in BASE_MODULES:
        text = subprocess.run(["git", "show", f"{rev}:jaxmax/_src/lowering/roi/{name}.py"],
                              check=True, capture_output=True, text=True).stdout
        text = text.replace("from jaxmax._src.lowering.roi import adaptive, samples",
                            "from roi_align_base import adaptive, samples")
        text = text.replace("from jaxmax._src.lowering.roi import samples",
                            "from roi_align_base import samples")
        text = text.replace("from jaxmax._src.lowering.roi.samples import",
                            "from roi_align_base.samples import")
        with open(os.path.join(package, f"{name}.py"), "w") as f:
            f.write(text)
    sys.path.insert(0, root)
    return importlib.import_module("roi_align_base.align")


def corners_main(rev: str, rounds: int, sr: int = 2):
    from jaxmax._src.lowering.roi import align as this  # noqa: PLC0415

    base = load_base(rev)
    rois = boxes(300)
    args = [jax.device_put(a) for a in (X, rois, BATCH.astype(np.int32))]
    static = dict(face="onnx", mode="max", pooled=(7, 7), sampling_ratio=sr,
                  scale=float(np.float32(1 / 16)), geometry=(0.5, False))
    print(f"load {os.getloadavg()[0]:.1f}; base {rev}; sampling_ratio {sr}")
    runs, names = [], []
    for corners in (True, False):
        label = "weighted corners" if corners else "interpolated"
        fns = {}
        for name, module in (("base", base), ("this", this)):
            def f(x, r, b, module=module, corners=corners):
                return module.align(x, r, b, corners=corners, **static)
            wall, cpu, kernels, _ = compile_seconds(f, args)
            print(f"{label} {name}: compile {wall:.3f} s wall, {cpu:.3f} s CPU, "
                  f"{kernels} kernels", flush=True)
            fns[name] = jax.jit(f)
            ct = np.random.default_rng(1).standard_normal((300, 256, 7, 7)).astype(np.float32)
            grad = jax.jit(jax.grad(lambda x, r, b, f=f, ct=ct: (f(x, r, b) * ct).sum(),
                                    argnums=(0, 1)))
            fns[name + " grad"] = grad
        pairs = [(fns["base"](*args), fns["this"](*args))]
        pairs += zip(fns["base grad"](*args), fns["this grad"](*args), strict=True)
        same = [np.asarray(g).tobytes() == np.asarray(h).tobytes() for g, h in pairs]
        print(f"{label}: output, data gradient, ROI gradient bit-equal to the base: {same}")
        assert same[0], "outputs differ from the base"
        if not all(same):  # a change of the cotangents' summation order: within rounding
            for part, (g, h) in zip(("data", "ROI"), pairs[1:], strict=True):
                g, h = np.asarray(g, np.float64), np.asarray(h, np.float64)
                scale = np.maximum(np.abs(g), np.abs(h)).max()
                print(f"  {part} gradient: largest difference {np.abs(g - h).max() / scale:.2e}"
                      f" of its largest element")
        for name in ("base", "this"):
            runs.append(lambda f=fns[name]: f(*args).block_until_ready())
            names.append(f"{label} {name}")
    runs.append(ort_run("max", sr, X, rois))
    names.append("onnxruntime")
    cpu, wall = interleaved(runs, rounds)
    for k, name in enumerate(names):
        print(f"{name}: {cpu[k]:.1f} ms CPU, {wall[k]:.1f} ms wall; / onnxruntime CPU "
              f"{cpu[k] / cpu[-1]:.2f}, wall {wall[k] / wall[-1]:.2f}")
    for k in (0, 2):
        print(f"{names[k + 1]} / base: CPU {cpu[k + 1] / cpu[k]:.2f}, wall "
              f"{wall[k + 1] / wall[k]:.2f}")
    print(f"load {os.getloadavg()[0]:.1f}")


def grad_main(rev: str, rounds: int):
    """The gradient for the data and the ROIs of ``sum(out * ct)`` at the anchor (avg and max,
    ``sampling_ratio`` 2 and 0), this tree's lowering against the base revision's: compile
    (best of 3) and kernels, then run times interleaved."""
    from jaxmax._src.lowering.roi import align as this  # noqa: PLC0415

    base = load_base(rev)
    args = [jax.device_put(a) for a in (X, boxes(300), BATCH.astype(np.int32))]
    ct = np.random.default_rng(1).standard_normal((300, 256, 7, 7)).astype(np.float32)
    print(f"load {os.getloadavg()[0]:.1f}; base {rev}")
    runs, names = [], []
    for mode, sr in (("avg", 2), ("max", 2), ("avg", 0), ("max", 0)):
        static = dict(face="onnx", mode=mode, corners=False, pooled=(7, 7), sampling_ratio=sr,
                      scale=float(np.float32(1 / 16)), geometry=(0.5, False))
        for name, module in (("base", base), ("this", this)):
            def grad(x, r, b, module=module, static=static):
                return jax.grad(lambda x, r: (module.align(x, r, b, **static) * ct).sum(),
                                argnums=(0, 1))(x, r)
            wall, cpu, kernels, _ = compile_seconds(grad, args)
            print(f"{mode} sr={sr} {name}: gradient compile {wall:.3f} s wall, {cpu:.3f} s "
                  f"CPU, {kernels} kernels", flush=True)
            f = jax.jit(grad)
            runs.append(lambda f=f: jax.block_until_ready(f(*args)))
            names.append(f"{mode} sr={sr} {name}")
    cpu, wall = interleaved(runs, rounds)
    for k in range(0, len(runs), 2):
        print(f"{names[k + 1]}: {cpu[k + 1]:.1f} ms CPU, {wall[k + 1]:.1f} ms wall; / base CPU "
              f"{cpu[k + 1] / cpu[k]:.2f}, wall {wall[k + 1] / wall[k]:.2f} (base {cpu[k]:.1f}, "
              f"{wall[k]:.1f})")
    print(f"load {os.getloadavg()[0]:.1f}")


def interleaved(runs, rounds):
    """Medians of `rounds` interleaved rounds (one warm-up call each): (CPU ms, wall ms)."""
    cpu, wall = ([[] for _ in runs] for _ in range(2))
    for run in runs:
        run()
    for _ in range(rounds):
        for k, run in enumerate(runs):
            c0, w0 = time.process_time(), time.perf_counter()
            run()
            cpu[k].append(time.process_time() - c0)
            wall[k].append(time.perf_counter() - w0)
    return ([float(np.median(t)) * 1e3 for t in ts] for ts in (cpu, wall))


def data_main(rev: str, rounds: int):
    from jaxmax._src.lowering.roi import align as this  # noqa: PLC0415

    base = load_base(rev)
    nan = X.copy()
    nan.reshape(-1)[RNG.choice(nan.size, nan.size // 100, replace=False)] = np.nan
    shapes = {"clean": (X, boxes(300)), "NaN 1/100": (nan, boxes(300)),
              "outside": (X, boxes(300, spill=200)), "mixed": (X, boxes(300, 8, 800))}
    print(f"load {os.getloadavg()[0]:.1f}; base {rev}")
    for mode in ("max", "avg"):
        static = dict(face="onnx", mode=mode, corners=False, pooled=(7, 7), sampling_ratio=0,
                      scale=float(np.float32(1 / 16)), geometry=(0.5, False))
        runs, names = [], []
        for label, (x, rois) in shapes.items():
            args = [jax.device_put(a) for a in (x, rois, BATCH.astype(np.int32))]
            outs = []
            for name, module in (("base", base), ("this", this)):
                f = jax.jit(lambda x, r, b, module=module, static=static: module.align(
                    x, r, b, **static))
                outs.append(np.asarray(f(*args)).tobytes())
                runs.append(lambda f=f, args=args: f(*args).block_until_ready())
                names.append((label, name))
            assert outs[0] == outs[1], f"{mode} {label}: outputs differ from the base"
        cpu, wall = interleaved(runs, rounds)
        for k in range(0, len(runs), 2):
            label = names[k][0]
            print(f"{mode} sr=0 {label}: base {cpu[k]:.1f} ms CPU {wall[k]:.1f} wall | this "
                  f"{cpu[k + 1]:.1f} CPU {wall[k + 1]:.1f} wall | this/base CPU "
                  f"{cpu[k + 1] / cpu[k]:.2f} wall {wall[k + 1] / wall[k]:.2f} | / clean CPU "
                  f"base {cpu[k] / cpu[0]:.2f} this {cpu[k + 1] / cpu[1]:.2f}", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


def main():
    if "--compile" in sys.argv:
        compile_main()
        return
    if "--corners" in sys.argv:
        def opt(name, default):
            return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default
        corners_main(opt("--base", "main"), int(opt("--rounds", "21")), int(opt("--sr", "2")))
        return
    if "--grad" in sys.argv:
        def opt(name, default):
            return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default
        grad_main(opt("--base", "main"), int(opt("--rounds", "9")))
        return
    if "--data" in sys.argv:
        def opt(name, default):
            return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default
        data_main(opt("--base", "main"), int(opt("--rounds", "21")))
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
