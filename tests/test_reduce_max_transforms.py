"""The JAX transformation contract of the reductions: ``jaxmax.openvino.reduce_max``,
``jaxmax.openvino.reduce_logical_or`` and ``jaxmax.onnx.reduce_max`` (the contract is listed in
tests/test_transforms.py).

Oracles: tests/reduce_oracle.py (NumPy loops, never jaxmax) and cotangents computed by hand.
"""

from __future__ import annotations

from functools import partial

import chex
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from absl.testing import parameterized
from helpers import assert_same, is_float, lowest, special_floats, unique_values
from jax.test_util import check_grads
from reduce_oracle import onnx_reduce_max, openvino_reduce_max, openvino_reduce_or, share_grad
from transform_helpers import GRAD_MODES, loop, prims, retrace_check, vjp

from jaxmax import onnx
from jaxmax import openvino as ov

NAN = np.nan
INF = np.inf


REDUCE_CASES = [
    ((3, 4, 5), (1,), False),
    ((3, 4, 5), (0, 2), True),
    ((3, 4, 5), -1, False),
    ((3, 4, 5), (2, 0, 1), False),
    ((2, 0, 3), (1,), True),  # empty reduction
    ((3, 4, 5), (), False),  # identity
]


ONNX_CASES = [
    ((3, 4, 5), [1], 1, 0),
    ((3, 4, 5), (0, 2), 0, 0),
    ((3, 4, 5), None, 1, 0),
    ((3, 4, 5), None, 0, 1),  # noop
    ((2, 0, 3), [1], 0, 0),  # empty set -> -inf
]


def _reduce_data(rng, shape, dtype):
    if is_float(dtype):
        x = special_floats(rng, shape, np.float32)
        if x.ndim == 3 and x.size:
            x[0, :, 0] = NAN  # an all-NaN slice for axis 1
            x[1, :, 1] = -INF  # an all -inf slice for axis 1
            x[:, 0, :] = np.where(np.arange(x.shape[2]) % 2, NAN, -INF)  # for axes (0, 2)
        return x.astype(dtype)
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True)
    x = x.astype(dtype)
    if x.size:
        x.flat[0] = info.min
    return x


# --------------------------------------------------------------------------------------------
# jit equals eager (and the NumPy oracle)
# --------------------------------------------------------------------------------------------


OV_MAX_JIT_CASES = ([case + (np.float32,) for case in REDUCE_CASES]
                    + [REDUCE_CASES[1] + (np.int8,), REDUCE_CASES[4] + (np.int8,),
                       REDUCE_CASES[0] + (jnp.bfloat16,), REDUCE_CASES[3] + (np.float16,)])
ONNX_JIT_CASES = ([case + (np.float32,) for case in ONNX_CASES]
                  + [ONNX_CASES[1] + (np.int32,), ONNX_CASES[4] + (np.int32,)])


class TestReductionsJitEqualsEager(chex.TestCase):
    """Every case runs twice, eagerly and under jax.jit (chex variants), and must give exactly
    the oracle's answer both times; static arguments are closed over or go through
    static_argnames."""

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.parameters(*OV_MAX_JIT_CASES)
    def test_ov_reduce_max(self, shape, axes, keep, dtype):
        x = _reduce_data(np.random.default_rng(3), shape, np.dtype(dtype))
        if isinstance(axes, tuple) and len(axes) > 1:  # static arguments through static_argnames
            fn = self.variant(ov.reduce_max, static_argnames=("axes", "keep_dims"))
            got = fn(x, axes=axes, keep_dims=keep)
        else:  # static arguments closed over
            got = self.variant(lambda d: ov.reduce_max(d, axes, keep_dims=keep))(x)
        assert_same(got, openvino_reduce_max(x, axes, keep))

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.parameters(*REDUCE_CASES)
    def test_ov_reduce_logical_or(self, shape, axes, keep):
        x = np.random.default_rng(7).random(shape) < 0.15
        if x.ndim == 3 and x.size:
            x[0] = False  # slices of all False exist for every axes choice
        if keep:
            fn = self.variant(ov.reduce_logical_or, static_argnames=("axes", "keep_dims"))
            got = fn(x, axes=axes, keep_dims=keep)
        else:
            got = self.variant(lambda d: ov.reduce_logical_or(d, axes, keep_dims=keep))(x)
        assert_same(got, openvino_reduce_or(x, axes, keep))

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.parameters(*ONNX_JIT_CASES)
    def test_onnx_reduce_max(self, shape, axes, keepdims, noop, dtype):
        x = _reduce_data(np.random.default_rng(11), shape, np.dtype(dtype))
        if keepdims:  # closed over
            got = self.variant(lambda d: onnx.reduce_max(d, axes, keepdims=keepdims,
                                                         noop_with_empty_axes=noop))(x)
        else:  # through static_argnames
            fn = self.variant(onnx.reduce_max, static_argnames=(
                "axes", "keepdims", "noop_with_empty_axes", "opset"))
            got = fn(x, axes=None if axes is None else tuple(axes), keepdims=keepdims,
                     noop_with_empty_axes=noop, opset=18)
        assert_same(got, onnx_reduce_max(x, axes, keepdims, noop))

    @chex.variants(with_jit=True, without_jit=True)
    def test_onnx_reduce_max_bool(self):
        x = np.random.default_rng(3).random((4, 6)) < 0.2
        x[1] = False
        got = self.variant(lambda d: onnx.reduce_max(d, [1], keepdims=0))(x)
        assert_same(got, onnx_reduce_max(x, [1], 0))


