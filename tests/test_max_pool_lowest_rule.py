"""pool_tangents.pooled(..., "skip"): OpenVINO's MaxPool rule (NaN skipped, at least lowest(T)),
values and derivative (and the derivative of the rule "propagate" on a window of 132 taps).

Oracles, all independent of the code under test:

* values: a NumPy loop over each window, NaN skipped, raised to lowest(T), padding ignored
  (lowest(T) when a window has no input element), computed in float64 and cast back;
* derivative: ``jax.vjp`` of ``lax.reduce_window`` (XLA ``select_and_scatter``) applied to the
  clamped input ``where(x >= lowest, x, lowest)`` with init lowest(T), and masked where the input
  was NaN or -inf (read as lowest(T), they pass nothing). That is the rule as
  docs/semantics.md states it: each window's cotangent goes to its first maximal element,
  padding counted.

The forward takes a fast path (the plain pooling, when the output's sum is finite) or clamps and
pools again; the data below drives both: NaN, -inf and +inf (sums that are not finite), all -inf
windows (raised outputs), float16 values whose float16 sum would overflow, and clean data.
"""

from __future__ import annotations

import functools
import itertools
from functools import partial

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from helpers import lowest as _lowest
from jax import lax

from jaxmax._src.lowering import compile_options
from jaxmax._src.lowering.pooling import geometry as pool_geometry
from jaxmax._src.lowering.pooling import tangents as pool_tangents


def at_least_lowest(x, window, strides, padding):
    """The code under test, with reduce_window's arguments."""
    x = jnp.asarray(x)
    return pool_tangents.pooled(x, pool_geometry.geometry(x.shape, window, strides, padding),
                                "skip")


CASES = {
    "stem_k3_s2_p1": ((2, 3, 9, 10), (1, 1, 3, 3), (1, 1, 2, 2),
                      ((0, 0), (0, 0), (1, 1), (1, 1))),
    "k2_s2": ((2, 2, 8, 6), (1, 1, 2, 2), (1, 1, 2, 2), ((0, 0),) * 4),
    "k3_s1_p1": ((1, 2, 6, 7), (1, 1, 3, 3), (1, 1, 1, 1), ((0, 0), (0, 0), (1, 1), (1, 1))),
    "pads_ge_kernel": ((1, 2, 5, 6), (1, 1, 2, 3), (1, 1, 1, 2),
                       ((0, 0), (0, 0), (3, 2), (4, 3))),
    "3d_k3_s2_p1": ((1, 2, 5, 6, 7), (1, 1, 3, 3, 3), (1, 1, 2, 2, 2),
                    ((0, 0), (0, 0), (1, 1), (1, 1), (1, 1))),
    "3d_k2_s1_p1": ((1, 2, 4, 5, 4), (1, 1, 2, 3, 2), (1, 1, 1, 1, 1),
                    ((0, 0), (0, 0), (1, 0), (0, 1), (1, 1))),
    # over 16 taps: pooled in two stages (here with crops and pads on both stages' axes)
    "k5_s2_crop": ((1, 2, 11, 12), (1, 1, 5, 5), (1, 1, 2, 2),
                   ((0, 0), (0, 0), (-1, 2), (2, 1))),
    "3d_18_taps": ((1, 2, 5, 4, 6), (1, 1, 3, 2, 3), (1, 1, 1, 2, 1),
                   ((0, 0), (0, 0), (2, 0), (0, 1), (1, -1))),
    "rank3_ceil": ((2, 3, 11), (1, 1, 4), (1, 1, 3), ((0, 0), (0, 0), (2, 3))),
    # 130 taps on one axis: tap indices no longer fit int8
    "130_taps_1d": ((1, 2, 140), (1, 1, 130), (1, 1, 3), ((0, 0), (0, 0), (2, 1))),
    # 132 taps, pooled in two stages of 12 and 11 (the ONNX rule's gradient test below
    # uses them in one, with int32 indices)
    "132_taps": ((1, 2, 13, 12), (1, 1, 12, 11), (1, 1, 1, 1),
                 ((0, 0), (0, 0), (1, 0), (0, 1))),
}
FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16]


def _windows(shape, window, strides, padding):
    out_shape = tuple((d + lo + hi - k) // s + 1
                      for d, k, s, (lo, hi) in zip(shape, window, strides, padding, strict=True))
    for out_idx in np.ndindex(*out_shape):
        reads = []
        for offsets in itertools.product(*(range(k) for k in window)):
            pos = tuple(o * s + j - lo for o, s, j, (lo, _) in
                        zip(out_idx, strides, offsets, padding, strict=True))
            if all(0 <= p < d for p, d in zip(pos, shape, strict=True)):
                reads.append(pos)
        yield out_idx, reads, out_shape


