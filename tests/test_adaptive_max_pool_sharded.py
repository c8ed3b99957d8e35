"""AdaptiveMaxPool-8 along spatial axes sharded over Explicit mesh axes: each device folds its
part of every window and two integer all-reduces of the output's size combine the parts
(jaxmax/_src/lowering/adaptive_sharded.py). Values and indices are the loop oracle's
(tests/adaptive_unpool_oracle.py) bit for bit, and the compiled program moves the output's bytes.

The data make the combination matter: windows that straddle the blocks, ties of equal values and
of ``-0.0``/``+0.0`` across blocks (the earlier element wins), NaN that is a window's first
element (it wins) or a later one (never taken), NaN with a payload and a sign, -inf.
"""

from __future__ import annotations

import collectives
import jax
import ml_dtypes
import numpy as np
import pytest
from adaptive_unpool_oracle import adaptive_max_pool as oracle
from helpers import explicit_mesh
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxmax import openvino as ov

SHAPE = (2, 3, 16, 12)
SPECS = {"H": P(None, None, "d"), "W": P(None, None, None, "d"),
         "H and W": P(None, None, "a", "b"), "batch and H": P("a", None, "b")}
OUTPUTS = [(5, 3), (8, 6), (3, 7), (16, 12), (1, 1)]
ODD_NAN = np.array(0xFFC00123, np.uint32).view(np.float32)  # -NaN with a payload


def _data(seed: int, dtype) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([-3, -2, -1, 1], np.float32), size=SHAPE)
    u = rng.random(SHAPE)
    x[u < 0.2] = -0.0
    x[(u >= 0.2) & (u < 0.3)] = 0.0
    x[(u >= 0.3) & (u < 0.38)] = np.nan
    x[(u >= 0.38) & (u < 0.41)] = -np.inf
    x[(u >= 0.41) & (u < 0.43)] = ODD_NAN
    x[1, 2] = np.where(u[1, 2] < 0.5, -0.0, 0.0)  # a plane of zeros
    return x.astype(dtype)


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" or a.dtype.itemsize == 2 \
        else a


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("output", OUTPUTS, ids=str)
@pytest.mark.parametrize("sharded", list(SPECS))
def test_sharded_adaptive_pool_is_the_oracles_bit_for_bit(sharded, output, dtype):
    x = _data(sum(output), dtype)
    want_v, want_i = oracle(x, output, np.int32)
    spec = SPECS[sharded]
    xs = jax.device_put(x, NamedSharding(explicit_mesh(spec), spec))
    # one compile: the program's text is read and the same executable runs
    compiled = jax.jit(lambda v: ov.adaptive_max_pool(v, list(output), index_element_type="i32")
                       ).lower(xs).compile()
    got_v, got_i = compiled(xs)
    np.testing.assert_array_equal(_bits(got_v), _bits(want_v), err_msg=f"{sharded} {output}")
    np.testing.assert_array_equal(np.asarray(got_i), want_i, err_msg=f"{sharded} {output}")
    moved = collectives.moved(compiled.as_text())
    assert sum(c.nbytes for c in moved) <= want_v.nbytes + want_i.nbytes, moved
    assert all(c.kind == "all-reduce" for c in moved), moved


@pytest.mark.parametrize("output", [(5, 3), (8, 6)], ids=str)
@pytest.mark.parametrize("sharded", list(SPECS))
def test_sharded_adaptive_pool_gradient_goes_to_the_winners(sharded, output):
    """The gradient adds each window's cotangent into its winner (for cotangents whose sums
    round too, the one-device sums); the forward tangent is the tangent at each winner, a
    ``-0.0`` one included (a floating sum over the devices read ``+0.0`` before 2026-11-30).
    (8, 6) divides over the sharded axes, so the output and its cotangent are sharded too."""
    x = _data(7, np.float32)
    _, idx = oracle(x, output, np.int32)
    ct = ((np.arange(int(np.prod(idx.shape))) % 7) - 2.5).astype(np.float32).reshape(idx.shape)
    want = np.zeros(SHAPE, np.float32).reshape(SHAPE[0] * SHAPE[1], -1)
    for plane, (ii, cc) in enumerate(zip(idx.reshape(len(want), -1), ct.reshape(len(want), -1),
                                         strict=True)):
        np.add.at(want[plane], ii, cc)
    spec = SPECS[sharded]
    sharding = NamedSharding(explicit_mesh(spec), spec)
    xs = jax.device_put(x, sharding)
    got = jax.jit(jax.grad(lambda v: (ov.adaptive_max_pool(v, list(output))[0] * ct).sum()))(xs)
    np.testing.assert_array_equal(np.asarray(got), want.reshape(SHAPE))
    normal = np.random.default_rng(8).standard_normal(idx.shape).astype(np.float32)

    def grad(v):
        return jax.grad(lambda u: (ov.adaptive_max_pool(u, list(output))[0] * normal).sum())(v)
    np.testing.assert_array_equal(_bits(jax.jit(grad)(xs)), _bits(grad(x)))
    n = np.arange(x.size)
    t = np.where(n % 3 == 0, -0.0, (n % 5) + 1).astype(np.float32).reshape(SHAPE)
    _, tangent = jax.jit(lambda v, w: jax.jvp(
        lambda u: ov.adaptive_max_pool(u, list(output))[0], (v,), (w,)))(
            xs, jax.device_put(t, sharding))
    planes = t.reshape(SHAPE[0] * SHAPE[1], -1)
    wanted = np.take_along_axis(planes, idx.reshape(len(planes), -1), axis=1)
    assert np.signbit(wanted).any()
    np.testing.assert_array_equal(_bits(tangent), _bits(wanted.reshape(idx.shape)))
