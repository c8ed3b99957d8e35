"""The compile-time rows the issues hold to a budget, with a plain-JAX formulation beside each,
in one process: ``jax.clear_caches(); jax.jit(f).lower(*specs).compile()``, best of `--rounds`,
wall and process CPU seconds (XLA's compile threads included in CPU).

Budgets: issue 41's rows (ONNX MaxPool k3 d2 p2, AdaptiveMaxPool (5, 3), ScatterElementsUpdate-12
with a materialised index) at most max(0.3 s, 3x plain); issue 43's detection rows at most 0.5 s
and at most max(0.3 s, 3x plain). The verdict column judges wall seconds, as the issues state
them; a loaded machine inflates both columns (the trivial program's row shows by how much).

The plain formulations are what a JAX user would write without the specs' rules:
``lax.reduce_window`` for the pool, a max over each window's slice for AdaptiveMaxPool (values
only: the plain form has no indices), ``maximum(data, segment_max(updates, rows))`` for the
scatter, a masked max over each bin for the ROI poolings, bilinear samples averaged for RoiAlign
and ``one_hot(argmax)`` for Hardmax.

Run: ``PYTHONPATH=$PWD python benchmarks/compile_rows.py [--rounds 3] [--only SUBSTRING]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

from jaxmax import onnx  # noqa: E402
from jaxmax import openvino as ov  # noqa: E402

F32 = jnp.float32
S = jax.ShapeDtypeStruct


def compile_seconds(f: Callable, specs, rounds: int) -> tuple[float, float]:
    """(wall, CPU) seconds of the best of `rounds` fresh compiles of ``jax.jit(f)``."""
    wall = cpu = float("inf")
    for _ in range(rounds):
        jax.clear_caches()
        start, start_cpu = time.perf_counter(), time.process_time()
        jax.jit(f).lower(*specs).compile()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu


def _adaptive_windows(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def plain_adaptive(x, out=(5, 3)):
    """Each window's maximum by a slice and ``jnp.max`` (values only)."""
    rows = [jnp.stack([jnp.max(x[:, :, h0:h1, w0:w1], axis=(2, 3))
                       for w0, w1 in _adaptive_windows(x.shape[3], out[1])], -1)
            for h0, h1 in _adaptive_windows(x.shape[2], out[0])]
    return jnp.stack(rows, -2)


def plain_dilated_pool(x):
    padded = jnp.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), constant_values=-jnp.inf)
    return lax.reduce_window(padded, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 1, 1), "VALID",
                             window_dilation=(1, 1, 2, 2))


def plain_scatter(data, idx, updates):
    return jnp.maximum(data, jax.ops.segment_max(updates, idx[:, 0],
                                                 num_segments=data.shape[0]))


def plain_roi_pool(x, rois, pooled=(7, 7), scale=1 / 16):
    """A masked max over each bin (no NaN, zero-sign or empty-bin rule)."""
    _, _, height, width = x.shape
    corners = jnp.round(rois[:, 1:] * scale)
    x0, y0, x1, y1 = (corners[:, i] for i in range(4))
    bin_h = jnp.maximum(y1 - y0 + 1, 1) / pooled[0]
    bin_w = jnp.maximum(x1 - x0 + 1, 1) / pooled[1]
    p = jnp.arange(pooled[0])
    h_lo = jnp.floor(p * bin_h[:, None]) + y0[:, None]
    h_hi = jnp.ceil((p + 1) * bin_h[:, None]) + y0[:, None]
    q = jnp.arange(pooled[1])
    w_lo = jnp.floor(q * bin_w[:, None]) + x0[:, None]
    w_hi = jnp.ceil((q + 1) * bin_w[:, None]) + x0[:, None]
    hs, ws = jnp.arange(height), jnp.arange(width)
    in_h = (hs >= h_lo[..., None]) & (hs < h_hi[..., None])  # (R, PH, H)
    in_w = (ws >= w_lo[..., None]) & (ws < w_hi[..., None])  # (R, PW, W)
    images = x[rois[:, 0].astype(jnp.int32)]  # (R, C, H, W)
    along_w = jnp.max(jnp.where(in_w[:, None, None], images[:, :, :, None], -jnp.inf), -1)
    return jnp.max(jnp.where(in_h[:, None, :, :, None], along_w[:, :, None], -jnp.inf), 3)


