"""Sharded inputs give exactly the unsharded answer, eagerly and under ``jax.jit``.

``tests/conftest.py`` configures eight simulated CPU devices before JAX starts. Every input
here is laid out with a ``NamedSharding`` over a ``Mesh`` of those devices; each result is
compared exactly with a NumPy oracle (written here, independent of jaxmax) and with the
unsharded jaxmax result.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from jaxmax import onnx
from jaxmax import openvino as ov

NAN = np.nan
INF = np.inf


# --------------------------------------------------------------------------------------------
# NumPy oracles
# --------------------------------------------------------------------------------------------

def lowest(dtype):
    return np.array(jnp.finfo(dtype).min if jnp.issubdtype(dtype, jnp.floating)
                    else jnp.iinfo(dtype).min, dtype)


def oracle_ov_reduce_max(x, axes, keep_dims=False):
    """ReduceMax-1: max(lowest(T), the non-NaN elements of the slice)."""
    wide = np.where(np.isnan(x), -INF, x.astype(np.float64))
    out = np.max(wide, axis=axes, initial=-INF, keepdims=keep_dims)
    return np.maximum(out, float(lowest(x.dtype))).astype(x.dtype)


def oracle_onnx_reduce_max(x, axes, keepdims):
    return np.max(x, axis=axes, keepdims=bool(keepdims), initial=-INF).astype(x.dtype)


def oracle_ov_max_pool(x, kernel, strides, pads_begin, pads_end, rounding_type="floor"):
    """MaxPool-1 over explicit pads by a loop over windows (kernel etc. per spatial axis)."""
    spatial = x.shape[2:]
    out_shape = []
    for size, k, s, lo, hi in zip(spatial, kernel, strides, pads_begin, pads_end):
        span = size + lo + hi - k
        out_shape.append((-(-span // s) if rounding_type == "ceil" else span // s) + 1)
    out = np.empty(x.shape[:2] + tuple(out_shape), x.dtype)
    for idx in np.ndindex(*out_shape):
        sl = tuple(slice(max(i * s - lo, 0), max(min(i * s - lo + k, size), 0))
                   for i, size, k, s, lo in zip(idx, spatial, kernel, strides, pads_begin))
        win = x[(slice(None), slice(None)) + sl].reshape(x.shape[0], x.shape[1], -1)
        win = np.where(np.isnan(win), -INF, win.astype(np.float64))
        m = np.max(win, axis=-1, initial=-INF)
        out[(slice(None), slice(None)) + idx] = np.maximum(m, float(lowest(x.dtype)))
    return out


def oracle_ov_segment_max(data, ids, num_segments, fill_mode):
    out = np.empty((num_segments,) + data.shape[1:], data.dtype)
    for j in range(num_segments):
        rows = data[ids == j]
        if rows.shape[0] == 0:
            out[j] = 0 if fill_mode == "ZERO" else lowest(data.dtype)
        else:
            m = np.max(np.where(np.isnan(rows), -INF, rows.astype(np.float64)), axis=0)
            out[j] = np.maximum(m, float(lowest(data.dtype)))
    return out


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

def special_floats(seed, shape, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10
    u = rng.random(shape)
    x[u < 0.1] = NAN
    x[(u >= 0.1) & (u < 0.2)] = -INF
    x[(u >= 0.2) & (u < 0.23)] = INF
    return x.astype(dtype)


def mesh_1d():
    return Mesh(np.array(jax.devices()), ("x",))


def mesh_2d():
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("a", "b"))


def shard(x, mesh, spec):
    """`x` laid out over `mesh`; checks the layout really splits it as asked."""
    arr = jax.device_put(x, NamedSharding(mesh, spec))
    assert arr.sharding.spec == spec
    assert len({s.device for s in arr.addressable_shards}) == 8
    split = [dim for dim, name in enumerate(spec) if name is not None]
    for dim in split:  # every split axis is cut into more than one piece
        assert len({s.index[dim].indices(x.shape[dim]) for s in arr.addressable_shards}) > 1
    return arr


def assert_same(actual, expected):
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, \
        (actual.dtype, actual.shape, expected.dtype, expected.shape)
    np.testing.assert_array_equal(actual, expected)


def check_sharded(fn, args, expected):
    """`fn` on the unsharded inputs, eagerly on the sharded ones, and jitted on the sharded
    ones: all equal `expected` exactly."""
    sharded, plain = args
    assert_same(fn(*plain), expected)
    assert_same(fn(*sharded), expected)
    assert_same(jax.jit(fn)(*sharded), expected)


def test_eight_cpu_devices():
    assert len(jax.devices()) == 8
    assert {d.platform for d in jax.devices()} == {"cpu"}


# --------------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------------

REDUCTION_LAYOUTS = [
    # (mesh, spec, axes, keep): sharded over a reduced axis, over a kept axis, both
    ("1d", P("x"), (0,), False),
    ("1d", P("x"), (0, 2), True),
    ("1d", P(None, "x"), (2,), False),
    ("1d", P("x"), (1,), True),
    ("2d", P("a", "b"), (1,), False),
    ("2d", P(None, "a", "b"), (0, 1), False),
]


def _mesh(name):
    return mesh_1d() if name == "1d" else mesh_2d()


def reduction_data(seed, with_nan):
    """(8, 8, 4) float32 with -inf, +inf, an all -inf slice along axes 0 and 1 and, if
    `with_nan`, NaN spread over every shard plus an all-NaN slice along axis 0."""
    x = special_floats(seed, (8, 8, 4))
    x[2, :, 0] = -INF
    x[:, 6, 3] = -INF
    if with_nan:
        x[:, 3, 1] = NAN
    else:
        x[np.isnan(x)] = 0.25
    return x


@pytest.mark.parametrize("with_nan", [False, True])
@pytest.mark.parametrize("mesh,spec,axes,keep", REDUCTION_LAYOUTS)
def test_ov_reduce_max_sharded(mesh, spec, axes, keep, with_nan):
    """NaN never wins (OpenVINO rule), also when the slice is split over devices."""
    x = reduction_data(1, with_nan=with_nan)
    xs = shard(x, _mesh(mesh), spec)
    check_sharded(lambda d: ov.reduce_max(d, axes, keep_dims=keep), ((xs,), (x,)),
                  oracle_ov_reduce_max(x, axes, keep))


@pytest.mark.parametrize("mesh,spec,axes,keep", REDUCTION_LAYOUTS[::2] + REDUCTION_LAYOUTS[3:4])
def test_ov_reduce_logical_or_sharded(mesh, spec, axes, keep):
    x = np.random.default_rng(2).random((8, 8, 4)) < 0.08
    xs = shard(x, _mesh(mesh), spec)
    expected = np.any(x, axis=axes, keepdims=keep)
    check_sharded(lambda d: ov.reduce_logical_or(d, axes, keep_dims=keep), ((xs,), (x,)),
                  expected)


ONNX_LAYOUTS = REDUCTION_LAYOUTS[:3] + REDUCTION_LAYOUTS[4:5]


@pytest.mark.parametrize("mesh,spec,axes,keep", ONNX_LAYOUTS)
def test_onnx_reduce_max_sharded(mesh, spec, axes, keep):
    x = reduction_data(3, with_nan=False)  # -inf stays -inf (ONNX)
    xs = shard(x, _mesh(mesh), spec)
    check_sharded(lambda d: onnx.reduce_max(d, axes, keepdims=int(keep)), ((xs,), (x,)),
                  oracle_onnx_reduce_max(x, axes, keep))


@pytest.mark.parametrize("mesh,spec,axes,keep", ONNX_LAYOUTS)
def test_onnx_reduce_max_sharded_with_nan(mesh, spec, axes, keep):
    """NaN propagates (ONNX), also when only some devices hold a NaN."""
    x = reduction_data(3, with_nan=False)
    x[4:, 1, :2] = NAN  # only on the devices holding rows 4..7
    x[0, 5, 3] = NAN  # a single NaN on one device
    xs = shard(x, _mesh(mesh), spec)
    check_sharded(lambda d: onnx.reduce_max(d, axes, keepdims=int(keep)), ((xs,), (x,)),
                  oracle_onnx_reduce_max(x, axes, keep))


# --------------------------------------------------------------------------------------------
# MaxPool
# --------------------------------------------------------------------------------------------

POOL_ATTRS = [
    dict(kernel=(3, 3), strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1)),
    dict(kernel=(2, 3), strides=(2, 2), pads_begin=(0, 1), pads_end=(1, 2), rounding_type="ceil"),
]


@pytest.mark.parametrize("layout", ["batch", "channel", "height"])
@pytest.mark.parametrize("attrs", POOL_ATTRS, ids=["floor", "ceil"])
def test_ov_max_pool_sharded(layout, attrs):
    shape, spec = {
        "batch": ((8, 2, 7, 9), P("x")),
        "channel": ((2, 8, 7, 9), P(None, "x")),
        "height": ((1, 2, 16, 9), P(None, None, "x")),  # windows cross shard boundaries
    }[layout]
    x = special_floats(4, shape)
    x[0, 1] = -INF  # a channel of only -inf: every window raised to lowest(T)
    xs = shard(x, mesh_1d(), spec)
    expected = oracle_ov_max_pool(x, **attrs)
    check_sharded(lambda d: ov.max_pool(d, **attrs), ((xs,), (x,)), expected)


def test_ov_max_pool_sharded_gradient():
    """The tie-laden gradient on batch-sharded data is the unsharded gradient."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, (8, 2, 6, 6)).astype(np.float32)
    ct = rng.integers(1, 4, (8, 2, 3, 3)).astype(np.float32)
    attrs = POOL_ATTRS[0]

    @jax.jit
    def grad(d, c):
        return jax.vjp(lambda v: ov.max_pool(v, **attrs), d)[1](c)[0]

    mesh = mesh_1d()
    expected = np.asarray(grad(x, ct))
    got = grad(shard(x, mesh, P("x")), shard(ct, mesh, P("x")))
    np.testing.assert_array_equal(np.asarray(got), expected)
    # and the unsharded gradient follows the first-maximal rule (a hand loop)
    hand = np.zeros_like(x)
    for b, c, i, j in itertools.product(range(8), range(2), range(3), range(3)):
        window = [(r, q) for r in range(2 * i - 1, 2 * i + 2) for q in range(2 * j - 1, 2 * j + 2)
                  if 0 <= r < 6 and 0 <= q < 6]
        values = [x[b, c, r, q] for r, q in window]
        r, q = window[int(np.argmax(values))]  # argmax: the first maximal, row-major
        hand[b, c, r, q] += ct[b, c, i, j]
    np.testing.assert_array_equal(expected, hand)


