"""Group ``many_shapes``: what a new input shape costs, as a notebook, a test suite or a server
that sees many sizes meets it: eager calls on a few hundred random small shapes around
(1, 3, 13, 13) (batch 1-2, channels 1-6, height and width 8-20; under 64 KiB each), one
operator per row, each in a child process of its own (`compile_cost.measure_sweep`). "median
ms" is the mean time of a call on a new shape (its compiles included), "RSS MB" the resident
memory it adds; rows that run out of their time budget report over the shapes they reached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .backends import jnp, jonnx, jov
from .cases import JAXMAX, Case, Ctx, Impl, Sizes
from .compile_cost import ShapeSweep
from .max_pool import reduce_window
from .roi_align import small_shape_ops as roi_align_small_shapes  # issue 43

GROUP = "many_shapes"


def _shapes(count: int) -> list[tuple[int, ...]]:
    rng = np.random.default_rng(13)
    seen: dict[tuple[int, ...], None] = {}
    while len(seen) < count:
        n, c = (int(v) for v in rng.integers(1, [3, 7]))
        h, w = (int(v) for v in rng.integers(8, 21, 2))
        seen[(n, c, h, w)] = None
    return list(seen)


def _image(rng: Any, shape: tuple[int, ...]) -> tuple:
    return (rng.standard_normal(shape, dtype=np.float32),)


def _segments(rng: Any, shape: tuple[int, ...]) -> tuple:
    """(data, ids, num_segments): the image's rows as rows, its height as segment count."""
    n, c, h, w = shape
    data = rng.standard_normal((n * c * h, w), dtype=np.float32)
    return data, np.sort(rng.integers(0, h, n * c * h)).astype(np.int32), h


def _classes(rng: Any, shape: tuple[int, ...]) -> tuple:
    """A segmentation head's scores, (n, 32 + 16 (c - 1) + w - 8, h - 4, 4) (a distinct
    shape for each image shape, at most 63,488 bytes), with a NaN: ArgMax over the classes."""
    n, c, h, w = shape
    h = min(h, 20)  # the split's taller shapes stay small too
    x = rng.standard_normal((n, 32 + 16 * (c - 1) + w - 8, h - 4, 4), dtype=np.float32)
    x.reshape(-1)[rng.integers(x.size)] = np.nan
    return (x,)


def _logits(rng: Any, shape: tuple[int, ...]) -> tuple:
    """A classifier's logits, (6 (n - 1) + c, 4 (16 + 13 (h - 8) + w - 8)) (1-12 rows of 64-736
    classes, a distinct shape for each image shape), with a NaN: ArgMax over the last axis."""
    n, c, h, w = shape
    h = min(h, 20)
    x = rng.standard_normal((6 * (n - 1) + c, 4 * (16 + 13 * (h - 8) + w - 8)),
                            dtype=np.float32)
    x.reshape(-1)[rng.integers(x.size)] = np.nan
    return (x,)


