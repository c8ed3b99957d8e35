"""TopK, SegmentMax, the ROI operators, AdaptiveMaxPool, MaxUnpool, the ceil-mode pools, the
scatters, ReduceMax (GlobalMaxPool) and ArgMax on ``Auto`` mesh axes
(jaxmax/_src/auto_partition.py): the per-device forms chosen once XLA knows the sharding give the
one-device answer bit for bit under ``jit``, under ``vmap`` (where the computation runs
unwrapped) and through ``grad``; their collectives are in tests/test_collectives.py, their runs
across processes in tests/test_multiprocess.py."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from multiprocess_cases import negative, tricky

from jaxmax import onnx
from jaxmax import openvino as ov


def _mesh():
    return jax.make_mesh((4,), ("d",), axis_types=(AxisType.Auto,), devices=jax.devices()[:4])


def _bits(a):
    a = np.asarray(a)
    if a.dtype in (np.float16, ml_dtypes.bfloat16):
        return a.view(np.int16)
    return a.view(np.int32) if a.dtype == np.float32 else a


def _same(got, expected):
    for g, e in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True):
        np.testing.assert_array_equal(_bits(g), _bits(e))


TOP_K = {
    "onnx axis 1": lambda v: onnx.top_k(v, 3, axis=1),
    "onnx last": lambda v: onnx.top_k(v, 2, axis=-1, largest=0),
    "openvino index": lambda v: ov.top_k(v, 4, axis=1, mode="max", sort="index"),
}


@pytest.mark.parametrize("spec", [P("d"), P(None, "d"), P(None, None, None, "d")],
                         ids=["batch", "channels", "W"])
@pytest.mark.parametrize("name", sorted(TOP_K))
def test_top_k_on_auto_axes(name, spec):
    f = TOP_K[name]
    x = tricky(3, (4, 8, 4, 16))
    xs = jax.device_put(x, NamedSharding(_mesh(), spec))
    _same(jax.jit(f)(xs), f(x))

    def loss(v):
        return (f(v)[0] * np.float32(1.5)).sum()
    _same(jax.jit(jax.grad(loss))(xs), jax.grad(loss)(x))
    _same(jax.jit(jax.vmap(f))(xs), jax.vmap(f)(x))


@pytest.mark.parametrize("specs", [(P("d"), P("d")), (P("d"), P()), (P(None, "d"), P())],
                         ids=["rows and ids", "rows", "trailing"])
@pytest.mark.parametrize("fill", ["ZERO", "LOWEST"])
def test_segment_max_on_auto_axes(fill, specs):
    data = tricky(4, (16, 8, 4))
    ids = np.sort(np.random.default_rng(5).integers(0, 12, 16)).astype(np.int32)
    mesh = _mesh()
    placed = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((data, ids), specs,
                                                                         strict=True)]

    def f(d, i):
        return ov.segment_max(d, i, num_segments=12, fill_mode=fill)
    _same(jax.jit(f)(*placed), f(data, ids))

    def loss(d, i):
        return (f(d, i) * np.float32(1.5)).sum()
    _same(jax.jit(jax.grad(loss))(*placed), jax.grad(loss)(data, ids))
    batched = jax.vmap(f, in_axes=(2, None))
    _same(jax.jit(batched)(*placed), batched(data, ids))


ROI = {
    "onnx.max_roi_pool": lambda x, r, b: onnx.max_roi_pool(
        x, jax.numpy.concatenate([b[:, None].astype(r.dtype), r], 1), pooled_shape=(3, 2)),
    "openvino.roi_pooling": lambda x, r, b: ov.roi_pooling(
        x, jax.numpy.concatenate([b[:, None].astype(r.dtype), r], 1), pooled_h=2, pooled_w=3,
        spatial_scale=1.0),
    "onnx.roi_align max": lambda x, r, b: onnx.roi_align(x, r, b, mode="max", output_height=3,
                                                         output_width=2, sampling_ratio=2),
}


ROI_LAYOUTS = {  # (X's spec, the boxes' and batch indices' spec)
    "images": (P("d"), P()),
    "channels": (P(None, "d"), P()),
    "rois": (P(), P("d")),
}


@pytest.mark.parametrize("layout", sorted(ROI_LAYOUTS))
@pytest.mark.parametrize("name", sorted(ROI))
def test_roi_operators_on_auto_axes(name, layout):
    """The images sharded along the batch (each ROI answered on the device holding its image,
    the owners' bits summed; the gradient each device's own images'), along the channels, or
    the ROIs and batch indices sharded; the gradient with cotangents of both signs (a zero
    cotangent's sign is checked)."""
    f = ROI[name]
    rng = np.random.default_rng(6)
    x = tricky(7, (8, 4, 9, 10))
    boxes = np.sort(rng.uniform(-2, 11, (12, 2, 2)), axis=1).reshape(12, 4).astype(np.float32)
    batch = rng.integers(0, 8, 12).astype(np.int32)
    x_spec, roi_spec = ROI_LAYOUTS[layout]
    xs = jax.device_put(x, NamedSharding(_mesh(), x_spec))
    boxes_s, batch_s = (jax.device_put(a, NamedSharding(_mesh(), roi_spec)) for a in (boxes, batch))
    _same(jax.jit(f)(xs, boxes_s, batch_s), f(x, boxes, batch))
    weights = rng.standard_normal(f(x, boxes, batch).shape).astype(np.float32)

    def loss(v, r, b):
        return (f(v, r, b) * weights).sum()
    if not (layout == "rois" and "align" in name):  # there each device's partial gradient
        # of X is summed across devices, another order of RoiAlign's weighted sums: equal up
        # to rounding only (tests/multiprocess_cases.py checks those layouts' values alone)
        _same(jax.jit(jax.grad(loss))(xs, boxes_s, batch_s), jax.grad(loss)(x, boxes, batch))
    if layout == "images" and "align" in name:  # the boxes' cotangent, from their owners;
        # NaN where a box's samples read NaN, whose sign IEEE 754 leaves open (jax 0.12 gives
        # the sharded program other NaN signs): NaN compared as NaN, every other bit exactly
        got = np.asarray(jax.jit(jax.grad(loss, argnums=1))(xs, boxes_s, batch_s))
        want = np.asarray(jax.grad(loss, argnums=1)(x, boxes, batch))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        _same(np.where(np.isnan(got), 0, got), np.where(np.isnan(want), 0, want))
    pair = np.stack([x, -x])
    pairs = jax.device_put(pair, NamedSharding(_mesh(), P(None, *x_spec)))
    batched = jax.vmap(f, in_axes=(0, None, None))
    _same(jax.jit(batched)(pairs, boxes_s, batch_s), batched(pair, boxes, batch))


ADAPTIVE = {
    "(5, 3)": lambda v: ov.adaptive_max_pool(v, [5, 3]),
    "(8, 8) i32": lambda v: ov.adaptive_max_pool(v, [8, 8], index_element_type="i32"),
    "(3, 7) overlapping": lambda v: ov.adaptive_max_pool(v, [3, 7]),
}


@pytest.mark.parametrize("spec", [P("d"), P(None, "d"), P(None, None, "d"),
                                  P(None, None, None, "d"), P(None, None, "a", "b")],
                         ids=["batch", "channels", "H", "W", "H and W"])
@pytest.mark.parametrize("name", sorted(ADAPTIVE))
def test_adaptive_max_pool_on_auto_axes(name, spec):
    f = ADAPTIVE[name]
    x = tricky(6, (4, 8, 16, 16))
    x[0, 0, 0, 0] = np.nan  # a window's first element: NaN wins only there
    x[1, 1, 4:8, 4:8] = -0.0
    x[1, 1, 5, 6] = 0.0
    mesh = (jax.make_mesh((2, 2), ("a", "b"), axis_types=(AxisType.Auto,) * 2,
                          devices=jax.devices()[:4]) if "a" in spec else _mesh())
    xs = jax.device_put(x, NamedSharding(mesh, spec))
    _same(jax.jit(f)(xs), f(x))

    # cotangents of both signs, not dyadic (sums where windows overlap round), and tangents
    # holding -0.0: the derivative is taken where each index's element lies (plane_take)
    rng = np.random.default_rng(16)
    weights = rng.standard_normal(f(x)[0].shape).astype(np.float32)

    def loss(v):
        return (f(v)[0] * weights).sum()
    _same(jax.jit(jax.grad(loss))(xs), jax.grad(loss)(x))
    t = np.where(rng.random(x.shape) < 0.3, np.float32(-0.0), x)
    ts = jax.device_put(t, NamedSharding(mesh, spec))
    _same(jax.jit(lambda v, u: jax.jvp(f, (v,), (u,))[1][0])(xs, ts), jax.jvp(f, (x,), (t,))[1][0])
    stacked = np.stack([x, -x])
    placed = jax.device_put(stacked, NamedSharding(mesh, P(None, *spec)))
    _same(jax.jit(jax.vmap(f))(placed), jax.vmap(f)(stacked))
    _same(jax.jit(jax.vmap(jax.grad(loss)))(placed), jax.vmap(jax.grad(loss))(stacked))
    half = x.astype(jax.numpy.bfloat16)
    got = jax.jit(f)(jax.device_put(half, NamedSharding(mesh, spec)))
    for g, e in zip(got, f(half), strict=True):  # bfloat16 bits
        np.testing.assert_array_equal(np.asarray(g).view(np.uint16 if g.dtype.itemsize == 2
                                                         else g.dtype),
                                      np.asarray(e).view(np.uint16 if e.dtype.itemsize == 2
                                                         else e.dtype))


def _unpool_inputs(seed: int, dense: bool):
    """X (4, 8, 8, 8) and I into a (4, 8, 16, 16) output: each index in its own 2x2 window
    (the dense form), or with duplicates across the sharded axes' blocks and out-of-window
    targets (the scatter form, the last writer winning)."""
    rng = np.random.default_rng(seed)
    n, c, h, w = 4, 8, 8, 8
    rows = np.arange(h)[:, None] * 2 + rng.integers(0, 2, (n, c, h, w))
    cols = np.arange(w)[None, :] * 2 + rng.integers(0, 2, (n, c, h, w))
    flat = (np.arange(n)[:, None, None, None] * c + np.arange(c)[None, :, None, None]) * 256
    idx = (flat + rows * 16 + cols).astype(np.int32)
    if not dense:
        idx[:, :, 7, 7] = idx[:, :, 0, 0]  # across H blocks
        idx[3, 7, 2, 2] = idx[0, 0, 1, 1]  # across batch and channel blocks
        idx[1, 2, 5, 5] = rng.integers(0, idx.max())
    return tricky(seed + 1, (n, c, h, w)), idx


@pytest.mark.parametrize("specs", [(P("d"), P("d")), (P(None, "d"), P(None, "d")),
                                   (P(None, None, "d"), P(None, None, "d")),
                                   (P(None, "d"), P()), (P(None, None, "d"), P())],
                         ids=["batch", "channels", "H", "X only, channels", "X only, H"])
@pytest.mark.parametrize("dense", [True, False], ids=["dense", "scatter"])
def test_max_unpool_on_auto_axes(dense, specs):
    x, idx = _unpool_inputs(7, dense)
    mesh = _mesh()
    placed = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((x, idx), specs,
                                                                         strict=True)]

    def f(v, i):
        return onnx.max_unpool(v, i, kernel_shape=[2, 2], strides=[2, 2])
    _same(jax.jit(f)(*placed), f(x, idx))

    # cotangents of both signs (some -0.0), tangents holding -0.0: the derivative is planned
    # too (the unpooling of the tangent; its transpose on each device's own elements)
    rng = np.random.default_rng(17)
    weights = rng.standard_normal(f(x, idx).shape).astype(np.float32)
    weights[rng.random(weights.shape) < 0.1] = -0.0

    def loss(v, i):
        return (f(v, i) * weights).sum()
    _same(jax.jit(jax.grad(loss))(*placed), jax.grad(loss)(x, idx))
    t = np.where(rng.random(x.shape) < 0.3, np.float32(-0.0), x)
    ts = jax.device_put(t, NamedSharding(mesh, specs[0]))
    _same(jax.jit(lambda v, i, u: jax.jvp(lambda w: f(w, i), (v,), (u,))[1])(*placed, ts),
          jax.jvp(lambda w: f(w, idx), (x,), (t,))[1])
    stacked = (np.stack([x, -x]), np.stack([idx, idx]))
    again = [jax.device_put(a, NamedSharding(mesh, P(None, *s))) for a, s in zip(
        stacked, specs, strict=True)]
    _same(jax.jit(jax.vmap(f))(*again), jax.vmap(f)(*stacked))
    _same(jax.jit(jax.vmap(jax.grad(loss)))(*again), jax.vmap(jax.grad(loss))(*stacked))


HALO_POOLS = {  # ceil rounding: an output that does not divide over the devices
    "MaxPool-14 ceil_torch": lambda v: ov.max_pool(v, kernel=3, strides=2, pads_begin=1,
                                                   pads_end=1, rounding_type="ceil_torch",
                                                   opset=14),
    "MaxPool-8 ceil, indices": lambda v: ov.max_pool(v, kernel=3, strides=2, pads_begin=1,
                                                     pads_end=1, rounding_type="ceil", opset=8,
                                                     axis=2),
    "onnx MaxPool-22 ceil": lambda v: onnx.max_pool(v, kernel_shape=[3, 3], strides=[2, 2],
                                                    pads=[1, 1, 1, 1], ceil_mode=1),
    "onnx MaxPool-22 ceil, Indices storage_order 1": lambda v: onnx.max_pool(
        v, kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1], ceil_mode=1,
        storage_order=1, return_indices=True),
}


