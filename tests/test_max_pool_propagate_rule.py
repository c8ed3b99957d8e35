"""pool_tangents.pooled(..., "propagate"): the phase-sliced max pooling under the rule NaN
propagates (ONNX MaxPool's values and derivative).

Oracles: ``lax.reduce_window`` (values, with and without dilation), plus plain NumPy loops
written here: the values, and the winner rule "the first input element of the window, in
row-major order, that is NaN when the window holds one, else equal to its maximum; padding
never; a window without input elements passes nothing". ``jax.grad`` of ``reduce_window``
(XLA ``select_and_scatter``) differs from that rule only where padding ties with a ``-inf``
maximum or NaN is present; its own loop oracle ("scan the window, padding included as -inf;
replace the selection unless ``selected >= element``") is checked against it, and the two
rules agree on the data where they must.
"""

from __future__ import annotations

import itertools
import math
import zlib

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax
from jax.test_util import check_grads
from jit_batch import jit_each

from jaxmax._src.lowering.pooling import geometry as pool_geometry
from jaxmax._src.lowering.pooling import tangents as pool_tangents


def propagating(x, window, strides, padding, dilation=None):
    """The code under test, with reduce_window's arguments."""
    x = jnp.asarray(x)
    g = pool_geometry.geometry(x.shape, window, strides, padding, dilation)
    return pool_tangents.pooled(x, g, "propagate")


POOLS = {"propagating": propagating}
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.uint8, np.int32, np.bool_]


# ----------------------------------------------------------------------------- oracles

