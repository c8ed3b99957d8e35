"""The table of operator calls the multi-process tests run: one `Case` per public function and
form (both faces), each with the input layouts it is checked on.

A case names a function of NumPy-built inputs, the inputs (seeded; NaN, -inf, zeros of both
signs and ties in every float input) and its layouts: for each layout one partition spec per
input over the job's mesh of every device (``"d"``), or over a 2-D mesh (``"a"``, ``"b"``)
when a spec names those axes. ``grad`` adds the gradient of the first output with respect to
the first input. Adding an operator is adding an entry to `CASES` (and its layouts).

The same table drives the collectives bounds (tests/test_collectives.py), so its layouts use
shapes that divide over 4 and over 8 devices.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from jax.sharding import PartitionSpec as P

from jaxmax import onnx
from jaxmax import openvino as ov


@dataclasses.dataclass(frozen=True)
class Case:
    """One operator call checked sharded against unsharded."""

    name: str
    fn: Callable  # (*inputs) -> an array or a tuple of arrays
    inputs: Callable[[], tuple[np.ndarray, ...]]
    layouts: dict[str, tuple]  # layout name -> one PartitionSpec (or None: replicated) per input
    grad: bool = False  # also d(sum(first output * weights)) / d(first input)


def tricky(seed: int, shape, *, nan: float = 0.06) -> np.ndarray:
    """float32 from a few values (ties everywhere), with -0.0, +0.0, -inf and NaN."""
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([-3, -2, -1.5, -1, 1, 2.5, 4], np.float32), size=shape)
    u = rng.random(shape)
    x[u < 0.12] = -0.0
    x[(u >= 0.12) & (u < 0.16)] = 0.0
    x[(u >= 0.16) & (u < 0.2)] = -np.inf
    x[(u >= 0.2) & (u < 0.2 + nan)] = np.nan
    return x


def negative(seed: int, shape) -> np.ndarray:
    """float32 in [-4, -1) with about a fifth -0.0 and some NaN: many windows' maxima are -0.0,
    some of them in windows that read padding."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, -1, shape).astype(np.float32)
    u = rng.random(shape)
    x[u < 0.2] = -0.0
    x[u > 0.97] = np.nan
    return x


N, C, H, W = 4, 8, 16, 16  # NCHW inputs: every axis divides over 4 and 8 devices
IMAGE = (N, C, H, W)

# the four axes of an NCHW input, and the two spatial ones at once on the 2-D mesh
BATCH, CHANNELS = P("d"), P(None, "d")
ALONG_H, ALONG_W = P(None, None, "d"), P(None, None, None, "d")
H_AND_W = P(None, None, "a", "b")
IMAGE_LAYOUTS = {"batch": (BATCH,), "channels": (CHANNELS,), "H": (ALONG_H,), "W": (ALONG_W,),
                 "H and W": (H_AND_W,)}
CHANNEL_AXIS_LAYOUTS = {"batch": (BATCH,), "channels (reduced)": (CHANNELS,), "W": (ALONG_W,)}


def _image(seed=0, make=tricky):
    return lambda: (make(seed, IMAGE),)