@pytest.mark.parametrize("spec", [P("d"), P(None, None, "d"), P(None, None, None, "d"),
                                  P(None, None, "a", "b"), P("a", None, None, "b")],
                         ids=["batch", "H", "W", "H and W", "batch and W"])
@pytest.mark.parametrize("name", sorted(HALO_POOLS))
def test_halo_pools_on_auto_axes(name, spec):
    f = HALO_POOLS[name]
    mesh = (jax.make_mesh((2, 2), ("a", "b"), axis_types=(AxisType.Auto,) * 2,
                          devices=jax.devices()[:4]) if "a" in spec else _mesh())
    rng = np.random.default_rng(17)
    for x in (tricky(8, (4, 8, 16, 16)), negative(9, (4, 8, 16, 16))):
        xs = jax.device_put(x, NamedSharding(mesh, spec))
        _same(jax.jit(f)(xs), f(x))
        # cotangents of both signs, not dyadic (sums where windows overlap round), and
        # tangents holding -0.0: the derivative laid out per device (pooling/max_pool.py
        # `_AutoForm.tangent`), its forward exact as bits, its transpose each device's own
        # block from every window that reads it
        weights = rng.standard_normal(jax.tree.leaves(f(x))[0].shape).astype(np.float32)

        def loss(v, w=weights):
            return (jax.tree.leaves(f(v))[0] * w).sum()
        _same(jax.jit(jax.grad(loss))(xs), jax.grad(loss)(x))
        t = np.where(rng.random(x.shape) < 0.3, np.float32(-0.0), x)
        ts = jax.device_put(t, NamedSharding(mesh, spec))

        def tangent(v, u):
            return jax.tree.leaves(jax.jvp(f, (v,), (u,))[1])[0]
        _same(jax.jit(tangent)(xs, ts), tangent(x, t))
    stacked = np.stack([x, -x])
    placed = jax.device_put(stacked, NamedSharding(mesh, P(None, *spec)))
    _same(jax.jit(jax.vmap(f))(placed), jax.vmap(f)(stacked))
    _same(jax.jit(jax.vmap(jax.grad(loss)))(placed), jax.vmap(jax.grad(loss))(stacked))
    ints = np.random.default_rng(3).integers(-5, 5, (4, 8, 16, 16)).astype(np.int8)
    _same(jax.jit(f)(jax.device_put(ints, NamedSharding(mesh, spec))), f(ints))


