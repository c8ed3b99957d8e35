"""MaxRoiPool / ROIPooling-1: this tree's lowering against a base revision's, in one process.

The base revision's ROI pooling modules (``jaxmax/_src/lowering/roi/{max_pool, bins,
range_max, rois}.py`` and ``lowering/roi_sharded.py``, from ``git show``) are loaded as a
package of their own beside this tree's, and every output is checked bit-equal.

* ``compile``: ``jax.clear_caches(); jax.jit(f).lower(*specs).compile()``, best of 3, process
  CPU seconds and wall seconds, beside a trivial program and a plain-JAX masked max (bin
  masks and two reductions, without the NaN, signed-zero and empty-bin rules), interleaved
  over `--rounds` rounds (medians); anchor features (1, 256, 50, 50) f32, 300 ROIs, 7x7,
  ``spatial_scale`` 1/16, and 1000 ROIs.
* ``run``: the jitted anchor on clean features, NaN-bearing ones (1 in 1,000) and with a third
  of the ROIs past the image; medians of `--rounds` interleaved rounds of 3 calls each. Outputs
  and gradients (of a weighted sum; ``--no-grad`` skips them) are checked bit-equal first.
* ``small``: eager calls on new small shapes (the ``many_shapes`` group's, 2 ROIs, 3x3), each
  shape's first call: CPU and wall seconds and resident memory growth.
* ``kernels``: the kernels XLA:CPU compiles apart (fusions of the optimized program, by kind)
  of the anchor's values and gradient programs (XLA:CPU compile time grows with their
  number).
* ``same``: whether the anchor's values and gradient programs, optimized by XLA, are the base's
  (instruction names, metadata and stack frames aside): a change that leaves them the same
  changes no output bit and no run time, whatever the data (a refactoring of the tracing, for
  instance, which ``hlo_hashes.py``'s StableHLO hashes would call a change).

    PYTHONPATH=$PWD python benchmarks/roi_pool_ab.py --base main --parts compile,run,small
"""

from __future__ import annotations

import argparse
import collections
import importlib
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jaxmax_bench.many_shapes import _roi_pool, _shapes  # noqa: E402

from jaxmax._src.lowering.roi import max_pool as this_max_pool  # noqa: E402

MODULES = {"max_pool": "roi/max_pool.py", "bins": "roi/bins.py", "range_max": "roi/range_max.py",
           "rois": "roi/rois.py", "roi_sharded": "roi_sharded.py"}


def load_base(rev: str) -> Any:
    """The base revision's ``max_pool`` module, its ROI imports pointed at its own copies."""
    root = tempfile.mkdtemp(prefix="roi_pool_base_")
    package = os.path.join(root, "roi_pool_base")
    os.makedirs(package)
    open(os.path.join(package, "__init__.py"), "w").close()
    for name, path in MODULES.items():
        text = subprocess.run(["git", "show", f"{rev}:jaxmax/_src/lowering/{path}"],
                              check=True, capture_output=True, text=True).stdout
        text = text.replace("from jaxmax._src.lowering.roi import", "from roi_pool_base import")
        text = re.sub(r"^from jaxmax\._src\.lowering import (.*)\broi_sharded, (.*)$",
                      r"from jaxmax._src.lowering import \1\2\nfrom roi_pool_base import "
                      r"roi_sharded", text, flags=re.M)
        with open(os.path.join(package, f"{name}.py"), "w") as f:
            f.write(text)
    sys.path.insert(0, root)
    return importlib.import_module("roi_pool_base.max_pool")


def anchor(count: int = 300) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(43)
    wh = rng.uniform(16, 400, (count, 2))
    xy = rng.uniform(0, 800 - wh)
    rois = np.concatenate([np.zeros((count, 1)), xy, xy + wh], 1).astype(np.float32)
    return rng.standard_normal((1, 256, 50, 50), dtype=np.float32), rois


def plain(x, rois):
    """Plain JAX (no NaN, signed-zero or empty-bin rule): bin masks, two masked maxima."""
    _, _, height, width = x.shape
    corner = jnp.round(rois[:, 1:] * np.float32(1 / 16)).astype(jnp.int32)

    def masks(a, b, count, size):
        step = jnp.maximum(b - a + 1, 1).astype(jnp.float32)[:, None] / count
        p = jnp.arange(count, dtype=jnp.float32)
        lo = jnp.clip(jnp.floor(p * step).astype(jnp.int32) + a[:, None], 0, size)
        hi = jnp.clip(jnp.ceil((p + 1) * step).astype(jnp.int32) + a[:, None], 0, size)
        at = jnp.arange(size)
        return (at >= lo[..., None]) & (at < hi[..., None])

    mh = masks(corner[:, 1], corner[:, 3], 7, height)
    mw = masks(corner[:, 0], corner[:, 2], 7, width)
    f = x[rois[:, 0].astype(jnp.int32)]
    low = jnp.finfo(x.dtype).min
    a = jnp.max(jnp.where(mw[:, None, None], f[:, :, :, None, :], low), -1)
    return jnp.max(jnp.where(mh[:, None, :, :, None], a[:, :, None], low), 3)