def _pools() -> list[Case]:
    out = []
    pool_forms = {
        "openvino.max_pool MaxPool-1 k3 s2 same_upper":
            lambda x: ov.max_pool(x, kernel=3, strides=2, auto_pad="same_upper"),
        "openvino.max_pool MaxPool-1 k3 s1 p1 (stride 1)":
            lambda x: ov.max_pool(x, kernel=3, strides=1, pads_begin=1, pads_end=1),
        "openvino.max_pool MaxPool-8 k3 s2 d2 ceil, values and indices":
            lambda x: ov.max_pool(x, kernel=3, strides=2, dilations=2, pads_begin=1,
                                  pads_end=1, rounding_type="ceil", opset=8),
        "openvino.max_pool MaxPool-8 k2 s2 axis 2 (compact)":
            lambda x: ov.max_pool(x, kernel=2, strides=2, axis=2, opset=8),
        "openvino.max_pool MaxPool-14 k3 s2 ceil_torch":
            lambda x: ov.max_pool(x, kernel=3, strides=2, pads_begin=1, pads_end=1,
                                  rounding_type="ceil_torch", opset=14),
        "onnx.max_pool MaxPool-22 k3 s2 p1 ceil":
            lambda x: onnx.max_pool(x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                    ceil_mode=1),
        "onnx.max_pool MaxPool-22 k3 s2 p1, Indices (storage_order 1)":
            lambda x: onnx.max_pool(x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                    storage_order=1, return_indices=True),
        "onnx.max_pool MaxPool-8 k2 s2, Indices":
            lambda x: onnx.max_pool(x, kernel_shape=[2, 2], strides=[2, 2], opset=8,
                                    return_indices=True),
        "onnx.max_pool MaxPool-1 k3 s1 same_lower":
            lambda x: onnx.max_pool(x, kernel_shape=[3, 3], auto_pad="SAME_LOWER", opset=1),
    }
    for i, (name, fn) in enumerate(pool_forms.items()):
        out.append(Case(name, fn, _image(i, negative if i % 2 else tricky), IMAGE_LAYOUTS,
                        grad=True))
    out.append(Case("onnx.global_max_pool GlobalMaxPool-22", onnx.global_max_pool, _image(20),
                    IMAGE_LAYOUTS, grad=True))
    out.append(Case("openvino.adaptive_max_pool AdaptiveMaxPool-8 (5, 3)",
                    lambda x: ov.adaptive_max_pool(x, [5, 3]), _image(21), IMAGE_LAYOUTS,
                    grad=True))
    out.append(Case("openvino.adaptive_max_pool AdaptiveMaxPool-8 (8, 8) i32",
                    lambda x: ov.adaptive_max_pool(x, [8, 8], index_element_type="i32"),
                    _image(22, negative), IMAGE_LAYOUTS, grad=True))
    return out


def _reductions() -> list[Case]:
    spread = {"batch": (BATCH,), "channels (reduced)": (CHANNELS,), "H (reduced)": (ALONG_H,),
              "H and W (reduced)": (H_AND_W,)}
    bools = lambda: (tricky(31, IMAGE) > 0,)  # noqa: E731
    return [
        Case("openvino.reduce_max axes (1, 2)", lambda x: ov.reduce_max(x, (1, 2)),
             _image(30), spread, grad=True),
        Case("openvino.reduce_max axis 3 keep_dims",
             lambda x: ov.reduce_max(x, 3, keep_dims=True), _image(32), spread, grad=True),
        Case("openvino.reduce_logical_or axes (1, 3)",
             lambda x: ov.reduce_logical_or(x, (1, 3)), bools, spread),
        Case("onnx.reduce_max ReduceMax-20 axes [1, 2]",
             lambda x: onnx.reduce_max(x, [1, 2], keepdims=0), _image(33), spread, grad=True),
        Case("onnx.reduce_max ReduceMax-13 all axes", lambda x: onnx.reduce_max(x, opset=13),
             _image(34), spread, grad=True),
    ]


def _where() -> list[Case]:
    return [
        Case("onnx.arg_max ArgMax-13 axis 1", lambda x: onnx.arg_max(x, axis=1),
             _image(40), CHANNEL_AXIS_LAYOUTS),
        Case("onnx.arg_max ArgMax-13 axis 1 select_last_index keepdims 0",
             lambda x: onnx.arg_max(x, axis=1, keepdims=0, select_last_index=1),
             _image(41), CHANNEL_AXIS_LAYOUTS),
        Case("onnx.top_k TopK-24 K 3 axis 1", lambda x: onnx.top_k(x, np.array([3]), axis=1),
             _image(42), CHANNEL_AXIS_LAYOUTS, grad=True),
        Case("onnx.top_k TopK-24 K 5 axis 1 smallest unsorted",
             lambda x: onnx.top_k(x, np.array([5]), axis=1, largest=0, sorted=0),
             _image(43), CHANNEL_AXIS_LAYOUTS, grad=True),
        Case("onnx.top_k TopK-1 k 2 last axis", lambda x: onnx.top_k(x, 2, opset=1),
             _image(44), {"batch": (BATCH,), "W (top-k axis)": (ALONG_W,)}, grad=True),
        Case("openvino.top_k TopK-11 k 3 axis 1 max value",
             lambda x: ov.top_k(x, 3, axis=1, mode="max", sort="value"),
             _image(45), CHANNEL_AXIS_LAYOUTS, grad=True),
        Case("openvino.top_k TopK-11 k 4 axis 1 min index stable i64",
             lambda x: ov.top_k(x, 4, axis=1, mode="min", sort="index", stable=True,
                                index_element_type="i64"),
             _image(46), CHANNEL_AXIS_LAYOUTS, grad=True),
        Case("openvino.top_k TopK-3 k 2 axis 3 max none",
             lambda x: ov.top_k(x, 2, axis=3, mode="max", sort="none", opset=3),
             _image(47), {"batch": (BATCH,), "W (top-k axis)": (ALONG_W,)}, grad=True),
    ]