SCATTER_ELEMENTS = {
    "onnx axis 0": lambda d, i, u: onnx.scatter_elements(d, i, u, axis=0, reduction="max"),
    "onnx axis 1": lambda d, i, u: onnx.scatter_elements(d, i, u, axis=1, reduction="max"),
    "openvino SEU-12 axis 0": lambda d, i, u: ov.scatter_elements_update(d, i, u, 0,
                                                                         reduction="max"),
    "openvino SEU-12 axis 1 use_init_val False": lambda d, i, u: ov.scatter_elements_update(
        d, i, u, 1, reduction="max", use_init_val=False),
}
SCATTER_ND = {
    "onnx": lambda d, i, u: onnx.scatter_nd(d, i, u, reduction="max"),
    "openvino ScatterNDUpdate-15": lambda d, i, u: ov.scatter_nd_update(d, i, u,
                                                                       reduction="max"),
}


def _scatter_checks(f, arrays, specs):
    """`f` under jit, grad (of the data and of the updates) and vmap (over a leading axis of
    two, the second batch reversed) on an ``Auto`` mesh laid out as `specs`, bit-equal to the
    same calls on one device's arrays."""
    mesh = _mesh()
    placed = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(arrays, specs,
                                                                        strict=True)]
    _same(jax.jit(f)(*placed), f(*arrays))

    def loss(d, i, u):
        out = f(d, i, u)
        return (out * np.arange(out.size, dtype=np.float32).reshape(out.shape)).sum()
    grad = jax.grad(loss, argnums=(0, 2))
    _same(jax.jit(grad)(*placed), grad(*arrays))
    stacked = [np.stack([a, a[::-1]]) for a in arrays]
    placed = [jax.device_put(a, NamedSharding(mesh, P(None, *s))) for a, s in zip(
        stacked, specs, strict=True)]
    _same(jax.jit(jax.vmap(f))(*placed), jax.vmap(f)(*stacked))


