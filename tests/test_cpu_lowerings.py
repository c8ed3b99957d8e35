"""ReduceMax's CPU fold (leading axes only, >= 32768 kept elements per row) under transforms.

The other transform tests use small inputs, which take XLA's own reduction; these inputs are
large enough to take the fold (``core._folds_rows``), checked against NumPy-computed expectations.
"""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest
from jax.test_util import check_grads

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src import core

SHAPE = (4, 2, 20000)  # axes (0,): rows of 40000 kept elements


def test_these_inputs_take_the_fold():
    assert core._folds_rows(SHAPE, (0,))
    assert not core._folds_rows(SHAPE, (0, 1))  # 20000 kept elements: XLA's reduction
    assert not core._folds_rows(SHAPE, (1,))


@pytest.mark.parametrize("flavour", ["openvino", "onnx"])
def test_gradient_and_jvp_follow_the_tie_rule(flavour):
    f = (lambda v: ov.reduce_max(v, 0)) if flavour == "openvino" else (
        lambda v: onnx.reduce_max(v, 0, keepdims=0))
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, SHAPE).astype(np.float32)  # many ties
    ct = rng.standard_normal(SHAPE[1:]).astype(np.float32)
    is_max = x == x.max(axis=0)
    share = is_max / is_max.sum(axis=0)  # tied maxima share evenly
    (grad,) = jax.vjp(f, x)[1](ct)
    np.testing.assert_allclose(grad, share * ct, rtol=1e-6)
    t = rng.standard_normal(SHAPE).astype(np.float32)
    _, tangent = jax.jvp(f, (x,), (t,))
    np.testing.assert_allclose(tangent, (share * t).sum(axis=0), rtol=1e-5, atol=1e-6)


def test_check_grads_in_float64():
    with jax.enable_x64(True):
        x = np.random.default_rng(2).permutation(np.prod(SHAPE)).reshape(SHAPE) / 1000.0
        check_grads(lambda v: ov.reduce_max(v, 0), (x,), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.float16, np.int8])
def test_vmap_over_a_middle_axis_equals_a_loop(dtype):
    x = (np.random.default_rng(3).standard_normal((4, 3, 40000)) * 50).astype(dtype)
    batched = jax.jit(jax.vmap(lambda v: ov.reduce_max(v, 0), in_axes=1))(x)
    for i in range(3):
        np.testing.assert_array_equal(batched[i], np.max(x[:, i], axis=0))