def _elementwise() -> list[Case]:
    pair = lambda: (tricky(50, IMAGE), tricky(51, IMAGE))  # noqa: E731
    triple = lambda: (tricky(52, IMAGE), tricky(53, IMAGE), tricky(54, (1, C, 1, W)))  # noqa: E731
    # (on Explicit axes JAX itself refuses two inputs sharded along different axes over one
    # mesh axis: a ShardingTypeError that asks for a reshard)
    layouts = {"batch": (BATCH, BATCH), "channels, other replicated": (CHANNELS, None),
               "H, other replicated": (ALONG_H, None)}
    # The broadcast input is an argument of its own: slicing a row out of a batch-sharded array
    # inside the program (b[:1]) makes XLA's partitioner replicate it with an adding
    # all-reduce, which turns its -0.0 into +0.0 before any jaxmax code runs (docs/multi-host.md).
    return [
        Case("onnx.max Max-13 two inputs", lambda a, b: onnx.max(a, b), pair, layouts,
             grad=True),
        Case("onnx.max Max-13 three inputs, one broadcast", lambda a, b, c: onnx.max(a, b, c),
             triple, {"batch": (BATCH, BATCH, None), "channels": (CHANNELS, CHANNELS, CHANNELS),
                      "W": (ALONG_W, ALONG_W, ALONG_W)}, grad=True),
        Case("openvino.maximum Maximum-1", lambda a, b: ov.maximum(a, b), pair, layouts,
             grad=True),
    ]


SEGMENTS = 12


def _segment_inputs(seed):
    def make():
        rng = np.random.default_rng(seed)
        ids = np.sort(rng.integers(0, SEGMENTS - 2, 16)).astype(np.int32)
        ids[ids == 3] = 4  # segment 3 empty
        return tricky(seed, (16, 4, 8)), ids
    return make


def _segments() -> list[Case]:
    layouts = {"rows (segment axis), ids sharded": (P("d"), P("d")),
               "rows sharded, ids replicated": (P("d"), None),
               "trailing axis": (P(None, None, "d"), None)}
    return [
        Case("openvino.segment_max SegmentMax-16 ZERO num_segments 12",
             lambda x, ids: ov.segment_max(x, ids, SEGMENTS, fill_mode="ZERO"),
             _segment_inputs(60), layouts, grad=True),
        Case("openvino.segment_max SegmentMax-16 LOWEST num_segments 6 (ids dropped)",
             lambda x, ids: ov.segment_max(x, ids, 6, fill_mode="LOWEST"),
             _segment_inputs(61), layouts, grad=True),
    ]


def _scatter_elements_inputs(seed, axis):
    def make():
        rng = np.random.default_rng(seed)
        data = tricky(seed, (16, 8))
        shape = (16, 8)
        idx = rng.integers(-shape[axis], shape[axis], shape).astype(np.int32)
        return data, tricky(seed + 1, shape), idx
    return make


def _scatter_nd_inputs(seed):
    def make():
        rng = np.random.default_rng(seed)
        idx = np.stack([rng.integers(0, 16, 16), rng.integers(-8, 8, 16)], -1).astype(np.int32)
        return tricky(seed, (16, 8, 4)), tricky(seed + 1, (16, 4)), idx
    return make


