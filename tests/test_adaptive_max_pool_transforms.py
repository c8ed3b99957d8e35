"""OpenVINO AdaptiveMaxPool-8 under jax transformations: jit equals eager, vmap equals a loop,
gradients (check_grads on tie-free data; the exact routing on ties, repeated elements and
overlapping windows, against NumPy), and sharded inputs on 8 CPU devices (Explicit and Auto
meshes) give the unsharded answer exactly."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from adaptive_unpool_oracle import adaptive_max_pool as adaptive_oracle
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from jax.test_util import check_grads
from transform_helpers import assert_exact

from jaxmax import openvino as ov


def pool(x, out=(5, 3)):
    return ov.adaptive_max_pool(x, out, index_element_type="i32")


def tricky(rng, shape):
    x = rng.integers(-3, 4, size=shape).astype(np.float32)
    x[rng.random(shape) < 0.15] = -0.0
    x[rng.random(shape) < 0.05] = np.nan
    return x


def test_jit_equals_eager():
    rng = np.random.default_rng(0)
    x = tricky(rng, (2, 3, 7, 6))
    for out in [(3, 4), (9, 2)]:
        eager = pool(x, out)
        jitted = jax.jit(lambda v, out=out: pool(v, out))(x)
        for a, b in zip(eager, jitted, strict=True):
            assert_exact(a, b, str(out))


def test_vmap_equals_loop():
    rng = np.random.default_rng(1)
    xs = tricky(rng, (3, 2, 2, 7, 5))
    for axis in (0, 2):
        moved = np.moveaxis(xs, 0, axis)
        v, i = jax.vmap(pool, in_axes=axis)(moved)
        for k in range(3):
            want = adaptive_oracle(xs[k], (5, 3), np.int32)
            assert_exact(v[k], want[0])
            assert_exact(i[k], want[1])
    # windows that tile the input, one batch element without NaN (large inputs fold these axis
    # by axis: tests/test_adaptive_max_pool_values.py::test_windows_that_tile_a_large_input)
    tiles = tricky(rng, (3, 2, 2, 8, 6))
    tiles[1] = np.where(np.isnan(tiles[1]), np.float32(2.5), tiles[1])
    v, i = jax.vmap(lambda t: ov.adaptive_max_pool(t, (4, 3), index_element_type="i32"))(tiles)
    for k in range(3):
        want = adaptive_oracle(tiles[k], (4, 3), np.int32)
        assert_exact(v[k], want[0])
        assert_exact(i[k], want[1])


def test_check_grads_tie_free():
    rng = np.random.default_rng(2)
    x = rng.permutation(2 * 2 * 7 * 5).reshape(2, 2, 7, 5).astype(np.float64) / 7
    with jax.enable_x64(True):
        for out in [(3, 2), (7, 5), (1, 5)]:  # overlapping windows; windows that tile the input
            check_grads(lambda v, out=out: ov.adaptive_max_pool(v, out)[0], (x,), order=1,
                        modes=("fwd", "rev"))


def test_grad_routes_to_index_and_accumulates():
    """Overlapping windows that pick the same element add up their cotangents there; ties go
    to the first element, NaN as a window's first element takes the cotangent."""
    x = np.array([[[1.0, 5.0, 2.0]]], np.float32)  # windows [0, 2) and [1, 3) both pick 5
    g = jax.grad(lambda v: ov.adaptive_max_pool(v, [2], index_element_type="i32")[0].sum())(x)
    assert_exact(g, np.array([[[0.0, 2.0, 0.0]]], np.float32))
    rng = np.random.default_rng(3)
    # overlapping windows, repeated elements, and windows that tile the input (2-D and 3-D)
    for shape, out in [((2, 2, 7, 5), (3, 4)), ((1, 1, 3, 2, 3), (2, 3, 2)), ((2, 1, 7), (12,)),
                       ((2, 2, 8, 6), (4, 3)), ((1, 2, 4, 6, 4), (2, 3, 2))]:
        x = tricky(rng, shape)
        cot = rng.standard_normal(shape[:2] + out).astype(np.float32)
        g = jax.grad(lambda v, out=out, cot=cot: (pool(v, out)[0] * cot).sum())(x)
        _, idx = adaptive_oracle(x, out, np.int64)
        want = np.zeros((shape[0], shape[1], int(np.prod(shape[2:]))), np.float64)
        for n, c in np.ndindex(*shape[:2]):
            np.add.at(want[n, c], idx[n, c].reshape(-1), cot[n, c].reshape(-1))
        np.testing.assert_allclose(np.asarray(g), want.reshape(shape), rtol=1e-6, atol=0)
        assert np.all((np.asarray(g) != 0) <= (want.reshape(shape) != 0))


# --------------------------------------------------------------------------------------------
# Sharding: 8 CPU devices (tests/conftest.py)
# --------------------------------------------------------------------------------------------

@pytest.fixture(params=[AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def mesh(request):
    return jax.make_mesh((2, 4), ("a", "b"), axis_types=(request.param,) * 2)


# The second spec shards both spatial axes, which the windows' slices cross.
@pytest.mark.parametrize("spec", [P("b", None, "a"), P(None, None, "b", "a")], ids=str)
def test_sharded_exact(mesh, spec):
    rng = np.random.default_rng(5)
    x = tricky(rng, (4, 8, 8, 6))
    for out in [(3, 4), (4, 3)]:  # windows that overlap, windows that tile
        want = adaptive_oracle(x, out, np.int32)
        xs = jax.device_put(x, NamedSharding(mesh, spec))
        for fn in (lambda v, out=out: pool(v, out), jax.jit(lambda v, out=out: pool(v, out))):
            v, i = fn(xs)
            assert_exact(v, want[0], f"{spec} {out}")
            assert_exact(i, want[1], f"{spec} {out}")
        if mesh.axis_types[0] == AxisType.Explicit:
            assert v.sharding.spec[:2] == tuple(spec)[:2]
