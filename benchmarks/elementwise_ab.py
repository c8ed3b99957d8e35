"""A/B timing of ONNX Max against ``jnp.maximum`` (and onnxruntime) on two (64, 256, 56, 56)
float32 arrays, strictly alternating in one process, with and without
``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` in the environment of a child process.

    python benchmarks/elementwise_ab.py            # both settings, one child process each
    python benchmarks/elementwise_ab.py --child    # this process only, its own environment

Each call writes a fresh 205 MB output. With glibc's default malloc that buffer comes from
``mmap`` in 4 KiB pages, and the kernel's first-touch page faults dominate the call; with
``glibc.malloc.hugetlb=1`` malloc asks for transparent huge pages (``madvise``), 2 MiB each.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

SHAPE = (64, 256, 56, 56)
SAMPLES = 25


def child() -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxmax import onnx as jonnx

    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE, dtype=np.float32)
    y = np.ascontiguousarray(x[..., ::-1])
    xj, yj = jax.device_put(x), jax.device_put(y)
    runs = {"jaxmax onnx.max (jit)": jax.jit(lambda a, b: jonnx.max(a, b)),
            "jnp.maximum (jit)": jax.jit(jnp.maximum)}
    calls = {k: (lambda f=f: jax.block_until_ready(f(xj, yj))) for k, f in runs.items()}
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper

        info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, SHAPE) for n in "xy"]
        graph = helper.make_graph([helper.make_node("Max", ["x", "y"], ["z"])], "m", info,
                                  [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 10
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        calls["onnxruntime Max-13"] = lambda: sess.run(None, {"x": x, "y": y})[0]
    except ImportError:
        pass
    times: dict[str, list[float]] = {k: [] for k in calls}
    for call in calls.values():
        call()
        call()
    for _ in range(SAMPLES):
        for name, call in calls.items():
            call()  # lead-in: the previous run's freed buffer is reclaimed on its own time
            t0 = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - t0) * 1e3)
    base = times["jnp.maximum (jit)"]
    ratios = [a / b for a, b in zip(times["jaxmax onnx.max (jit)"], base, strict=True)]
    print(f"GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '(unset)')}")
    for name, got in times.items():
        print(f"  {name:24s} median {statistics.median(got):7.1f} ms")
    print(f"  onnx.max / jnp.maximum, median of {SAMPLES} paired ratios: "
          f"{statistics.median(ratios):.3f}x")


def main() -> None:
    if "--child" in sys.argv:
        child()
        return
    for tunables in (None, "glibc.malloc.hugetlb=1"):
        env = dict(os.environ)
        env.pop("GLIBC_TUNABLES", None)
        if tunables:
            env["GLIBC_TUNABLES"] = tunables
        subprocess.run([sys.executable, __file__, "--child"], env=env, check=True)


if __name__ == "__main__":
    main()
