"""MaxRoiPool / ROIPooling-1 under the transforms: gradients against the oracle's routing
(M18-M20, P8, seeded with ties, NaN and overlapping bins and ROIs), jit, vmap over a leading
axis of X with shared and batched ROIs, no retrace, and 8-device Explicit/Auto meshes with X
sharded over channels and over the batch and the ROIs sharded: the unsharded answer bit for
bit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import roi_oracle as oracle
from helpers import assert_same
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxmax import onnx
from jaxmax import openvino as ov

X4 = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)


def _onnx(x, rois, pooled=(2, 2), scale=1.0):
    return onnx.max_roi_pool(x, rois, pooled_shape=pooled, spatial_scale=scale)


def _ov(x, rois, pooled=(2, 2), scale=1.0):
    return ov.roi_pooling(x, rois, pooled_h=pooled[0], pooled_w=pooled[1], spatial_scale=scale)


def _grad(f, x, rois, cotangent, **kw):
    return jax.grad(lambda v: jnp.sum(f(v, rois, **kw) * cotangent))(x)


def test_m18_m19_m20_p8():
    one = np.array([[0, 0, 0, 3, 3]], np.float32)
    g = np.asarray(_grad(_onnx, X4, one, 1.0))[0, 0]
    assert_same(g, np.array([[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]],
                            np.float32))  # M18
    g = np.asarray(_grad(_onnx, np.ones_like(X4), one, 1.0))[0, 0]
    assert_same(g, np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]],
                            np.float32))  # M19: the first of tied maxima
    g = np.asarray(_grad(_onnx, X4, np.array([[0, 0, 0, 1, 1]], np.float32), 1.0,
                         pooled=(3, 3)))[0, 0]
    assert (g[0, 0], g[0, 1], g[1, 0], g[1, 1]) == (1, 2, 2, 4) and g.sum() == 9  # M20
    x = X4.copy()
    x[0, 0, 0, :2] = [0.0, -0.0]
    x[0, 0, 1, :2] = -1
    cot = np.zeros((1, 1, 2, 2), np.float32)
    cot[0, 0, 0, 0] = 1
    g = np.asarray(_grad(_ov, x, one, cot))[0, 0]
    assert g[0, 1] == 1 and g.sum() == 1  # P8: the last tied zero


@pytest.mark.parametrize("rule", ["onnx", "fold"])
def test_seeded_gradients(rule):
    rng = np.random.default_rng(8)
    f = _onnx if rule == "onnx" else _ov
    for trial in range(3):
        x = rng.integers(-3, 4, (2, 3, 7, 9)).astype(np.float32)
        u = rng.random(x.shape)
        x[u < 0.05] = np.nan
        x[(u > 0.05) & (u < 0.1)] = -np.inf
        x[(u > 0.1) & (u < 0.2)] = -0.0
        rois = np.array([[0, 0, 0, 8, 6], [1, 1, 1, 5, 5], [1, 1, 1, 5, 5], [0, 3, 2, 4, 3],
                         [1, -4, -3, 20, 20], [0, 6, 5, 2, 1]], np.float32)
        rois[:, 1:] += rng.uniform(-0.4, 0.4, (6, 4)).astype(np.float32)
        cot = rng.integers(1, 5, (6, 3, 3, 2)).astype(np.float32)
        want = oracle.gradient(x, rois, 1.0, (3, 2), cot, rule=rule)
        assert_same(_grad(f, x, rois, cot, pooled=(3, 2)), want, f"trial {trial}")
        assert_same(jax.jit(lambda v, r, c: _grad(f, v, r, c, pooled=(3, 2)))(x, rois, cot),
                    want, f"jit trial {trial}")
        assert_same(jax.grad(lambda r, x=x: jnp.sum(f(x, r, pooled=(3, 2))))(rois),
                    np.zeros_like(rois))


def test_jit_vmap_and_no_retrace():
    rng = np.random.default_rng(9)
    x = rng.integers(-5, 6, (3, 2, 4, 6, 5)).astype(np.float32)  # a leading axis of 3
    rois = np.array([[0, 0, 0, 4, 5], [1, 1, 2, 3, 3], [0, 2, 1, 9, 9]], np.float32)
    moved = rois.copy()
    moved[:, 1:] += 1
    batched = np.stack([rois, moved, rois[::-1]])
    for f in (_onnx, _ov):
        want_shared = np.stack([np.asarray(f(v, rois, pooled=(2, 3))) for v in x])
        assert_same(jax.vmap(lambda v, f=f: f(v, rois, pooled=(2, 3)))(x), want_shared)
        want = np.stack([np.asarray(f(v, r, pooled=(2, 3))) for v, r in zip(x, batched,
                                                                           strict=True)])
        assert_same(jax.vmap(lambda v, r, f=f: f(v, r, pooled=(2, 3)))(x, batched), want)
        assert_same(jax.jit(lambda v, r, f=f: f(v, r, pooled=(2, 3)))(x[0], rois), want_shared[0])
        traces = []
        g = jax.jit(lambda v, r, f=f, traces=traces: (traces.append(1),
                                                        f(v, r, pooled=(2, 3)))[1])
        g(x[0], rois)
        g(x[1], moved)
        assert len(traces) == 1


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=str)
@pytest.mark.parametrize("x_spec, r_spec", [(P(None, "b"), P()), (P("a"), P("b")),
                                            (P("a", "b"), P(("a", "b"))),
                                            # on Explicit axes: each device answers the ROIs
                                            # of its images; each its own ROIs
                                            # (lowering/roi_sharded.py)
                                            (P("a"), P()), (P(), P("b")), (P(None, "a"), P("b"))],
                         ids=str)
def test_sharded_exact(axis_type, x_spec, r_spec):
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    rng = np.random.default_rng(10)
    x = rng.integers(-5, 6, (2, 8, 6, 7)).astype(np.float32)
    x[0, 1, 2, 3] = np.nan
    rois = np.concatenate([np.zeros((8, 1)), rng.uniform(-2, 9, (8, 4))], 1).astype(np.float32)
    rois[::2, 0] = 1
    xs = jax.device_put(x, NamedSharding(mesh, x_spec))
    rs = jax.device_put(rois, NamedSharding(mesh, r_spec))
    for f, rule in ((_onnx, "onnx"), (_ov, "fold")):
        want = oracle.max_roi_pool(x, rois, 1.0, (3, 2), rule=rule)
        assert_same(f(xs, rs, pooled=(3, 2)), want)
        assert_same(jax.jit(lambda v, r, f=f: f(v, r, pooled=(3, 2)))(xs, rs), want)
        cot = np.ones((8, 8, 3, 2), np.float32)
        assert_same(jax.jit(lambda v, r, f=f, c=cot: _grad(f, v, r, c, pooled=(3, 2)))(xs, rs),
                    oracle.gradient(x, rois, 1.0, (3, 2), cot,
                                    rule="onnx" if f is _onnx else "fold"))


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=str)
def test_batch_sharded_keeps_negative_zeros(axis_type):
    """Bins whose maximum is -0.0, the images sharded along the batch: on Auto axes XLA's
    partitioner assembles what each device read with an all-reduce that adds, and ROIPooling
    returned +0.0 there (before its fold keys became integers for any data)."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    rng = np.random.default_rng(12)
    x = -rng.integers(0, 3, (8, 2, 6, 7)).astype(np.float32)
    x[x == 0] = -0.0
    rois = np.concatenate([rng.integers(0, 8, (8, 1)), rng.uniform(-2, 9, (8, 4))],
                          1).astype(np.float32)
    xs = jax.device_put(x, NamedSharding(mesh, P(("a", "b"))))
    for f, rule in ((_onnx, "onnx"), (_ov, "fold")):
        want = oracle.max_roi_pool(x, rois, 1.0, (3, 2), rule=rule)
        assert np.signbit(want).any()
        assert_same(jax.jit(lambda v, r, f=f: f(v, r, pooled=(3, 2)))(xs, rois), want)