@pytest.mark.parametrize("specs", [(P("d"), P("d"), P("d")), (P(None, "d"),) * 3,
                                   (P("d"), P(), P()), (P(), P("d"), P("d")),
                                   (P(None, "d"), P(), P())],
                         ids=["rows, all three", "columns, all three", "data rows",
                              "indices and updates rows", "data columns"])
@pytest.mark.parametrize("name", sorted(SCATTER_ELEMENTS))
def test_scatter_elements_on_auto_axes(name, specs):
    """Every form the planner takes (blocks off the scatter axis, the exchange across it,
    each device's own block of the data), bit-equal to one device with the inputs' NaN,
    signed zeros and ties (tests/multiprocess_cases.py `tricky`) and negative indices."""
    axis = 0 if "axis 0" in name else 1
    rng = np.random.default_rng(7)
    data, updates = tricky(8, (16, 8)), tricky(9, (16, 8))
    indices = rng.integers(-data.shape[axis], data.shape[axis], (16, 8)).astype(np.int32)
    _scatter_checks(SCATTER_ELEMENTS[name], (data, indices, updates), specs)


@pytest.mark.parametrize("specs", [(P("d"), P("d"), P("d")), (P(), P("d"), P("d"))],
                         ids=["rows, all three", "indices and updates rows"])