# --------------------------------------------------------------------------------------------
# vmap equals a Python loop of eager calls
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("in_axis,axes,keep", [(0, (1,), False), (1, (0, 2), True),
                                               (2, -1, False), (3, (1,), True)])
def test_ov_reduce_max_vmap(in_axis, axes, keep):
    rng = np.random.default_rng(17)
    xs = special_floats(rng, (4, 5, 3, 6))
    xs[(slice(None),) * in_axis + (0,)] = 1.0  # one batch member without NaN
    fn = partial(ov.reduce_max, axes=axes, keep_dims=keep)
    batched = jax.vmap(fn, in_axes=in_axis)(xs)
    looped = loop(fn, xs, in_axis)
    assert_same(batched, looped)
    assert_same(looped[1], openvino_reduce_max(np.take(xs, 1, axis=in_axis), axes, keep))
    assert_same(jax.jit(jax.vmap(fn, in_axes=in_axis))(xs), looped)


@pytest.mark.parametrize("in_axis", [0, 2])
def test_ov_reduce_logical_or_vmap(in_axis):
    xs = np.random.default_rng(19).random((4, 5, 3, 6)) < 0.1
    fn = partial(ov.reduce_logical_or, axes=(0, 2), keep_dims=False)
    looped = loop(fn, xs, in_axis)
    assert_same(jax.vmap(fn, in_axes=in_axis)(xs), looped)
    assert_same(looped[2], openvino_reduce_or(np.take(xs, 2, axis=in_axis), (0, 2)))


@pytest.mark.parametrize("in_axis", [0, 2])
def test_onnx_reduce_max_vmap(in_axis):
    rng = np.random.default_rng(23)
    xs = special_floats(rng, (4, 5, 3, 6))
    for axes, keepdims in [([1], 1), (None, 0)]:
        fn = partial(onnx.reduce_max, axes=axes, keepdims=keepdims)
        looped = loop(fn, xs, in_axis)
        assert_same(jax.vmap(fn, in_axes=in_axis)(xs), looped)
        assert_same(looped[0], onnx_reduce_max(np.take(xs, 0, axis=in_axis), axes,
                                                      keepdims))


# --------------------------------------------------------------------------------------------
# check_grads on inputs with unique values
# --------------------------------------------------------------------------------------------


def test_ov_reduce_max_check_grads():
    with jax.enable_x64(True):
        x = unique_values(np.random.default_rng(41), (3, 4, 5))
        several = jax.jit(lambda d: (ov.reduce_max(d, (1,)),
                                     ov.reduce_max(d, (0, 2), keep_dims=True),
                                     ov.reduce_max(d, (0, 1, 2))))
        check_grads(several, (x,), order=1, modes=GRAD_MODES)
        check_grads(jax.jit(lambda d: ov.reduce_max(d, -1)), (x,), order=2, modes=GRAD_MODES)


def test_onnx_reduce_max_check_grads():
    with jax.enable_x64(True):
        x = unique_values(np.random.default_rng(43), (3, 4, 5))
        several = jax.jit(lambda d: (onnx.reduce_max(d, [1]), onnx.reduce_max(d, keepdims=0),
                                     onnx.reduce_max(d, (0, 2), keepdims=0)))
        check_grads(several, (x,), order=2, modes=GRAD_MODES)


# --------------------------------------------------------------------------------------------
# Gradient tie rules against hand-computed cotangents
# --------------------------------------------------------------------------------------------


