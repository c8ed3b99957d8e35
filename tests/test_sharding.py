"""Sharded inputs give exactly the unsharded answer, eagerly and under ``jax.jit``.

``tests/conftest.py`` configures eight simulated CPU devices before JAX starts. Every input
here is laid out with a ``NamedSharding`` over a mesh of those devices, once with ``Explicit``
axes (what ``jax.make_mesh`` builds by default) and once with ``Auto`` axes; each result is
compared exactly with a NumPy oracle (tests/*_oracle.py, independent of jaxmax) and with the
unsharded jaxmax result. On ``Explicit`` axes the output's sharding is part of its type, and
it must be the one the README documents (kept axes keep their sharding).

Cases that differ only in their data (with and without NaN, ONNX ReduceMax with and without
NaN) share one jitted function (`_jit`, and the cached call factories below), so each program is
traced and compiled once and run on each data set; the loop oracles of the large leading-axis
fold are computed once per data set and axes, and its two faces (OpenVINO's and ONNX's
ReduceMax) run jitted in one program (each face still eagerly on its own).
"""

from __future__ import annotations

import functools
import math

import jax
import numpy as np
import pytest
from helpers import assert_same, special_floats
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from pool_oracle import max_pool_1, max_pool_1_grad
from reduce_oracle import onnx_reduce_max, openvino_reduce_max, openvino_reduce_or
from segment_oracle import segment_max

from jaxmax import onnx
from jaxmax import openvino as ov

NAN = np.nan
INF = np.inf


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

def special_data(seed, shape):
    """float32 normals (scale 10) with about 10% NaN, 10% -inf and 3% +inf."""
    return special_floats(np.random.default_rng(seed), shape, p_nan=0.1, p_ninf=0.1, p_inf=0.03)


AXIS_TYPES = [AxisType.Explicit, AxisType.Auto]


@pytest.fixture(params=AXIS_TYPES, ids=["explicit", "auto"])
def axis_type(request):
    return request.param


def mesh_1d(axis_type=AxisType.Explicit):
    return jax.make_mesh((8,), ("x",), axis_types=(axis_type,))


def mesh_2d(axis_type=AxisType.Explicit):
    return jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)


def shard(x, mesh, spec):
    """`x` laid out over `mesh`; checks the layout really splits it as asked."""
    arr = jax.device_put(x, NamedSharding(mesh, spec))
    assert arr.sharding.spec == spec
    assert len({s.device for s in arr.addressable_shards}) == 8
    split = [dim for dim, name in enumerate(spec) if name is not None]
    for dim in split:  # every split axis is cut into more than one piece
        assert len({s.index[dim].indices(x.shape[dim]) for s in arr.addressable_shards}) > 1
    return arr


def _padded(spec, ndim):
    spec = tuple(spec)
    return spec + (None,) * (ndim - len(spec))


def check_sharded(fn, args, expected, out_spec=None, *, jit=True, context=""):
    """`fn` on the unsharded inputs, eagerly on the sharded ones, and (unless not `jit`: the
    caller jits it) jitted on the sharded ones: all equal `expected` exactly. When an input is
    sharded over ``Explicit`` axes, the output's sharding must be `out_spec`."""
    sharded, plain = args
    assert_same(fn(*plain), expected, f"{context} unsharded")
    explicit = any(isinstance(a, jax.Array) and isinstance(a.sharding, NamedSharding)
                   and AxisType.Explicit in a.sharding.mesh.axis_types for a in sharded)
    for run, how in ((fn, "eager"), (_jit(fn), "jit"))[:2 if jit else 1]:
        out = run(*sharded)
        assert_same(out, expected, f"{context} {how}")
        if explicit and out_spec is not None:
            assert _padded(out.sharding.spec, out.ndim) == _padded(out_spec, out.ndim), \
                (context, how, out.sharding.spec, out_spec)


