"""Same-process A/B of the pooling, SegmentMax, eager, TopK and AdaptiveMaxPool rows: this
tree's jaxmax against a base commit's (imported next to it as ``jaxmax_base``), strictly
alternating, with and without ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (one child process per
setting).

    python benchmarks/pool_ab.py                      # base = main, both allocator settings
    python benchmarks/pool_ab.py --base 1d0fa0c --only pool,segment --reps 11
    python benchmarks/pool_ab.py --hugetlb off        # default allocator only
    python benchmarks/pool_ab.py --only top_k --hugetlb off --reps 15
    python benchmarks/pool_ab.py --only adaptive --hugetlb off --reps 15
    python benchmarks/pool_ab.py --base 9c643d8 --only segment_shapes --hugetlb off
    python benchmarks/pool_ab.py --base 0daa59f --only pool_shapes --hugetlb off

Each row prints the medians (wall ms) of the base and the new code, the median of the paired
ratios new / base (each pair timed back to back, after 30 ms of untimed calls of its own), and
the same for process CPU time (user + system of every thread: less sensitive to other
processes on a shared machine than wall time). Rows marked "ref" time a reference program
(the write floor of an output, `jax.ops.segment_max`, `jnp.max`) against the new code instead
of the base: their ratio is new / reference. Exactness is checked: the new and base outputs
of each row must be equal (values and indices), or the row says so.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEAD_IN_S = 0.03


def _export_base(commit: str, into: Path) -> None:
    """`commit`'s jaxmax package as ``jaxmax_base`` under `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "jaxmax"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "x", "-C", str(into)], input=archive, check=True)
    (into / "jaxmax").rename(into / "jaxmax_base")
    for path in (into / "jaxmax_base").rglob("*.py"):
        text = path.read_text()
        path.write_text(re.sub(r"\bjaxmax\b", "jaxmax_base", text))


