"""Group ``roi_align``: ONNX RoiAlign and OpenVINO ROIAlign on a detector's shapes
(docs/semantics.md §12), side by side with onnxruntime RoiAlign-16 and the OpenVINO CPU plugin
(ROIAlign-9), and a plain JAX formulation (the compile budget's reference).

* The anchor: FPN features (1, 256, 50, 50) float32, 300 proposals in an 800x800 image (boxes
  16-400 px, ``spatial_scale`` 1/16), 7x7 output: ``sampling_ratio`` 2 max (the spec's
  interpolated max, and ``max_sampling="weighted_corners"``, onnxruntime's rule) and avg, and
  ``sampling_ratio`` 0 max and avg.
* A Mask R-CNN mask head: 14x14 output, 1000 proposals, ``sampling_ratio`` 2, avg.
* A 4-level FPN: features (1, 256, 100/50/25/13 squared), 1000 proposals pooled from every
  level (7x7, ``sampling_ratio`` 2, avg), one jitted call against four onnxruntime sessions.
* The data shapes (`data_shape_cases`, in the ``data_shapes`` group), the largest grids
  (`long_window_cases`, in ``long_window``) and a new small shape (`small_shape_ops`, in
  ``many_shapes``) are built here for those groups.

``--quick`` uses 64 channels. The inputs are built once per worker (seeded).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backends import jax_jit, jnp, jonnx, jov, ort_graph, ov_model
from .cases import INFO, JAXMAX, Case, Ctx, Impl, Ratio, Sizes

GROUP = "roi_align"
IMAGE = 800


def _channels(sz: Sizes) -> int:
    return 256 if sz.pool2d[0] >= 32 else 64


def _boxes(rng, count: int, low: float = 16, high: float = 400, spill: float = 0):
    wh = rng.uniform(low, high, (count, 2))
    xy = rng.uniform(-spill, IMAGE - wh + spill)
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


def _with_inputs(ctx: Ctx) -> Ctx:
    if "f" in ctx.arrays:
        return ctx
    rng = np.random.default_rng(43)
    c = _channels(ctx.sz)
    a = ctx.arrays
    a["f"] = rng.standard_normal((1, c, 50, 50), dtype=np.float32)
    a["r"] = _boxes(rng, 300)
    a["b"] = np.zeros(300, np.int64)
    a["r1k"] = _boxes(rng, 1000)
    a["b1k"] = np.zeros(1000, np.int64)
    for k, side in enumerate((100, 50, 25, 13)):
        a[f"p{k}"] = rng.standard_normal((1, c, side, side), dtype=np.float32)
    nan = a["f"].copy()
    nan.reshape(-1)[rng.choice(nan.size, nan.size // 100, replace=False)] = np.nan
    a["fnan"] = nan
    a["rout"] = _boxes(rng, 300, spill=200)
    a["rmix"] = _boxes(rng, 300, low=8, high=800)
    return ctx


def _prepared(build):
    return lambda ctx: build(_with_inputs(ctx))


def _onnx(mode, sr, out=7, corners=False, scale=1 / 16):
    ms = "weighted_corners" if corners else "interpolated"
    return lambda: lambda x, r, b: jonnx().roi_align(
        x, r, b, mode=mode, output_height=out, output_width=out, sampling_ratio=sr,
        spatial_scale=scale, max_sampling=ms, opset=16)


def _ort(mode, sr, names=("f", "r", "b"), out=7):
    def build(ctx: Ctx) -> Any:
        x, r, b = (ctx.np(n) for n in names)
        return ort_graph("RoiAlign", {"X": x, "rois": r, "batch_indices": b}, opset=16,
                         mode=mode, output_height=out, output_width=out, sampling_ratio=sr,
                         spatial_scale=1 / 16)
    return build


def _ov(mode, sr):
    def build(ctx: Ctx) -> Any:
        import openvino.opset9 as o9

        return ov_model(lambda x, r, b: o9.roi_align(x, r, b, 7, 7, sr, 1 / 16, mode),
                        [ctx.np("f"), ctx.np("r"), ctx.np("b").astype(np.int32)])
    return build


PLAIN_LABEL = "plain JAX: bilinear samples by fancy indexing, then max/mean (jit)"


def _plain(mode: str, grid: int):
    """RoiAlign as a JAX user writes it without jaxmax (fixed grid, no out-of-image rule, no
    arithmetic order): the compile budget's reference; its results are not compared."""
    def make() -> Any:
        np_ = jnp()

        def f(x, rois, b):
            _, _, h, w = x.shape
            s = 1 / 16
            y1, x1 = rois[:, 1] * s - 0.5, rois[:, 0] * s - 0.5
            bh, bw = (rois[:, 3] - rois[:, 1]) * s / 7, (rois[:, 2] - rois[:, 0]) * s / 7
            t = (np_.arange(7)[:, None] + (np_.arange(grid)[None] + 0.5) / grid).reshape(-1)
            ys = np_.clip(y1[:, None] + t[None] * bh[:, None], 0, h - 1)
            xs = np_.clip(x1[:, None] + t[None] * bw[:, None], 0, w - 1)
            y0, x0 = np_.floor(ys).astype(int), np_.floor(xs).astype(int)
            y1_, x1_ = np_.minimum(y0 + 1, h - 1), np_.minimum(x0 + 1, w - 1)
            ly, lx = (ys - y0)[:, :, None, None], (xs - x0)[:, None, :, None]
            img = np_.moveaxis(x[b], 1, -1)  # R, H, W, C
            r = np_.arange(rois.shape[0])[:, None, None]

            def at(yy, xx):
                return img[r, yy[:, :, None], xx[:, None, :]]
            v = ((1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x1_)
                 + ly * (1 - lx) * at(y1_, x0) + ly * lx * at(y1_, x1_))
            v = v.reshape(rois.shape[0], 7, grid, 7, grid, -1)
            return (v.max((2, 4)) if mode == "max" else v.mean((2, 4)))
        return f
    return make


