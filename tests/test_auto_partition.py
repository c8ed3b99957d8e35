"""TopK, SegmentMax, the ROI operators, ReduceMax (GlobalMaxPool) and ArgMax on ``Auto`` mesh
axes (jaxmax/_src/auto_partition.py): the per-device forms chosen once XLA knows the sharding give
the one-device answer bit for bit under ``jit``, under ``vmap`` (where the computation runs
unwrapped) and through ``grad``; their collectives are in tests/test_collectives.py, their runs
across processes in tests/test_multiprocess.py."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from multiprocess_cases import tricky

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


@pytest.mark.parametrize("name", sorted(ROI))
def test_roi_operators_on_auto_axes(name):
    """The images sharded along the batch (each ROI answered on the device holding its image,
    the owners' bits summed), the ROIs and batch indices replicated."""
    f = ROI[name]
    rng = np.random.default_rng(6)
    x = tricky(7, (8, 3, 9, 10))
    boxes = np.sort(rng.uniform(-2, 11, (12, 2, 2)), axis=1).reshape(12, 4).astype(np.float32)
    batch = rng.integers(0, 8, 12).astype(np.int32)
    xs = jax.device_put(x, NamedSharding(_mesh(), P("d")))
    _same(jax.jit(f)(xs, boxes, batch), f(x, boxes, batch))

    def loss(v):
        return (f(v, boxes, batch) * np.float32(1.5)).sum()
    _same(jax.jit(jax.grad(loss))(xs), jax.grad(loss)(x))
    pair = np.stack([x, -x])
    pairs = jax.device_put(pair, NamedSharding(_mesh(), P(None, "d")))
    batched = jax.vmap(f, in_axes=(0, None, None))
    _same(jax.jit(batched)(pairs, boxes, batch), batched(pair, boxes, batch))


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
    # positive weights: with negative ones the zeros off the maxima of OpenVINO's rule differ
    # in sign between this eager one-device gradient and a jitted one (main as well)
    w = (np.abs(np.random.default_rng(2).standard_normal(np.shape(f(x)))) + 0.5).astype(dtype)

    def loss(v):
        return (f(v) * w).sum().astype(np.float32)
    _same(jax.jit(jax.grad(loss))(xs), jax.grad(loss)(x))
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