def _rows(only: set[str]):
    """(group, name, make(module) -> fn, input key, reference maker or None)."""
    import jax
    import jax.numpy as jnp

    def pool(nsp, k, s, p, **kw):
        return lambda m: lambda x: m.openvino.max_pool(
            x, kernel=(k,) * nsp, strides=(s,) * nsp, pads_begin=(p,) * nsp,
            pads_end=(p,) * nsp, **kw)

    def grad(make):
        return lambda m: jax.grad(lambda v: make(m)(v).sum())

    def onnx_dilated(m):
        return lambda x: m.onnx.max_pool(x, kernel_shape=[3, 3], dilations=[2, 2],
                                         pads=[1, 1, 1, 1])

    def ov_dilated(m):
        return lambda x: m.openvino.max_pool(x, kernel=3, strides=1, dilations=2, pads_begin=1,
                                             pads_end=1, opset=8)[0]

    def write_floor(out_spatial):
        index = (slice(None), slice(None)) + tuple(slice(0, n) for n in out_spatial)
        return lambda: lambda x: x[index] * 2

    rows = []
    if "pool" in only:
        rows += [
            ("pool", "2-D k3 s2 p1 (stem)", pool(2, 3, 2, 1), "pool2d", None),
            ("pool", "2-D k2 s2", pool(2, 2, 2, 0), "pool2d", None),
            ("pool", "2-D k3 s1 p1", pool(2, 3, 1, 1), "pool2d", None),
            ("pool", "2-D k3 s1 p1 / write floor", pool(2, 3, 1, 1), "pool2d",
             write_floor((112, 112))),
            ("pool", "ONNX k3 d2 s1 p1", onnx_dilated, "pool2d", None),
            ("pool", "ONNX k3 d2 s1 p1 / write floor", onnx_dilated, "pool2d",
             write_floor((110, 110))),
            ("pool", "OpenVINO-8 k3 d2 s1 p1 values", ov_dilated, "pool2d", None),
            ("pool", "3-D k3 s2 p1", pool(3, 3, 2, 1), "pool3d", None),
            ("pool", "3-D k3 s2 p1 + i32 indices (MaxPool-8)",
             pool(3, 3, 2, 1, opset=8, index_element_type="i32"), "pool3d", None),
            ("pool", "stem + i32 indices (MaxPool-14)",
             pool(2, 3, 2, 1, opset=14, index_element_type="i32"), "pool2d", None),
            ("pool", "ONNX stem Y + Indices", lambda m: lambda x: m.onnx.max_pool(
                x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                return_indices=True), "pool2d", None),
        ]
    if "pool_shapes" in only:  # the data-shape axis of benchmarks/jaxmax_bench/cases.py
        from jaxmax_bench.cases import DATA_SHAPES

        def onnx_stem(m):
            return lambda x: m.onnx.max_pool(x, kernel_shape=[3, 3], strides=[2, 2],
                                             pads=[1, 1, 1, 1], return_indices=True)

        def onnx_stem_grad(m):
            return jax.grad(lambda x: m.onnx.max_pool(x, kernel_shape=[3, 3], strides=[2, 2],
                                                      pads=[1, 1, 1, 1]).sum())

        rows += [(group, f"{label}, {shape}", make, f"pool2d@{shape}", None)
                 for shape in DATA_SHAPES if shape != "empty"
                 for group, label, make in (
                     ("pool", "ONNX stem Y + Indices", onnx_stem),
                     ("pool", "MaxPool-14 stem + i32 indices",
                      pool(2, 3, 2, 1, opset=14, index_element_type="i32")),
                     ("grad", "ONNX stem gradient", onnx_stem_grad))]
    if "grad" in only:
        rows += [
            ("grad", "stem gradient", grad(pool(2, 3, 2, 1)), "pool2d", None),
            ("grad", "2-D k3 s1 p1 gradient", grad(pool(2, 3, 1, 1)), "pool2d", None),
            ("grad", "3-D k3 s2 p1 gradient", grad(pool(3, 3, 2, 1)), "pool3d", None),
            ("grad", "dilated (OpenVINO-8) gradient", grad(ov_dilated), "pool2d", None),
        ]
    if "segment" in only:
        seg = [lambda m, f=f: lambda x, i: m.openvino.segment_max(x, i, 20000, fill_mode=f)
               for f in ("ZERO", "LOWEST")]
        sorted_ref = lambda: lambda x, i: jax.ops.segment_max(  # noqa: E731
            x, i, 20000, indices_are_sorted=True)
        rows += [
            ("segment", "SegmentMax ZERO", seg[0], "seg", None),
            ("segment", "SegmentMax LOWEST", seg[1], "seg", None),
            ("segment", "ZERO / segment_max(sorted)", seg[0], "seg", sorted_ref),
            ("segment", "LOWEST / segment_max(sorted)", seg[1], "seg", sorted_ref),
        ]
    if "segment_shapes" in only:  # the data-shape axis of benchmarks/jaxmax_bench/cases.py
        from jaxmax_bench.cases import DATA_SHAPES

        seg = [lambda m, f=f: lambda x, i: m.openvino.segment_max(x, i, 20000, fill_mode=f)
               for f in ("ZERO", "LOWEST")]
        rows += [("segment", f"SegmentMax {fill}, {shape}", make, f"seg@{shape}", None)
                 for shape in DATA_SHAPES
                 for fill, make in zip(("ZERO", "LOWEST"), seg, strict=True)]
    if "eager" in only:
        rows += [
            ("eager", "eager reduce_max 8x8", lambda m: lambda x: m.openvino.reduce_max(x, 1),
             "small", None),
            ("eager", "eager reduce_max / jnp.max", lambda m: lambda x: m.openvino.reduce_max(
                x, 1), "small", lambda: lambda x: jnp.max(x, axis=1)),
            ("eager", "eager segment_max 8x8", lambda m: lambda x, i: m.openvino.segment_max(
                x, i, 4, fill_mode="ZERO"), "small_seg", None),
        ]
    if "top_k" in only:
        def onnx_top_k(k, axis):
            return lambda m: lambda x: m.onnx.top_k(x, k, axis=axis)

        def ov_top_k(k, axis):
            return lambda m: lambda x: m.openvino.top_k(x, k, axis=axis, mode="max",
                                                       sort="value")
        for key, k, axis, label in (("cls", 5, 1, "k=5 of (256, 1000)"),
                                    ("mid", 10, 1, "k=10 of (64, 1000, 16) axis 1"),
                                    ("det", 100, 1, "k=100 of (1, 25200)"),
                                    ("vocab", 10, 1, "k=10 of (32, 32000)"),
                                    ("row", 10, 1, "k=10 of (1, 4096)")):
            rows += [("top_k", f"ONNX TopK {label}", onnx_top_k(k, axis), key, None),
                     ("top_k", f"TopK-11 {label}", ov_top_k(k, axis), key, None)]
    if "adaptive" in only:
        def adaptive(out):
            return lambda m: lambda x: m.openvino.adaptive_max_pool(x, out,
                                                                    index_element_type="i32")
        rows += [
            ("adaptive", "AdaptiveMaxPool-8 to (5, 3), i32 indices", adaptive((5, 3)),
             "adaptive", None),
            ("adaptive", "AdaptiveMaxPool-8 to (5, 3), values only",
             lambda m: lambda x: adaptive((5, 3))(m)(x)[0], "adaptive", None),
            ("adaptive", "AdaptiveMaxPool-8 to (7, 7), i32 indices", adaptive((7, 7)),
             "adaptive", None),
            ("adaptive", "AdaptiveMaxPool-8 to (5, 3), gradient",
             grad(lambda m: lambda x: adaptive((5, 3))(m)(x)[0]), "adaptive", None),
        ]
    return rows


_TOP_K_SHAPES = {"cls": (256, 1000), "mid": (64, 1000, 16), "det": (1, 25200),
                 "vocab": (32, 32000), "row": (1, 4096)}


