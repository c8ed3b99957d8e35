"""ONNX MaxUnpool under jax transformations: jit equals eager, vmap equals a loop, gradients
(check_grads; the exact routing on duplicate and out-of-range indices, against NumPy), and
sharded inputs on 8 CPU devices (Explicit and Auto meshes) give the unsharded answer exactly."""

from __future__ import annotations

import collectives
import jax
import numpy as np
import pytest
from adaptive_unpool_oracle import max_unpool as unpool_oracle
from adaptive_unpool_oracle import max_unpool_grad
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from jax.test_util import check_grads
from transform_helpers import assert_exact

from jaxmax import onnx


def unpool(x, i, out=None):
    return onnx.max_unpool(x, i, out, kernel_shape=[2, 2], strides=[2, 2])


def maxpool_indices(rng, shape):
    """Values and plane-offset MaxPool indices of a 2x2/2 pool over random data (NumPy)."""
    n, c, h, w = shape
    src = rng.standard_normal((n, c, 2 * h, 2 * w)).astype(np.float32)
    win = src.reshape(n, c, h, 2, w, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h, w, 4)
    arg = win.argmax(-1)
    rows = np.arange(h)[:, None] * 2 + arg // 2
    cols = np.arange(w)[None, :] * 2 + arg % 2
    plane = (np.arange(n)[:, None] * c + np.arange(c)[None, :])[:, :, None, None]
    flat = plane * (4 * h * w) + rows * (2 * w) + cols
    values = np.take_along_axis(win, arg[..., None], -1)[..., 0]
    return values, flat.astype(np.int32)


def test_jit_equals_eager():
    rng = np.random.default_rng(0)
    values, flat = maxpool_indices(rng, (2, 3, 4, 5))
    dup = rng.integers(0, 2 * 3 * 8 * 10, size=values.shape).astype(np.int32)
    for idx in (flat, dup):
        assert_exact(jax.jit(unpool)(values, idx), unpool(values, idx))


def test_vmap_equals_loop():
    rng = np.random.default_rng(1)
    values = np.stack([maxpool_indices(rng, (2, 2, 3, 3))[0] for _ in range(3)])
    idx = np.stack([rng.integers(0, 2 * 2 * 36, size=(2, 2, 3, 3)).astype(np.int32)
                    for _ in range(3)])
    idx[1] = maxpool_indices(np.random.default_rng(9), (2, 2, 3, 3))[1]
    for axis in (0, 1):
        y = jax.vmap(unpool, in_axes=(axis, axis))(np.moveaxis(values, 0, axis),
                                                    np.moveaxis(idx, 0, axis))
        for k in range(3):
            assert_exact(y[k], unpool_oracle(values[k], idx[k], (2, 2, 6, 6)))


def test_check_grads_with_duplicate_indices():
    rng = np.random.default_rng(2)
    values, _ = maxpool_indices(rng, (2, 2, 3, 4))
    dup = rng.integers(0, 2 * 2 * 6 * 8, size=values.shape)
    with jax.enable_x64(True):
        check_grads(lambda v: unpool(v, dup), (values.astype(np.float64),), order=1,
                    modes=("fwd", "rev"))


def test_grad_gathers_at_last_writer():
    rng = np.random.default_rng(4)
    values = rng.standard_normal((2, 2, 3, 3)).astype(np.float32)
    idx = rng.integers(0, 2 * 2 * 36 // 3, size=values.shape).astype(np.int32)  # many repeats
    cot = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)
    for fn in (unpool, jax.jit(unpool)):
        g = jax.grad(lambda v, fn=fn: (fn(v, idx) * cot).sum())(values)
        assert_exact(g, max_unpool_grad(idx, cot))
    _, flat = maxpool_indices(rng, (2, 2, 3, 3))
    g = jax.grad(lambda v: (unpool(v, flat) * cot).sum())(values)
    assert_exact(g, max_unpool_grad(flat, cot))
    # a traced out-of-range index is dropped: its element gets no cotangent
    bad = flat.copy()
    bad[0, 0, 0, 0] = -1
    bad[1, 1, 2, 2] = 10**6
    g = jax.jit(jax.grad(lambda v, i: (unpool(v, i) * cot).sum()))(values, bad)
    want = max_unpool_grad(flat, cot)
    want[0, 0, 0, 0] = want[1, 1, 2, 2] = 0
    assert_exact(g, want)


