"""ReduceMax's CPU lowerings (jaxmax._src.lowering.reduce_cpu) under transforms, 1 device and many.

A concrete single-device input takes the one-device lowering (the fold, the NaN-masked blocks,
the sum-of-squares NaN flag); a traced input on a machine with several devices takes the
multi-device one (``rules.cross_device_possible``). The test session has eight devices, so the
``devices`` fixture runs each test both ways. Shrinking ``_BLOCK_BYTES`` and ``_FOLD_MIN_ROW``
makes small inputs take every branch of the block loop (rows cut further, blocks with a
remainder, reduced and kept leading axes) and the fold. Expectations are NumPy computations.
"""

from __future__ import annotations

import functools
import itertools

import jax
import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same, special_floats
from jax.test_util import check_grads
from jit_batch import jit_each
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


SHAPES = [(7,), (5, 6), (3, 4, 5), (2, 3, 4, 5), (9, 1, 7)]


def _every_axes(rank):
    return [axes for r in range(1, rank + 1) for axes in itertools.combinations(range(rank), r)]


def _both_rules(xs, axes_of):
    """ReduceMax with both rules over every axes set of each input, in one program: one compile
    instead of one per (input, axes, rule); the reductions are the same static calls as eager
    ones, inlined, and the patched `rules.cross_device_possible` picks the lowering either way."""
    return [[(ov.reduce_max(x, axes), onnx.reduce_max(x, axes, keepdims=0))
             for axes in axes_of(x.ndim)] for x in xs]


@functools.cache
def _branch_data(dtype):
    """The inputs and both oracles' results for every (shape, axes): the same for every
    lowering, so computed once."""
    rng = np.random.default_rng(11)
    xs = [special_floats(rng, shape, dtype, p_nan=0.1, p_ninf=0.1, p_inf=0.05)
          for shape in SHAPES]
    want = [[(openvino_reduce_max_wide(x, axes), onnx_reduce_max_wide(x, axes))
             for axes in _every_axes(x.ndim)] for x in xs]
    return xs, want


_ACROSS: dict = {}


def _across_lowerings(key, settings, fn, *args, as_eager=False):
    """`fn(*args)` under each lowering of `settings` (arguments of `_lowering`), in one program:
    `fn` is traced to a jaxpr under each lowering's settings (the caches cleared before each, as
    the fixtures do, so no trace of other settings is reused), and one jit evaluates every
    jaxpr, so each reduction is the same static call, traced the same way, as in a program of its
    own lowering. One compile for the group instead of one per lowering (XLA's common
    subexpression elimination compiles once what two lowerings trace alike, such as the small
    shapes below a block of the real sizes). ``{settings: outputs as NumPy arrays}``, computed
    by the first test of the group (`key`) and read by the others. With `as_eager` (a group
    that stands for eager calls of `fn`'s operators), compiled as those eager calls compile
    (`jit_batch.jit_each`): with the fast options of a small eager call when `args` are small,
    without the option that changes bfloat16 bits when one is bfloat16."""
    if key not in _ACROSS:
        jaxprs = {}
        for params in settings:
            with pytest.MonkeyPatch.context() as patch:
                _lowering(patch, *params)
                jaxprs[params] = jax.make_jaxpr(fn, return_shape=True)(*args)
        jax.clear_caches()  # traced with other settings than the calling test's

        def every(*flat):
            return {params: jax.tree.unflatten(jax.tree.structure(shapes),
                                               jax.core.eval_jaxpr(j.jaxpr, j.consts, *flat))
                    for params, (j, shapes) in jaxprs.items()}

        flat = jax.tree.leaves(args)  # the arrays themselves, for jit_each to size and type
        _ACROSS[key] = (jit_each([(every, flat)], as_eager=True)[0] if as_eager
                        else jax.tree.map(np.asarray, jax.jit(every)(*flat)))
    return _ACROSS[key]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_every_branch_gives_both_rules_exactly(lowering, dtype):
    xs, want = _branch_data(dtype)
    # every lowering of LOWERINGS in one program per dtype (see _across_lowerings)
    got = _across_lowerings(("branches", np.dtype(dtype).name), LOWERINGS,
                            lambda xs: _both_rules(xs, _every_axes), xs, as_eager=True)[lowering]
    for x, got_x, want_x in zip(xs, got, want, strict=True):
        for axes, (ov_got, onnx_got), (ov_want, onnx_want) in zip(
                _every_axes(x.ndim), got_x, want_x, strict=True):
            context = f"{lowering} {np.dtype(dtype).name} shape {x.shape} axes {axes}"
            assert_same(ov_got, ov_want, f"{context} openvino")
            assert_same(onnx_got, onnx_want, f"{context} onnx")


