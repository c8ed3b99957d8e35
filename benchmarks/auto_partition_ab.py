"""What the ``Auto``-axes wrapper (jaxmax/_src/auto_partition.py) costs a one-device program on a
host of several devices, where it is always taken: compile time of TopK, SegmentMax and
MaxRoiPool (the issue 43 anchor) with the wrapper and without (``auto=False``), side by side,
``jax.clear_caches()`` before each compile, `--rounds` interleaved rounds, medians. A process
with one device takes no wrapper.

Run: ``PYTHONPATH=$PWD python benchmarks/auto_partition_ab.py [--rounds 9]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from jaxmax._src.lowering import segment, top_k  # noqa: E402
from jaxmax._src.lowering.roi import max_pool  # noqa: E402


def _top_k(auto: bool) -> float:
    x = np.random.default_rng(0).standard_normal((64, 1000)).astype(np.float32)

    def f(v):
        return top_k._top_k_jit.plain(v, k=5, axis=1, descending=True, nan_order="first",
                                      by_index=False, index_dtype=np.dtype(np.int32), auto=auto)
    start = time.perf_counter()
    jax.jit(f).lower(x).compile()
    return time.perf_counter() - start


def _segment_max(auto: bool) -> float:
    rng = np.random.default_rng(0)
    data = rng.standard_normal((4096, 32)).astype(np.float32)
    ids = np.sort(rng.integers(0, 100, 4096)).astype(np.int32)

    def f(d, i):
        return segment._segment_max_jit.plain(d, i, 100, "zero", True, auto)
    start = time.perf_counter()
    jax.jit(f).lower(data, ids).compile()
    return time.perf_counter() - start


def _max_roi_pool(auto: bool) -> float:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 256, 50, 50)).astype(np.float32)
    corners = np.sort(rng.uniform(0, 50, (300, 2, 2)), axis=1).reshape(300, 4)
    rois = np.concatenate([np.zeros((300, 1)), corners], 1).astype(np.float32)

    def f(v, r):
        return max_pool._roi_max_pool_jit.plain(v, r, pooled=(7, 7), spatial_scale=1.0,
                                                rule="onnx", dense=False, auto=auto)
    start = time.perf_counter()
    jax.jit(f).lower(x, rois).compile()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    rounds = parser.parse_args().rounds
    print("| program | unwrapped (s) | wrapped (s) | ratio |")
    print("|---|---|---|---|")
    for name, compile_once in (("TopK (64, 1000) k 5", _top_k),
                               ("SegmentMax (4096, 32), 100 segments", _segment_max),
                               ("MaxRoiPool (1, 256, 50, 50), 300 ROIs 7x7", _max_roi_pool)):
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(rounds):
            for auto in (False, True):
                jax.clear_caches()
                times[auto].append(compile_once(auto))
        plain, wrapped = (statistics.median(times[a]) for a in (False, True))
        print(f"| {name} | {plain:.3f} | {wrapped:.3f} | {wrapped / plain:.2f} |")


if __name__ == "__main__":
    main()
