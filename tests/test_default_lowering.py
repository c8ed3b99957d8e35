"""The lowerings jaxmax uses off CPU (GPU, TPU), run here on CPU against NumPy oracles.

``rules.by_platform`` picks the CPU lowering when a program is compiled for CPU, so the test
suite would otherwise never execute the ``default`` branches (``lax.reduce_max`` with the data
NaN check, ``reduce_window`` under the NaN check and clamp). Here that seam is patched to the
default branch, with JAX's caches cleared so that every call traces anew.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import assert_same
from pool_oracle import max_pool_1
from reduce_oracle import onnx_reduce_max, openvino_reduce_max
from segment_oracle import segment_max

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering import rules


@pytest.fixture(autouse=True)
def default_lowering(monkeypatch):
    monkeypatch.setattr(rules, "by_platform", lambda x, *, cpu, default: default(x))
    jax.clear_caches()
    yield
    jax.clear_caches()


def _data():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 40, 50)).astype(np.float32)
    x[rng.random(x.shape) < 0.03] = np.nan
    x[2, :, 4] = -np.inf
    x[4, 7, :] = np.nan
    return x


def test_default_lowering_is_really_used():
    x = np.ones((4, 40000), np.float32)
    jaxpr = str(jax.make_jaxpr(lambda d: ov.reduce_max(d, 0))(x))
    assert "while" not in jaxpr  # the CPU lowering folds these rows in a loop
    assert "reduce_max" in jaxpr


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (0, 1, 2)])
def test_reduce_max(axes):
    x = _data()
    assert_same(ov.reduce_max(x, axes), openvino_reduce_max(x, axes))
    assert_same(onnx.reduce_max(x, axes, keepdims=0), onnx_reduce_max(x, axes, keepdims=0))
    ints = (np.nan_to_num(_data(), nan=0.0, neginf=-100) * 10).astype(np.int32)
    assert_same(ov.reduce_max(ints, axes), openvino_reduce_max(ints, axes))


def test_reduce_max_gradient_ties_and_nan():
    x = np.array([[1.0, np.nan, 3.0, 3.0], [np.nan, np.nan, -np.inf, 2.0]], np.float32)
    grad = jax.grad(lambda d: ov.reduce_max(d, 1).sum())(x)
    np.testing.assert_array_equal(grad, [[0, 0, 0.5, 0.5], [0, 0, 0, 1]])


@pytest.mark.parametrize("rounding_type", ["floor", "ceil"])
def test_max_pool(rounding_type):
    x = _data()[None]  # (1, 6, 40, 50)
    attrs = dict(kernel=(3, 3), strides=(2, 4), pads_begin=(1, 0), pads_end=(1, 2),
                 rounding_type=rounding_type)
    assert_same(ov.max_pool(x, **attrs), max_pool_1(x, **attrs))
    grad = jax.grad(lambda d: ov.max_pool(d, kernel=2, strides=2).sum())(
        np.array([[[1.0, 3.0, 3.0, 2.0, np.nan, -np.inf]]], np.float32))
    np.testing.assert_array_equal(grad, [[[0, 1, 1, 0, 0, 0]]])


@pytest.mark.parametrize("fill_mode", ["ZERO", "LOWEST"])
def test_segment_max(fill_mode):
    x = _data().reshape(6, -1)
    ids = np.array([0, 0, 1, 3, 3, 3])
    got = ov.segment_max(x, ids, 5, fill_mode=fill_mode)
    assert_same(got, segment_max(x, ids, 5, fill_mode))