@pytest.mark.parametrize("name", sorted(SCATTER_ELEMENTS))
def test_scatter_elements_row_constant_indices_on_auto_axes(name, specs):
    """Indices constant off the scatter axis: on one device (concrete indices) the row form
    and its gradient, on the mesh (traced indices) the detected form, blocks or exchanged,
    with the derivative from the output; bit-equal all the same."""
    axis = 0 if "axis 0" in name else 1
    data, updates = tricky(8, (16, 8)), tricky(9, (16, 8))
    ids = np.random.default_rng(3).integers(-data.shape[axis], data.shape[axis], 16)
    ids = ids.astype(np.int32)
    indices = np.broadcast_to(ids[:, None] if axis == 0 else ids[None, :8], (16, 8)).copy()
    _scatter_checks(SCATTER_ELEMENTS[name], (data, indices, updates), specs)


@pytest.mark.parametrize("specs", [(P("d"), P(), P()), (P(None, None, "d"), P(), P(None, "d")),
                                   (P(), P("d"), P("d")), (P("d"), P("d"), P("d"))],
                         ids=["data rows", "data trailing axis", "indices and updates",
                              "all three rows"])
@pytest.mark.parametrize("name", sorted(SCATTER_ND))
def test_scatter_nd_on_auto_axes(name, specs):
    """ScatterND's forms on ``Auto`` axes (blocks of the slice axes, the exchange across the
    index tuples, each device's own rows of the data), bit-equal to one device."""
    rng = np.random.default_rng(11)
    indices = np.stack([rng.integers(-16, 16, 16), rng.integers(-8, 8, 16)],
                       -1).astype(np.int32)
    data, updates = tricky(12, (16, 8, 4)), tricky(13, (16, 4))
    _scatter_checks(SCATTER_ND[name], (data, indices, updates), specs)


