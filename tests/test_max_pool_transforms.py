"""MaxPool-8/-14, ONNX MaxPool and GlobalMaxPool under jit, vmap, grad and sharding.

* jit equals eager; vmap equals a Python loop;
* the gradient of the values is the cotangent scattered to the indices of the NumPy oracle
  (tests/pool_oracle.py), for dilated, ceil_torch and 3-D pools, where JAX's own
  ``reduce_window`` has no derivative;
* ``check_grads`` passes on inputs with distinct values;
* Explicit and Auto meshes on 8 CPU devices give the unsharded answer.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pool_oracle
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from jax.test_util import check_grads

from jaxmax import onnx
from jaxmax import openvino as ov

OV_CASES = {
    "2-D dilated ceil": dict(shape=(2, 3, 9, 8), kernel=3, strides=2, dilations=2, pads_begin=1,
                             pads_end=2, rounding_type="ceil", opset=8),
    "2-D ceil_torch axis 2": dict(shape=(2, 3, 7, 7), kernel=2, strides=2, pads_begin=1,
                                  pads_end=1, rounding_type="ceil_torch", axis=2, opset=14),
    "1-D same_lower dilated": dict(shape=(2, 3, 11), kernel=3, strides=2, dilations=3,
                                   auto_pad="same_lower", opset=14),
    "3-D k3 s2 p1": dict(shape=(1, 2, 6, 7, 8), kernel=3, strides=2, pads_begin=1, pads_end=1,
                         opset=14),
    "3-D dilated": dict(shape=(1, 2, 7, 7, 7), kernel=2, strides=1, dilations=(1, 2, 3),
                        opset=8, axis=-3),
}
ONNX_CASES = {
    "2-D dilated ceil storage 1": dict(shape=(2, 3, 9, 8), kernel_shape=[3, 3], strides=[2, 2],
                                       dilations=[2, 2], pads=[1, 1, 2, 2], ceil_mode=1,
                                       storage_order=1),
    "1-D same_upper": dict(shape=(2, 3, 11), kernel_shape=[3], strides=[2],
                           auto_pad="SAME_UPPER"),
    "3-D": dict(shape=(1, 2, 6, 7, 8), kernel_shape=[3, 3, 3], strides=[2, 2, 2],
                pads=[1, 1, 1, 1, 1, 1]),
    "4 spatial axes": dict(shape=(1, 1, 4, 5, 4, 5), kernel_shape=[2, 2, 2, 2],
                           strides=[2, 1, 2, 1], dilations=[1, 2, 1, 2]),
}


def _distinct(shape, seed):
    """Distinct finite float32 values: every window has one maximal element."""
    rng = np.random.default_rng(seed)
    return (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 7).astype(np.float32)


def _ov(case):
    attrs = {k: v for k, v in case.items() if k != "shape"}
    return lambda x: ov.max_pool(x, **attrs)


def _onnx(case):
    attrs = {k: v for k, v in case.items() if k != "shape"}
    return lambda x: onnx.max_pool(x, return_indices=True, **attrs)


def _ov_oracle_indices(case, x):
    """The oracle's MaxPool indices counted over the whole tensor (axis 0), for the scatter."""
    n_sp = x.ndim - 2

    def per_axis(name, default):
        return pool_oracle._per_axis(case.get(name), n_sp, default)

    pads = list(zip(per_axis("pads_begin", 0), per_axis("pads_end", 0), strict=True))
    return pool_oracle.openvino(x, per_axis("kernel", 1), per_axis("strides", 1), pads,
                                per_axis("dilations", 1), case.get("rounding_type", "floor"),
                                case.get("auto_pad", "explicit"), axis=0)[1]


def _onnx_oracle_indices(case, x):
    """The oracle's row-major flat ONNX MaxPool indices, for the scatter."""
    n_sp = x.ndim - 2
    return pool_oracle.onnx(x, case["kernel_shape"], case.get("strides", [1] * n_sp),
                            case.get("pads", [0] * 2 * n_sp), case.get("dilations"),
                            case.get("ceil_mode", 0), case.get("auto_pad", "NOTSET"))[1]


def _scatter(x, indices, ct):
    out = np.zeros(x.size, np.float32)
    np.add.at(out, indices.reshape(-1), ct.reshape(-1))
    return out.reshape(x.shape)