def test_float64_and_integers(lowering):
    rng = np.random.default_rng(12)
    ints = rng.integers(-100, 100, (6, 5, 4)).astype(np.int8)
    every = [(0,), (1,), (0, 2), (1, 2), (0, 1, 2)]
    with jax.enable_x64(True):
        x = special_floats(rng, (6, 5, 4), np.float64, p_nan=0.1, p_ninf=0.1, p_inf=0.05)
        # one program for the 15 reductions (see _both_rules) under every lowering of LOWERINGS
        # (see _across_lowerings)
        floats, integers = _across_lowerings("float64 and int8", LOWERINGS, lambda v, i: (
            _both_rules([v], lambda _: every)[0],
            [ov.reduce_max(i, axes) for axes in every]), x, ints, as_eager=True)[lowering]
        for axes, (ov_got, onnx_got), int_got in zip(every, floats, integers, strict=True):
            context = f"{lowering} axes {axes}"
            assert_same(ov_got, openvino_reduce_max_wide(x, axes), f"{context} float64 openvino")
            assert_same(onnx_got, onnx_reduce_max_wide(x, axes), f"{context} float64 onnx")
            assert_same(int_got, np.max(ints, axis=axes), f"{context} int8")


@pytest.mark.parametrize("flavour", ["openvino", "onnx"])
@pytest.mark.parametrize("shape, axes", [(SHAPE, (0,)), ((6, 50, 7), (1,)), ((6, 50, 7), (0, 2))])
def test_gradient_and_jvp_follow_the_tie_rule(devices, flavour, shape, axes):
    # the small shapes take the blocks
    settings = [(d, 256) for d in ("one-device", "multi-device")]
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
    t = rng.standard_normal(shape).astype(np.float32)
    # one program for both (eager, the transposed reduction ran primitive by primitive), and for
    # both values of `devices` (see _across_lowerings)
    (grad,), (_, tangent) = _across_lowerings(("gradient", flavour, shape, axes), settings,
                                              lambda v, c, u: (jax.vjp(f, v)[1](c),
                                                               jax.jvp(f, (v,), (u,))),
                                              x, ct, t)[(devices, 256)]
    np.testing.assert_allclose(grad, share * np.expand_dims(ct, axes), rtol=1e-6)
    np.testing.assert_allclose(tangent, (share * t).sum(axis=axes), rtol=1e-5, atol=1e-6)


def test_check_grads_in_float64(devices):
    with jax.enable_x64(True):
        x = np.random.default_rng(2).permutation(np.prod(SHAPE)).reshape(SHAPE) / 1000.0
        # jitted: each derivative one program, not the transposed reduction op by op
        check_grads(jax.jit(lambda v: ov.reduce_max(v, 0)), (x,), order=1, modes=("fwd", "rev"))
        check_grads(jax.jit(lambda v: onnx.reduce_max(v, [1, 2])), (x,), order=1,
                    modes=("fwd", "rev"))


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.float16, np.int8])
def test_vmap_over_a_middle_axis_equals_a_loop(devices, dtype):
    x = (np.random.default_rng(3).standard_normal((4, 3, 40000)) * 50).astype(dtype)
    if dtype != np.int8:
        x[1, 2, 5] = x[0, 0, 7] = np.nan
    # both values of `devices` in one program (see _across_lowerings), as NumPy arrays (indexing
    # a jax.Array compiled a slice per row)
    batched = _across_lowerings(("vmap", np.dtype(dtype).name),
                                [("one-device",), ("multi-device",)],
                                jax.vmap(lambda v: ov.reduce_max(v, 0), in_axes=1), x)[(devices,)]
    for i in range(3):
        assert_same(batched[i], openvino_reduce_max_wide(x[:, i], (0,)) if dtype != np.int8
                     else np.max(x[:, i], axis=0))
