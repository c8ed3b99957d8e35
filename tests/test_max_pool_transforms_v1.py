"""The JAX transformation contract of ``jaxmax.openvino.max_pool`` (MaxPool-1; the contract is
listed in tests/test_transforms.py).

Oracles: tests/pool_oracle.py (NumPy loops over windows, never jaxmax), PyTorch's gradient
where its windows are OpenVINO's, and cotangents computed by hand.
"""

from __future__ import annotations

from functools import partial

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from helpers import assert_same, special_floats, unique_values
from jax.test_util import check_grads
from pool_oracle import max_pool_1, max_pool_1_grad
from transform_helpers import GRAD_MODES, loop, prims, retrace_check, vjp

from jaxmax import openvino as ov
from jaxmax._src.lowering.pooling import compact as pool_compact

NAN = np.nan
INF = np.inf


POOL_CASES = [
    dict(kernel=3, strides=2, pads_begin=1, pads_end=1),
    dict(kernel=2, strides=2, pads_begin=0, pads_end=1, rounding_type="ceil"),  # window in pads
    dict(kernel=(2, 3), strides=(1, 2), auto_pad="same_lower"),  # odd total pad at the start
    dict(kernel=3, strides=2, auto_pad="same_upper", rounding_type="ceil"),
    dict(kernel=2, strides=1, pads_begin=(2, 0), pads_end=(0, 3)),  # pads >= kernel
    dict(kernel=(3, 2), strides=(3, 1), auto_pad="valid"),
]


TIE_POOL_CASES = [
    ((2, 2, 6, 7), dict(kernel=3, strides=1, pads_begin=1, pads_end=1)),
    ((2, 2, 6, 7), dict(kernel=2, strides=2, pads_begin=0, pads_end=1, rounding_type="ceil")),
    ((2, 2, 5, 6), dict(kernel=(3, 2), strides=(2, 1), auto_pad="same_lower")),
    ((1, 2, 5, 5), dict(kernel=2, strides=1, pads_begin=3, pads_end=2)),  # padding-only windows
    ((2, 3, 11), dict(kernel=4, strides=1, pads_begin=2, pads_end=2, rounding_type="ceil")),
    ((1, 2, 4, 5, 4), dict(kernel=(2, 3, 2), strides=1, pads_begin=1, pads_end=(0, 1, 1))),
]


# --------------------------------------------------------------------------------------------
# jit equals eager (and the NumPy oracle)
# --------------------------------------------------------------------------------------------


JIT_CASES = ([(a, np.float32) for a in POOL_CASES]
             + [(POOL_CASES[1], np.uint8), (POOL_CASES[4], np.int8)])
RANK3_RANK5_CASES = [
    ((2, 3, 9), dict(kernel=3, strides=2, pads_begin=1, pads_end=2, rounding_type="ceil")),
    ((1, 2, 5, 4, 6), dict(kernel=(2, 3, 2), strides=(2, 1, 3), auto_pad="same_lower")),
]


class TestMaxPoolJitEqualsEager(chex.TestCase):
    """Every case runs twice, eagerly and under jax.jit (chex variants), and must give exactly
    the oracle's answer both times; attributes are closed over or go through
    static_argnames."""

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.parameters(*JIT_CASES)
    def test_ov_max_pool(self, attrs, dtype):
        rng = np.random.default_rng(5)
        if dtype == np.float32:
            x = special_floats(rng, (2, 3, 7, 8))
            x[0, 0] = -INF  # a channel of only -inf: every window raised to lowest(T)
            x[0, 1, :3, :3] = NAN
        else:
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max, (2, 3, 7, 8), endpoint=True).astype(dtype)
        if "auto_pad" in attrs:  # attributes through static_argnames
            got = self.variant(ov.max_pool, static_argnames=(
                "kernel", "strides", "pads_begin", "pads_end", "rounding_type", "auto_pad"))(
                x, **attrs)
        else:  # attributes closed over
            got = self.variant(lambda d: ov.max_pool(d, **attrs))(x)
        assert_same(got, max_pool_1(x, **attrs))

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.parameters(*RANK3_RANK5_CASES)
    def test_ov_max_pool_rank3_rank5(self, shape, attrs):
        x = special_floats(np.random.default_rng(9), shape)
        assert_same(self.variant(lambda d: ov.max_pool(d, **attrs))(x), max_pool_1(x, **attrs))


# --------------------------------------------------------------------------------------------
# vmap equals a Python loop of eager calls
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("in_axis,attrs", [(0, POOL_CASES[1]), (2, POOL_CASES[2]),
                                           (4, POOL_CASES[4])],
                         ids=["ceil-0", "same_lower-2", "big_pads-4"])