def _check_transforms(fn, x, other, scatter_indices):
    """jit equals eager, vmap equals a loop, the gradient of the values is the cotangent
    scattered at `scatter_indices(x)` (row-major flat indices over the whole input), and
    ``check_grads`` passes."""
    values, indices = fn(x)
    jv, ji = jax.jit(fn)(x)
    np.testing.assert_array_equal(jv, values)
    np.testing.assert_array_equal(ji, indices)
    batch = np.stack([x, other])
    # as NumPy arrays: indexing a jax.Array compiled a slice per row
    bv, bi = (np.asarray(a) for a in jax.vmap(fn)(batch))
    for b in range(2):
        lv, li = fn(batch[b])
        np.testing.assert_array_equal(bv[b], lv)
        np.testing.assert_array_equal(bi[b], li)
    # integer cotangents: their sums are exact in any order, so the comparison can be exact
    ct = np.random.default_rng(3).integers(1, 5, values.shape).astype(np.float32)
    # jitted: outside jit, jax.grad compiles the forward pass and each piece of its transpose
    # as programs of their own (the same operations)
    grad = jax.jit(jax.grad(lambda v: jnp.sum(fn(v)[0] * ct)))(x)
    np.testing.assert_array_equal(grad, _scatter(x, scatter_indices(x), ct))
    _check_grads_in_float64(lambda v: fn(v)[0], x)


def _check_grads_in_float64(fn, x):
    """``check_grads`` (forward and reverse mode against finite differences) in float64, where
    a step of 1e-3 on values 0.25 apart is far from every kink and rounding is negligible."""
    with jax.enable_x64(True):
        # jitted: each derivative one program, instead of the linearised and transposed pool
        # run primitive by primitive (a compile each); the same derivative rules
        check_grads(jax.jit(fn), (x.astype(np.float64),), order=1, modes=("fwd", "rev"),
                    eps=1e-3)


@pytest.mark.parametrize("name", sorted(OV_CASES))
def test_openvino_jit_vmap_and_gradient_at_the_indices(name):
    case = OV_CASES[name]
    _check_transforms(_ov(case), _distinct(case["shape"], 1), _distinct(case["shape"], 2),
                      lambda x: _ov_oracle_indices(case, x))


@pytest.mark.parametrize("name", sorted(ONNX_CASES))
def test_onnx_jit_vmap_and_gradient_at_the_indices(name):
    case = ONNX_CASES[name]
    _check_transforms(_onnx(case), _distinct(case["shape"], 4), _distinct(case["shape"], 5),
                      lambda x: _onnx_oracle_indices(case, x))


def test_onnx_gradient_routes_to_the_first_nan_and_the_first_minus_inf():
    x = np.array([[[1.0, np.nan, 5.0, np.nan, -np.inf, -np.inf]]], np.float32)
    y, indices = onnx.max_pool(x, kernel_shape=[2], strides=[2], return_indices=True)
    np.testing.assert_array_equal(y, [[[np.nan, np.nan, -np.inf]]])
    np.testing.assert_array_equal(indices, [[[1, 3, 4]]])
    # jitted, as in _check_transforms: one program, not the transpose piece by piece
    grad = jax.jit(jax.grad(lambda v: jnp.sum(onnx.max_pool(v, kernel_shape=[2],
                                                            strides=[2]))))(x)
    np.testing.assert_array_equal(grad, [[[0, 1, 0, 1, 1, 0]]])