def np_lowest_rule(x, window, strides, padding):
    """max(lowest(T), non-NaN window elements) per window, in Python numbers (exact for int8
    and for every float dtype here)."""
    low = _lowest(x.dtype).item()
    out = None
    for out_idx, reads, out_shape in _windows(x.shape, window, strides, padding):
        if out is None:
            out = np.empty(out_shape, x.dtype)
        values = [x[p].item() for p in reads if not np.isnan(float(x[p]))]
        out[out_idx] = max([low] + values)
    return out


def _data(rng, shape, dtype, kind):
    x = rng.integers(-4, 5, shape).astype(np.float64)  # few values: many ties
    flat = x.reshape(-1)
    n = max(1, flat.size // 15)
    if kind in ("special", "raised"):
        for value in (np.nan, np.inf, -np.inf, -np.nan):
            flat[rng.integers(0, flat.size, n)] = value
    if kind == "raised":  # whole channels of -inf / NaN: outputs raised to lowest(T)
        x.reshape(shape[0] * shape[1], -1)[0] = -np.inf
        x.reshape(shape[0] * shape[1], -1)[-1] = np.nan
    if kind == "minus_inf":  # no NaN anywhere, one channel all -inf: raised without any NaN
        x.reshape(shape[0] * shape[1], -1)[0] = -np.inf
    if kind == "big":  # float16: a float16 sum of these overflows, a float32 one does not
        x = np.where(x > 0, 60000.0, x)
    if kind == "lowest":  # inputs equal to lowest(T) tie with padding and with -inf
        flat[rng.integers(0, flat.size, n)] = float(_lowest(dtype))
        flat[rng.integers(0, flat.size, n)] = -np.inf
    return x.astype(dtype)


def _oracle_grad(x, ct, window, strides, padding):
    """The rule's pullback built from ``reduce_window``'s own (XLA select_and_scatter), applied
    to the cotangent `ct` (traced inside the jitted oracles below)."""
    low = _lowest(x.dtype)
    keep = x >= low  # NaN compares False
    clamped = jnp.where(keep, x, low)

    def pool(v):
        # the padding as lowest(T) elements of the data, so that reduce_window keeps its -inf
        # identity (its differentiable form); the pad's transpose drops their cotangent
        padded = lax.pad(v, low, [(lo, hi, 0) for lo, hi in padding])
        return lax.reduce_window(padded, -np.inf, lax.max, window, strides, "VALID")

    _, pullback = jax.vjp(pool, clamped)
    return jnp.where(keep, pullback(ct)[0], 0)


#: The oracles' programs compile with the library's fast-compile options
#: (`compile_options.fast_compile()`: the same HLO, compiled in a quarter to a half of the CPU
#: time); the programs under test compile as a user's jit, vmap or grad compiles them.
_oracle_jit = partial(jax.jit, compiler_options=compile_options.fast_compile())


@functools.cache
def _oracle_vjp_jitted(window, strides, padding):
    """`_oracle_grad` of (x, ct) as one jitted program, for every data kind and dtype of a
    case: outside jit, jax.vjp compiles the pad, the reduce_window and each piece of the
    transpose as programs of their own (the same operations, one compile per shape and dtype
    instead of several)."""
    return _oracle_jit(partial(_oracle_grad, window=window, strides=strides, padding=padding))


@functools.cache
def _oracle_jacobian(window, strides, padding):
    """The oracle's Jacobian of x: `_oracle_grad` applied to each row of `basis` (one
    cotangent per output), as one jitted program."""
    grad = partial(_oracle_grad, window=window, strides=strides, padding=padding)
    return _oracle_jit(jax.vmap(grad, in_axes=(None, 0)))


def _oracle_vjp(x, ct, window, strides, padding):
    return np.asarray(_oracle_vjp_jitted(window, strides, padding)(x, ct)).astype(x.dtype)


def _as64(a):
    return np.asarray(a).astype(np.float64)


# the overflowing-sum data ("big") is a float16 case
KINDS = [(kind, dtype) for kind in ("clean", "special", "raised", "minus_inf", "lowest")
         for dtype in FLOATS]
KINDS.append(("big", np.float16))


# the 130- and 132-tap windows compile slowly: float32 only
PARAMS = [(name, kind, dtype) for name in CASES for kind, dtype in KINDS
          if name not in ("130_taps_1d", "132_taps") or dtype == np.float32]


@functools.cache
def _value_and_vjp(name):
    """The jitted value and pullback of case `name`, one function for every data kind (the
    kinds of one dtype share a compile)."""
    _, window, strides, padding = CASES[name]

    @jax.jit
    def run(x, ct):
        out, pullback = jax.vjp(lambda v: at_least_lowest(v, window, strides, padding), x)
        return out, pullback(ct)[0]

    return run


@pytest.mark.parametrize("name, kind, dtype", PARAMS,
                         ids=[f"{n}-{k}-{np.dtype(d).name}" for n, k, d in PARAMS])
def test_values_and_vjp(name, kind, dtype):
    shape, window, strides, padding = CASES[name]
    rng = np.random.default_rng(abs(hash((name, kind))) % 2**32)
    x = _data(rng, shape, dtype, kind)
    want = np_lowest_rule(x, window, strides, padding)
    ct = rng.integers(1, 5, want.shape).astype(dtype)
    out, grad = _value_and_vjp(name)(x, ct)
    assert out.dtype == x.dtype and grad.dtype == x.dtype
    np.testing.assert_array_equal(_as64(out), _as64(want))
    np.testing.assert_array_equal(_as64(grad), _as64(_oracle_vjp(x, ct, window, strides,
                                                                 padding)))


@pytest.mark.parametrize("name", ["stem_k3_s2_p1", "3d_k3_s2_p1"])
def test_vmap_and_forward_mode(name):
    shape, window, strides, padding = CASES[name]
    rng = np.random.default_rng(5)
    xs = np.stack([_data(rng, shape, np.float32, kind)
                   for kind in ("clean", "special", "raised")])
    want = np.stack([np_lowest_rule(x, window, strides, padding) for x in xs])
    pool = jax.vmap(partial(at_least_lowest, window=window,
                            strides=strides, padding=padding))
    np.testing.assert_array_equal(jax.jit(pool)(xs), want)
    # forward mode: the tangent is the oracle's Jacobian (rows from reduce_window's pullback,
    # one per output) applied to t; integer tangents keep every sum exact
    jvp = jax.jit(lambda x, t: jax.jvp(lambda v: at_least_lowest(v, window, strides, padding),
                                       (x,), (t,))[1])  # one compile for the three inputs
    basis = np.eye(want[0].size, dtype=np.float32).reshape((-1,) + want.shape[1:])
    for x in xs:
        t = rng.integers(-3, 4, x.shape).astype(np.float32)
        tangent = jvp(x, t)
        jacobian = np.asarray(_oracle_jacobian(window, strides, padding)(x, basis))
        jacobian = jacobian.reshape(want[0].size, -1)
        np.testing.assert_array_equal(np.asarray(tangent).reshape(-1),
                                      jacobian @ t.reshape(-1))


def test_integers_are_the_plain_pooling():
    shape, window, strides, padding = CASES["stem_k3_s2_p1"]
    x = np.random.default_rng(3).integers(-128, 128, shape).astype(np.int8)
    x.reshape(-1)[::7] = -128
    got = jax.jit(lambda v: at_least_lowest(v, window, strides, padding))(x)
    np.testing.assert_array_equal(got, np_lowest_rule(x, window, strides, padding))


def test_propagate_rule_gradient_with_132_taps():
    # the ONNX rule's derivative in one stage, with more taps than int8 indices can name:
    # reduce_window's on clean data, and the first NaN / first maximal element otherwise
    shape, window, strides, padding = CASES["132_taps"]

    def ours(v):
        g = pool_geometry.geometry(v.shape, window, strides, padding)
        return pool_tangents.pooled(v, g, "propagate")

    vjp = jax.jit(lambda x, ct: jax.vjp(ours, x)[1](ct)[0])  # one compile for both kinds
    for kind in ("clean", "special"):
        rng = np.random.default_rng(17)
        x = _data(rng, shape, np.float32, kind)
        ct = rng.integers(1, 5, (1, 2, 3, 3)).astype(np.float32)
        got = vjp(x, ct)
        if kind == "clean":
            theirs = _oracle_jit(lambda v, c: jax.vjp(lambda u: lax.reduce_window(
                u, -np.inf, lax.max, window, strides, padding), v)[1](c)[0])(x, ct)
            np.testing.assert_array_equal(got, theirs)
        want = np.zeros(x.shape, np.float32)
        for out_idx, inside, _ in _windows(shape, window, strides, padding):
            nan = [pos for pos in inside if np.isnan(x[pos])]
            if inside:
                first = max(inside, key=lambda p: (x[p], -inside.index(p)))
                want[nan[0] if nan else first] += ct[out_idx]
        np.testing.assert_array_equal(got, want, err_msg=kind)