def test_ov_max_pool_vmap(in_axis, attrs):
    rng = np.random.default_rng(29)
    xs = special_floats(rng, (3, 2, 3, 6, 7))  # the batch axis is inserted somewhere
    xs = np.moveaxis(xs, 0, in_axis)
    fn = partial(ov.max_pool, **attrs)
    looped = loop(fn, xs, in_axis)
    assert_same(jax.vmap(fn, in_axes=in_axis)(xs), looped)
    assert_same(looped[1], max_pool_1(np.take(xs, 1, axis=in_axis), **attrs))


# --------------------------------------------------------------------------------------------
# check_grads on inputs with unique values
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,attrs", [
    ((2, 2, 7, 7), POOL_CASES[0]),
    ((2, 2, 7, 7), POOL_CASES[1]),  # ceil: a row and column of windows only in padding
    ((2, 2, 7, 8), POOL_CASES[2]),  # same_lower, odd total padding at the start
    ((2, 2, 6, 6), POOL_CASES[4]),  # windows only in padding (pads >= kernel)
])
def test_ov_max_pool_check_grads(shape, attrs):
    with jax.enable_x64(True):
        x = unique_values(np.random.default_rng(47), shape)
        check_grads(jax.jit(lambda d: ov.max_pool(d, **attrs)), (x,), order=1,
                    modes=GRAD_MODES)


def test_ov_max_pool_check_grads_rank3_rank5_and_second_order():
    with jax.enable_x64(True):
        rng = np.random.default_rng(48)
        x3, x4, x5 = (unique_values(rng, s) for s in [(2, 3, 9), (1, 2, 7, 8), (1, 2, 4, 5, 5)])

        def several(a, b, c):
            return (ov.max_pool(a, kernel=3, strides=2, pads_begin=1, pads_end=2,
                                rounding_type="ceil"),
                    ov.max_pool(b, **POOL_CASES[3]),  # same_upper + ceil
                    ov.max_pool(c, kernel=2, strides=(1, 2, 2), auto_pad="same_lower"))

        check_grads(jax.jit(several), (x3, x4, x5), order=1, modes=GRAD_MODES)
        check_grads(jax.jit(lambda d: ov.max_pool(d, **POOL_CASES[1])), (x4[:, :1, :5, :5],),
                    order=2, modes=GRAD_MODES)


# --------------------------------------------------------------------------------------------
# Gradient tie rules against hand-computed cotangents
# --------------------------------------------------------------------------------------------


def test_ov_max_pool_gradient_hand_example():
    # 1x1x3x4, kernel 2, stride 1, explicit pads (1, 0) / (0, 1): 3x4 windows
    x = np.array([[[
        [7.0, 7.0, 1.0, NAN],
        [7.0, 2.0, 2.0, 2.0],
        [-INF, -INF, 2.0, -INF],
    ]]], np.float32)
    attrs = dict(kernel=2, strides=1, pads_begin=(1, 0), pads_end=(0, 1))
    ct = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4)
    # windows (row r covers input rows r-1..r, column c covers columns c..c+1):
    # r0: [7,7]->(0,0); [7,1]->(0,1); [1,NaN]->(0,2); [NaN,pad]->none (raised)
    # r1: [7,7;7,2]->(0,0); [7,1;2,2]->(0,1); [1,NaN;2,2]->(1,2); [NaN;2]->(1,3)
    # r2: [7,2;-inf,-inf]->(1,0); [2,2;-inf,2]->(1,1); [2,2;2,-inf]->(1,2); [2;-inf]->(1,3)
    expected = np.zeros((1, 1, 3, 4))
    for (r, c), (i, j) in {(0, 0): (0, 0), (0, 1): (0, 1), (0, 2): (0, 2),
                           (1, 0): (0, 0), (1, 1): (0, 1), (1, 2): (1, 2), (1, 3): (1, 3),
                           (2, 0): (1, 0), (2, 1): (1, 1), (2, 2): (1, 2),
                           (2, 3): (1, 3)}.items():
        expected[0, 0, i, j] += ct[0, 0, r, c]
    np.testing.assert_array_equal(max_pool_1_grad(x, ct, **attrs), expected)
    def fn(d):
        return ov.max_pool(d, **attrs)

    np.testing.assert_array_equal(vjp(fn, x, ct), expected)
    np.testing.assert_array_equal(vjp(jax.jit(fn), x, ct), expected)