def test_windows_without_input_elements():
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)
    # ONNX: a window that sees only padding gives -inf and index -1, and passes no gradient
    y, i = onnx.max_pool(x, kernel_shape=[1], strides=[1], pads=[2, 0], return_indices=True)
    np.testing.assert_array_equal(y, [[[-np.inf, -np.inf, 1, 2, 3, 4, 5, 6]]])
    np.testing.assert_array_equal(i, [[[-1, -1, 0, 1, 2, 3, 4, 5]]])
    grad = jax.jit(jax.grad(lambda v: jnp.sum(onnx.max_pool(v, kernel_shape=[1], strides=[1],
                                                            pads=[2, 0]))))(x)  # one program
    np.testing.assert_array_equal(grad, np.ones_like(x))
    # OpenVINO: lowest(T) and the plane start
    v, i = ov.max_pool(np.stack([x[0], x[0]]), kernel=1, strides=1, pads_begin=2, opset=8)
    low = np.finfo(np.float32).min
    np.testing.assert_array_equal(v[1, 0], [low, low, 1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(i[1, 0], [6, 6, 6, 7, 8, 9, 10, 11])


def test_global_max_pool():
    x = np.array([[[[1.0, 7.0], [7.0, -np.inf]], [[np.nan, 1.0], [2.0, 3.0]]]], np.float32)
    got = onnx.global_max_pool(x)
    np.testing.assert_array_equal(got, [[[[7.0]], [[np.nan]]]])
    grad = jax.jit(jax.grad(lambda v: onnx.global_max_pool(v)[0, 0, 0, 0]))(x)  # one program
    np.testing.assert_array_equal(grad[0, 0], [[0, 0.5], [0.5, 0]])  # ties share evenly
    np.testing.assert_array_equal(jax.jit(onnx.global_max_pool)(x), got)
    empty = onnx.global_max_pool(np.zeros((1, 2, 0, 3), np.float32))
    np.testing.assert_array_equal(empty, np.full((1, 2, 1, 1), -np.inf, np.float32))


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_sharded_pools_give_the_unsharded_answer(axis_type):
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    x = _distinct((4, 8, 9, 8), 7)
    x[0, 1, 2, 3] = np.nan
    xs = jax.device_put(x, NamedSharding(mesh, P("a", "b")))
    for fn in (_ov(OV_CASES["2-D dilated ceil"]),
               lambda v: ov.max_pool(v, kernel=2, strides=2, rounding_type="ceil_torch",
                                     opset=14),
               _onnx(ONNX_CASES["2-D dilated ceil storage 1"]),
               lambda v: (onnx.global_max_pool(v),)):
        want = fn(x)
        for run in (fn, jax.jit(fn)):
            got = run(xs)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
                if axis_type == AxisType.Explicit:
                    assert tuple(g.sharding.spec)[:2] == ("a", "b"), g.sharding.spec



SHARDED_POOLS = {  # along H or W, windows straddling the devices' blocks
    # outputs that do not divide over the devices: the halo form
    "MaxPool-8 ceil k3 s2": lambda v: ov.max_pool(v, kernel=3, strides=2, pads_begin=1,
                                                  pads_end=1, rounding_type="ceil", opset=8),
    "MaxPool-8 ceil k3 s2 d2": lambda v: ov.max_pool(v, kernel=3, strides=2, dilations=2,
                                                     pads_begin=1, pads_end=2,
                                                     rounding_type="ceil", opset=8),
    "onnx MaxPool-22 ceil k5 s2": lambda v: onnx.max_pool(v, kernel_shape=[5, 3],
                                                          strides=[2, 2], pads=[2, 1, 2, 1],
                                                          ceil_mode=1),
    # outputs that divide: the partitioner's values, the derivative per device
    "MaxPool-1 k3 s2 p1": lambda v: ov.max_pool(v, kernel=3, strides=2, pads_begin=1,
                                                pads_end=1),
    "onnx MaxPool-12 k3 s1 same_lower": lambda v: onnx.max_pool(
        v, kernel_shape=[3, 3], auto_pad="SAME_LOWER", opset=12),
}
# small inputs take the compact form (its derivative a scatter at the winners), larger ones
# the taps (a sum over taps): each device's part takes the whole input's
SHAPES = {"compact": (2, 3, 16, 12), "taps": (2, 8, 48, 48)}


@pytest.mark.parametrize("spec", [P(None, None, "a"), P(None, None, None, "a"),
                                  P(None, None, "a", "b")], ids=["H", "W", "H and W"])
@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto],
                         ids=["explicit", "auto"])
@pytest.mark.parametrize("name,shape", [(n, s) for n in sorted(SHARDED_POOLS)
                                        for s in SHAPES if s == "compact" or "k3 s" in n],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_sharded_pool_derivatives_are_the_unsharded_bits(name, shape, axis_type, spec):
    """Pools sharded along H or W whose windows straddle the devices' blocks: the gradient
    with cotangents of both signs that are not dyadic (an element read by several windows,
    some owned by another device, sums them in the one-device order: a device adding its
    neighbours' halo cotangents to its own sum, or XLA's partitioner summing an input-sized
    cotangent across devices, rounded differently), and the tangent of ``-0.0`` (one device's
    bits, never ``-0.0 + 0.0``), bit for bit with one device."""
    def f(v):  # the values (MaxPool-8 returns indices too)
        return jax.tree.leaves(SHARDED_POOLS[name](v))[0]

    mesh = jax.make_mesh((2, 2), ("a", "b"), axis_types=(axis_type,) * 2,
                         devices=jax.devices()[:4])
    rng = np.random.default_rng(23)
    x = rng.standard_normal(SHAPES[shape]).astype(np.float32)
    x[0, 0, 3:9, 2:6] = np.round(x[0, 0, 3:9, 2:6])  # ties across the blocks' borders
    x[1, 2, 5:11] = -0.0
    weights = rng.standard_normal(f(x).shape).astype(np.float32)

    def loss(v):
        return (f(v) * weights).sum()

    t = np.where(rng.random(x.shape) < 0.4, np.float32(-0.0), x)
    xs, ts = (jax.device_put(a, NamedSharding(mesh, spec)) for a in (x, t))
    for got, want in ((jax.jit(jax.grad(loss))(xs), jax.grad(loss)(x)),
                      (jax.jit(lambda v, u: jax.jvp(f, (v,), (u,))[1])(xs, ts),
                       jax.jvp(f, (x,), (t,))[1])):
        np.testing.assert_array_equal(np.asarray(got).view(np.int32),
                                      np.asarray(want).view(np.int32))
