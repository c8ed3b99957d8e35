"""Group ``detection``: ONNX MaxRoiPool / OpenVINO ROIPooling-1 and ONNX Hardmax.

* The anchor of docs/semantics.md §11.8: features (1, 256, 50, 50) float32, 300 ROIs (an
  800x800 image, boxes 16-400 px, ``spatial_scale`` 1/16), pooled 7x7: jaxmax on both faces,
  onnxruntime MaxRoiPool-1 and the OpenVINO CPU plugin's ROIPooling-2. The same with
  NaN-bearing features (1 in 1,000 elements) and with a third of the ROIs reaching past the
  image (their bins clipped), for the "within 1.2x of clean data" goal.
* Hardmax over the last axis of (4096, 1000) float32 logits: jaxmax (the ArgMax fold's winner,
  one-hot), ``jax.nn.one_hot(jnp.argmax)``, a row max then the first index with
  ``x == max or x != x`` (a min-reduction), and onnxruntime Hardmax-13.

``--quick`` uses 64 channels and 100 ROIs, and (1024, 1000) logits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backends import jax_jit, jonnx, jov, ort_graph, ov_model
from .cases import JAXMAX, Case, Ctx, Impl, Ratio, Sizes, shape_label

GROUP = "detection"


def _shapes(sz: Sizes) -> tuple[tuple[int, ...], int, tuple[int, int]]:
    full = sz.pool2d[0] >= 32
    return (1, 256 if full else 64, 50, 50), 300 if full else 100, (4096 if full else 1024, 1000)


def _with_inputs(ctx: Ctx) -> Ctx:
    if "roi_r_out" in ctx.arrays:
        return ctx
    features, count, logits = _shapes(ctx.sz)
    rng = np.random.default_rng(43)
    wh = rng.uniform(16, 400, (count, 2))
    xy = rng.uniform(0, 800 - wh)
    rois = np.concatenate([np.zeros((count, 1)), xy, xy + wh], 1).astype(np.float32)
    x = rng.standard_normal(features, dtype=np.float32)
    nan = x.copy()
    nan[rng.random(features) < 1e-3] = np.nan
    outside = rois.copy()
    outside[::3, 3:] += 400  # past the 800x800 image: clipped bins
    ctx.arrays.update(roi_x=x, roi_r=rois, roi_x_nan=nan, roi_r_out=outside,
                      logits=rng.standard_normal(logits, dtype=np.float32))
    return ctx


def _prepared(build):
    return lambda ctx: build(_with_inputs(ctx))


def _onnx_pool():
    return lambda x, r: jonnx().max_roi_pool(x, r, pooled_shape=(7, 7), spatial_scale=1 / 16)


def _ov_pool():
    return lambda x, r: jov().roi_pooling(x, r, pooled_h=7, pooled_w=7, spatial_scale=1 / 16)


def _ort_pool(x: str, r: str):
    def build(ctx: Ctx) -> Any:
        return ort_graph("MaxRoiPool", {"x": ctx.np(x), "r": ctx.np(r)}, opset=1,
                         pooled_shape=[7, 7], spatial_scale=1 / 16)
    return build


def _ov_cpu_pool(x: str, r: str):
    def build(ctx: Ctx) -> Any:
        import openvino.opset2 as o2

        return ov_model(lambda p, q: o2.roi_pooling(p, q, [7, 7], 1 / 16, "max"),
                        [ctx.np(x), ctx.np(r)])
    return build


def _one_hot_argmax():
    import jax
    import jax.numpy as jnp

    return lambda z: jax.nn.one_hot(jnp.argmax(z, -1), z.shape[-1], dtype=z.dtype)


def _row_max_first():
    """The row maximum, then the first index with ``x == max or x != x`` (a min-reduction of
    the iota), one-hot: the candidate docs/semantics.md §11.8 measured."""
    import jax.numpy as jnp
    from jax import lax

    def f(z):
        top = jnp.max(z, -1, keepdims=True)
        iota = lax.broadcasted_iota(np.int32, z.shape, 1)
        hit = (z == top) | (z != z)
        first = lax.reduce_min(jnp.where(hit, iota, np.int32(z.shape[1])), (1,))
        return (iota == first[:, None]).astype(z.dtype)

    return f


def _ort_hardmax(ctx: Ctx) -> Any:
    return ort_graph("Hardmax", {"z": ctx.np("logits")}, opset=13, axis=-1)


def cases(sz: Sizes) -> list[Case]:
    features, count, logits = _shapes(sz)
    label = f"MaxRoiPool {shape_label(features)}, {count} ROIs -> 7x7"
    impls = [
        Impl("jaxmax.onnx.max_roi_pool (jit)", "jax",
             _prepared(jax_jit(_onnx_pool, ("roi_x", "roi_r"))), JAXMAX),
        Impl("jaxmax.openvino.roi_pooling (jit)", "jax",
             _prepared(jax_jit(_ov_pool, ("roi_x", "roi_r"))), JAXMAX),
        Impl("jaxmax.onnx.max_roi_pool, NaN features (jit)", "jax",
             _prepared(jax_jit(_onnx_pool, ("roi_x_nan", "roi_r"))), JAXMAX),
        Impl("jaxmax.openvino.roi_pooling, NaN features (jit)", "jax",
             _prepared(jax_jit(_ov_pool, ("roi_x_nan", "roi_r"))), JAXMAX),
        Impl("jaxmax.onnx.max_roi_pool, ROIs partly outside (jit)", "jax",
             _prepared(jax_jit(_onnx_pool, ("roi_x", "roi_r_out"))), JAXMAX),
        Impl("onnxruntime MaxRoiPool-1", "ort", _prepared(_ort_pool("roi_x", "roi_r"))),
        Impl("OpenVINO CPU ROIPooling-2", "ov", _prepared(_ov_cpu_pool("roi_x", "roi_r"))),
    ]
    ratios = [Ratio("jaxmax ONNX / onnxruntime", impls[0].label, impls[5].label),
              Ratio("jaxmax ONNX / OpenVINO CPU", impls[0].label, impls[6].label),
              Ratio("jaxmax OV / OpenVINO CPU", impls[1].label, impls[6].label),
              Ratio("ONNX: NaN features / clean", impls[2].label, impls[0].label),
              Ratio("OV: NaN features / clean", impls[3].label, impls[1].label),
              Ratio("ONNX: ROIs outside / clean", impls[4].label, impls[0].label)]
    out = [Case(GROUP, label, "small", impls, label, check=False, ratios=ratios)]
    label = f"Hardmax {shape_label(logits)}, last axis"
    impls = [
        Impl("jaxmax.onnx.hardmax (jit)", "jax",
             _prepared(jax_jit(lambda: lambda z: jonnx().hardmax(z), ("logits",))), JAXMAX),
        Impl("jax.nn.one_hot(jnp.argmax) (jit)", "jax", _prepared(jax_jit(_one_hot_argmax,
                                                                          ("logits",)))),
        Impl("row max, first x == max or x != x (jit)", "jax",
             _prepared(jax_jit(_row_max_first, ("logits",)))),
        Impl("onnxruntime Hardmax-13", "ort", _prepared(_ort_hardmax)),
    ]
    ratios = [Ratio("jaxmax / one_hot(argmax)", impls[0].label, impls[1].label),
              Ratio("jaxmax / row-max form", impls[0].label, impls[2].label),
              Ratio("jaxmax / onnxruntime", impls[0].label, impls[3].label)]
    out.append(Case(GROUP, label, "small", impls, label, check=False, ratios=ratios))
    return out