@functools.cache
def _jit(fn):
    """``jax.jit(fn)``, one a function: the calls below that share `fn` and differ only in their
    data run one compiled program."""
    return jax.jit(fn)


@functools.cache
def _ov_reduce_max(axes, keep):
    return lambda d: ov.reduce_max(d, axes, keep_dims=keep)


@functools.cache
def _onnx_reduce_max(axes, keep):
    return lambda d: onnx.reduce_max(d, axes, keepdims=int(keep))


def _reduced_spec(spec, ndim, axes, keep):
    spec = _padded(spec, ndim)
    if keep:
        return tuple(None if i in axes else e for i, e in enumerate(spec))
    return tuple(e for i, e in enumerate(spec) if i not in axes)


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


def _mesh(name, axis_type):
    return mesh_1d(axis_type) if name == "1d" else mesh_2d(axis_type)


def reduction_data(seed, with_nan):
    """(8, 8, 4) float32 with -inf, +inf, an all -inf slice along axes 0 and 1 and, if
    `with_nan`, NaN spread over every shard plus an all-NaN slice along axis 0."""
    x = special_data(seed, (8, 8, 4))
    x[2, :, 0] = -INF
    x[:, 6, 3] = -INF
    if with_nan:
        x[:, 3, 1] = NAN
    else:
        x[np.isnan(x)] = 0.25
    return x


@pytest.mark.parametrize("with_nan", [False, True])
@pytest.mark.parametrize("mesh,spec,axes,keep", REDUCTION_LAYOUTS)
def test_ov_reduce_max_sharded(mesh, spec, axes, keep, with_nan, axis_type):
    """NaN never wins (OpenVINO rule), also when the slice is split over devices."""
    x = reduction_data(1, with_nan=with_nan)
    xs = shard(x, _mesh(mesh, axis_type), spec)
    check_sharded(_ov_reduce_max(axes, keep), ((xs,), (x,)),
                  openvino_reduce_max(x, axes, keep), _reduced_spec(spec, 3, axes, keep))


@pytest.mark.parametrize("with_nan", [False, True])
@pytest.mark.parametrize("spec,axes", [(P("x"), (0,)), (P(None, "x"), (0,)),
                                       (P(None, None, "x"), (0, 1))])
def test_ov_reduce_max_leading_axis_fold_sharded(spec, axes, with_nan, axis_type):
    """The CPU fold of leading axes (a kept block of 65536 elements) on sharded data."""
    x = _fold_data(with_nan)
    xs = shard(x, mesh_1d(axis_type), spec)
    ov_want, onnx_want = _fold_oracles(axes, with_nan)
    out_spec = _reduced_spec(spec, 3, axes, False)
    # eagerly, each face alone
    for fn, want, face in ((_ov_reduce_max(axes, False), ov_want, "OpenVINO"),
                           (_onnx_reduce_max(axes, False), onnx_want, "ONNX")):
        check_sharded(fn, ((xs,), (x,)), want, out_spec, jit=False, context=face)
    # under jax.jit, both faces in one program (one compile of the million-element fold's
    # sharded form instead of two; the two computations share nothing but the input)
    got_ov, got_onnx = _jit(_both_reduce_max(axes))(xs)
    for got, want, face in ((got_ov, ov_want, "OpenVINO"), (got_onnx, onnx_want, "ONNX")):
        assert_same(got, want, f"jit {face}")
        if axis_type == AxisType.Explicit:
            assert _padded(got.sharding.spec, got.ndim) == _padded(out_spec, got.ndim), \
                (face, got.sharding.spec, out_spec)


@functools.cache
def _both_reduce_max(axes):
    return lambda d: (ov.reduce_max(d, axes), onnx.reduce_max(d, axes, keepdims=0))


@functools.cache
def _fold_data(with_nan):
    x = special_data(11, (16, 64, 1024))
    if not with_nan:
        x[np.isnan(x)] = 0.5
    x.flags.writeable = False  # shared by the tests
    return x


