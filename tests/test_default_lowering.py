"""The lowerings jaxmax uses off CPU (GPU, TPU), run here on CPU against NumPy oracles.

``core._by_platform`` picks the CPU lowering when a program is compiled for CPU, so the test
suite would otherwise never execute the ``default`` branches (``lax.reduce_max`` with the data
NaN check, ``reduce_window`` under the NaN check and clamp). Here that seam is patched to the
default branch, with JAX's caches cleared so that every call traces anew.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src import core

F32_LOWEST = np.float32(np.finfo(np.float32).min)


@pytest.fixture(autouse=True)
def default_lowering(monkeypatch):
    monkeypatch.setattr(core, "_by_platform", lambda x, *, cpu, default: default(x))
    jax.clear_caches()
    yield
    jax.clear_caches()


def _ov_max(x, axis):
    out = np.max(np.where(np.isnan(x), -np.inf, x), axis=axis)
    return np.maximum(out, F32_LOWEST).astype(np.float32)


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
    np.testing.assert_array_equal(ov.reduce_max(x, axes), _ov_max(x, axes))
    np.testing.assert_array_equal(onnx.reduce_max(x, axes, keepdims=0), np.max(x, axis=axes))
    ints = (np.nan_to_num(_data(), nan=0.0, neginf=-100) * 10).astype(np.int32)
    np.testing.assert_array_equal(ov.reduce_max(ints, axes), np.max(ints, axis=axes))


def test_reduce_max_gradient_ties_and_nan():
    x = np.array([[1.0, np.nan, 3.0, 3.0], [np.nan, np.nan, -np.inf, 2.0]], np.float32)
    grad = jax.grad(lambda d: ov.reduce_max(d, 1).sum())(x)
    np.testing.assert_array_equal(grad, [[0, 0, 0.5, 0.5], [0, 0, 0, 1]])


@pytest.mark.parametrize("rounding_type", ["floor", "ceil"])
def test_max_pool(rounding_type):
    x = _data()[None]  # (1, 6, 40, 50)
    got = ov.max_pool(x, kernel=(3, 3), strides=(2, 4), pads_begin=(1, 0), pads_end=(1, 2),
                      rounding_type=rounding_type)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 5), (0, 8)), constant_values=np.nan)
    h = (40 + 2 - 3) // 2 + 1 if rounding_type == "floor" else -(-(40 + 2 - 3) // 2) + 1
    w = (50 + 2 - 3) // 4 + 1 if rounding_type == "floor" else -(-(50 + 2 - 3) // 4) + 1
    want = np.empty((1, 6, h, w), np.float32)
    for i in range(h):
        for j in range(w):
            window = padded[:, :, 2 * i:2 * i + 3, 4 * j:4 * j + 3].reshape(1, 6, -1)
            want[:, :, i, j] = _ov_max(window, 2)  # padding as NaN: skipped like NaN
    np.testing.assert_array_equal(got, want)
    grad = jax.grad(lambda d: ov.max_pool(d, kernel=2, strides=2).sum())(
        np.array([[[1.0, 3.0, 3.0, 2.0, np.nan, -np.inf]]], np.float32))
    np.testing.assert_array_equal(grad, [[[0, 1, 1, 0, 0, 0]]])


@pytest.mark.parametrize("fill_mode", ["ZERO", "LOWEST"])
def test_segment_max(fill_mode):
    x = _data().reshape(6, -1)
    ids = np.array([0, 0, 1, 3, 3, 3])
    got = ov.segment_max(x, ids, 5, fill_mode=fill_mode)
    empty = np.zeros(x.shape[1], np.float32) if fill_mode == "ZERO" else np.full(
        x.shape[1], F32_LOWEST)
    want = np.stack([_ov_max(x[:2], 0), _ov_max(x[2:3], 0), empty, _ov_max(x[3:], 0), empty])
    np.testing.assert_array_equal(got, want)
