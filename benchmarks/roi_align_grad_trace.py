"""RoiAlign's gradient program on a host of 4 CPU devices (where a jitted call takes the planned
call of `jaxmax/_src/auto_partition.py`): tracing and lowering, then XLA's compile, in seconds
(``jax.clear_caches()`` first, medians of `--rounds`), at the anchor (features (1, 256, 50, 50)
float32, 300 ROIs, 7x7, ``sampling_ratio`` 2, avg), the gradient for the data and the ROIs.
Run it on two trees to compare them.

    PYTHONPATH=$PWD python benchmarks/roi_align_grad_trace.py
"""

from __future__ import annotations

import argparse
import os
import time

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=4")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxmax import onnx  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    specs = (jax.ShapeDtypeStruct((1, 256, 50, 50), jnp.float32),
             jax.ShapeDtypeStruct((300, 4), jnp.float32))
    batch = np.zeros(300, np.int32)

    def loss(x, rois):
        return onnx.roi_align(x, rois, batch, mode="avg", output_height=7, output_width=7,
                              sampling_ratio=2, spatial_scale=1 / 16).sum()

    grad = jax.grad(loss, argnums=(0, 1))
    got = []
    for _ in range(args.rounds):
        jax.clear_caches()
        t0 = time.perf_counter()
        lowered = jax.jit(grad).trace(*specs).lower()
        t1 = time.perf_counter()
        lowered.compile()
        got.append((t1 - t0, time.perf_counter() - t1))
    trace, compile_ = np.median(np.array(got), 0)
    print(f"{jax.device_count()} devices: trace and lower {trace:.3f} s, compile "
          f"{compile_:.3f} s")


if __name__ == "__main__":
    main()
