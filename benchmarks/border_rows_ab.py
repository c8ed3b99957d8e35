"""MaxPool's border boxes (``pooling.geometry._BORDER_ROWS``, and ``_DILATED_BORDER_ROWS`` on a
dilated axis: up to that many padded output rows on one side of an axis are each a box of their
own, more are one padded slab) at two settings (both set to each),
side by side in one process: the compile seconds of fresh compiles (``jax.clear_caches()``,
``jit(f).lower(spec).compile()``, the settings alternated, median) and the run time of the two
executables in interleaved rounds (wall and process CPU medians), results checked equal.

A setting ``B:D`` sets ``_BORDER_ROWS`` to B and ``_DILATED_BORDER_ROWS`` to D (``B``: both B);
the first setting is the base of the ratios. The plain ``lax.reduce_window`` of the k3 d2 p2
row is compiled first for reference (the compile budget: at most max(0.3 s, 3x plain)).

Run: ``PYTHONPATH=$PWD python benchmarks/border_rows_ab.py [--settings 3:3,3:1] [--only
SUBSTRING] [--compiles 5] [--rounds 41]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def rows() -> list[tuple[str, Callable[..., Any], tuple[int, ...]]]:
    import jax

    from jaxmax import onnx
    from jaxmax import openvino as ov

    def onnx_pool(k: int, d: int, p: int) -> Callable[..., Any]:
        return lambda v: onnx.max_pool(v, kernel_shape=(k, k), dilations=(d, d), pads=(p,) * 4)

    def ov_pool(k: int, d: int, p: int) -> Callable[..., Any]:
        return lambda v: ov.max_pool(v, kernel=(k, k), strides=(1, 1), dilations=(d, d),
                                     pads_begin=(p, p), pads_end=(p, p), opset=8)[0]

    def grad(f: Callable[..., Any]) -> Callable[..., Any]:
        return jax.grad(lambda v: f(v).sum())

    big, small = (32, 64, 112, 112), (8, 64, 56, 56)
    return [
        ("ONNX k3 d2 p2", onnx_pool(3, 2, 2), big),
        ("ONNX k3 d2 p2 gradient", grad(onnx_pool(3, 2, 2)), small),
        ("MaxPool-8 k3 d2 p2", ov_pool(3, 2, 2), small),
        ("ONNX k5 p2", onnx_pool(5, 1, 2), small),
        ("MaxPool-8 k5 p2", ov_pool(5, 1, 2), small),
        ("ONNX k7 p3", onnx_pool(7, 1, 3), small),
        ("ONNX k3 d3 p3", onnx_pool(3, 3, 3), small),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default="3:3,3:1")
    parser.add_argument("--only", default="")
    parser.add_argument("--compiles", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=41)
    args = parser.parse_args()
    import warnings

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    from jaxmax._src.lowering.pooling import geometry

    warnings.simplefilter("ignore")
    settings = [tuple(int(n) for n in (s + ":" + s).split(":")[:2]) if ":" not in s
                else tuple(int(n) for n in s.split(":")) for s in args.settings.split(",")]
    saved = geometry._BORDER_ROWS, geometry._DILATED_BORDER_ROWS

    def use(n: tuple[int, ...]) -> None:
        geometry._BORDER_ROWS, geometry._DILATED_BORDER_ROWS = n
        geometry._boxes.cache_clear()
        jax.clear_caches()

    jax.jit(lambda v: v * 2).lower(jnp.zeros(3)).compile()  # first-use costs
    rng = np.random.default_rng(0)
    base = settings[0]
    plain = []
    for _ in range(args.compiles):
        jax.clear_caches()
        t0 = time.perf_counter()
        jax.jit(lambda v: lax.reduce_window(
            v, -np.inf, lax.max, (1, 1, 3, 3), (1, 1, 1, 1), ((0, 0), (0, 0), (2, 2), (2, 2)),
            window_dilation=(1, 1, 2, 2))).lower(
                jax.ShapeDtypeStruct((32, 64, 112, 112), np.float32)).compile()
        plain.append(time.perf_counter() - t0)
    print(f"plain lax.reduce_window k3 d2 p2 (32, 64, 112, 112) compile: "
          f"{statistics.median(plain):.3f} s (median of {args.compiles})")
    print(f"| row | B:D | compile s | run ms | CPU ms | compile, run, CPU / {base[0]}:{base[1]} |\n"
          "|---|---|---|---|---|---|")
    for label, fn, shape in rows():
        if args.only not in label:
            continue
        spec = jax.ShapeDtypeStruct(shape, np.float32)
        x = jnp.asarray(rng.standard_normal(shape, dtype=np.float32))
        seconds: dict[tuple[int, ...], list[float]] = {s: [] for s in settings}
        compiled = {}
        try:
            for r in range(args.compiles):
                for s in settings if r % 2 == 0 else settings[::-1]:
                    use(s)
                    t0 = time.perf_counter()
                    compiled[s] = jax.jit(fn).lower(spec).compile()
                    seconds[s].append(time.perf_counter() - t0)
        finally:
            use(saved)
        outs = [np.asarray(compiled[s](x)) for s in settings]
        assert all(np.array_equal(outs[0].view(np.uint32), o.view(np.uint32))
                   for o in outs), label
        wall: dict[tuple[int, ...], list[float]] = {s: [] for s in settings}
        cpu: dict[tuple[int, ...], list[float]] = {s: [] for s in settings}
        for r in range(args.rounds):
            for s in settings if r % 2 == 0 else settings[::-1]:
                t0, c0 = time.perf_counter(), time.process_time()
                jax.block_until_ready(compiled[s](x))
                wall[s].append((time.perf_counter() - t0) * 1e3)
                cpu[s].append((time.process_time() - c0) * 1e3)
        med = {s: (statistics.median(seconds[s]), statistics.median(wall[s]),
                   statistics.median(cpu[s])) for s in settings}
        for s in settings:
            ratio = ", ".join(f"{a / b:.2f}" for a, b in zip(med[s], med[base], strict=True))
            print(f"| {label} {shape} | {s[0]}:{s[1]} | {med[s][0]:.3f} | {med[s][1]:.2f} | "
                  f"{med[s][2]:.2f} | {ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