@functools.cache
def _fold_oracles(axes, with_nan):
    """The loop oracles' answers on `_fold_data(with_nan)` (a million elements each): OpenVINO's
    and ONNX's."""
    x = _fold_data(with_nan)
    return openvino_reduce_max(x, axes), onnx_reduce_max(x, axes, False)


@pytest.mark.parametrize("mesh,spec,axes,keep", REDUCTION_LAYOUTS[::2] + REDUCTION_LAYOUTS[3:4])
def test_ov_reduce_logical_or_sharded(mesh, spec, axes, keep, axis_type):
    x = np.random.default_rng(2).random((8, 8, 4)) < 0.08
    xs = shard(x, _mesh(mesh, axis_type), spec)
    expected = openvino_reduce_or(x, axes, keep)
    check_sharded(lambda d: ov.reduce_logical_or(d, axes, keep_dims=keep), ((xs,), (x,)),
                  expected, _reduced_spec(spec, 3, axes, keep))


ONNX_LAYOUTS = REDUCTION_LAYOUTS[:3] + REDUCTION_LAYOUTS[4:5]


@pytest.mark.parametrize("mesh,spec,axes,keep", ONNX_LAYOUTS)
def test_onnx_reduce_max_sharded(mesh, spec, axes, keep, axis_type):
    x = reduction_data(3, with_nan=False)  # -inf stays -inf (ONNX)
    xs = shard(x, _mesh(mesh, axis_type), spec)
    check_sharded(_onnx_reduce_max(axes, keep), ((xs,), (x,)),
                  onnx_reduce_max(x, axes, keep), _reduced_spec(spec, 3, axes, keep))


@pytest.mark.parametrize("mesh,spec,axes,keep", ONNX_LAYOUTS)
def test_onnx_reduce_max_sharded_with_nan(mesh, spec, axes, keep, axis_type):
    """NaN propagates (ONNX), also when only some devices hold a NaN."""
    x = reduction_data(3, with_nan=False)
    x[4:, 1, :2] = NAN  # only on the devices holding rows 4..7
    x[0, 5, 3] = NAN  # a single NaN on one device
    xs = shard(x, _mesh(mesh, axis_type), spec)
    check_sharded(_onnx_reduce_max(axes, keep), ((xs,), (x,)),
                  onnx_reduce_max(x, axes, keep), _reduced_spec(spec, 3, axes, keep))


# --------------------------------------------------------------------------------------------
# MaxPool
# --------------------------------------------------------------------------------------------

POOL_ATTRS = [
    dict(kernel=(3, 3), strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1)),
    dict(kernel=(2, 3), strides=(2, 2), pads_begin=(0, 1), pads_end=(1, 2), rounding_type="ceil"),
]


POOL_LAYOUTS = {
    # name: (shape, mesh, spec, attrs (None: each POOL_ATTRS case))
    "batch": ((8, 2, 7, 9), "1d", P("x"), None),
    "channel": ((2, 8, 7, 9), "1d", P(None, "x"), None),
    "height": ((1, 2, 16, 9), "1d", P(None, None, "x"), None),  # windows cross shards
    "height-width": ((1, 2, 16, 12), "2d", P(None, None, "a", "b"), None),
    "k2s2 batch-channel": ((4, 4, 8, 8), "2d", P("a", "b"), dict(kernel=2, strides=2)),
    "1-D": ((2, 8, 33), "1d", P(None, "x"), dict(kernel=3, strides=2, rounding_type="ceil")),
    "3-D": ((2, 8, 5, 6, 7), "1d", P(None, "x"),
            dict(kernel=3, strides=2, pads_begin=1, pads_end=1)),
}