def _identity(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array(False)
    if np.issubdtype(dtype, np.integer):
        return np.array(np.iinfo(dtype).min, dtype)
    return np.array(-np.inf, dtype)


def _reduce_window(x, window, strides, padding):
    return lax.reduce_window(x, _identity(x.dtype), lax.max, window, strides, padding)


def _out_shape(shape, window, strides, padding):
    return tuple(max(0, (d + lo + hi - k) // s + 1)
                 for d, k, s, (lo, hi) in zip(shape, window, strides, padding, strict=True))


def _windows(shape, window, strides, padding):
    """For each output index: the input indices its window reads, row-major; None = padding."""
    out_shape = _out_shape(shape, window, strides, padding)
    for out_idx in np.ndindex(*out_shape):
        reads = []
        for offsets in itertools.product(*(range(k) for k in window)):
            pos = tuple(o * s + j - lo for o, s, j, (lo, _) in
                        zip(out_idx, strides, offsets, padding, strict=True))
            inside = all(0 <= p < d for p, d in zip(pos, shape, strict=True))
            reads.append(pos if inside else None)
        yield out_idx, reads


def np_max_pool(x, window, strides, padding):
    """Loop oracle: max over the window's input elements (padding = identity); NaN wins."""
    x = np.asarray(x)
    is_float = bool(jnp.issubdtype(x.dtype, jnp.floating))
    out = np.empty(_out_shape(x.shape, window, strides, padding), x.dtype)
    for out_idx, reads in _windows(x.shape, window, strides, padding):
        values = [float(x[p]) if is_float else x[p].item() for p in reads if p is not None]
        if is_float and any(math.isnan(v) for v in values):
            out[out_idx] = np.nan
        else:
            out[out_idx] = max(values, default=_identity(x.dtype).item())
    return out


def np_select(x, reads):
    """The element select_and_scatter (select = ``ge``) picks: scan the window, padding
    included as ``-inf``, in row-major order; replace the selection unless ``selected >=
    element``. Returns an input index, or None when the selection is padding."""
    chosen, best = None, None
    for pos in reads:
        value = -np.inf if pos is None else float(x[pos])
        if best is None or not best >= value:
            chosen, best = pos, value
    return chosen


def np_winner(x, reads):
    """The ONNX rule's winner: the first input element that is NaN when the window holds one,
    else the first equal to the window's maximum; None without input elements."""
    inside = [pos for pos in reads if pos is not None]
    values = [float(x[pos]) for pos in inside]
    if any(math.isnan(v) for v in values):
        return inside[[math.isnan(v) for v in values].index(True)]
    return inside[values.index(max(values))] if inside else None


def np_grad(x, ct, window, strides, padding, select=np_winner):
    """Loop oracle of the gradient: each window's cotangent to its `select` choice
    (`np_select`: reduce_window's)."""
    g = np.zeros(np.shape(x), np.float64)
    for out_idx, reads in _windows(np.shape(x), window, strides, padding):
        chosen = select(x, reads)
        if chosen is not None:
            g[chosen] += float(ct[out_idx])
    return g


# ----------------------------------------------------------------------------- helpers

def _nc(spatial_k, spatial_s, spatial_pads):
    """Window arguments for (N, C, *spatial) data."""
    return ((1, 1) + tuple(spatial_k), (1, 1) + tuple(spatial_s),
            ((0, 0), (0, 0)) + tuple(spatial_pads))


def _data(rng, shape, dtype, *, special=False):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = rng.integers(max(-4, int(info.min)), 5, shape).astype(dtype)
        # the extremes, including iinfo.min == the padding identity
        flat = x.reshape(-1)
        if flat.size >= 2:
            flat[rng.integers(0, flat.size)] = info.min
            flat[rng.integers(0, flat.size)] = info.max
        return flat.reshape(shape)
    x = rng.integers(-4, 5, shape).astype(np.float32)  # few distinct values: many ties
    if special and x.size:
        flat = x.reshape(-1)
        for value in (np.nan, np.inf, -np.inf, -np.inf):
            flat[rng.integers(0, flat.size, max(1, flat.size // 20))] = value
        x = flat.reshape(shape)
    return x.astype(dtype)


def _assert_equal(got, want, err_msg=""):
    """Exact equality (NaN == NaN); low-precision floats compared after an exact widening,
    since NumPy's testing does not recognise a bfloat16 NaN as NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if jnp.issubdtype(got.dtype, jnp.floating):
        got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(got, want, err_msg=err_msg)


def _oracle_windows(xs, window, strides, padding, dilation=None):
    """``lax.reduce_window``'s max of each x of `xs`: an oracle's programs, compiled as eager
    calls of them on these small inputs compile (`jit_batch.jit_each`, fast options), apart
    from the plainly compiled program under test (one program for all of them cost more
    compile CPU time than the two, measured here)."""
    return jit_each([(lambda x: lax.reduce_window(x, _identity(x.dtype), lax.max, window,
                                                  strides, padding, window_dilation=dilation),
                      (x,)) for x in xs], as_eager=True)


def _check_values(shape, window, strides, padding, seed, dtypes=DTYPES, special=True,
                  numpy_oracle=True):
    rng = np.random.default_rng(seed)
    xs = [_data(rng, shape, dt, special=special) for dt in dtypes]
    got_all = jax.jit(lambda xs: [propagating(x, window, strides, padding) for x in xs])(xs)
    want_all = _oracle_windows(xs, window, strides, padding)
    for x, got, want in zip(xs, got_all, want_all, strict=True):
        assert got.dtype == x.dtype and got.shape == want.shape, (x.dtype, got.shape, want.shape)
        _assert_equal(got, want, err_msg=str(x.dtype))
        if numpy_oracle:
            _assert_equal(got, np_max_pool(x, window, strides, padding), err_msg=str(x.dtype))


# ----------------------------------------------------------------------------- values

VALUE_CASES = {
    # name: (shape, window, strides, padding)
    "stem_k3_s2_p1": ((2, 3, 9, 10),) + _nc((3, 3), (2, 2), ((1, 1), (1, 1))),
    "k2_s2_p0": ((2, 2, 8, 6),) + _nc((2, 2), (2, 2), ((0, 0), (0, 0))),
    "k3_s1_p1": ((1, 2, 6, 7),) + _nc((3, 3), (1, 1), ((1, 1), (1, 1))),
    "stride_gt_kernel": ((1, 2, 11, 9),) + _nc((2, 1), (3, 4), ((0, 0), (1, 0))),
    "pads_ge_kernel": ((1, 2, 5, 6),) + _nc((2, 3), (1, 2), ((3, 2), (4, 3))),
    "ceil_extended_end": ((1, 1, 7, 5),) + _nc((3, 2), (2, 2), ((0, 4), (1, 3))),
    "odd_size_stride3": ((1, 2, 10, 8),) + _nc((4, 2), (3, 3), ((2, 1), (0, 2))),
    "rank3": ((2, 3, 13),) + _nc((4,), (3,), ((2, 3),)),
    "rank5": ((1, 2, 5, 6, 7),) + _nc((3, 2, 3), (2, 1, 3), ((1, 1), (0, 1), (2, 3))),
    "rank5_k1_s1": ((1, 2, 3, 4, 2),) + _nc((1, 1, 1), (1, 1, 1), ((0, 0), (0, 0), (0, 0))),
    "whole_window": ((2, 1, 4, 5),) + _nc((4, 5), (1, 1), ((0, 0), (0, 0))),
    "negative_pads": ((1, 2, 8, 7),) + _nc((2, 3), (2, 1), ((-1, 0), (1, -2))),
    "window_on_every_axis": ((4, 5, 6), (2, 3, 2), (2, 1, 3), ((1, 0), (0, 2), (1, 1))),
    "rank1": ((17,), (3,), (2,), ((1, 1),)),
}


@pytest.mark.parametrize("name", list(VALUE_CASES))
def test_values_equal_reduce_window_and_loops(name):
    shape, window, strides, padding = VALUE_CASES[name]
    _check_values(shape, window, strides, padding, seed=zlib.crc32(name.encode()))


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_values_random_geometry(data):
    nsp = data.draw(st.integers(1, 3), label="spatial rank")
    spatial, ks, ss, pads = [], [], [], []
    for _ in range(nsp):
        k = data.draw(st.integers(1, 4))
        s = data.draw(st.integers(1, 4))
        lo = data.draw(st.integers(0, 5))
        hi = data.draw(st.integers(0, 5))
        size = data.draw(st.integers(max(0, k - lo - hi), 9))
        if data.draw(st.booleans(), label="ceil extension"):
            hi += s - 1  # what the ceil-mode geometry does: one more (maybe all-padding) window
        spatial.append(size), ks.append(k), ss.append(s), pads.append((lo, hi))
    shape = (1, 2) + tuple(spatial)
    _check_values(shape, *_nc(ks, ss, pads), seed=data.draw(st.integers(0, 2**16)),
                  dtypes=[np.float32, np.int8])


DILATED_CASES = {
    # name: (shape, spatial kernel, strides, dilations, pads); stride-1 axes with padding are
    # pooled as interior and border slabs
    "k3_d2_s1_p1": ((2, 3, 9, 10), (3, 3), (1, 1), (2, 2), ((1, 1), (1, 1))),
    "k2_d3_s1_crop": ((1, 2, 8, 7), (2, 2), (1, 1), (3, 1), ((2, 0), (-1, 3))),
    "k3_d2_s2_odd": ((1, 2, 9, 11), (3, 2), (2, 3), (2, 2), ((1, 2), (0, 1))),
    "pads_ge_reach": ((1, 1, 3, 4), (2, 3), (1, 1), (2, 1), ((3, 3), (4, 2))),
    "rank5_mixed": ((1, 2, 5, 6, 7), (2, 3, 2), (1, 2, 1), (2, 1, 3), ((1, 0), (1, 1), (2, 1))),
}


@pytest.mark.parametrize("name", list(DILATED_CASES))
def test_dilated_values_and_border_slabs(name):
    shape, k, s, d, pads = DILATED_CASES[name]
    window, strides, padding = _nc(k, s, pads)
    dilation = (1, 1) + d
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    xs = [_data(rng, shape, dt, special=True) for dt in (np.float32, np.int8, np.bool_)]
    got_all = jax.jit(lambda xs: [propagating(x, window, strides, padding, dilation)
                                  for x in xs])(xs)
    want_all = _oracle_windows(xs, window, strides, padding, dilation)
    for x, got, want in zip(xs, got_all, want_all, strict=True):
        assert got.dtype == x.dtype
        _assert_equal(got, want, err_msg=str(x.dtype))


def test_nan_inf_and_all_minus_inf_windows():
    x = np.array([[[np.nan, 1, -np.inf, -np.inf, -np.inf, 2, np.inf, np.nan, -np.inf]]],
                 np.float32)
    for k, s, pads in [(2, 1, (1, 1)), (3, 2, (2, 4)), (1, 1, (3, 0)), (4, 3, (0, 5))]:
        window, strides, padding = _nc((k,), (s,), (pads,))
        got, want = jax.jit(lambda v, w=window, s=strides, p=padding: (
            propagating(v, w, s, p), _reduce_window(v, w, s, p)))(x)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, np_max_pool(x, window, strides, padding))
    # a window that sees padding only gives the identity, for every dtype
    xs = [np.ones((1, 1, 2), dt) for dt in DTYPES]
    got = jax.jit(lambda xs: [propagating(v, *_nc((2,), (2,), ((0, 4),))) for v in xs])(xs)
    for g, x in zip(got, xs, strict=True):
        _assert_equal(g, np.array([[[1, _identity(x.dtype), _identity(x.dtype)]]], x.dtype))


def test_64_bit_dtypes():
    with jax.enable_x64(True):
        rng = np.random.default_rng(3)
        window, strides, padding = _nc((3, 2), (2, 2), ((1, 2), (0, 1)))
        xs = [_data(rng, (2, 2, 7, 6), dt, special=True) for dt in (np.float64, np.int64,
                                                                   np.uint64)]
        # one program for the three dtypes and both pools (eager, `propagating` ran primitive
        # by primitive, a compile each)
        both = jax.jit(lambda xs: [(propagating(x, window, strides, padding),
                                    _reduce_window(x, window, strides, padding)) for x in xs])
        for x, (got, want) in zip(xs, both(xs), strict=True):
            assert got.dtype == x.dtype
            np.testing.assert_array_equal(got, want, err_msg=str(x.dtype))
            np.testing.assert_array_equal(got, np_max_pool(x, window, strides, padding),
                                          err_msg=str(x.dtype))


def test_empty_output_and_empty_input():
    x = np.ones((1, 1, 3), np.float32)
    for window, strides, padding in [_nc((5,), (1,), ((0, 0),)), _nc((2,), (1,), ((0, 0),))]:
        np.testing.assert_array_equal(propagating(x, window, strides, padding),
                                      _reduce_window(x, window, strides, padding))
    empty = np.ones((0, 2, 4), np.float32)
    window, strides, padding = _nc((2,), (2,), ((1, 1),))
    got = propagating(empty, window, strides, padding)
    assert got.shape == (0, 2, 3)
    zero_len = np.ones((1, 2, 0), np.float32)
    got = propagating(zero_len, *_nc((2,), (1,), ((1, 2),)))
    np.testing.assert_array_equal(got, np.full((1, 2, 2), -np.inf, np.float32))
    g = jax.grad(lambda v: propagating(v, *_nc((2,), (1,), ((1, 2),))).sum())(zero_len)
    assert g.shape == zero_len.shape


def test_bad_arguments():
    x = np.ones((1, 1, 4), np.float32)
    with pytest.raises(ValueError, match="one entry per axis"):
        propagating(x, (1, 2), (1, 1), ((0, 0), (0, 0)))
    with pytest.raises(ValueError, match=">= 1"):
        propagating(x, (1, 1, 0), (1, 1, 1), ((0, 0),) * 3)
    with pytest.raises(ValueError, match=">= 1"):
        propagating(x, (1, 1, 2), (1, 1, 0), ((0, 0),) * 3)


# ----------------------------------------------------------------------------- gradients

#: The value cases' geometries on smaller inputs, keyed by their own names (each seeds its data).
GRAD_CASES = {name: (shape,) + VALUE_CASES[geometry][1:] for name, geometry, shape in [
    ("stem_k3_s2_p1", "stem_k3_s2_p1", (2, 2, 8, 9)), ("k2_s2", "k2_s2_p0", (1, 2, 6, 6)),
    ("k3_s1_p1", "k3_s1_p1", (1, 2, 5, 6)), ("rank3", "rank3", (2, 2, 11)),
    ("rank5", "rank5", (1, 2, 5, 6, 7)), ("negative_pads", "negative_pads", (1, 1, 8, 7))]}
# and two geometries of their own: an odd size under a stride above the kernel, pads above it
GRAD_CASES["stride_gt_kernel_odd"] = ((1, 1, 10, 7),) + _nc((2, 3), (3, 4), ((1, 0), (2, 2)))
GRAD_CASES["pads_ge_kernel_ceil"] = ((1, 2, 5, 4),) + _nc((2, 3), (2, 1), ((3, 4), (3, 5)))


def _all_grads(xs, ct, window, strides, padding, with_reduce_window=True):
    """{name: gradients of vdot(pool(x), ct) for each x in xs}, in one compilation."""
    pools = dict(POOLS, reduce_window=_reduce_window) if with_reduce_window else POOLS

    def grads(xs):
        return {name: [jax.grad(lambda v, pool=pool: jnp.vdot(pool(v, window, strides, padding),
                                                              ct))(x)
                       for x in xs] for name, pool in pools.items()}

    return jax.jit(grads)(xs)


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_grad_equals_reduce_window_on_ties_and_random(name):
    shape, window, strides, padding = GRAD_CASES[name]
    rng = np.random.default_rng(len(name))
    out_shape = _out_shape(shape, window, strides, padding)
    ct = rng.integers(-3, 4, out_shape).astype(np.float32)  # integer sums are exact
    ties = rng.integers(-2, 2, shape).astype(np.float32)
    ties.reshape(-1)[: ties.size // 5] = -np.inf  # -inf inputs, also next to padding
    rng.shuffle(ties.reshape(-1))
    rand = rng.standard_normal(shape).astype(np.float32)
    xs = [ties, rand, np.zeros(shape, np.float32)]
    # jax.grad of reduce_window raises for negative padding (its transpose builds a negative
    # slice start), so that case is checked against the loop oracle only.
    with_rw = min(lo for lo, _ in padding) >= 0
    got = _all_grads(xs, ct, window, strides, padding, with_reduce_window=with_rw)
    for i, x in enumerate(xs):
        for pool_name, grads in got.items():
            select = np_select if pool_name == "reduce_window" else np_winner
            np.testing.assert_array_equal(grads[i], np_grad(x, ct, window, strides, padding,
                                                            select), err_msg=pool_name)
        if i:  # no -inf: the two rules agree
            np.testing.assert_array_equal(np_grad(x, ct, window, strides, padding),
                                          np_grad(x, ct, window, strides, padding, np_select))


def test_grad_first_maximal_and_padding_rules():
    # Padding never wins: [pad, pad] passes nothing, [pad, -inf], [-inf, -inf] and [-inf, pad]
    # pass to the first -inf input (reduce_window's scan counts padding as -inf: its
    # [pad, -inf] passes nothing); ties go to the first maximal element in row-major order.
    x = np.array([[[-np.inf, -np.inf, 1.0, 1.0, -np.inf]]], np.float32)
    window, strides, padding = _nc((2,), (1,), ((2, 1),))
    ones = np.ones((1, 1, 7), np.float32)
    want = {"propagating": [[[2.0, 0.0, 2.0, 1.0, 1.0]]],
            "reduce_window": [[[1.0, 0.0, 2.0, 1.0, 1.0]]]}
    for pool_name, g in _all_grads([x], ones, window, strides, padding).items():
        np.testing.assert_array_equal(g[0], want[pool_name], err_msg=pool_name)
    x = np.array([[[[5, 5], [5, 5]]]], np.float32)
    window, strides, padding = _nc((2, 2), (1, 1), ((0, 0), (0, 0)))
    for pool_name, g in _all_grads([x], np.ones((1, 1, 1, 1), np.float32), window, strides,
                                   padding).items():
        np.testing.assert_array_equal(g[0], [[[[1, 0], [0, 0]]]], err_msg=pool_name)


def test_grad_with_nan_goes_to_the_first_nan():
    rng = np.random.default_rng(7)
    shape, window, strides, padding = GRAD_CASES["stem_k3_s2_p1"]
    x = _data(rng, shape, np.float32, special=True)
    ct = rng.integers(-3, 4, _out_shape(shape, window, strides, padding)).astype(np.float32)
    for pool_name, grads in _all_grads([x], ct, window, strides, padding).items():
        select = np_select if pool_name == "reduce_window" else np_winner
        np.testing.assert_array_equal(grads[0], np_grad(x, ct, window, strides, padding, select),
                                      err_msg=pool_name)


def test_grad_low_precision_floats():
    shape, window, strides, padding = GRAD_CASES["stem_k3_s2_p1"]
    rng = np.random.default_rng(11)
    cases = []
    for dt in (np.float16, ml_dtypes.bfloat16):
        x = rng.integers(-3, 3, shape).astype(dt)
        ct = rng.integers(-3, 4, _out_shape(shape, window, strides, padding)).astype(dt)
        cases.append((x, ct))

    def grad(pool, x, ct):
        return jax.grad(lambda v: jnp.vdot(pool(v, window, strides, padding), ct))(x)

    # both dtypes and both pools in one program
    got = jax.jit(lambda cases: [(grad(propagating, x, ct), grad(_reduce_window, x, ct))
                                 for x, ct in cases])(cases)
    for (x, _), (g, want) in zip(cases, got, strict=True):
        _assert_equal(g, want, err_msg=str(x.dtype))


@pytest.mark.parametrize("name,order", [("stem_k3_s2_p1", 1), ("rank3", 2),
                                        ("pads_ge_kernel_ceil", 1)])
def test_check_grads_fwd_and_rev_on_unique_values(name, order):
    shape, window, strides, padding = GRAD_CASES[name]
    with jax.enable_x64(True):
        rng = np.random.default_rng(5)
        x = rng.permutation(np.prod(shape)).reshape(shape).astype(np.float64) / 7.0
        f = jax.jit(lambda v: propagating(v, window, strides, padding))
        check_grads(f, (x,), order=order, modes=("fwd", "rev"))


def test_jvp_gathers_the_selected_tangent():
    shape, window, strides, padding = GRAD_CASES["rank5"]
    rng = np.random.default_rng(9)
    x = rng.integers(-1, 2, shape).astype(np.float32)  # heavy ties
    t = rng.integers(-50, 50, shape).astype(np.float32)
    def f(v):
        return propagating(v, window, strides, padding)

    y, ty = jax.jit(lambda v, dv: jax.jvp(f, (v,), (dv,)))(x, t)
    np.testing.assert_array_equal(y, np_max_pool(x, window, strides, padding))
    # oracle: the tangent of the winner (zero without one)
    want = np.zeros(y.shape, np.float32)
    for out_idx, reads in _windows(shape, window, strides, padding):
        chosen = np_winner(x, reads)
        want[out_idx] = 0.0 if chosen is None else t[chosen]
    np.testing.assert_array_equal(ty, want)
    # forward and reverse mode agree (one-hot rows; exact)
    small = GRAD_CASES["stem_k3_s2_p1"]
    xs = rng.integers(-1, 2, small[0]).astype(np.float32)
    def g(v):
        return propagating(v, *small[1:])

    jac_fwd, jac_rev = jax.jit(lambda v: (jax.jacfwd(g)(v), jax.jacrev(g)(v)))(xs)
    np.testing.assert_array_equal(jac_fwd, jac_rev)


# ----------------------------------------------------------------------------- transforms

def test_jit_equals_eager_and_vmap_equals_loop():
    rng = np.random.default_rng(13)
    window, strides, padding = _nc((3, 2), (2, 2), ((1, 1), (0, 1)))
    x = rng.integers(-3, 3, (3, 2, 2, 7, 6)).astype(np.float32)  # leading axis: vmapped
    def f(v):
        return propagating(v, window, strides, padding)

    loop = np.stack([np_max_pool(v, window, strides, padding) for v in x])
    np.testing.assert_array_equal(f(x[0]), loop[0])  # eager
    np.testing.assert_array_equal(jax.jit(jax.vmap(f))(x), loop)
    xm = np.moveaxis(x, 0, 2)  # batch axis in the middle
    np.testing.assert_array_equal(jax.jit(jax.vmap(f, in_axes=2, out_axes=2))(xm),
                                  np.moveaxis(loop, 0, 2))
    # vmap of the gradient and of jvp equal the per-example loop oracles
    ct = rng.integers(-3, 4, loop.shape[1:]).astype(np.float32)
    t = rng.integers(-9, 9, x.shape).astype(np.float32)
    for pool in POOLS.values():
        grad = jax.grad(lambda v, pool=pool: jnp.vdot(pool(v, window, strides, padding), ct))
        got = np.asarray(jax.jit(jax.vmap(grad))(x))  # NumPy: indexing compiled a slice each
        for i in range(x.shape[0]):
            np.testing.assert_array_equal(got[i], np_grad(x[i], ct, window, strides, padding))
    ty = np.asarray(jax.jit(jax.vmap(lambda v, dv: jax.jvp(f, (v,), (dv,))))(x, t)[1])
    for i in range(x.shape[0]):
        want = np.zeros(loop.shape[1:], np.float32)
        for out_idx, reads in _windows(x.shape[1:], window, strides, padding):
            chosen = np_winner(x[i], reads)
            want[out_idx] = 0.0 if chosen is None else t[i][chosen]
        np.testing.assert_array_equal(ty[i], want)


def test_traced_under_outer_jit_with_static_geometry():
    window, strides, padding = _nc((3, 3), (2, 2), ((1, 1), (1, 1)))
    x = np.random.default_rng(2).standard_normal((2, 3, 8, 8)).astype(np.float32)
    f = jax.jit(lambda v: propagating(v * 2.0, window, strides, padding) + 1.0)
    np.testing.assert_array_equal(f(x), np_max_pool(x * 2.0, window, strides, padding) + 1.0)
    jaxpr = str(jax.make_jaxpr(lambda v: propagating(v, window, strides, padding))(x))
    # the phase-sliced scan (compare and select per tap), not reduce_window
    assert "reduce_window" not in jaxpr and "select_n" in jaxpr


def test_sharded_input_gives_the_unsharded_answer():
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("n", "h"))
    window, strides, padding = _nc((3, 3), (2, 2), ((1, 1), (1, 0)))
    rng = np.random.default_rng(17)
    x = rng.integers(-3, 3, (4, 2, 16, 12)).astype(np.float32)
    ct = rng.integers(-3, 4, _out_shape(x.shape, window, strides, padding)).astype(np.float32)
    xs = jax.device_put(x, NamedSharding(mesh, P("n", None, "h", None)))  # batch and a
    f = jax.jit(lambda v: propagating(v, window, strides, padding))  # spatial axis
    np.testing.assert_array_equal(f(xs), np_max_pool(x, window, strides, padding))
    grad = jax.jit(jax.grad(lambda v: jnp.vdot(propagating(v, window, strides, padding), ct)))
    np.testing.assert_array_equal(grad(xs), np_grad(x, ct, window, strides, padding))
