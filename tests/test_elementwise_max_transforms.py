"""ONNX Max and OpenVINO Maximum-1 under jit, vmap, grad and on 8 sharded CPU devices
(Explicit and Auto meshes): each equals the plain eager answer exactly (zero signs and NaN bits
compared as bit patterns), and gradients follow each face's tie rule (docs/semantics.md §7.3)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import max_cases as mc
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding, PartitionSpec
from jax.test_util import check_grads
from jit_batch import jit_each

from jaxmax import onnx as jonnx
from jaxmax import openvino as ov

FACES = {"onnx": jonnx.max, "ov": ov.maximum}


def bits(x):
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def assert_bits(actual, expected, context=""):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, context
    np.testing.assert_array_equal(bits(actual), bits(expected), err_msg=context)


def payload_nans(rng, shape, dtype=np.float32):
    """Special values with NaNs of several sign bits and payloads (so NaN bits are tested)."""
    x = mc.values(rng, dtype, shape)
    quiet = np.array([0x7FC00001, 0xFFC00123, 0x7FC0ABCD], np.uint32).view(np.float32)
    mask = np.isnan(x)
    x[mask] = quiet[rng.integers(0, 3, mask.sum())]
    return x


@pytest.mark.parametrize("face", FACES)
def test_jit_equals_eager(face):
    fn = FACES[face]
    rng = np.random.default_rng(1)
    for dtype in (np.float16, np.float32, mc.BF16, np.int32, np.uint8):
        a, b = mc.values(rng, dtype, (4, 5)), mc.values(rng, dtype, (5,))
        assert_bits(jax.jit(fn)(a, b), fn(a, b), f"{face} {dtype}")
    a, b = payload_nans(rng, (40,)), payload_nans(rng, (40,))
    assert_bits(jax.jit(fn)(a, b), fn(a, b), f"{face} NaN payloads")


def test_onnx_max_jit_several_inputs():
    rng = np.random.default_rng(2)
    xs = [mc.values(rng, np.float32, s) for s in [(3, 4), (4,), (1, 1), (3, 1)]]
    assert_bits(jax.jit(lambda *x: jonnx.max(*x, opset=8))(*xs), jonnx.max(*xs, opset=8))


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("axis", [0, 1])
def test_vmap_equals_loop(face, axis):
    fn = FACES[face]
    rng = np.random.default_rng(3 + axis)
    a = mc.values(rng, np.float32, (3, 4, 5))
    b = mc.values(rng, np.float32, (3, 4, 5))
    got = jax.vmap(fn, in_axes=axis, out_axes=axis)(a, b)
    want = np.stack([np.asarray(fn(np.take(a, i, axis), np.take(b, i, axis)))
                     for i in range(a.shape[axis])], axis=axis)
    assert_bits(got, want, f"{face} axis {axis}")
    # one argument batched, the other broadcast
    got = jax.vmap(lambda x: fn(x, b[0, 0]), in_axes=axis, out_axes=axis)(a)
    want = np.stack([np.asarray(fn(np.take(a, i, axis), b[0, 0]))
                     for i in range(a.shape[axis])], axis=axis)
    assert_bits(got, want, f"{face} axis {axis} one batched")


def _tie_free(rng, shape):
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2) * 0.37).reshape(shape)


@pytest.mark.parametrize("face", FACES)
def test_check_grads_tie_free(face):
    fn = FACES[face]
    with jax.enable_x64(True):
        rng = np.random.default_rng(4)
        values = _tie_free(rng, (2, 3, 4))
        a, b = values[0], values[1]
        check_grads(fn, (a, b), order=2, modes=("fwd", "rev"))
        check_grads(fn, (a, b[0]), order=2, modes=("fwd", "rev"))  # a broadcast b
    if face == "onnx":
        with jax.enable_x64(True):
            c = _tie_free(np.random.default_rng(5), (3, 4)) + 0.011
            check_grads(lambda *x: jonnx.max(*x), (a, b, c), order=1, modes=("fwd", "rev"))


def _grads(fn, *xs):
    return [np.asarray(g) for g in jax.grad(lambda *x: jnp.sum(fn(*x)),
                                            argnums=tuple(range(len(xs))))(*xs)]


def test_onnx_max_tie_gradient_splits_evenly():
    a = np.array([1.0, 2.0, -0.0, 0.0, 5.0], np.float32)
    b = np.array([1.0, 3.0, 0.0, -0.0, 4.0], np.float32)
    ga, gb = _grads(jonnx.max, a, b)
    np.testing.assert_array_equal(ga, [0.5, 0, 0.5, 0.5, 1])
    np.testing.assert_array_equal(gb, [0.5, 1, 0.5, 0.5, 0])
    # three tied inputs: the fold splits each step evenly
    x = np.array([2.0], np.float32)
    np.testing.assert_array_equal(np.concatenate(_grads(jonnx.max, x, x, x)), [0.25, 0.25, 0.5])
    # a broadcast input collects its cotangent
    (ga, gb) = _grads(jonnx.max, np.array([1.0, 2.0, 3.0], np.float32), np.float32(2.0))
    np.testing.assert_array_equal(ga, [0, 0.5, 1])
    np.testing.assert_array_equal(gb, 1.5)


def test_ov_maximum_gradient_follows_the_select():
    nan = np.nan
    a = np.array([1.0, 2.0, -0.0, 0.0, nan, 1.0, 5.0], np.float32)
    b = np.array([1.0, 3.0, 0.0, -0.0, 1.0, nan, 4.0], np.float32)
    ga, gb = _grads(ov.maximum, a, b)
    # to a unless a < b: ties, both zero orders, NaN in either argument keep a
    np.testing.assert_array_equal(ga, [1, 0, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(gb, [0, 1, 0, 0, 0, 0, 0])
    ga, gb = _grads(ov.maximum, np.array([[1.0, 3.0], [2.0, 0.0]], np.float32),
                    np.array([2.0, 2.0], np.float32))
    np.testing.assert_array_equal(ga, [[0, 1], [1, 0]])
    np.testing.assert_array_equal(gb, [1, 1])  # (0, 0) and (1, 1) pick b


# --------------------------------------------------------------------------------------------
# Sharded inputs on 8 CPU devices
# --------------------------------------------------------------------------------------------

AXIS_TYPES = [AxisType.Explicit, AxisType.Auto]


@pytest.mark.parametrize("axis_type", AXIS_TYPES, ids=str)
@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, mc.BF16, np.int32], ids=str)
def test_sharded_equals_unsharded(axis_type, face, dtype):
    # each unsharded result computed once (it was computed again for the jit contexts); the
    # eager sharded path by "both" per spec; the broadcast-row contexts (eager and jitted
    # before, the same lowering) and "jit both" of both specs in one jitted program
    # (tests/jit_batch.py), each call keeping its arguments' shardings
    fn = FACES[face]
    mesh = jax.make_mesh((8,), ("x",), axis_types=(axis_type,))
    rng = np.random.default_rng(6)
    make = payload_nans if dtype == np.float32 else (lambda r, s: mc.values(r, dtype, s))
    a, b, row = make(rng, (16, 24)), make(rng, (16, 24)), make(rng, (24,))
    want_both, want_row, want_row_first = fn(a, b), fn(a, row), fn(row, b)
    specs = (PartitionSpec("x", None), PartitionSpec(None, "x"))
    sharded = []
    for spec in specs:
        sharding = NamedSharding(mesh, spec)
        sharded.append((jax.device_put(a, sharding), jax.device_put(b, sharding)))
    jitted = iter(jit_each([call for sa, sb in sharded for call in (
        (fn, (sa, sb)), (fn, (sa, row)), (fn, (row, sb)))]))
    for spec, (sa, sb) in zip(specs, sharded, strict=True):
        for context, got, want in (
                ("both", fn(sa, sb), want_both),
                ("jit both", next(jitted), want_both),
                ("jit row", next(jitted), want_row),
                ("jit row first", next(jitted), want_row_first)):
            assert_bits(got, want, f"{face} {axis_type} {spec} {context}")


@pytest.mark.parametrize("axis_type", AXIS_TYPES, ids=str)
def test_sharded_zero_ties_keep_their_rule(axis_type):
    mesh = jax.make_mesh((8,), ("x",), axis_types=(axis_type,))
    sharding = NamedSharding(mesh, PartitionSpec("x"))
    a = np.tile(np.array([-0.0, 0.0], np.float32), 8)
    b = np.tile(np.array([0.0, -0.0], np.float32), 8)
    sa, sb = jax.device_put(a, sharding), jax.device_put(b, sharding)
    assert not np.signbit(np.asarray(jonnx.max(sa, sb))).any()
    np.testing.assert_array_equal(np.signbit(np.asarray(ov.maximum(sa, sb))), np.signbit(a))
    np.testing.assert_array_equal(np.signbit(np.asarray(jax.jit(ov.maximum)(sb, sa))),
                                  np.signbit(b))