def _pool_out_spec(spec, mesh, out_shape):
    """The documented output sharding: each axis keeps its sharding when its output length
    divides evenly over its mesh axes, and is replicated otherwise."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes, strict=True))
    out = []
    for entry, n in zip(_padded(spec, len(out_shape)), out_shape, strict=True):
        names = () if entry is None else (entry,) if isinstance(entry, str) else entry
        out.append(entry if n % math.prod(sizes[a] for a in names) == 0 else None)
    return tuple(out)


POOL_CASES = [pytest.param(name, attrs, id=f"{name}-{label}")
              for name, (_, _, _, own) in sorted(POOL_LAYOUTS.items())
              for label, attrs in ([("own", own)] if own else
                                   [("floor", POOL_ATTRS[0]), ("ceil", POOL_ATTRS[1])])]


@pytest.mark.parametrize("layout,attrs", POOL_CASES)
def test_ov_max_pool_sharded(layout, attrs, axis_type):
    shape, mesh_name, spec, _ = POOL_LAYOUTS[layout]
    x = special_data(4, shape)
    x[0, 1] = -INF  # a channel of only -inf: every window raised to lowest(T)
    mesh = _mesh(mesh_name, axis_type)
    xs = shard(x, mesh, spec)
    expected = max_pool_1(x, **attrs)
    check_sharded(lambda d: ov.max_pool(d, **attrs), ((xs,), (x,)), expected,
                  _pool_out_spec(spec, mesh, expected.shape))


def test_ov_max_pool_sharded_gradient(axis_type):
    """The tie-laden gradient on batch-sharded data is the unsharded gradient."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, (8, 2, 6, 6)).astype(np.float32)
    ct = rng.integers(1, 4, (8, 2, 3, 3)).astype(np.float32)
    attrs = POOL_ATTRS[0]

    @jax.jit
    def grad(d, c):
        return jax.vjp(lambda v: ov.max_pool(v, **attrs), d)[1](c)[0]

    mesh = mesh_1d(axis_type)
    expected = np.asarray(grad(x, ct))
    got = grad(shard(x, mesh, P("x")), shard(ct, mesh, P("x")))
    np.testing.assert_array_equal(np.asarray(got), expected)
    # and the unsharded gradient follows the first-maximal rule (the oracle's hand loop)
    np.testing.assert_array_equal(expected, max_pool_1_grad(x, ct, **attrs))


# --------------------------------------------------------------------------------------------
# SegmentMax
# --------------------------------------------------------------------------------------------

IDS = np.array([0, 0, 1, 1, 1, 3, 3, 3, 3, 5, 6, 6, 6, 6, 7, 9])  # empty segments 2, 4, 8


@pytest.mark.parametrize("num_segments,fill_mode", [(10, "ZERO"), (7, "LOWEST")])
def test_ov_segment_max_feature_sharded(num_segments, fill_mode, axis_type):
    data = special_data(6, (16, 16))
    data[0:2, 3] = NAN  # segment 0, feature 3: all NaN -> lowest(T)
    data[5:9, 4] = -INF  # segment 3, feature 4: all -inf -> lowest(T)
    data[2:5, 5] = -7.0  # a negative real maximum survives fill ZERO
    mesh = mesh_1d(axis_type)
    ds = shard(data, mesh, P(None, "x"))
    expected = segment_max(data, IDS, num_segments, fill_mode)
    # ids closed over (concrete)
    check_sharded(lambda d: ov.segment_max(d, IDS, num_segments, fill_mode=fill_mode),
                  ((ds,), (data,)), expected, P(None, "x"))
    # ids as a (replicated) traced argument
    ids_rep = jax.device_put(IDS, NamedSharding(mesh, P()))
    check_sharded(lambda d, i: ov.segment_max(d, i, num_segments, fill_mode=fill_mode),
                  ((ds, ids_rep), (data, IDS)), expected, P(None, "x"))


def test_ov_segment_max_sharded_3d_features(axis_type):
    data = special_data(7, (16, 4, 8))
    expected = segment_max(data, IDS, 10, "LOWEST")

    def fn(d, i):
        return ov.segment_max(d, i, 10, fill_mode="LOWEST")

    ds = shard(data, mesh_2d(axis_type), P(None, "a", "b"))  # features split over a 2-D mesh
    check_sharded(fn, ((ds, IDS), (data, IDS)), expected, P(None, "a", "b"))