def test_ov_max_pool_gradient_ties_first_maximal():
    rng = np.random.default_rng(61)
    xs, cts = [], []
    for shape, attrs in TIE_POOL_CASES:
        x = rng.integers(0, 3, shape).astype(np.float32)  # many ties in every window
        u = rng.random(shape)
        x[u < 0.08] = NAN
        x[u > 0.9] = -INF
        x.reshape(-1, *shape[2:])[0] = -INF  # a whole channel raised to lowest(T)
        xs.append(x)
        cts.append(rng.integers(1, 5, max_pool_1(x, **attrs).shape).astype(np.float32))

    @jax.jit
    def all_grads(xs, cts):  # one compilation for every case
        return [jax.vjp(lambda d, a=attrs: ov.max_pool(d, **a), x)[1](ct)[0]
                for (_, attrs), x, ct in zip(TIE_POOL_CASES, xs, cts, strict=True)]

    for (shape, attrs), x, ct, got in zip(TIE_POOL_CASES, xs, cts, all_grads(xs, cts), strict=True):
        np.testing.assert_array_equal(got, max_pool_1_grad(x, ct, **attrs),
                                      err_msg=f"{shape} {attrs}")


def test_ov_max_pool_gradient_ties_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(67)
    x = rng.integers(0, 3, (2, 3, 9, 10)).astype(np.float32)
    ct = rng.integers(1, 5, (2, 3, 5, 5)).astype(np.float32)
    # kernel 3, stride 2, pad 1 each side (PyTorch pads with -inf): same windows as OpenVINO's
    attrs = dict(kernel=3, strides=2, pads_begin=1, pads_end=1)
    ours = vjp(jax.jit(lambda d: ov.max_pool(d, **attrs)), x, ct)
    t = torch.tensor(x, requires_grad=True)
    out = torch.nn.functional.max_pool2d(t, kernel_size=3, stride=2, padding=1)
    assert tuple(out.shape) == ct.shape
    out.backward(torch.tensor(ct))
    np.testing.assert_array_equal(ours, t.grad.numpy())
    # ceil mode where PyTorch and OpenVINO emit the same windows
    attrs_ceil = dict(kernel=2, strides=2, rounding_type="ceil", pads_begin=0, pads_end=0)
    y = rng.integers(0, 3, (2, 3, 7, 7)).astype(np.float32)
    ct2 = rng.integers(1, 5, (2, 3, 4, 4)).astype(np.float32)
    ours2 = vjp(jax.jit(lambda d: ov.max_pool(d, **attrs_ceil)), y, ct2)
    t2 = torch.tensor(y, requires_grad=True)
    torch.nn.functional.max_pool2d(t2, kernel_size=2, stride=2, ceil_mode=True).backward(
        torch.tensor(ct2))
    np.testing.assert_array_equal(ours2, t2.grad.numpy())


# --------------------------------------------------------------------------------------------
# No retrace on a second call
# --------------------------------------------------------------------------------------------


def test_no_retrace_ov_max_pool():
    x, y = (special_floats(np.random.default_rng(s), (1, 2, 6, 7)) for s in (3, 4))
    attrs = dict(kernel=2, strides=2, pads_begin=0, pads_end=1, rounding_type="ceil")
    spellings = [attrs,
                 dict(kernel=(2, 2), strides=[2, 2], pads_begin=(0, 0), pads_end=np.array([1, 1]),
                      rounding_type="CEIL", auto_pad=None),
                 dict(kernel=np.int64(2), strides=2, pads_end=1, rounding_type="ceil",
                      auto_pad="explicit")]
    retrace_check(lambda: ov.max_pool(x, **attrs),
                   lambda: [ov.max_pool(y, **a) for a in spellings],
                   lambda: ov.max_pool(y, **dict(attrs, rounding_type="floor")))


# --------------------------------------------------------------------------------------------
# The jaxpr holds the intended primitive
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16, np.int8, np.uint8])
@pytest.mark.parametrize("shape,attrs", [((1, 2, 6, 7), POOL_CASES[1]),
                                         ((1, 2, 6, 7), POOL_CASES[2]),
                                         ((1, 2, 6, 7), POOL_CASES[4]),
                                         TIE_POOL_CASES[4], TIE_POOL_CASES[5]])
def test_jaxpr_max_pool(dtype, shape, attrs, monkeypatch):
    # the non-CPU branch is XLA's windowed max; the CPU branch of these small inputs is the
    # compact form (one variadic reduce_window), or the unrolled taps when forced
    for compact in (True, False):
        monkeypatch.setattr(pool_compact, "FORCE", compact)
        jax.clear_caches()
        names = prims(lambda d: ov.max_pool(d, **attrs), np.zeros(shape, dtype))
        assert "reduce_window_max" in names
        assert ("reduce_window" in names) == compact and "reduce" not in names
    jax.clear_caches()


def test_jaxpr_max_pool_gradient_keeps_windowed_primitive(monkeypatch):
    attrs = POOL_CASES[1]
    monkeypatch.setattr(pool_compact, "FORCE", False)
    jax.clear_caches()
    names = prims(jax.grad(lambda d: ov.max_pool(d, **attrs).sum()), np.zeros((1, 2, 6, 7)))
    jax.clear_caches()
    assert "reduce_window" not in names
