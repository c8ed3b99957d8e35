"""Compile time of the scatters' gradient programs on a host of 8 CPU devices: unsharded (the
one-device program, which takes the ``Auto``-axes wrapper on such a host) and with data,
indices and updates sharded along the scatter axis over 4 devices of an ``Auto`` mesh (the
planned reverse mode, jaxmax/_src/lowering/scatter/auto_derivative.py). Each compile after
``jax.clear_caches()`` on a new shape, `--rounds` rounds, medians.

Run: ``PYTHONPATH=$PWD python benchmarks/scatter_grad_compile.py [--rounds 5]``; for a side by
side with another tree, run it again with ``PYTHONPATH`` naming that tree (a ``git worktree``).
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
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from jaxmax import onnx  # noqa: E402
from jaxmax import openvino as ov  # noqa: E402

FACES = {
    "ScatterElements-18 max": lambda d, i, u: onnx.scatter_elements(d, i, u, axis=0,
                                                                    reduction="max"),
    "ScatterElementsUpdate-12 max": lambda d, i, u: ov.scatter_elements_update(
        d, i, u, 0, reduction="max"),
}


def _compile(face, layout: str, n: int, mesh) -> float:
    d = np.zeros((n, 8), np.float32)
    u = np.ones((n, 8), np.float32)
    i = np.zeros((n, 8), np.int32)
    args = (d, u, i)
    if layout == "Auto, scatter axis":
        args = tuple(jax.device_put(a, NamedSharding(mesh, P("d"))) for a in args)
    grad = jax.jit(jax.grad(lambda d, u, i: (face(d, i, u) ** 2).sum(), argnums=(0, 1)))
    jax.clear_caches()
    start = time.perf_counter()
    grad.lower(*args).compile()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    mesh = jax.make_mesh((4,), ("d",), axis_types=(AxisType.Auto,), devices=jax.devices()[:4])
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds):
        for name, face in FACES.items():
            for layout in ("unsharded", "Auto, scatter axis"):
                times.setdefault((name, layout), []).append(
                    _compile(face, layout, 64 + 4 * r, mesh))
    print("| gradient of | layout | compile s (median) |")
    print("|---|---|---:|")
    for (name, layout), t in times.items():
        print(f"| {name} | {layout} | {statistics.median(t):.3f} |")


if __name__ == "__main__":
    main()