def _check_reduce_grad(x, ct, expected):
    """Eager and jitted cotangents along axis 1, and along axis 0 with keep_dims on x.T."""
    np.testing.assert_allclose(share_grad(x, 1, ct, skip_nan=True), expected)
    def fn(d):
        return ov.reduce_max(d, 1)

    np.testing.assert_allclose(vjp(fn, x, ct), expected, rtol=1e-6)
    np.testing.assert_allclose(vjp(jax.jit(fn), x, ct), expected, rtol=1e-6)
    fn0 = jax.jit(lambda d: ov.reduce_max(d, 0, keep_dims=True))
    np.testing.assert_allclose(vjp(fn0, x.T, ct[None, :]), expected.T, rtol=1e-6)


LOW = float(lowest(np.float32))

# (a slice along axis 1, its cotangent, that slice's gradient worked by hand)
OV_GRADIENT_SLICES = [
    ([1.0, 3.0, 3.0, 2.0], 2.0, [0, 1, 1, 0]),  # two-way tie: 1/2 each
    ([5.0, 5.0, 0.0, 5.0], 3.0, [1, 1, 0, 1]),  # three-way tie: 1/3 each
    ([-INF, -INF, -INF, -INF], 5.0, [0, 0, 0, 0]),  # raised to lowest(T): none
    ([-INF, LOW, -INF, LOW], 13.0, [0, 6.5, 0, 6.5]),  # a real lowest(T) maximum: shared
    ([INF, 1.0, INF, -INF], 17.0, [8.5, 0, 8.5, 0]),  # +inf wins, shared
    ([-2.0, -INF, -7.0, -2.0], 19.0, [9.5, 0, 0, 9.5]),  # negative tie
    # NaN never wins and gets no cotangent; the slices above, without NaN, are unaffected
    ([5.0, 5.0, NAN, 5.0], 3.0, [1, 1, 0, 1]),  # NaN ignored, three-way tie: 1/3 each
    ([NAN, NAN, NAN, NAN], 7.0, [0, 0, 0, 0]),  # all NaN -> lowest(T): none
    ([-INF, NAN, -INF, NAN], 11.0, [0, 0, 0, 0]),  # only NaN and -inf -> lowest(T): none
    ([NAN, -1.0, NAN, -4.0], 13.0, [0, 13, 0, 0]),  # -1 wins
]


def test_ov_reduce_max_gradient_ties_nan_and_raised_outputs():
    rows, cts, grads = zip(*OV_GRADIENT_SLICES, strict=True)
    x, ct = np.array(rows, np.float32), np.array(cts, np.float32)
    _check_reduce_grad(x, ct, np.array(grads, np.float64))