def _fpn(ctx_names=("p0", "p1", "p2", "p3")):
    def make() -> Any:
        def f(p0, p1, p2, p3, r, b):
            return [jonnx().roi_align(p, r, b, output_height=7, output_width=7,
                                      sampling_ratio=2, spatial_scale=s, opset=16)
                    for p, s in zip((p0, p1, p2, p3), (1 / 8, 1 / 16, 1 / 32, 1 / 64),
                                    strict=True)]
        return f
    return make


def _ort_fpn(ctx: Ctx) -> Any:
    runs = [ort_graph("RoiAlign", {"X": ctx.np(f"p{k}"), "rois": ctx.np("r1k"),
                                   "batch_indices": ctx.np("b1k")}, opset=16,
                      output_height=7, output_width=7, sampling_ratio=2, spatial_scale=s)
            for k, s in enumerate((1 / 8, 1 / 16, 1 / 32, 1 / 64))]
    return lambda: [run() for run in runs]


def cases(sz: Sizes) -> list[Case]:
    c = _channels(sz)
    anchor = f"(1, {c}, 50, 50), 300 ROIs, 7x7"
    out = []
    for mode, sr in (("max", 2), ("avg", 2), ("max", 0), ("avg", 0)):
        label = f"RoiAlign {mode} sr={sr} {anchor}"
        impls = [Impl(f"jaxmax.onnx.roi_align {mode} (jit)", "jax", _prepared(
            jax_jit(_onnx(mode, sr), ("f", "r", "b"))), JAXMAX)]
        if mode == "max":
            impls.append(Impl("jaxmax.onnx.roi_align weighted corners (jit)", "jax", _prepared(
                jax_jit(_onnx(mode, sr, corners=True), ("f", "r", "b"))), JAXMAX))
        impls += [Impl("onnxruntime RoiAlign-16", "ort", _prepared(_ort(mode, sr))),
                  Impl("OpenVINO CPU ROIAlign-9", "ov", _prepared(_ov(mode, sr)))]
        if sr == 2:
            impls.append(Impl(PLAIN_LABEL, "jax", _prepared(jax_jit(_plain(mode, 2),
                                                                    ("f", "r", "b"))), INFO))
        ratios = [Ratio("jaxmax / onnxruntime", impls[0].label, "onnxruntime RoiAlign-16")]
        out.append(Case(GROUP, label, "small", impls, label, check=False, ratios=ratios,
                        compile_first=True))
    label = f"RoiAlign avg sr=2 mask head (1, {c}, 50, 50), 1000 ROIs, 14x14"
    impls = [Impl("jaxmax.onnx.roi_align avg (jit)", "jax", _prepared(
                 jax_jit(_onnx("avg", 2, out=14), ("f", "r1k", "b1k"))), JAXMAX),
             Impl("onnxruntime RoiAlign-16", "ort", _prepared(
                 _ort("avg", 2, ("f", "r1k", "b1k"), out=14)))]
    out.append(Case(GROUP, label, "small", impls, label, check=False, compile_first=True,
                    ratios=[Ratio("jaxmax / onnxruntime", impls[0].label, impls[1].label)]))
    label = f"RoiAlign avg sr=2 4-level FPN (1, {c}, 100..13), 1000 ROIs per level, 7x7"
    impls = [Impl("jaxmax.onnx.roi_align x4 (one jit)", "jax", _prepared(
                 jax_jit(_fpn(), ("p0", "p1", "p2", "p3", "r1k", "b1k"))), JAXMAX),
             Impl("onnxruntime RoiAlign-16 x4", "ort", _prepared(_ort_fpn))]
    out.append(Case(GROUP, label, "small", impls, label, check=False, compile_first=True,
                    ratios=[Ratio("jaxmax / onnxruntime", impls[0].label, impls[1].label)]))
    return out