def pool(module, rule):
    return lambda x, r: module.roi_max_pool(x, r, pooled=(7, 7), spatial_scale=1 / 16,
                                            rule=rule)


def summed_grad(f):
    return jax.grad(lambda x, r: jnp.sum(f(x, r)))


def compile_cost(f, specs) -> tuple[float, float]:
    cpu = wall = float("inf")
    for _ in range(3):
        jax.clear_caches()
        c0, w0 = time.process_time(), time.perf_counter()
        jax.jit(f).lower(*specs).compile()
        cpu, wall = min(cpu, time.process_time() - c0), min(wall, time.perf_counter() - w0)
    return cpu, wall


def part_compile(base, rounds: int) -> None:
    def specs(count=300, side=50):
        return (jax.ShapeDtypeStruct((1, 256, side, side), jnp.float32),
                jax.ShapeDtypeStruct((count, 5), jnp.float32))
    rows = {"trivial x*2+1": (lambda x, r: x * 2 + 1, specs()), "plain JAX": (plain, specs())}
    for face, rule in (("ONNX", "onnx"), ("OV", "openvino")):
        for name, module in (("base", base), ("this", this_max_pool)):
            rows[f"{face} {name}"] = (pool(module, rule), specs())
            rows[f"{face} {name}, 1000 ROIs"] = (pool(module, rule), specs(1000))
            rows[f"{face} {name}, 200x200 map"] = (pool(module, rule), specs(side=200))
            rows[f"{face} grad {name}"] = (summed_grad(pool(module, rule)), specs())
    compile_cost(rows["trivial x*2+1"][0], specs())  # first-use costs
    got: dict[str, list] = {k: [] for k in rows}
    for _ in range(rounds):
        for k, (f, s) in rows.items():
            got[k].append(compile_cost(f, s))
    for k, v in got.items():
        cpu, wall = np.median(np.array(v), 0)
        print(f"compile {k:26s} CPU {cpu:.3f} s  wall {wall:.3f} s")


def part_run(base, rounds: int, gradients: bool = True) -> None:
    x, rois = anchor()
    x[x == 0] = 1.0
    rng = np.random.default_rng(1)
    nan = x.copy()
    nan[rng.random(x.shape) < 1e-3] = np.nan
    outside = rois.copy()
    outside[::3, 3:] += 400
    far = rois.copy()  # bins larger than the map's ceil(H/PH) + 1 rows: the full table
    far[::10, 3:] += 3000
    ties = np.round(x * 2) / 2  # few distinct values: ties in every bin
    zeros = np.where(x < 0, np.float32(-0.0), x)  # ReLU with negative zeros: signed-zero ties
    inputs = {"clean": (x, rois), "NaN 1e-3": (nan, rois), "ROIs outside": (x, outside),
              "ROIs far out": (x, far), "ties": (ties, rois), "-0.0 / +0.0": (zeros, rois)}
    fns = {(rule, name): jax.jit(pool(module, rule)) for rule in ("onnx", "openvino")
           for name, module in (("base", base), ("this", this_max_pool))}
    args = {k: tuple(jnp.asarray(a) for a in v) for k, v in inputs.items()}
    weights = jnp.asarray(np.random.default_rng(2).standard_normal((300, 256, 7, 7),
                                                                    dtype=np.float32))

    def weighted(f):
        return jax.jit(jax.grad(lambda x, r: jnp.sum(f(x, r) * weights)))

    grads = {(rule, name): weighted(pool(module, rule)) for rule in ("onnx", "openvino")
             for name, module in (("base", base), ("this", this_max_pool))}
    for k, a in args.items():
        for rule in ("onnx", "openvino"):
            want, got = (np.asarray(fns[(rule, n)](*a)) for n in ("base", "this"))
            assert np.array_equal(want.view(np.uint32), got.view(np.uint32)), (k, rule)
            if not gradients:
                continue
            want, got = (np.asarray(grads[(rule, n)](*a)) for n in ("base", "this"))
            assert np.array_equal(want.view(np.uint32), got.view(np.uint32)), (k, rule, "grad")
    if gradients:
        print("gradients (weighted sum) bit-equal to the base on every input, both rules")
    times: dict[tuple, list] = {}
    for _ in range(rounds):
        for k, a in args.items():
            for key, f in fns.items():
                c0, w0 = time.process_time(), time.perf_counter()
                for _ in range(3):
                    jax.block_until_ready(f(*a))
                times.setdefault((k,) + key, []).append(
                    ((time.process_time() - c0) / 3, (time.perf_counter() - w0) / 3))
    for k in args:
        for rule in ("onnx", "openvino"):
            b, t = (np.median(np.array(times[(k, rule, n)]), 0) * 1e3 for n in ("base", "this"))
            print(f"run {k:12s} {rule:8s} base CPU {b[0]:6.1f} ms wall {b[1]:6.1f} | this CPU "
                  f"{t[0]:6.1f} wall {t[1]:6.1f} | this/base CPU {t[0] / b[0]:.2f} wall "
                  f"{t[1] / b[1]:.2f}")