def plain_roi_align(x, rois, batch, pooled=(7, 7), scale=1 / 16, grid=2):
    """Bilinear samples on a fixed grid, averaged (no edge rules)."""
    _, _, height, width = x.shape
    x0, y0, x1, y1 = (rois[:, i] * scale for i in range(4))
    g = (jnp.arange(pooled[0] * grid) + 0.5) / grid
    ys = y0[:, None] + g * ((y1 - y0) / pooled[0])[:, None]
    xs = x0[:, None] + g * ((x1 - x0) / pooled[1])[:, None]
    yl = jnp.clip(jnp.floor(ys), 0, height - 1).astype(jnp.int32)
    xl = jnp.clip(jnp.floor(xs), 0, width - 1).astype(jnp.int32)
    yh, xh = jnp.minimum(yl + 1, height - 1), jnp.minimum(xl + 1, width - 1)
    ly, lx = ys - yl, xs - xl
    images = x[batch]

    def at(yi, xi):
        return jnp.take_along_axis(jnp.take_along_axis(
            images, yi[:, None, :, None], 2), xi[:, None, None, :], 3)

    v = (at(yl, xl) * ((1 - ly)[:, None, :, None] * (1 - lx)[:, None, None, :])
         + at(yl, xh) * ((1 - ly)[:, None, :, None] * lx[:, None, None, :])
         + at(yh, xl) * (ly[:, None, :, None] * (1 - lx)[:, None, None, :])
         + at(yh, xh) * (ly[:, None, :, None] * lx[:, None, None, :]))
    r, c = v.shape[:2]
    return v.reshape(r, c, pooled[0], grid, pooled[1], grid).mean((3, 5))


def rows():
    """(name, jaxmax function, plain function or None, specs, the budget's fixed cap or None)."""
    image = S((32, 64, 112, 112), F32)
    head = S((32, 512, 14, 14), F32)
    data, idx, upd = S((100_000, 64), F32), S((1_000_000, 64), jnp.int32), S((1_000_000, 64), F32)
    features, rois5 = S((1, 256, 50, 50), F32), S((300, 5), F32)
    rois4, batch = S((300, 4), F32), S((300,), jnp.int32)
    logits = S((64, 1000), F32)
    return [
        ("ONNX MaxPool k3 d2 p2 (32, 64, 112, 112)",
         lambda x: onnx.max_pool(x, kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 2, 2, 2]),
         plain_dilated_pool, (image,), None),
        ("AdaptiveMaxPool-8 (32, 512, 14, 14) -> (5, 3)",
         lambda x: ov.adaptive_max_pool(x, (5, 3)), plain_adaptive, (head,), None),
        ("ScatterElementsUpdate-12 max, materialised index (1e5, 64) <- (1e6, 64)",
         lambda d, i, u: ov.scatter_elements_update(d, i, u, 0, reduction="max"),
         plain_scatter, (data, idx, upd), None),
        ("ONNX MaxRoiPool anchor (1, 256, 50, 50), 300 ROIs, 7x7",
         lambda x, r: onnx.max_roi_pool(x, r, pooled_shape=(7, 7), spatial_scale=1 / 16),
         plain_roi_pool, (features, rois5), 0.5),
        ("ROIPooling-1 anchor",
         lambda x, r: ov.roi_pooling(x, r, pooled_h=7, pooled_w=7, spatial_scale=1 / 16),
         plain_roi_pool, (features, rois5), 0.5),
        ("ONNX RoiAlign avg sampling_ratio 2 anchor",
         lambda x, r, b: onnx.roi_align(x, r, b, output_height=7, output_width=7,
                                        sampling_ratio=2, spatial_scale=1 / 16),
         plain_roi_align, (features, rois4, batch), 0.5),
        ("ONNX RoiAlign avg sampling_ratio 0 anchor",
         lambda x, r, b: onnx.roi_align(x, r, b, output_height=7, output_width=7,
                                        sampling_ratio=0, spatial_scale=1 / 16),
         plain_roi_align, (features, rois4, batch), 0.5),
        ("ONNX Hardmax (64, 1000)", lambda x: onnx.hardmax(x, axis=-1),
         lambda x: jax.nn.one_hot(jnp.argmax(x, -1), x.shape[-1], dtype=x.dtype), (logits,),
         0.5),
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the int64-index notices of 32-bit mode
    trivial = compile_seconds(lambda x: x * 2 + 1, (S((8, 8), F32),), args.rounds)
    print(f"trivial x*2+1: {trivial[0]:.3f} s wall, {trivial[1]:.3f} s CPU "
          f"(jax {jax.__version__}, load {os.getloadavg()[0]:.1f})")
    print("| row | jaxmax wall s (CPU) | plain wall s (CPU) | budget s | within |")
    print("|---|---|---|---|---|")
    for name, f, plain, specs, cap in rows():
        if args.only.lower() not in name.lower():
            continue
        wall, cpu = compile_seconds(f, specs, args.rounds)
        p_wall, p_cpu = compile_seconds(plain, specs, args.rounds)
        budget = max(0.3, 3 * p_wall)
        if cap is not None:
            budget = min(cap, budget)
        print(f"| {name} | {wall:.3f} ({cpu:.3f}) | {p_wall:.3f} ({p_cpu:.3f}) | {budget:.2f} | "
              f"{'yes' if wall <= budget else 'no'} |")


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
