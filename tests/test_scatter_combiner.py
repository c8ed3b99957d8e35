"""The combiner scatters of the core (`scatter_combiner`: the exact orders in one pass over the
updates) against the sequential-fold oracle: subnormals against zeros of both signs and
against each other, which XLA's float compare cannot tell apart, on every face; the orders
themselves on every class of value; and the public form a JAX without the private primitive
takes, on the same cases."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import public_forms
from test_scatter import assert_bits
from test_scatter_sweep import elements_case, matches_oracle, x64

from jaxmax._src.lowering.scatter import combiner as scatter_combiner
from jaxmax._src.lowering.scatter import private as private_scatter

FLOAT_WIDE = [np.float32, np.float64]


def _pool(dtype):
    tiny = np.finfo(dtype).smallest_subnormal
    return np.array([-np.inf, -1.0, -3 * tiny, -tiny, -0.0, 0.0, tiny, 3 * tiny, 1.0, np.inf,
                     np.nan], dtype)


def _cases(dtype, seed, count):
    rng = np.random.default_rng(seed)
    pool = _pool(dtype)
    for trial in range(count):
        axis = trial % 2
        data_shape, indices = elements_case(rng, 2, axis, row_layout=trial % 3 != 2)
        data = rng.choice(pool, size=data_shape)
        updates = rng.choice(pool, size=indices.shape)
        if trial % 4 == 0:  # NaN-free: the folds' zero ties, without the NaN closed form
            data[np.isnan(data)] = 0.0
            updates[np.isnan(updates)] = -0.0
        if trial % 4 == 1:  # zero results with zeros of both signs: the sign of the fold
            zeros = np.array([-1.0, -0.0, 0.0, -0.0, 0.0], dtype)
            data = rng.choice(zeros, size=data_shape)
            updates = rng.choice(zeros, size=indices.shape)
        yield axis, data, indices, updates


def test_the_combiner_scatter_binds_on_this_jax():
    # the installed JAX must take the combiner form (the public form is the fallback only)
    assert private_scatter.available()
    assert scatter_combiner.supports(np.float32) and scatter_combiner.supports(np.float64)
    assert not scatter_combiner.supports(np.float16)


def _every_face_matches_the_oracle(dtype, seed, count):
    # every case and face, with concrete and with traced indices, in one jitted program
    cases = []
    for axis, data, indices, updates in _cases(dtype, seed, count):
        for face, kw in (("se", {}), ("seu", {}), ("seu", {"use_init_val": False})):
            cases.append((face, data, indices, updates, dict(kw, axis=axis),
                          f"{indices.tolist()} {updates.tolist()} {data.tolist()}"))
        nd_idx = indices.reshape(-1, 1) % data.shape[0]
        nd_upd = np.random.default_rng(axis).choice(_pool(dtype),
                                                    (nd_idx.shape[0],) + data.shape[1:])
        for face in ("snd", "sndu"):
            cases.append((face, data, nd_idx, nd_upd, {}, f"{nd_idx.tolist()}"))
    matches_oracle(cases)


@pytest.mark.parametrize("dtype", FLOAT_WIDE, ids=lambda d: np.dtype(d).name)
def test_subnormals_against_zeros_on_every_face(dtype):
    with x64(dtype):
        _every_face_matches_the_oracle(dtype, 23, 12)


@pytest.mark.parametrize("kind", scatter_combiner.KINDS)
def test_each_order_on_every_pair_of_values(kind):
    # one target, operand a and update b, for every ordered pair of the value classes: the
    # IEEE maximum (NaN on top), the same with a NaN update never winning, the bits' minimum
    pool = _pool(np.float32)
    pairs = np.array(list(itertools.product(pool, pool)), np.float32)
    operand, values = pairs[:, 0], pairs[:, 1]
    numbers = jax.lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                              scatter_dims_to_operand_dims=(0,))
    index = jnp.arange(len(pairs), dtype=jnp.int32)[:, None]
    got = np.asarray(jax.jit(lambda o, v: scatter_combiner.scatter(kind, o, index, v, numbers))(
        operand, values))
    for a, b, out in zip(operand, values, got, strict=True):
        bits = np.array([a, b]).view(np.int32)
        if kind == "bits_min":
            want = np.array(bits.min()).view(np.float32)
        elif kind == "ieee_max" and (np.isnan(a) or np.isnan(b)):
            want = np.float32(np.nan)
        elif np.isnan(b):  # max_skip_nan: a NaN update never wins (a NaN operand is lowest)
            want = a
        elif np.isnan(a) or b > a or (a == b and np.signbit(a)):
            want = b
        else:
            want = a
        assert_bits(np.array([out]), np.array([want]), f"{kind} {a!r} {b!r}")


def test_the_public_form_without_the_combiner():
    # a JAX without the private primitive takes the previous form: the same results
    with public_forms():
        assert not scatter_combiner.supports(np.float32)
        _every_face_matches_the_oracle(np.float32, 29, 8)
