"""Group ``data_shapes``: each operator timed on the same tensor in every data shape of
`cases.DATA_SHAPES` (clean, empty segments, NaN 1 in 10,000 and 1 in 100, heavy ties, signed
zeros), sampled in turn in one worker, with the ratio of each shape to clean data below the
table (the goal: at most 1.2x). Empty segments apply to SegmentMax only.
"""

from __future__ import annotations

from collections.abc import Callable

from .backends import jax_jit, jonnx, jov
from .cases import DATA_SHAPES, JAXMAX, Case, Impl, Ratio, Sizes, shape_label
from .roi_align import data_shape_cases as roi_align_data_shapes  # RoiAlign rows (issue 43)
from .segment_max import jax_segment_max

GROUP = "data_shapes"


def _case(name: str, key: str, make: Callable[[], Callable], names: tuple[str, ...],
          shapes: list[str], label: str) -> Case:
    impls = [Impl(f"{label}, {shape}", "jax", jax_jit(make, names), JAXMAX,
                  inputs=f"{key}@{shape}") for shape in shapes]
    ratios = [Ratio(f"{shape} / clean", f"{label}, {shape}", f"{label}, clean")
              for shape in shapes if shape != "clean"]
    # The inputs differ between rows, so their results are not compared.
    return Case(GROUP, name, f"{key}@clean", impls, name, check=False, ratios=ratios)


def cases(sz: Sizes) -> list[Case]:
    dense = [s for s in DATA_SHAPES if s != "empty"]
    seg = f"{sz.seg_rows}x{sz.seg_cols}, {sz.seg_count} segments"
    pool, red = shape_label(sz.pool2d), shape_label(sz.reduce)
    xi = ("x", "ids")
    return [
        _case(f"data shapes: SegmentMax ZERO {seg}", "seg",
              lambda: lambda x, i: jov().segment_max(x, i, sz.seg_count, fill_mode="ZERO"),
              xi, list(DATA_SHAPES), "SegmentMax ZERO (jit)"),
        _case(f"data shapes: SegmentMax LOWEST {seg}", "seg",
              lambda: lambda x, i: jov().segment_max(x, i, sz.seg_count, fill_mode="LOWEST"),
              xi, list(DATA_SHAPES), "SegmentMax LOWEST (jit)"),
        _case(f"data shapes: jax.ops.segment_max {seg}", "seg",
              jax_segment_max(sz.seg_count, True), xi, list(DATA_SHAPES),
              "jax.ops.segment_max sorted (jit, reference)"),
        _case(f"data shapes: ONNX MaxPool k3 s2 p1 Y and Indices {pool}", "pool2d",
              lambda: lambda x: jonnx().max_pool(x, kernel_shape=[3, 3], strides=[2, 2],
                                                 pads=[1, 1, 1, 1], return_indices=True),
              ("x",), dense, "ONNX MaxPool with Indices (jit)"),
        _case(f"data shapes: MaxPool-14 k3 s2 p1 with indices {pool}", "pool2d",
              lambda: lambda x: jov().max_pool(x, kernel=3, strides=2, pads_begin=1,
                                               pads_end=1, opset=14),
              ("x",), dense, "MaxPool-14 with indices (jit)"),
        _case(f"data shapes: AdaptiveMaxPool-8 to (5, 3) {pool}", "pool2d",
              lambda: lambda x: jov().adaptive_max_pool(x, (5, 3)),
              ("x",), dense, "AdaptiveMaxPool-8 (jit)"),
        _case(f"data shapes: ReduceMax-1 axes (2, 3) {red}", "f32",
              lambda: lambda x: jov().reduce_max(x, (2, 3)),
              ("x",), dense, "ReduceMax-1 (jit)"),
        _case(f"data shapes: ONNX ArgMax axis 1 {red}", "f32",
              lambda: lambda x: jonnx().arg_max(x, axis=1, keepdims=0),
              ("x",), dense, "ONNX ArgMax (jit)"),
        _case(f"data shapes: ONNX TopK k=5 axis 1 {red}", "f32",
              lambda: lambda x: jonnx().top_k(x, 5, axis=1),
              ("x",), dense, "ONNX TopK (jit)"),
        # a classifier's logits: the last axis takes other paths than axis 1 above
        _case("data shapes: ONNX ArgMax last axis 256x1000", "shape:256x1000",
              lambda: lambda x: jonnx().arg_max(x, axis=1, keepdims=0),
              ("x",), dense, "ONNX ArgMax, logits (jit)"),
        # long last axes that no lane width divides (LLM logits, odd class counts): the
        # paths the 256x1000 row does not take, whose float forms had cliffed on zeros and NaN
        *[_case(f"data shapes: ONNX ArgMax last axis {rows}x{n}", f"shape:{rows}x{n}",
                lambda: lambda x: jonnx().arg_max(x, axis=1, keepdims=0),
                ("x",), dense, "ONNX ArgMax, long last axis (jit)")
          for rows, n in ((8, 32000), (16, 50257), (1000, 997))],
        # ---- MaxRoiPool / ROIPooling-1 / Hardmax (issue 43): begin ----
        _case("data shapes: ONNX MaxRoiPool (1, C, 50, 50), 300 ROIs -> 7x7", "roi_pool",
              lambda: lambda x, r: jonnx().max_roi_pool(x, r, pooled_shape=(7, 7),
                                                        spatial_scale=1 / 16),
              ("x", "rois"), dense, "ONNX MaxRoiPool (jit)"),
        _case("data shapes: ROIPooling-1 (1, C, 50, 50), 300 ROIs -> 7x7", "roi_pool",
              lambda: lambda x, r: jov().roi_pooling(x, r, pooled_h=7, pooled_w=7,
                                                     spatial_scale=1 / 16),
              ("x", "rois"), dense, "ROIPooling-1 (jit)"),
        _case("data shapes: ONNX Hardmax last axis 256x1000", "shape:256x1000",
              lambda: lambda x: jonnx().hardmax(x), ("x",), dense, "ONNX Hardmax (jit)"),
        # ---- MaxRoiPool / ROIPooling-1 / Hardmax: end ----
        _case("data shapes: ONNX TopK k=5 last axis 256x1000", "shape:256x1000",
              lambda: lambda x: jonnx().top_k(x, 5, axis=1),
              ("x",), dense, "ONNX TopK, logits (jit)"),
        # ---- RoiAlign (issue 43): its own inputs (features, proposals), its own data shapes:
        # NaN features, proposals partly outside the image, mixed sizes under sr=0 ----
        *roi_align_data_shapes(sz, GROUP),
        # ---- end RoiAlign ----
    ]