# --------------------------------------------------------------------------------------------
# Sharding: 8 CPU devices (tests/conftest.py)
# --------------------------------------------------------------------------------------------

@pytest.fixture(params=[AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def mesh(request):
    return jax.make_mesh((2, 4), ("a", "b"), axis_types=(request.param,) * 2)


@pytest.mark.parametrize("spec", [P("a", "b"), P("a"), P(None, ("a", "b")), P(None, None, "a")],
                         ids=str)
def test_sharded_exact(mesh, spec):
    rng = np.random.default_rng(6)
    values, flat = maxpool_indices(rng, (4, 8, 4, 4))
    values[values < 0] = -0.0
    dup = rng.integers(0, 4 * 8 * 64, size=values.shape).astype(np.int32)
    xs = jax.device_put(values, NamedSharding(mesh, spec))
    for idx in (flat, dup):
        want = unpool_oracle(values, idx, (4, 8, 8, 8))
        ids = jax.device_put(idx, NamedSharding(mesh, spec))
        for fn in (unpool, jax.jit(unpool)):
            assert_exact(fn(xs, ids), want, str(spec))
        c = rng.standard_normal((4, 8, 8, 8)).astype(np.float32)
        # the cotangent replicated (read where it lies) and sharded as the output
        for cot_spec in (P(), spec):
            cot = jax.device_put(c, NamedSharding(mesh, cot_spec))
            with jax.set_mesh(mesh):  # the loss is a scalar on the mesh
                g = jax.grad(lambda v, ids=ids, cot=cot: (unpool(v, ids) * cot).sum())(xs)
            assert_exact(g, max_unpool_grad(idx, c), f"{spec} cotangent {cot_spec}")


@pytest.mark.parametrize("i_spec", [P(None, ("a", "b")), None], ids=["I sharded", "I replicated"])
def test_sharded_along_one_axis_moves_output_sized_data(i_spec):
    """On Explicit axes, X sharded along one axis (channels over 8 devices), I sharded alike or
    replicated: the oracle's values and gradient bit for bit (duplicate indices across devices,
    -0.0 values), and the program moves one byte of key per output element (none with I
    replicated) and one output block (lowering/unpool_sharded.py), gathering nothing.
    (-0.0 cotangents: the gradient's zero signs are the unsharded program's.)"""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    rng = np.random.default_rng(11)
    values, _ = maxpool_indices(rng, (4, 8, 4, 4))
    values[values < 0] = -0.0
    idx = rng.integers(0, 4 * 8 * 64, size=values.shape).astype(np.int32)
    idx[:, 5] = idx[:, 0]  # the same targets from two devices: the later one wins
    xs = jax.device_put(values, NamedSharding(mesh, P(None, ("a", "b"))))
    ids = jax.device_put(idx, NamedSharding(mesh, P() if i_spec is None else i_spec))
    cot = rng.standard_normal((4, 8, 8, 8)).astype(np.float32)
    fn = jax.jit(lambda v, i: unpool(v, i))
    assert_exact(fn(xs, ids), unpool_oracle(values, idx, (4, 8, 8, 8)))
    grad = jax.jit(jax.grad(lambda v, i, c: (unpool(v, i) * c).sum()))
    assert_exact(grad(xs, ids, cot), max_unpool_grad(idx, cot))
    cot[cot < -0.5] = -0.0  # the sign a -0.0 cotangent leaves is the one-device lowering's
    assert_exact(grad(xs, ids, cot), grad(values, idx, cot))
    # the forward-mode tangent, placed as bits: a -0.0 tangent is -0.0 (a floating sum over
    # the devices gave +0.0 before 2026-11-30)
    t = np.where(rng.random(values.shape) < 0.4, np.float32(-0.0), values + 1)
    tangent = jax.jit(lambda v, i, u: jax.jvp(lambda w: unpool(w, i), (v,), (u,))[1])
    want = unpool_oracle(t, idx, (4, 8, 8, 8))
    assert np.signbit(want[want == 0]).any()
    assert_exact(tangent(xs, ids, jax.device_put(t, xs.sharding)), want)
    kinds = sorted((c.kind, c.nbytes) for c in collectives.moved(
        fn.lower(xs, ids).compile().as_text()))
    key = [("all-reduce", 4 * 8 * 8 * 8)] if i_spec is not None else []  # I replicated: none
    assert kinds == key + [("reduce-scatter", 4 * 8 * 8 * 8 * 4 // 8)]