# ---- MaxRoiPool / ROIPooling-1 / Hardmax (issue 43): begin ----
def _roi_pool(rng: Any, shape: tuple[int, ...]) -> tuple:
    """The image as features and two ROIs (the whole map of the first image, and a corner
    block of the last), pooled 3x3 by the row."""
    n, _, h, w = shape
    rois = np.array([[0, 0, 0, w - 1, h - 1], [n - 1, 1, 2, w // 2, h // 2]], np.float32)
    return rng.standard_normal(shape, dtype=np.float32), rois


def _roi_pool_ops() -> list[tuple[str, Callable[[], Callable], Callable, str]]:
    return [
        ("jaxmax.onnx.max_roi_pool 2 ROIs -> 3x3 (eager)",
         lambda: lambda x, r: jonnx().max_roi_pool(x, r, pooled_shape=(3, 3)), _roi_pool,
         JAXMAX),
        ("jaxmax.openvino.roi_pooling 2 ROIs -> 3x3 (eager)",
         lambda: lambda x, r: jov().roi_pooling(x, r, pooled_h=3, pooled_w=3,
                                                spatial_scale=1.0), _roi_pool, JAXMAX),
        ("jaxmax.onnx.hardmax last axis of (1-12, 64-736) logits (eager)",
         lambda: lambda x: jonnx().hardmax(x), _logits, JAXMAX),
    ]
# ---- MaxRoiPool / ROIPooling-1 / Hardmax: end ----


def _sweep(make: Callable[[], Callable], inputs: Callable, count: int, budget_s: float
           ) -> Callable[[Ctx], ShapeSweep]:
    return lambda ctx: ShapeSweep(make, inputs, _shapes(count), budget_s)


def cases(sz: Sizes) -> list[Case]:
    quick = sz.seg_rows < 1_000_000
    count, budget = (40, 20.0) if quick else (200, 60.0)
    pads = {"pads_begin": (1, 1), "pads_end": (1, 1)}
    ops: list[tuple[str, Callable[[], Callable], Callable, str]] = [
        ("jaxmax.openvino.max_pool MaxPool-8 k3 s2 p1, indices (eager)",
         lambda: lambda x: jov().max_pool(x, kernel=(3, 3), strides=(2, 2), opset=8, **pads),
         _image, JAXMAX),
        ("jaxmax.openvino.max_pool MaxPool-14 k3 s2 p1, i32 indices (eager)",
         lambda: lambda x: jov().max_pool(x, kernel=(3, 3), strides=(2, 2), opset=14,
                                          index_element_type="i32", **pads),
         _image, JAXMAX),
        ("jaxmax.onnx.max_pool k3 s2 p1 Y and Indices (eager)",
         lambda: lambda x: jonnx().max_pool(x, kernel_shape=[3, 3], strides=[2, 2],
                                            pads=[1, 1, 1, 1], return_indices=True),
         _image, JAXMAX),
        ("jaxmax.openvino.adaptive_max_pool to (5, 3) (eager)",
         lambda: lambda x: jov().adaptive_max_pool(x, (5, 3)), _image, JAXMAX),
        ("jaxmax.onnx.reduce_max axes (2, 3) (eager)",
         lambda: lambda x: jonnx().reduce_max(x, (2, 3), keepdims=0), _image, JAXMAX),
        ("jaxmax.onnx.top_k k=3 axis -1 (eager)",
         lambda: lambda x: jonnx().top_k(x, 3, axis=-1), _image, JAXMAX),
        ("jaxmax.openvino.top_k TopK-11 k=3 max, by value (eager)",
         lambda: lambda x: jov().top_k(x, 3, axis=-1, mode="max", sort="value"), _image,
         JAXMAX),
        ("jaxmax.onnx.arg_max axis 1 of (n, 32-124, 4-16, 4) (eager)",
         lambda: lambda x: jonnx().arg_max(x, axis=1, keepdims=0), _classes, JAXMAX),
        ("jaxmax.onnx.arg_max last axis of (1-12, 64-736) logits (eager)",
         lambda: lambda x: jonnx().arg_max(x, axis=-1, keepdims=0), _logits, JAXMAX),
        ("jaxmax.openvino.segment_max ZERO (eager)",
         lambda: lambda x, i, n: jov().segment_max(x, i, n, fill_mode="ZERO"), _segments,
         JAXMAX),
        ("lax.reduce_window max k3 s2 p1 (eager)", lambda: reduce_window(3, 2, 1, 2), _image,
         "competitor"),
        ("jnp.argmax axis 1 of (n, 32-124, 4-16, 4) (eager)",
         lambda: lambda x: jnp().argmax(x, axis=1), _classes, "competitor"),
        ("jnp.max axes (2, 3) (eager)", lambda: lambda x: jnp().max(x, axis=(2, 3)), _image,
         "competitor"),
    ]
    # ---- RoiAlign (issue 43): features of each shape, 2 proposals, 3x3 ----
    ops += roi_align_small_shapes()
    # ---- end RoiAlign ----
    ops += _roi_pool_ops()  # MaxRoiPool / ROIPooling-1 / Hardmax (issue 43)
    name = "many shapes around (1, 3, 13, 13): ms and RSS MB per new shape"
    return [Case(GROUP, name, "small", [
        Impl(label, "jax", _sweep(make, inputs, count, budget), role)
        for label, make, inputs, role in ops], name, check=False, compile_first=True)]