def _scatters() -> list[Case]:
    # inputs: data, updates, indices
    along = {"scatter axis, all three": (P("d"), P("d"), P("d")),
             "other axis, all three": (P(None, "d"), P(None, "d"), P(None, "d")),
             "data only, scatter axis": (P("d"), None, None),
             "indices and updates only": (None, P("d"), P("d"))}
    nd = {"data rows": (P("d"), None, None),
          "data trailing axis": (P(None, None, "d"), P(None, "d"), None),
          "indices and updates": (None, P("d"), P("d"))}
    return [
        Case("onnx.scatter_elements ScatterElements-18 max axis 0",
             lambda d, u, i: onnx.scatter_elements(d, i, u, axis=0, reduction="max"),
             _scatter_elements_inputs(70, 0), along, grad=True),
        Case("onnx.scatter_elements ScatterElements-18 max axis 1",
             lambda d, u, i: onnx.scatter_elements(d, i, u, axis=1, reduction="max"),
             _scatter_elements_inputs(71, 1), along, grad=True),
        Case("openvino.scatter_elements_update SEU-12 max axis 0",
             lambda d, u, i: ov.scatter_elements_update(d, i, u, 0, reduction="max"),
             _scatter_elements_inputs(72, 0), along, grad=True),
        Case("openvino.scatter_elements_update SEU-12 max axis 1 use_init_val False",
             lambda d, u, i: ov.scatter_elements_update(d, i, u, 1, reduction="max",
                                                        use_init_val=False),
             _scatter_elements_inputs(73, 1), along, grad=True),
        Case("onnx.scatter_nd ScatterND-18 max k 2",
             lambda d, u, i: onnx.scatter_nd(d, i, u, reduction="max"),
             _scatter_nd_inputs(74), nd, grad=True),
        Case("openvino.scatter_nd_update ScatterNDUpdate-15 max k 2",
             lambda d, u, i: ov.scatter_nd_update(d, i, u, reduction="max"),
             _scatter_nd_inputs(75), nd, grad=True),
    ]


