"""ReduceMax's CPU lowerings (jaxmax._src.lowering.reduce_cpu) under transforms, 1 device and many.

A concrete single-device input takes the one-device lowering (the fold, the NaN-masked blocks,
the sum-of-squares NaN flag); a traced input on a machine with several devices takes the
multi-device one (``rules.cross_device_possible``). The test session has eight devices, so the
``devices`` fixture runs each test both ways. Shrinking ``_BLOCK_BYTES`` and ``_FOLD_MIN_ROW``
makes small inputs take every branch of the block loop (rows cut further, blocks with a
remainder, reduced and kept leading axes) and the fold. Expectations are NumPy computations.
"""

from __future__ import annotations

import itertools

import jax
import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same, special_floats
from jax.test_util import check_grads
from reduce_oracle import onnx_reduce_max_wide, openvino_reduce_max_wide

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering import reduce_cpu, rules

SHAPE = (4, 2, 20000)  # axes (0,): rows of 40000 kept elements


def _lowering(monkeypatch, devices, block_bytes=4 << 20, fold_min_row=32768):
    many = devices == "multi-device"
    monkeypatch.setattr(rules, "cross_device_possible", lambda *arrays: many)
    monkeypatch.setattr(reduce_cpu, "_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(reduce_cpu, "_FOLD_MIN_ROW", fold_min_row)
    jax.clear_caches()  # the jitted core may have been traced with other settings


@pytest.fixture(params=["one-device", "multi-device"])
def devices(request, monkeypatch):
    _lowering(monkeypatch, request.param)
    yield request.param
    jax.clear_caches()


# (devices, block bytes, fold threshold): the real sizes, and sizes that send small inputs down
# every branch (the multi-device lowering cuts no blocks, but folds).
LOWERINGS = [("one-device", 4 << 20, 32768), ("one-device", 64, 8), ("one-device", 200, 3),
             ("multi-device", 64, 3)]


@pytest.fixture(params=LOWERINGS, ids=["-".join(map(str, p)) for p in LOWERINGS])
def lowering(request, monkeypatch):
    _lowering(monkeypatch, *request.param)
    yield request.param
    jax.clear_caches()


def test_these_inputs_take_the_fold():
    assert reduce_cpu.folds_rows(SHAPE, (0,))
    assert not reduce_cpu.folds_rows(SHAPE, (0, 1))  # 20000 kept elements: XLA's reduction
    assert not reduce_cpu.folds_rows(SHAPE, (1,))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_every_branch_gives_both_rules_exactly(lowering, dtype):
    rng = np.random.default_rng(11)
    for shape in [(7,), (5, 6), (3, 4, 5), (2, 3, 4, 5), (9, 1, 7)]:
        x = special_floats(rng, shape, dtype, p_nan=0.1, p_ninf=0.1, p_inf=0.05)
        for r in range(1, len(shape) + 1):
            for axes in itertools.combinations(range(len(shape)), r):
                assert_same(ov.reduce_max(x, axes), openvino_reduce_max_wide(x, axes))
                assert_same(onnx.reduce_max(x, axes, keepdims=0), onnx_reduce_max_wide(x, axes))


def test_float64_and_integers(lowering):
    rng = np.random.default_rng(12)
    ints = rng.integers(-100, 100, (6, 5, 4)).astype(np.int8)
    with jax.enable_x64(True):
        x = special_floats(rng, (6, 5, 4), np.float64, p_nan=0.1, p_ninf=0.1, p_inf=0.05)
        for axes in [(0,), (1,), (0, 2), (1, 2), (0, 1, 2)]:
            assert_same(ov.reduce_max(x, axes), openvino_reduce_max_wide(x, axes))
            assert_same(onnx.reduce_max(x, axes, keepdims=0), onnx_reduce_max_wide(x, axes))
            assert_same(ov.reduce_max(ints, axes), np.max(ints, axis=axes))


@pytest.mark.parametrize("flavour", ["openvino", "onnx"])
@pytest.mark.parametrize("shape, axes", [(SHAPE, (0,)), ((6, 50, 7), (1,)), ((6, 50, 7), (0, 2))])
def test_gradient_and_jvp_follow_the_tie_rule(devices, flavour, shape, axes, monkeypatch):
    _lowering(monkeypatch, devices, block_bytes=256)  # the small shapes take the blocks
    f = (lambda v: ov.reduce_max(v, axes)) if flavour == "openvino" else (
        lambda v: onnx.reduce_max(v, axes, keepdims=0))
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, shape).astype(np.float32)  # many ties
    x.reshape(-1)[::97] = np.nan
    masked = np.where(np.isnan(x), -np.inf, x)
    is_max = masked == masked.max(axis=axes, keepdims=True)
    share = is_max / is_max.sum(axis=axes, keepdims=True)  # tied maxima share evenly
    if flavour == "onnx":  # a slice holding a NaN gives NaN and passes no gradient
        share = np.where(np.isnan(x).any(axis=axes, keepdims=True), 0.0, share)
    ct = rng.standard_normal(np.max(x, axis=axes).shape).astype(np.float32)
    (grad,) = jax.vjp(f, x)[1](ct)
    np.testing.assert_allclose(grad, share * np.expand_dims(ct, axes), rtol=1e-6)
    t = rng.standard_normal(shape).astype(np.float32)
    _, tangent = jax.jvp(f, (x,), (t,))
    np.testing.assert_allclose(tangent, (share * t).sum(axis=axes), rtol=1e-5, atol=1e-6)


def test_check_grads_in_float64(devices):
    with jax.enable_x64(True):
        x = np.random.default_rng(2).permutation(np.prod(SHAPE)).reshape(SHAPE) / 1000.0
        check_grads(lambda v: ov.reduce_max(v, 0), (x,), order=1, modes=("fwd", "rev"))
        check_grads(lambda v: onnx.reduce_max(v, [1, 2]), (x,), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.float16, np.int8])
def test_vmap_over_a_middle_axis_equals_a_loop(devices, dtype):
    x = (np.random.default_rng(3).standard_normal((4, 3, 40000)) * 50).astype(dtype)
    if dtype != np.int8:
        x[1, 2, 5] = x[0, 0, 7] = np.nan
    batched = jax.jit(jax.vmap(lambda v: ov.reduce_max(v, 0), in_axes=1))(x)
    for i in range(3):
        assert_same(batched[i], openvino_reduce_max_wide(x[:, i], (0,)) if dtype != np.int8
                     else np.max(x[:, i], axis=0))