# ---- RoiAlign rows of the data_shapes, long_window and many_shapes groups (issue 43) ----

def data_shape_cases(sz: Sizes, group: str) -> list[Case]:
    """The anchor under ``sampling_ratio`` 0 (avg and max) and 2 (avg) in four data shapes:
    clean, NaN in 1 of 100 feature elements, proposals partly outside the image, mixed sizes
    (8-800 px); each row's ratio to clean data below the table."""
    anchor = f"(1, {_channels(sz)}, 50, 50), 300 ROIs, 7x7"
    shapes = [("clean", ("f", "r", "b")), ("NaN 1/100", ("fnan", "r", "b")),
              ("ROIs partly outside", ("f", "rout", "b")),
              ("mixed sizes 8-800 px", ("f", "rmix", "b"))]
    out = []
    for mode, sr in (("avg", 0), ("max", 0), ("avg", 2)):
        label = f"data shapes: RoiAlign {mode} sr={sr} {anchor}"
        impls = [Impl(f"jaxmax.onnx.roi_align {mode} sr={sr}, {name} (jit)", "jax", _prepared(
            jax_jit(_onnx(mode, sr), names)), JAXMAX) for name, names in shapes]
        ratios = [Ratio(f"{name} / clean", i.label, impls[0].label)
                  for (name, _), i in zip(shapes[1:], impls[1:], strict=True)]
        out.append(Case(group, label, "small", impls, label, check=False, ratios=ratios))
    return out


def _with_large(ctx: Ctx) -> Ctx:
    a = _with_inputs(ctx).arrays
    if "fbig" not in a:
        rng = np.random.default_rng(44)
        a["fbig"] = rng.standard_normal((1, 64, 100, 100), dtype=np.float32)
        a["rbig"] = _boxes(rng, 300, low=400, high=3200, spill=1200)  # up to 2x the map
    return ctx


def long_window_cases(group: str) -> list[Case]:
    """The largest grids: ``sampling_ratio`` 0 with proposals up to twice the map (grids up
    to 29x29 samples per bin, the windowed samples of docs/semantics.md §12.4) and a fixed
    ``sampling_ratio`` 8, beside the plain JAX formulation of an 8x8 grid; compile first."""
    names = ("fbig", "rbig", "b")
    out = []
    for mode, sr in (("avg", 0), ("max", 0), ("avg", 8)):
        label = (f"RoiAlign {mode} sr={sr}, (1, 64, 100, 100), 300 ROIs of 400-3200 px "
                 f"(up to 2x the map), 7x7")
        impls = [Impl(f"jaxmax.onnx.roi_align {mode} sr={sr} (jit)", "jax",
                      lambda ctx, mode=mode, sr=sr: jax_jit(
                          _onnx(mode, sr, scale=1 / 16), names)(_with_large(ctx)), JAXMAX),
                 Impl(PLAIN_LABEL.replace("(jit)", "8x8 grid (jit)"), "jax",
                      lambda ctx, mode=mode: jax_jit(_plain(mode, 8), names)(
                          _with_large(ctx)), INFO)]
        out.append(Case(group, label, "small", impls, label, check=False,
                        compile_first=True))
    return out


def small_shape_inputs(rng, shape: tuple[int, ...]) -> tuple:
    """A many_shapes input: features `shape` (N, C, H, W), two proposals inside the map
    (one per image when N = 2), int64 batch indices."""
    n, _, h, w = shape
    x = rng.standard_normal(shape, dtype=np.float32)
    rois = np.array([[0.5, 1.0, 0.6 * w, 0.7 * h], [0.2 * w, 0.0, w - 1.5, 0.5 * h]],
                    np.float32)
    return x, rois, np.array([0, n - 1], np.int64)


def small_shape_ops() -> list[tuple[str, Any, Any, str]]:
    """many_shapes rows: (label, make, inputs, role), 3x3 output."""
    def onnx(mode: str, sr: int) -> Any:
        return lambda: lambda x, r, b: jonnx().roi_align(
            x, r, b, mode=mode, output_height=3, output_width=3, sampling_ratio=sr)

    def ov(mode: str, sr: int) -> Any:
        return lambda: lambda x, r, b: jov().roi_align(
            x, r, b, pooled_h=3, pooled_w=3, sampling_ratio=sr, spatial_scale=1.0, mode=mode)

    return [("jaxmax.onnx.roi_align avg sr=2, 2 ROIs, 3x3 (eager)", onnx("avg", 2),
             small_shape_inputs, JAXMAX),
            ("jaxmax.onnx.roi_align avg sr=0, 2 ROIs, 3x3 (eager)", onnx("avg", 0),
             small_shape_inputs, JAXMAX),
            ("jaxmax.openvino.roi_align max sr=2, 2 ROIs, 3x3 (eager)", ov("max", 2),
             small_shape_inputs, JAXMAX)]

# ---- end of the RoiAlign rows of other groups ----