def _unpool_inputs(seed):
    def make():
        x = tricky(seed, IMAGE)
        # indices as MaxPool-22 k2 s2 computes them on NumPy-side windows: the first maximal
        # element of each 2x2 window, flat over (H, W) of its own (n, c) image, plus a few
        # duplicates (two windows naming one element)
        win = x.reshape(N, C, H // 2, 2, W // 2, 2).transpose(0, 1, 2, 4, 3, 5)
        win = np.where(np.isnan(win), np.inf, win).reshape(N, C, H // 2, W // 2, 4)
        k = np.argmax(win, -1)
        rows = np.arange(H // 2)[:, None] * 2 + k // 2
        cols = np.arange(W // 2)[None, :] * 2 + k % 2
        flat = (np.arange(N)[:, None, None, None] * C + np.arange(C)[None, :, None, None]) * H * W
        idx = (flat + rows * W + cols).astype(np.int32)
        idx[:, :, 1, 1] = idx[:, :, 0, 0]
        return tricky(seed + 1, (N, C, H // 2, W // 2)), idx
    return make


def _unpool() -> list[Case]:
    small = (N, C, H // 2, W // 2)
    layouts = {"batch": (BATCH, BATCH), "channels": (CHANNELS, CHANNELS),
               "H": (ALONG_H, ALONG_H), "X only, channels": (CHANNELS, None)}
    assert all(s % 4 == 0 for s in small)
    return [Case("onnx.max_unpool MaxUnpool-22 k2 s2",
                 lambda x, i: onnx.max_unpool(x, i, kernel_shape=[2, 2], strides=[2, 2]),
                 _unpool_inputs(80), layouts, grad=True)]


def _boxes(seed: int, count: int, columns: int) -> np.ndarray:
    """`count` ROIs over a (H, W) image: ``[x1, y1, x2, y2]`` from sub-pixel to the whole map and
    past it, some reversed; `columns` 5 puts the image index first (MaxRoiPool's rows)."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(-2, W + 2, (count, 4)).astype(np.float32)
    if columns == 4:
        return xy
    return np.concatenate([rng.integers(0, N, (count, 1)).astype(np.float32), xy], axis=1)


def _detection() -> list[Case]:
    rois5 = lambda: (tricky(90, IMAGE), _boxes(91, 8, 5))  # noqa: E731
    rois4 = lambda: (tricky(92, IMAGE), _boxes(93, 8, 4),  # noqa: E731
                     np.random.default_rng(94).integers(0, N, 8).astype(np.int32))
    x_two = {"batch": (BATCH, None), "channels": (CHANNELS, None)}
    x_three = {"batch": (BATCH, None, None), "channels": (CHANNELS, None, None)}
    # With the ROIs sharded, each device adds its ROIs' cotangents into a partial gradient of X
    # and the partials are summed across devices: another order of the same sums, equal only up
    # to rounding (RoiAlign's bilinear weights). Those layouts check the values alone.
    rois_two = {"rois sharded": (None, P("d"))}
    rois_three = {"rois and batch_indices sharded": (None, P("d"), P("d"))}
    calls = {
        "onnx.max_roi_pool MaxRoiPool-22 3x3": (
            lambda x, r: onnx.max_roi_pool(x, r, pooled_shape=(3, 3), spatial_scale=0.5),
            rois5, x_two, rois_two),
        "openvino.roi_pooling ROIPooling-1 2x3": (
            lambda x, r: ov.roi_pooling(x, r, pooled_h=2, pooled_w=3, spatial_scale=1.0),
            rois5, x_two, rois_two),
        "onnx.roi_align RoiAlign-22 max 3x3 sr 2": (
            lambda x, r, b: onnx.roi_align(x, r, b, mode="max", output_height=3,
                                           output_width=3, sampling_ratio=2),
            rois4, x_three, rois_three),
        "openvino.roi_align ROIAlign-9 avg 2x2 sr 2 half_pixel": (
            lambda x, r, b: ov.roi_align(x, r, b, pooled_h=2, pooled_w=2, sampling_ratio=2,
                                         spatial_scale=1.0, mode="avg",
                                         aligned_mode="half_pixel"),
            rois4, x_three, rois_three),
    }
    out = [Case("onnx.hardmax Hardmax-13 axis 1", lambda x: onnx.hardmax(x, axis=1),
                _image(95), CHANNEL_AXIS_LAYOUTS, grad=True)]
    for name, (fn, inputs, x_layouts, roi_layouts) in calls.items():
        out.append(Case(name, fn, inputs, x_layouts, grad=True))
        out.append(Case(name + " (values)", fn, inputs, roi_layouts))
    return out


def all_cases() -> list[Case]:
    """Every case, in a fixed order (the processes of a job must run the same sequence)."""
    return _pools() + _reductions() + _where() + _elementwise() + _segments() + _scatters() \
        + _unpool() + _detection()


CASES = all_cases()

# The checks the test suite runs (tests/test_multiprocess.py): (case, layout) pairs, every public
# function at least once and each on the layouts that cross process boundaries in its own way
# (the pooled, reduced, top-k, segment and scatter axes, indices and updates sharded), in the
# CI budget. The mesh's axis type alternates along each list (Explicit first). The whole table
# on both axis types runs with JAXMAX_MULTIPROCESS=full.
QUICK = {
    "2x2": [
        ("openvino.max_pool MaxPool-8 k3 s2 d2 ceil, values and indices", "H"),
        ("openvino.max_pool MaxPool-1 k3 s1 p1 (stride 1)", "W"),
        ("openvino.max_pool MaxPool-14 k3 s2 ceil_torch", "H and W"),
        ("onnx.max_pool MaxPool-22 k3 s2 p1, Indices (storage_order 1)", "H"),
        ("onnx.max_pool MaxPool-1 k3 s1 same_lower", "batch"),
        ("onnx.global_max_pool GlobalMaxPool-22", "H and W"),
        ("openvino.adaptive_max_pool AdaptiveMaxPool-8 (5, 3)", "H"),
        ("openvino.reduce_max axes (1, 2)", "H and W (reduced)"),
        ("openvino.reduce_logical_or axes (1, 3)", "channels (reduced)"),
        ("onnx.reduce_max ReduceMax-20 axes [1, 2]", "channels (reduced)"),
        ("onnx.arg_max ArgMax-13 axis 1 select_last_index keepdims 0", "channels (reduced)"),
        ("onnx.top_k TopK-24 K 3 axis 1", "channels (reduced)"),
        ("openvino.top_k TopK-11 k 4 axis 1 min index stable i64", "batch"),
        ("openvino.top_k TopK-3 k 2 axis 3 max none", "W (top-k axis)"),
        ("onnx.max Max-13 three inputs, one broadcast", "batch"),
        ("openvino.maximum Maximum-1", "channels, other replicated"),
        ("openvino.segment_max SegmentMax-16 ZERO num_segments 12",
         "rows (segment axis), ids sharded"),
        ("onnx.scatter_elements ScatterElements-18 max axis 1", "other axis, all three"),
        ("openvino.scatter_elements_update SEU-12 max axis 0", "scatter axis, all three"),
        ("onnx.scatter_nd ScatterND-18 max k 2", "indices and updates"),
        ("openvino.scatter_nd_update ScatterNDUpdate-15 max k 2", "data rows"),
        ("onnx.max_unpool MaxUnpool-22 k2 s2", "channels"),
        ("onnx.hardmax Hardmax-13 axis 1", "channels (reduced)"),
        ("onnx.max_roi_pool MaxRoiPool-22 3x3", "channels"),
        ("openvino.roi_pooling ROIPooling-1 2x3 (values)", "rois sharded"),
        ("onnx.roi_align RoiAlign-22 max 3x3 sr 2 (values)", "rois and batch_indices sharded"),
        ("openvino.roi_align ROIAlign-9 avg 2x2 sr 2 half_pixel", "batch"),
    ],
    "4x1": [
        ("openvino.max_pool MaxPool-8 k3 s2 d2 ceil, values and indices", "W"),
        ("onnx.max_pool MaxPool-8 k2 s2, Indices", "H"),
        ("onnx.reduce_max ReduceMax-13 all axes", "H (reduced)"),
        ("openvino.top_k TopK-11 k 3 axis 1 max value", "channels (reduced)"),
        ("openvino.segment_max SegmentMax-16 LOWEST num_segments 6 (ids dropped)",
         "rows (segment axis), ids sharded"),
        ("openvino.scatter_elements_update SEU-12 max axis 1 use_init_val False",
         "indices and updates only"),
        ("onnx.max_unpool MaxUnpool-22 k2 s2", "H"),
    ],
}


# Eager calls only: the ids are a global array, so under jit they would be traced (and
# `num_segments` required). Replicated ids are read by every process alike.
EAGER_ONLY = [
    Case("openvino.segment_max SegmentMax-16 without num_segments, ids replicated",
         lambda x, ids: ov.segment_max(x, ids, fill_mode="ZERO"), _segment_inputs(62),
         {"rows sharded, ids replicated": (P("d"), None),
          "trailing axis, ids replicated": (P(None, None, "d"), None)}),
]


def _segment_max_sharded_ids(place):
    x, ids = _segment_inputs(63)()
    return ov.segment_max(place(x, P("d")), place(ids, P("d")), fill_mode="ZERO")


# Eager calls that must raise: (name, call(place), error type, text the message holds), where
# ``place(x, spec)`` lays the NumPy value `x` over the job's devices.
EAGER_ERRORS = [
    ("openvino.segment_max without num_segments, ids sharded over processes",
     _segment_max_sharded_ids, TypeError, "num_segments"),
]

# Eager calls the test suite runs: the operators whose concrete-value checks read indices or
# ids, on layouts where those span the processes (and the eager-only case).
EAGER_QUICK = [
    ("openvino.segment_max SegmentMax-16 ZERO num_segments 12", "rows (segment axis), ids sharded"),
    ("openvino.segment_max SegmentMax-16 without num_segments, ids replicated",
     "rows sharded, ids replicated"),
    ("onnx.scatter_elements ScatterElements-18 max axis 0", "indices and updates only"),
    ("openvino.scatter_nd_update ScatterNDUpdate-15 max k 2", "indices and updates"),
    ("onnx.max_unpool MaxUnpool-22 k2 s2", "channels"),
]


def by_name(name: str) -> Case:
    """The case called `name` (in `CASES` or `EAGER_ONLY`)."""
    return next(c for c in CASES + EAGER_ONLY if c.name == name)


def _reduce_max_sharded_axes(place):
    return ov.reduce_max(place(tricky(64, IMAGE), None),
                         place(np.arange(4, dtype=np.int32), P("d")))


EAGER_ERRORS.append(("openvino.reduce_max with `axes` a global array sharded over processes",
                     _reduce_max_sharded_axes, TypeError, "`axes` must be static"))


def _from_node_sharded_constant(place):
    import onnx as onnx_proto

    node = onnx_proto.helper.make_node("ReduceMax", ["x", "axes"], ["y"])
    return onnx.from_node(node, opset=18,
                          constants={"axes": place(np.arange(4, dtype=np.int64), P("d"))})


EAGER_ERRORS.append(("onnx.from_node with a constant sharded over processes",
                     _from_node_sharded_constant, TypeError, "constants['axes']"))