# --------------------------------------------------------------------------------------------
# SegmentMax
# --------------------------------------------------------------------------------------------

IDS = np.array([0, 0, 1, 1, 1, 3, 3, 3, 3, 5, 6, 6, 6, 6, 7, 9])  # empty segments 2, 4, 8


@pytest.mark.parametrize("num_segments,fill_mode", [(10, "ZERO"), (7, "LOWEST")])
def test_ov_segment_max_feature_sharded(num_segments, fill_mode):
    data = special_floats(6, (16, 16))
    data[0:2, 3] = NAN  # segment 0, feature 3: all NaN -> lowest(T)
    data[5:9, 4] = -INF  # segment 3, feature 4: all -inf -> lowest(T)
    data[2:5, 5] = -7.0  # a negative real maximum survives fill ZERO
    mesh = mesh_1d()
    ds = shard(data, mesh, P(None, "x"))
    expected = oracle_ov_segment_max(data, IDS, num_segments, fill_mode)
    # ids closed over (concrete)
    check_sharded(lambda d: ov.segment_max(d, IDS, num_segments, fill_mode=fill_mode),
                  ((ds,), (data,)), expected)
    # ids as a (replicated) traced argument
    ids_rep = jax.device_put(IDS, NamedSharding(mesh, P()))
    check_sharded(lambda d, i: ov.segment_max(d, i, num_segments, fill_mode=fill_mode),
                  ((ds, ids_rep), (data, IDS)), expected)


def test_ov_segment_max_sharded_3d_features():
    data = special_floats(7, (16, 4, 8))
    expected = oracle_ov_segment_max(data, IDS, 10, "LOWEST")
    fn = lambda d, i: ov.segment_max(d, i, 10, fill_mode="LOWEST")
    ds = shard(data, mesh_2d(), P(None, "a", "b"))  # features split over a 2-D mesh
    check_sharded(fn, ((ds, IDS), (data, IDS)), expected)


@pytest.mark.parametrize("with_nan", [False, True])
def test_ov_segment_max_sharded_rows(with_nan):
    """The segmented axis itself split over devices (segments straddle devices)."""
    data = special_floats(8, (16, 8))
    if not with_nan:
        data[np.isnan(data)] = 0.25
    expected = oracle_ov_segment_max(data, IDS, 10, "ZERO")
    mesh = mesh_1d()
    fn = lambda d, i: ov.segment_max(d, i, 10, fill_mode="ZERO")
    check_sharded(fn, ((shard(data, mesh, P("x")), shard(IDS, mesh, P("x"))), (data, IDS)),
                  expected)