@pytest.mark.parametrize("with_nan", [False, True])
def test_ov_reduce_max_gradient_random_ties(with_nan):
    rng = np.random.default_rng(59)
    x = rng.integers(-2, 3, (5, 6, 7)).astype(np.float32)
    u = rng.random(x.shape)
    if with_nan:
        x[u < 0.1] = NAN
    x[u > 0.9] = -INF
    x[1, :, 3] = -INF
    ct = rng.integers(1, 9, (5, 7)).astype(np.float32)
    got = vjp(jax.jit(lambda d: ov.reduce_max(d, 1)), x, ct)
    np.testing.assert_allclose(got, share_grad(x, 1, ct, skip_nan=True), rtol=1e-6)
    ct2 = rng.integers(1, 9, (6,)).astype(np.float32)
    got2 = vjp(jax.jit(lambda d: ov.reduce_max(d, (0, 2))), x, ct2)
    np.testing.assert_allclose(got2, share_grad(x, (0, 2), ct2, skip_nan=True),
                               rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
@pytest.mark.parametrize("face", ["openvino", "onnx"])
def test_reduce_max_gradient_off_the_maxima_is_plus_zero(face, dtype):
    # Negative cotangents: every element that is not a maximum gets +0.0, eagerly and under jit
    # (lax.reduce_max's own derivative multiplies by the tie mask, which gave -0.0 eagerly and
    # +0.0 jitted for float32). The process has several devices, so the Auto-axes form runs too.
    rng = np.random.default_rng(61)
    x = rng.integers(-3, 3, (6, 40)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = NAN
    x[2] = np.where(rng.random(40) < 0.5, -0.0, -1.0)  # -0.0 maxima
    x = x.astype(dtype)
    ct = -rng.integers(1, 4, (6,)).astype(dtype)
    skip = face == "openvino"
    fn = (lambda d: ov.reduce_max(d, 1)) if skip else (
        lambda d: onnx.reduce_max(d, [1], keepdims=0))
    want = share_grad(x.astype(np.float32), 1, ct.astype(np.float32), skip_nan=skip).astype(dtype)
    for form, f in (("eager", fn), ("jit", jax.jit(fn))):
        assert_same(vjp(f, x, ct), want, f"{face} {np.dtype(dtype).name} {form}")


def test_ov_reduce_max_gradient_empty_slice():
    x = np.zeros((3, 0, 2), np.float32)
    out = ov.reduce_max(x, 1)
    assert_same(out, np.full((3, 2), lowest(np.float32)))
    g = jax.grad(lambda d: ov.reduce_max(d, 1).sum())(x)
    chex.assert_shape(g, (3, 0, 2))
    chex.assert_type(g, np.float32)
    # a reduction mixing an empty axis with a non-empty one: still no gradient anywhere
    y = np.ones((0, 4), np.float32)
    gy = jax.grad(lambda d: ov.reduce_max(d, 0).sum())(y)
    chex.assert_shape(gy, (0, 4))


def test_onnx_reduce_max_gradient_ties():
    x = np.array([
        [1.0, 3.0, 3.0, 2.0],
        [5.0, 5.0, 5.0, -1.0],
        [-INF, -INF, 0.5, -INF],
        [-INF, -INF, -INF, -INF],  # -inf stays -inf and is a real four-way tie (as jnp.max)
    ], np.float32)
    ct = np.array([2.0, 3.0, 5.0, 8.0], np.float32)
    expected = np.array([[0, 1, 1, 0], [1, 1, 1, 0], [0, 0, 5, 0], [2, 2, 2, 2]], np.float64)
    np.testing.assert_allclose(share_grad(x, 1, ct, skip_nan=False), expected)
    for fn in (lambda d: onnx.reduce_max(d, [1], keepdims=0),
               jax.jit(lambda d: onnx.reduce_max(d, [-1], keepdims=0))):
        np.testing.assert_allclose(vjp(fn, x, ct), expected, rtol=1e-6)
    # all axes: the single cotangent is shared by every global maximum
    y = np.array([[4.0, 1.0], [4.0, 4.0]], np.float32)
    g = jax.grad(lambda d: onnx.reduce_max(d, keepdims=0))(y)
    np.testing.assert_allclose(g, [[1 / 3, 0], [1 / 3, 1 / 3]], rtol=1e-6)


# --------------------------------------------------------------------------------------------
# No retrace on a second call
# --------------------------------------------------------------------------------------------


def test_no_retrace_ov_reduce_max():
    rng = np.random.default_rng(73)
    x, y = special_floats(rng, (3, 5, 4)), special_floats(rng, (3, 5, 4))
    retrace_check(lambda: ov.reduce_max(x, (1,), keep_dims=True),
                   lambda: [ov.reduce_max(y, a, keep_dims=k)
                            for a, k in [((1,), True), ([1], 1), (np.array([1]), True),
                                         (-2, True), (np.int64(1), np.bool_(True))]],
                   lambda: ov.reduce_max(y[:2], (1,), keep_dims=True))


def test_no_retrace_ov_reduce_logical_or():
    x = np.random.default_rng(79).random((4, 6)) < 0.3
    retrace_check(lambda: ov.reduce_logical_or(x, 0),
                   lambda: [ov.reduce_logical_or(~x, a) for a in (0, [0], (-2,))],
                   lambda: ov.reduce_logical_or(x, 1))


def test_no_retrace_onnx_reduce_max():
    x, y = (special_floats(np.random.default_rng(s), (3, 5)) for s in (1, 2))
    retrace_check(lambda: onnx.reduce_max(x, [1], keepdims=0),
                   lambda: [onnx.reduce_max(y, a, keepdims=k)
                            for a, k in [([1], 0), ((1,), False), (-1, 0), (np.array([1]), 0)]],
                   lambda: onnx.reduce_max(y, [1], keepdims=1))


# --------------------------------------------------------------------------------------------
# The jaxpr holds the intended primitive
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16, np.int8, np.uint8,
                                   np.int32])
def test_jaxpr_reductions(dtype):
    x = np.zeros((3, 4, 5), dtype)
    for names in (prims(lambda d: ov.reduce_max(d, (0, 2)), x),
                  prims(lambda d: ov.reduce_max(d, 1, keep_dims=True), x)):
        assert "reduce_max" in names
        assert "reduce" not in names and "reduce_window" not in names
    names = prims(lambda d: onnx.reduce_max(d, [1]), x)
    assert "reduce_max" in names and "reduce" not in names


def test_jaxpr_logical_or():
    x = np.zeros((3, 4), bool)
    for names in (prims(lambda d: ov.reduce_logical_or(d, 1), x),
                  prims(lambda d: onnx.reduce_max(d, [0], keepdims=0), x)):
        assert "reduce_or" in names
        assert "reduce" not in names and "reduce_max" not in names
