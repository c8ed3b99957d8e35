"""Group ``adaptive_unpool``: OpenVINO AdaptiveMaxPool-8 and ONNX MaxUnpool.

* AdaptiveMaxPool-8 of a (32, 512, 14, 14) float32 tensor (a ResNet-50 head's last map) to
  (7, 7) (the windows tile the input) and to (5, 3) (overlapping windows of 3-4 x 5-6), values
  and i32 indices: jaxmax, ``torch.nn.functional.adaptive_max_pool2d(return_indices=True)``,
  the OpenVINO CPU plugin (i32 indices; it cannot compile i64 ones) and the plain JAX
  formulation (``jnp.max`` and ``jnp.argmax`` of each window, stacked), which ``--compile``
  measures the compile budget against.
* MaxUnpool of (32, 64, 56, 56) values with the real indices of a 2x2/2 MaxPool of a
  (32, 64, 112, 112) tensor back to (32, 64, 112, 112): jaxmax (whose dense form applies: every
  index lies in its own window, checked at run time), jaxmax with indices that fail that check
  (one index moved: the scatter form), a plain ``.at[].set`` scatter, onnxruntime MaxUnpool-11
  and ``torch.nn.functional.max_unpool2d``, beside JAX's write floor for that output: an
  interior ``lax.pad`` of the values, which reads them and writes a fresh array of the output's
  shape (103 MB: most of its cost is the kernel zero-filling the new pages).

``--quick`` uses a batch of 4 and 64 channels. The inputs are built once per worker (seeded),
outside the timed region.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backends import jax_jit, jnp, jonnx, jov, ort_graph, ov_model, torch_call
from .cases import INFO, JAXMAX, Case, Ctx, Impl, Ratio, Sizes, shape_label

GROUP = "adaptive_unpool"


def _shapes(sz: Sizes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    full = sz.pool2d[0] >= 32
    n = sz.pool2d[0]
    return (n, 512 if full else 64, 14, 14), (n, 64 if full else 16, 112 if full else 56,
                                              112 if full else 56)


def _with_inputs(ctx: Ctx) -> Ctx:
    """Adds ``a`` (the adaptive input), ``v``/``i`` (MaxPool values and plane-offset indices of a
    2x2/2 pool) and ``j`` (the same indices with one moved out of its window)."""
    if "a" in ctx.arrays:
        return ctx
    a_shape, src_shape = _shapes(ctx.sz)
    rng = np.random.default_rng(20)
    ctx.arrays["a"] = rng.standard_normal(a_shape, dtype=np.float32)
    src = rng.standard_normal(src_shape, dtype=np.float32)
    n, c, h, w = src_shape
    win = src.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5)
    win = win.reshape(n, c, h // 2, w // 2, 4)
    arg = win.argmax(-1)
    rows = np.arange(h // 2)[:, None] * 2 + arg // 2
    cols = np.arange(w // 2)[None, :] * 2 + arg % 2
    plane = (np.arange(n)[:, None] * c + np.arange(c)[None, :])[:, :, None, None]
    ctx.arrays["v"] = np.take_along_axis(win, arg[..., None], -1)[..., 0]
    ctx.arrays["i"] = (plane * (h * w) + rows * w + cols).astype(np.int64)
    moved = ctx.arrays["i"].copy()
    moved[0, 0, 0, 0] = moved[0, 0, 1, 1]  # a duplicate: the dense form does not apply
    ctx.arrays["j"] = moved
    return ctx


def _prepared(build):
    return lambda ctx: build(_with_inputs(ctx))


ADAPTIVE_PLAIN_LABEL = "jnp.max and jnp.argmax per window, stacked (jit)"


def _adaptive_plain(out: tuple[int, int]):
    """AdaptiveMaxPool as a JAX user writes it without jaxmax: each window's slice reduced by
    ``jnp.max`` and ``jnp.argmax`` (its flat offset in the plane), stacked. The formulation the
    compile budget is measured against (it has neither the seeded NaN rule nor a fixed ``±0``
    winner, so its results are not compared)."""
    def make() -> Any:
        np_ = jnp()

        def pool(a: Any) -> Any:
            lead, (h, w) = a.shape[:2], a.shape[2:]
            rows_v, rows_i = [], []
            for i in range(out[0]):
                hs, he = i * h // out[0], -(-(i + 1) * h // out[0])
                vals, idxs = [], []
                for j in range(out[1]):
                    ws, we = j * w // out[1], -(-(j + 1) * w // out[1])
                    win = a[:, :, hs:he, ws:we].reshape(lead + (-1,))
                    pos = np_.argmax(win, axis=-1).astype(np_.int32)
                    vals.append(np_.max(win, axis=-1))
                    idxs.append((hs + pos // (we - ws)) * w + ws + pos % (we - ws))
                rows_v.append(np_.stack(vals, -1))
                rows_i.append(np_.stack(idxs, -1))
            return np_.stack(rows_v, -2), np_.stack(rows_i, -2)
        return pool

    return make


def _ov_adaptive(out: tuple[int, int]):
    def build(ctx: Ctx) -> Any:
        import openvino.opset8 as o8

        return ov_model(lambda p: o8.adaptive_max_pool(p, np.array(out, np.int64),
                                                       index_element_type="i32"),
                        [ctx.np("a")])

    return build


def _ort_unpool(ctx: Ctx) -> Any:
    return ort_graph("MaxUnpool", {"v": ctx.np("v"), "i": ctx.np("i")}, opset=11,
                     kernel_shape=[2, 2], strides=[2, 2])


def _at_set(ctx: Ctx) -> Any:
    import jax
    import jax.numpy as jnp

    _, src_shape = _shapes(ctx.sz)
    size = int(np.prod(src_shape))
    f = jax.jit(lambda v, i: jnp.zeros(size, v.dtype).at[i.reshape(-1)].set(v.reshape(-1))
                .reshape(src_shape))
    v, i = ctx.jax("v"), ctx.jax("i")
    return lambda: jax.block_until_ready(f(v, i))


UNPOOL_FLOOR_LABEL = ("[write floor] jit interior lax.pad of the values: reads them, writes a "
                      "fresh output")


def _write_floor(ctx: Ctx) -> Any:
    import jax
    from jax import lax

    f = jax.jit(lambda v: lax.pad(v, np.float32(0), [(0, 0, 0), (0, 0, 0), (0, 1, 1),
                                                     (0, 1, 1)]))
    v = ctx.jax("v")
    return lambda: jax.block_until_ready(f(v))


def _torch_unpool(ctx: Ctx) -> Any:
    import torch

    _, src_shape = _shapes(ctx.sz)
    plane = src_shape[2] * src_shape[3]
    n, c = src_shape[:2]
    local = torch.from_numpy(ctx.np("i") - (np.arange(n * c).reshape(n, c, 1, 1) * plane))
    v = ctx.torch("v")

    def run() -> Any:
        with torch.inference_mode():
            return torch.nn.functional.max_unpool2d(v, local, 2, 2)

    return run


def cases(sz: Sizes) -> list[Case]:
    a_shape, src_shape = _shapes(sz)
    out = []
    for target in [(7, 7), (5, 3)]:
        label = f"AdaptiveMaxPool-8 {shape_label(a_shape)} -> {target}"
        impls = [
            Impl("jaxmax.openvino.adaptive_max_pool (jit)", "jax", _prepared(jax_jit(
                lambda target=target: lambda a: jov().adaptive_max_pool(
                    a, target, index_element_type="i32"), ("a",))), JAXMAX),
            Impl("torch adaptive_max_pool2d", "torch", _prepared(torch_call(
                lambda torch, target=target: lambda a: torch.nn.functional.adaptive_max_pool2d(
                    a, target, return_indices=True), ("a",)))),
            Impl("OpenVINO CPU AdaptiveMaxPool-8 (i32)", "ov", _prepared(_ov_adaptive(target))),
            Impl(ADAPTIVE_PLAIN_LABEL, "jax", _prepared(jax_jit(_adaptive_plain(target),
                                                                ("a",)))),
        ]
        ratios = [Ratio("jaxmax / torch", impls[0].label, impls[1].label),
                  Ratio("jaxmax / OpenVINO", impls[0].label, impls[2].label)]
        out.append(Case(GROUP, label, "small", impls, label, check=False, ratios=ratios))
    label = f"MaxUnpool {shape_label(src_shape[:2] + (src_shape[2] // 2, src_shape[3] // 2))}" \
            f" -> {shape_label(src_shape)}"
    unpool = jonnx
    impls = [
        Impl("jaxmax.onnx.max_unpool (jit)", "jax", _prepared(jax_jit(
            lambda: lambda v, i: unpool().max_unpool(v, i, kernel_shape=[2, 2], strides=[2, 2]),
            ("v", "i"))), JAXMAX),
        Impl("jaxmax.onnx.max_unpool, scatter form (jit)", "jax", _prepared(jax_jit(
            lambda: lambda v, j: unpool().max_unpool(v, j, kernel_shape=[2, 2], strides=[2, 2]),
            ("v", "j"))), JAXMAX),
        Impl("jnp .at[].set (jit)", "jax", _prepared(_at_set)),
        Impl("onnxruntime MaxUnpool-11", "ort", _prepared(_ort_unpool)),
        Impl("torch max_unpool2d", "torch", _prepared(_torch_unpool)),
        Impl(UNPOOL_FLOOR_LABEL, "jax", _prepared(_write_floor), INFO),
    ]
    ratios = [Ratio("jaxmax / onnxruntime", impls[0].label, impls[3].label),
              Ratio("jaxmax scatter form / onnxruntime", impls[1].label, impls[3].label),
              Ratio("jaxmax / write floor", impls[0].label, UNPOOL_FLOOR_LABEL)]
    out.append(Case(GROUP, label, "small", impls, label, check=False, ratios=ratios))
    return out