REDUCE = {
    "onnx axes [1, 2]": lambda v: onnx.reduce_max(v, [1, 2], keepdims=0),
    "onnx all axes": lambda v: onnx.reduce_max(v, opset=13),
    "openvino axes (-3, -1)": lambda v: ov.reduce_max(v, (-3, -1)),
    "openvino axis 2 keep_dims": lambda v: ov.reduce_max(v, 2, keep_dims=True),
    "global_max_pool": onnx.global_max_pool,
}


def _zero_slices(x):
    """`x` with whole reduced slices of -0.0, of -inf and of NaN (the codes' and the derivative's
    edge cases), besides `tricky`'s ties."""
    x = x.copy()
    x[0, :, :, 0] = -0.0
    x[1, :, :, 1] = -np.inf
    x[2, :, :, 2] = np.nan
    return x


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("spec", [P("d"), P(None, "d"), P(None, None, "d"),
                                  P(None, "d", None, None)], ids=["batch", "channels", "H", "C"])
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce_max_on_auto_axes(name, spec, dtype):
    f = REDUCE[name]
    x = _zero_slices(tricky(7, (4, 8, 4, 16))).astype(dtype)
    xs = jax.device_put(x, NamedSharding(_mesh(), spec))
    _same(jax.jit(f)(xs), f(x))
    # cotangents of both signs (+0.0 off the maxima); the tangent's sums of tied tangents may
    # meet across devices in another order, so the tangents here are dyadic with few bits
    # (sums exact in any order), -0.0 among them
    rng = np.random.default_rng(2)
    w = rng.standard_normal(np.shape(f(x))).astype(dtype)

    def loss(v):
        return (f(v) * w).sum().astype(np.float32)
    _same(jax.jit(jax.grad(loss))(xs), jax.grad(loss)(x))
    t = rng.choice(np.float32([-1.5, -0.5, -0.0, 0.5, 2.0]), x.shape).astype(dtype)
    ts = jax.device_put(t, NamedSharding(_mesh(), spec))
    _same(jax.jit(lambda v, u: jax.jvp(f, (v,), (u,))[1])(xs, ts), jax.jvp(f, (x,), (t,))[1])
    _same(jax.jit(jax.vmap(f))(xs), jax.vmap(f)(x))