def part_kernels(base) -> None:
    specs = (jax.ShapeDtypeStruct((1, 256, 50, 50), jnp.float32),
             jax.ShapeDtypeStruct((300, 5), jnp.float32))
    for face, rule in (("ONNX", "onnx"), ("OV", "openvino")):
        for name, module in (("base", base), ("this", this_max_pool)):
            for kind, f in (("values", pool(module, rule)),
                            ("grad", summed_grad(pool(module, rule)))):
                text = jax.jit(f).lower(*specs).compile().as_text()
                kinds = collections.Counter(re.findall(r"kind=(k\w+)", text))
                print(f"kernels {face} {kind:6s} {name}: {sum(kinds.values())} "
                      f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")


def _canonical(text: str) -> list[str]:
    """The optimized HLO `text` without names, metadata, stack frames (the tables after the
    module's header, and each instruction's id) or the header, its lines sorted (the order of
    independent instructions may differ)."""
    text = re.sub(r"^(FileNames|FunctionNames|FileLocations|StackFrames)$", "", text, flags=re.M)
    text = re.sub(r"^\d+ .*$", "", text, flags=re.M)  # the tables' rows
    text = re.sub(r", metadata=\{[^}]*\}", "", text)
    text = re.sub(r", stack_frame_id=\d+", "", text)
    text = re.sub(r"%[\w.\-]+", "%", text)
    text = re.sub(r"^HloModule.*$", "", text, flags=re.M)
    return sorted(line.strip() for line in text.splitlines() if line.strip())


def part_same(base) -> None:
    specs = (jax.ShapeDtypeStruct((1, 256, 50, 50), jnp.float32),
             jax.ShapeDtypeStruct((300, 5), jnp.float32))
    for face, rule in (("ONNX", "onnx"), ("OV", "openvino")):
        for kind in ("values", "grad"):
            texts = []
            for module in (base, this_max_pool):
                f = pool(module, rule) if kind == "values" else summed_grad(pool(module, rule))
                jax.clear_caches()
                texts.append(_canonical(jax.jit(f).lower(*specs).compile().as_text()))
            print(f"same {face} {kind:6s}: optimized program "
                  f"{'the same as' if texts[0] == texts[1] else 'DIFFERENT from'} the base's")


def _rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def part_small(base, count: int) -> None:
    rng = np.random.default_rng(0)
    got: dict[str, list] = {}
    for i, shape in enumerate(_shapes(count + 1)):  # the first shape: a warm-up
        x, r = (jnp.asarray(v) for v in _roi_pool(rng, shape))
        outs = {}
        for rule in ("onnx", "openvino"):
            for name, module in (("base", base), ("this", this_max_pool)):
                m0, c0, w0 = _rss_mb(), time.process_time(), time.perf_counter()
                outs[name] = np.asarray(module.roi_max_pool(x, r, pooled=(3, 3),
                                                            spatial_scale=1.0, rule=rule))
                if i:
                    got.setdefault(f"{rule} {name}", []).append(
                        (time.process_time() - c0, time.perf_counter() - w0, _rss_mb() - m0))
            assert np.array_equal(outs["base"].view(np.uint32), outs["this"].view(np.uint32))
    for k, v in got.items():
        cpu, wall, rss = np.median(np.array(v), 0)
        print(f"new small shape {k:14s} CPU {cpu:.3f} s  wall {wall:.3f} s  RSS +{rss:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="git revision to compare with")
    parser.add_argument("--parts", default="compile,run,small")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", type=int, default=8)
    parser.add_argument("--no-grad", action="store_true", help="skip the gradient bit check")
    args = parser.parse_args()
    base = load_base(args.base)
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load",
          " ".join(open("/proc/loadavg").read().split()[:3]))
    parts = args.parts.split(",")
    if "compile" in parts:
        part_compile(base, args.rounds)
    if "run" in parts:
        part_run(base, 3 * args.rounds, not args.no_grad)
    if "small" in parts:
        part_small(base, args.shapes)
    if "kernels" in parts:
        part_kernels(base)
    if "same" in parts:
        part_same(base)


if __name__ == "__main__":
    main()
