"""Every way of finding NaN gives the same, exact answers.

MaxPool and SegmentMax find NaN from their plain result on one device, and also from the data's
sum when several devices may combine partial results (``rules.cross_device_possible``: a traced
input on this eight-device test session, or an array laid over several devices). Here each
operator runs both ways on NaN-laden data (and on NaN-free data with +-inf, where the sum can
flag a false NaN) against NumPy oracles written here. ReduceMax applies its rule in one read on
one device and checks the data on several, because XLA's CPU ``reduce_max`` drops NaN on larger
inputs: one test uses inputs of that size, folded and not.
tests/test_reduce_max_cpu_lowerings.py covers the one-device ReduceMax lowering branch by branch.
"""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pool_oracle
import pytest
import reduce_oracle
import segment_oracle
from compile_cache import shared_compiles  # noqa: E402,F401 (the fixture)
from helpers import assert_same

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering import rules

pytestmark = pytest.mark.usefixtures("shared_compiles")

F32_LOWEST = np.float32(np.finfo(np.float32).min)
_ov_max = reduce_oracle.openvino_reduce_max_wide


@pytest.fixture(params=[False, True], ids=["one-device-check", "cross-device-check"])
def cross_device(request, monkeypatch):
    monkeypatch.setattr(rules, "cross_device_possible", lambda *arrays: request.param)
    return request.param


def _data(kind: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    if kind == "nan":
        x[0, 2, 1] = np.nan
        x[1, :, 3] = np.nan          # an all-NaN slice along axis 1
        x[2, 4, :] = np.nan
    else:  # +inf and -inf together: the data's sum is NaN although no element is
        x[0, 0, 0] = np.inf
        x[3, 5, 4] = -np.inf
        x[2, :, 2] = -np.inf
    return x


@pytest.mark.parametrize("kind", ["nan", "infs"])
@pytest.mark.parametrize("axes", [(1,), (0, 2), (0, 1, 2)])
def test_reduce_max_both_flavours(cross_device, kind, axes):
    x = _data(kind)
    np.testing.assert_array_equal(ov.reduce_max(x, axes), _ov_max(x, axes))
    np.testing.assert_array_equal(jax.jit(lambda d: ov.reduce_max(d, axes))(x), _ov_max(x, axes))
    np.testing.assert_array_equal(onnx.reduce_max(x, axes, keepdims=0), np.max(x, axis=axes))


@pytest.mark.parametrize("kind", ["nan", "infs"])
def test_max_pool(cross_device, kind):
    x = _data(kind)[None]  # (1, 4, 6, 5)
    got = ov.max_pool(x, kernel=(2, 2), strides=(2, 2), rounding_type="ceil")
    assert_same(got, pool_oracle.max_pool_1(x, (2, 2), (2, 2), rounding_type="ceil"))


@pytest.mark.parametrize("kind", ["nan", "infs"])
def test_segment_max(cross_device, kind):
    x = _data(kind).reshape(4, 30)
    ids = np.array([0, 0, 2, 2])
    got = ov.segment_max(x, ids, 4, fill_mode="ZERO")
    assert_same(got, segment_oracle.segment_max(x, ids, 4, fill_mode="ZERO"))


def test_gradient_ignores_nan(cross_device):
    x = np.array([[1.0, np.nan, 3.0, 3.0], [np.nan, np.nan, -np.inf, 2.0]], np.float32)
    grad = jax.grad(lambda d: ov.reduce_max(d, 1).sum())(x)
    np.testing.assert_array_equal(grad, [[0, 0, 0.5, 0.5], [0, 0, 0, 1]])


@pytest.mark.parametrize("shape, axes", [((60, 1000), (0,)), ((40, 4096), (1,)),
                                         ((17, 6, 11, 7), (0, 1, 2, 3)), ((23, 6, 4096), (0, 2)),
                                         ((39, 48, 20, 7), (0,)), ((4, 40, 40000), (0,))])
def test_reduce_max_on_inputs_where_xla_drops_nan(cross_device, shape, axes):
    # On these shapes jnp.max over NaN-laden data returned values that were neither NaN nor the
    # NaN-free maximum (jax 0.10.2 on CPU); jaxmax must match the oracles regardless.
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    x[rng.random(shape) < 0.05] = np.nan
    np.testing.assert_array_equal(ov.reduce_max(x, axes), _ov_max(x, axes))
    np.testing.assert_array_equal(onnx.reduce_max(x, axes, keepdims=0),
                                  np.max(x, axis=axes))  # NumPy propagates NaN


def test_max_pool_gradient_skips_nan_and_minus_inf():
    # Windows of 2 along one axis, stride 1: [nan, 2], [2, -inf], [-inf, -inf], [-inf, 5], [5, 5]
    x = np.array([[[np.nan, 2.0, -np.inf, -np.inf, 5.0, 5.0]]], np.float32)
    out, pullback = jax.vjp(lambda d: ov.max_pool(d, kernel=2, strides=1), x)
    np.testing.assert_array_equal(out, [[[2, 2, F32_LOWEST, 5, 5]]])
    (grad,) = pullback(np.array([[[1.0, 10.0, 100.0, 1000.0, 10000.0]]], np.float32))
    # NaN and -inf never receive a cotangent; the all -inf window (raised to lowest) passes none;
    # the tied window [5, 5] sends its cotangent to its first maximum.
    np.testing.assert_array_equal(grad, [[[0, 11, 0, 0, 11000, 0]]])


def test_bfloat16_folded_rows_keep_every_nan_and_extreme(cross_device):
    # The CPU fold of bfloat16 rows runs on int16 order keys; NaN of either sign must still be
    # found, -inf must stay below lowest(T), and the ONNX flavour must propagate NaN.
    bf16 = ml_dtypes.bfloat16
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((5, 3, 40000)) * 100).astype(bf16)
    x[rng.random(x.shape) < 0.01] = np.nan
    x[:, 0, 1] = -np.nan
    x[:, 0, 2] = -np.inf
    x[:, 0, 3] = np.array(float(ml_dtypes.finfo(bf16).min)).astype(bf16)
    x[2, 0, 4] = np.inf
    x[:, 0, 5] = np.array(-0.0).astype(bf16)
    assert_same(ov.reduce_max(x, 0), _ov_max(x, 0))
    assert_same(onnx.reduce_max(x, 0, keepdims=0), reduce_oracle.onnx_reduce_max_wide(x, 0))
    # A lone negative NaN in otherwise NaN-free data: nothing else can reveal it.
    y = (rng.standard_normal((5, 40000)) * 10).astype(bf16)
    y[3, 6] = -np.nan
    assert_same(onnx.reduce_max(y, 0, keepdims=0), reduce_oracle.onnx_reduce_max_wide(y, 0))