@pytest.mark.parametrize("spec", [P("d"), P(None, "d"), P(None, None, None, "d")],
                         ids=["batch", "channels", "W"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_max_on_auto_axes(last, spec):
    def f(v):
        return onnx.arg_max(v, axis=1, keepdims=1 - last, select_last_index=last)
    x = _zero_slices(tricky(8, (4, 8, 4, 16)))
    xs = jax.device_put(x, NamedSharding(_mesh(), spec))
    _same(jax.jit(f)(xs), f(x))
    _same(jax.jit(jax.vmap(f))(xs), jax.vmap(f)(x))

    def loss(v):  # the indices pass no gradient
        return (v.sum(axis=1, keepdims=not last) * f(v).astype(v.dtype)).sum()
    _same(jax.jit(jax.grad(loss))(xs), jax.grad(loss)(x))


_ROIS = np.array([[0, 0, 4, 4], [1, 1, 8, 6], [2.5, 0.5, 9, 9], [0, 3, 5, 8]], np.float32)
_IMAGES = np.array([0, 2, 3, 1], np.int32)
_UNPOOL_I = np.broadcast_to((np.arange(6)[:, None] * 24 + np.arange(6) * 2).reshape(1, 1, 6, 6),
                            (4, 8, 6, 6)).astype(np.int64)
_SCATTER_I = np.random.default_rng(5).integers(0, 12, (4, 8, 12, 3)).astype(np.int64)

#: every operator that takes a planned call, with what it differentiates: (function, reverse,
#: forward)
REPLICATED = {
    "TopK": (lambda v: onnx.top_k(v, 3, axis=-1)[0], True, True),
    "ArgMax": (lambda v: onnx.arg_max(v, axis=1), False, False),
    "SegmentMax": (lambda v: ov.segment_max(v, np.array([0, 0, 1, 3], np.int32),
                                            num_segments=4, fill_mode="ZERO"), True, True),
    "ScatterElements max": (lambda v: onnx.scatter_elements(v, _SCATTER_I, v[..., :3], axis=3,
                                                            reduction="max"), True, False),
    "MaxPool 3x3 stride 1": (lambda v: onnx.max_pool(v, kernel_shape=(3, 3)), True, True),
    "MaxPool ceil": (lambda v: onnx.max_pool(v, kernel_shape=(3, 3), strides=(2, 2),
                                             ceil_mode=1), True, True),
    "GlobalMaxPool": (onnx.global_max_pool, True, True),
    "AdaptiveMaxPool-8": (lambda v: ov.adaptive_max_pool(v, [5, 3])[0], True, True),
    "MaxUnpool": (lambda v: onnx.max_unpool(v[:, :, :6, :6], _UNPOOL_I, kernel_shape=(2, 2),
                                            strides=(2, 2)), True, True),
    "RoiAlign sr 2": (lambda v: onnx.roi_align(v, _ROIS, _IMAGES, mode="max", output_height=2,
                                               output_width=2, sampling_ratio=2), True, True),
    "RoiAlign sr 0": (lambda v: onnx.roi_align(v, _ROIS, _IMAGES, output_height=2,
                                               output_width=2, sampling_ratio=0), True, False),
    "MaxRoiPool": (lambda v: onnx.max_roi_pool(
        v, np.concatenate([_IMAGES[:, None].astype(np.float32), _ROIS], 1),
        pooled_shape=(2, 2)), True, False),
}


@pytest.mark.parametrize("name", sorted(REPLICATED))
def test_replicated_inputs_on_an_explicit_mesh(name):
    """A replicated input on an ``Explicit`` mesh set with ``jax.set_mesh`` (no mesh axis in its
    type: the planned call, which plans nothing here). With JAX 0.12 every one of these programs
    failed to compile ("No registered implementation for untyped custom call to Sharding": the
    per-device function was traced under the mesh, and its ops carried the mesh's sharding),
    except SegmentMax's and GlobalMaxPool's derivatives, and MaxPool's aborted the process in
    XLA's partitioner; JAX 0.10 compiled them. Values, gradients and tangents are the unsharded
    bits."""
    f, reverse, forward = REPLICATED[name]
    x = tricky(7, (4, 8, 12, 12))
    t = tricky(8, x.shape)
    w = np.random.default_rng(9).standard_normal(np.shape(f(x))).astype(np.float32)

    def loss(v):
        return (f(v) * w).sum()

    mesh = jax.make_mesh((4,), ("d",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:4])
    runs = {"values": jax.jit(f)}
    if reverse:
        runs["grad"] = jax.jit(jax.grad(loss))
    if forward:
        runs["jvp"] = jax.jit(lambda v, u: jax.jvp(f, (v,), (u,))[1])
    for kind, run in runs.items():
        args = (x, t) if kind == "jvp" else (x,)
        expected = run(*args)
        with jax.set_mesh(mesh):
            got = run(*(jax.device_put(a, NamedSharding(mesh, P())) for a in args))
        _same(got, expected)