def _inputs(key: str):
    import jax
    import numpy as np

    rng = np.random.default_rng(0)
    if key == "pool2d" or key.startswith("pool2d@"):
        x = rng.standard_normal((32, 64, 112, 112), dtype=np.float32)
        if "@" in key:
            from jaxmax_bench.cases import with_data_shape

            x = with_data_shape({"x": x}, key.split("@")[1], rng)["x"]
        return (jax.device_put(x),)
    if key == "pool3d":
        return (jax.device_put(rng.standard_normal((8, 32, 32, 64, 64), dtype=np.float32)),)
    if key == "seg" or key.startswith("seg@"):
        from jaxmax_bench.cases import with_data_shape

        ids = np.sort(rng.integers(0, 20000, 2_000_000)).astype(np.int32)
        arrays = {"x": rng.standard_normal((2_000_000, 32), dtype=np.float32), "ids": ids}
        if "@" in key:
            arrays = with_data_shape(arrays, key.split("@")[1], rng)
        return (jax.device_put(arrays["x"]), jax.device_put(arrays["ids"]))
    if key == "adaptive":
        return (jax.device_put(rng.standard_normal((32, 512, 14, 14), dtype=np.float32)),)
    if key in _TOP_K_SHAPES:
        return (jax.device_put(rng.standard_normal(_TOP_K_SHAPES[key], dtype=np.float32)),)
    if key == "small":
        return (jax.device_put(rng.standard_normal((8, 8), dtype=np.float32)),)
    return (jax.device_put(rng.standard_normal((8, 8), dtype=np.float32)),
            jax.device_put(np.array([0, 0, 1, 1, 2, 2, 3, 3], np.int32)))


def _sample(call, inner: int) -> tuple[float, float]:
    lead = time.perf_counter()
    call()
    while time.perf_counter() - lead < LEAD_IN_S:
        call()
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(inner):
        call()
    return ((time.perf_counter() - t0) / inner * 1e3, (time.process_time() - c0) / inner * 1e3)


def child(args) -> None:
    import jax
    import jaxmax_base
    import numpy as np

    import jaxmax

    print(f"GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '(unset)')}, base {args.base}, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    head = f"{'row':44s} {'base/ref ms':>11s} {'new ms':>9s} {'new/base':>9s} {'cpu ratio':>9s}"
    print(head)
    cache: dict[str, tuple] = {}
    for group, name, make, key, ref in _rows(set(args.only.split(","))):
        if key not in cache:
            cache.clear()
            cache[key] = _inputs(key)
        xs = cache[key]
        eager = group == "eager"
        wrap = (lambda f: f) if eager else jax.jit
        new = wrap(make(jaxmax))
        other = wrap(ref()) if ref is not None else wrap(make(jaxmax_base))
        calls = [lambda f=f, xs=xs: jax.block_until_ready(f(*xs)) for f in (other, new)]
        note = ""
        if ref is None:
            for a, b in zip(jax.tree.leaves(calls[0]()), jax.tree.leaves(calls[1]()),
                            strict=True):
                if not np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True):
                    note = "  (outputs differ!)"
        for call in calls:
            call()
        t0 = time.perf_counter()
        calls[1]()
        inner = max(1, int(0.005 / max(time.perf_counter() - t0, 1e-7)))
        walls: list[list[float]] = [[], []]
        cpus: list[list[float]] = [[], []]
        for _ in range(args.reps):
            for i, call in enumerate(calls):
                wall, cpu = _sample(call, inner)
                walls[i].append(wall)
                cpus[i].append(cpu)
        ratio = statistics.median(n / b for n, b in zip(walls[1], walls[0], strict=True))
        cpu_ratio = statistics.median(n / b for n, b in zip(cpus[1], cpus[0], strict=True)
                                      if b > 0) if any(cpus[0]) else float("nan")
        print(f"{name:44s} {statistics.median(walls[0]):11.3f} "
              f"{statistics.median(walls[1]):9.3f} {ratio:8.2f}x {cpu_ratio:8.2f}x{note}",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="git commit of the base code")
    parser.add_argument("--only", default="pool,grad,segment,eager,top_k",
                        help="comma-separated groups: pool, grad, segment, eager, top_k, "
                             "adaptive, segment_shapes (SegmentMax on each data shape), "
                             "pool_shapes (ONNX and MaxPool-14 stem with indices, ONNX stem "
                             "gradient, on each data shape)")
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--hugetlb", choices=("both", "on", "off"), default="both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    settings = {"both": [None, "glibc.malloc.hugetlb=1"], "off": [None],
                "on": ["glibc.malloc.hugetlb=1"]}[args.hugetlb]
    with tempfile.TemporaryDirectory() as tmp:
        _export_base(args.base, Path(tmp))
        for tunables in settings:
            env = dict(os.environ)
            env.pop("GLIBC_TUNABLES", None)
            if tunables:
                env["GLIBC_TUNABLES"] = tunables
            env["PYTHONPATH"] = os.pathsep.join([str(ROOT), tmp, env.get("PYTHONPATH", "")])
            subprocess.run([sys.executable, __file__, "--child", "--base", args.base,
                            "--only", args.only, "--reps", str(args.reps)], env=env, check=False)
            print(flush=True)


if __name__ == "__main__":
    main()