def _segment_max_zero_10(d, i):
    return ov.segment_max(d, i, 10, fill_mode="ZERO")


@pytest.mark.parametrize("with_nan", [False, True])
def test_ov_segment_max_sharded_rows(with_nan, axis_type):
    """The segmented axis itself split over devices (segments straddle devices); the output's
    segment axis is replicated."""
    data = special_data(8, (16, 8))
    if not with_nan:
        data[np.isnan(data)] = 0.25
    expected = segment_max(data, IDS, 10, "ZERO")
    mesh = mesh_1d(axis_type)
    fn = _segment_max_zero_10
    check_sharded(fn, ((shard(data, mesh, P("x")), shard(IDS, mesh, P("x"))), (data, IDS)),
                  expected, P(None, None))
    # rows and features both split, ids replicated
    both = shard(data, mesh_2d(axis_type), P("a", "b"))
    check_sharded(fn, ((both, IDS), (data, IDS)), expected, P(None, "b"))


def test_readme_scaling_out_example_on_the_default_mesh():
    """The README's example, on the mesh ``jax.make_mesh`` builds by default (Explicit axes in
    jax 0.10)."""
    mesh = jax.make_mesh((8,), ("batch",))
    x = np.random.default_rng(0).standard_normal((64, 16, 32, 32), dtype=np.float32)
    xs = jax.device_put(x, NamedSharding(mesh, P("batch")))

    @jax.jit
    def features(x):
        pooled = ov.max_pool(x, kernel=3, strides=2, auto_pad="same_upper")
        ids = np.repeat(np.arange(8), 2)
        grouped = ov.segment_max(pooled.transpose(1, 0, 2, 3), ids, num_segments=8,
                                 fill_mode="ZERO")
        return ov.reduce_max(grouped, axes=[2, 3])

    y = features(xs)
    assert y.shape == (8, 64)
    assert _padded(y.sharding.spec, 2) == (None, "batch")
    pooled = max_pool_1(x, (3, 3), (2, 2), (0, 0), (1, 1))
    grouped = segment_max(pooled.transpose(1, 0, 2, 3), np.repeat(np.arange(8), 2),
                                    8, "ZERO")
    np.testing.assert_array_equal(np.asarray(y), grouped.max(axis=(2, 3)))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(features(x)))


@pytest.mark.parametrize("specs", [(P(None, "x"), P()), (P(), P(None, None, "x")),
                                   (P("x"), P("x"))], ids=["a sharded", "b sharded", "both"])
def test_ov_maximum_inputs_sharded_differently(specs, axis_type):
    """Maximum-1's select on operands of different shardings (one replicated): on Explicit axes
    a select needs one sharding, and it raised ShardingTypeError before. Bits compared: a tie of
    -0.0 and +0.0 keeps `a`."""
    rng = np.random.default_rng(5)
    # -1, -0.0 and +0.0 (0 * negative is -0.0), ties everywhere
    a = (rng.integers(-2, 3, (8, 8, 8)) * 0.0 - rng.integers(0, 2, (8, 8, 8))).astype(np.float32)
    b = (rng.integers(-2, 3, (8, 8, 8)) * 0.0 - rng.integers(0, 2, (8, 8, 8))).astype(np.float32)
    a[rng.random(a.shape) < 0.1] = NAN
    b[rng.random(b.shape) < 0.1] = NAN
    want = np.where(a < b, b, a)  # the spec's a < b ? b : a
    mesh = mesh_1d(axis_type)
    args = [jax.device_put(v, NamedSharding(mesh, s)) for v, s in zip((a, b), specs, strict=True)]
    for run in (ov.maximum, jax.jit(ov.maximum)):
        got = np.asarray(run(*args))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
