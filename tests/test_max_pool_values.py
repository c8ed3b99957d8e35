"""OpenVINO ``MaxPool-1`` (``jaxmax.openvino.max_pool``).

Checked against
* the independent NumPy oracle of tests/pool_oracle.py (``max_pool_1``): one accumulator per
  window, folded element by element as ``acc = x if (x is not NaN and x > acc) else acc`` from
  ``acc = lowest(T)`` (docs/semantics.md §3), with the auto_pad pads and the floor/ceil
  output lengths computed there from the docs/semantics.md §3.2 formulas;
* OpenVINO's own reference kernel (``Node.evaluate`` of an ``openvino.opset1.max_pool`` node)
  and its shape inference, through a small private helper in this file.

Compilations dominate the runtime (every attribute set is a new XLA program), so the grids pick
one random configuration per (dtype, auto_pad, rounding_type) cell with the rank cycling, and
the OpenVINO differential runs its configurations through one ``jax.jit`` per batch.
"""

from __future__ import annotations

import itertools
import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same, is_float, lowest, x64_for
from hypothesis import given, settings
from hypothesis import strategies as st
from pool_oracle import max_pool_1, max_pool_1_empty_windows, max_pool_1_geometry, max_pool_1_shape

from jaxmax import openvino as jov

OP = "MaxPool-1"
AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower")
ROUNDINGS = ("floor", "ceil")
MODES = tuple(itertools.product(AUTO_PADS, ROUNDINGS))

BF16 = np.dtype(ml_dtypes.bfloat16)
GRID_DTYPES = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64),
               np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.int64),
               np.dtype(np.uint32))
FLOAT_DTYPES = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64))


# ----------------------------------------------------------------------------- oracle


# ----------------------------------------------------------------------------- data


def make_data(rng, shape, dtype, specials=True):
    """Small values (many ties), extremes of the dtype and, for floats, NaN / -inf / +inf.

    Subnormals are left out on purpose: XLA on CPU flushes them to zero in max (see the
    report); that is a platform property, not MaxPool arithmetic.
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        small = rng.integers(max(info.min, -6), min(info.max, 6), size=shape, endpoint=True)
        big = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
        x = np.where(rng.random(shape) < 0.6, small.astype(dtype), big)
        extremes = rng.random(shape)
        x = np.where(extremes < 0.05, info.min, x)
        x = np.where(extremes > 0.95, info.max, x)
        return x.astype(dtype)
    fin = ml_dtypes.finfo(dtype)
    x = rng.integers(-12, 12, size=shape).astype(np.float64) * 0.5
    u = rng.random(shape)
    x = np.where(u < 0.04, float(fin.min), x)
    x = np.where((u >= 0.04) & (u < 0.06), float(fin.max), x)
    x = np.where((u >= 0.06) & (u < 0.08), -0.0, x)
    if specials:
        x = np.where((u >= 0.10) & (u < 0.22), np.nan, x)
        x = np.where((u >= 0.22) & (u < 0.30), -np.inf, x)
        x = np.where((u >= 0.30) & (u < 0.33), np.inf, x)
    return x.astype(dtype)


def random_config(rng, rank, auto_pad, rounding_type, max_dim=7):
    """A valid (shape, kwargs) pair: kernel never exceeds the padded extent."""
    nsp = rank - 2
    dmax = max_dim if nsp < 3 else 5
    spatial, kernel, strides, pb, pe = [], [], [], [], []
    for _ in range(nsp):
        d = int(rng.integers(1, dmax + 1))
        k = int(rng.integers(1, 6))
        s = int(rng.integers(1, 6))
        b = int(rng.integers(0, 5))
        e = int(rng.integers(0, 5))
        limit = {"explicit": d + b + e, "valid": d}.get(auto_pad, k)
        if k > limit:
            k = int(rng.integers(1, limit + 1))
        spatial.append(d)
        kernel.append(k)
        strides.append(s)
        pb.append(b)
        pe.append(e)
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *spatial)
    # Pads are always passed: same_* and valid must ignore them.
    kwargs = dict(kernel=kernel, strides=strides, pads_begin=pb, pads_end=pe,
                  rounding_type=rounding_type, auto_pad=auto_pad)
    return shape, kwargs


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def run_jaxmax(x, **kwargs):
    with x64_for(x.dtype):
        out = jov.max_pool(x, **kwargs)
        assert isinstance(out, jax.Array)
        return np.asarray(out)


def run_jaxmax_jit(items):
    """jaxmax on many (x, kwargs) pairs inside one ``jax.jit``: one XLA compilation instead of
    one per configuration (compiling dominates these tests). Under x64 when any x is 64-bit.
    Compiled as a user's ``jit`` compiles (the inputs are traced), without the fast options of
    small eager calls."""
    xs = [x for x, _ in items]
    kws = [kw for _, kw in items]
    with x64_for(*(x.dtype for x in xs)):
        outs = jax.jit(
            lambda xs: [jov.max_pool(x, **kw) for x, kw in zip(xs, kws, strict=True)])(xs)
        return [np.asarray(o) for o in outs]


def check_against_oracle(x, kwargs, out):
    """`out` equals the oracle exactly (dtype, shape, values); returns the oracle's answer and
    how many windows saw no input element."""
    expected = max_pool_1(x, **kwargs)
    assert_same(out, expected, f"{x.dtype} {x.shape} {kwargs}")
    return expected, max_pool_1_empty_windows(x.shape, **kwargs)


# ----------------------------------------------------------------------------- OpenVINO helper


def _ov():
    ov = pytest.importorskip("openvino")
    import openvino.opset1 as ops  # noqa: PLC0415
    return ov, ops


def ov_node(shape, dtype, kernel, strides, pads_begin, pads_end, rounding_type, auto_pad):
    """An opset1 MaxPool node on a Parameter; shape inference errors raise RuntimeError."""
    ov, ops = _ov()
    param = ops.parameter(list(shape), ov.Type(np.dtype(dtype)))
    nsp = len(shape) - 2
    node = ops.max_pool(param, strides=list(strides),
                        pads_begin=[0] * nsp if pads_begin is None else list(pads_begin),
                        pads_end=[0] * nsp if pads_end is None else list(pads_end),
                        kernel_shape=list(kernel), rounding_type=rounding_type,
                        auto_pad=None if auto_pad == "explicit" else auto_pad)
    assert node.get_type_info().name == "MaxPool"
    assert node.get_type_info().version_id == "opset1"
    return node


def ov_shape(shape, dtype, **kwargs):
    pshape = ov_node(shape, dtype, **kwargs).get_output_partial_shape(0)
    assert pshape.is_static
    return tuple(int(d) for d in pshape.to_shape())


def ov_evaluate(x, **kwargs):
    """OpenVINO reference output. The output buffer is pre-filled twice with different values
    so that an element the kernel leaves unwritten cannot go unnoticed."""
    ov, _ = _ov()
    node = ov_node(x.shape, x.dtype, **kwargs)
    shape = tuple(int(d) for d in node.get_output_partial_shape(0).to_shape())
    results = []
    for fill in (np.nan, 1.5) if is_float(x.dtype) else (0x5A5A5A5A, -7):
        out = ov.Tensor(np.full(shape, fill, x.dtype))
        assert node.evaluate([out], [ov.Tensor(np.ascontiguousarray(x))])
        results.append(np.array(out.data, copy=True))
    np.testing.assert_array_equal(results[0], results[1])
    return results[0]


# ----------------------------------------------------------------------------- oracle grid


@pytest.mark.parametrize("dtype", GRID_DTYPES, ids=lambda d: d.name)
def test_oracle_grid(dtype):
    """Every auto_pad x rounding_type once per dtype, the rank cycling with the dtype so that
    each dtype meets every rank and each (mode, rank) pair three dtypes."""
    di = GRID_DTYPES.index(dtype)
    rng = np.random.default_rng(1000 + di)
    items = []
    for mi, (auto_pad, rounding_type) in enumerate(MODES):
        rank = (di + mi) % 3 + 3
        shape, kwargs = random_config(rng, rank, auto_pad, rounding_type)
        # Every other float case is NaN-free (the implementation has a NaN-free fast path).
        items.append((make_data(rng, shape, dtype, specials=bool((di + mi) % 2)), kwargs))
    for (x, kwargs), out in zip(items, run_jaxmax_jit(items), strict=True):
        check_against_oracle(x, kwargs, out)


def test_oracle_eager_calls():
    """A few configurations through the eager (non-jit) entry point."""
    rng = np.random.default_rng(99)
    for i, (auto_pad, rounding_type) in enumerate(MODES[::3]):
        dtype = GRID_DTYPES[(2 * i + 1) % len(GRID_DTYPES)]
        shape, kwargs = random_config(rng, 3 + i % 3, auto_pad, rounding_type)
        x = make_data(rng, shape, dtype)
        check_against_oracle(x, kwargs, run_jaxmax(x, **kwargs))


# ----------------------------------------------------------------------------- corner cases


# name -> (shape, kwargs, property the case must really have)
CORNERS = {
    # padded 5, k2 s3: windows at 0 and 3; the second covers padding 3..4 only.
    "window_fully_in_end_padding": ((2, 2, 3), dict(kernel=[2], strides=[3], pads_begin=[0],
                                                    pads_end=[2], rounding_type="ceil"), "empty"),
    "floor_window_fully_in_begin_padding": ((1, 2, 2), dict(kernel=[2], strides=[1],
                                                            pads_begin=[3], pads_end=[0]),
                                            "empty"),
    # padded 6, k1 s4 ceil: 3 windows; the third starts at 8, past the padded input.
    "ceil_window_past_padded_input": ((2, 1, 5), dict(kernel=[1], strides=[4], pads_begin=[0],
                                                      pads_end=[1], rounding_type="ceil"),
                                      "past"),
    "ceil_window_past_padded_input_2d": ((1, 2, 5, 4), dict(kernel=[2, 1], strides=[4, 3],
                                                            pads_begin=[0, 0], pads_end=[0, 0],
                                                            rounding_type="ceil"), "past"),
    # valid + ceil: the last window runs past the input although no padding is declared.
    "valid_ceil_window_past_input": ((1, 3, 5), dict(kernel=[2], strides=[2], pads_begin=[3],
                                                     pads_end=[3], rounding_type="ceil",
                                                     auto_pad="valid"), "past"),
    # D=6, k=4, s=1: total 3 -> (2, 1) for same_lower, (1, 2) for same_upper.
    "same_lower_odd_total": ((2, 2, 6), dict(kernel=[4], strides=[1], auto_pad="same_lower"),
                             "odd"),
    "same_upper_odd_total": ((2, 2, 6), dict(kernel=[4], strides=[1], auto_pad="same_upper"),
                             "odd"),
    "same_lower_odd_total_3d": ((1, 2, 4, 5, 3), dict(kernel=[2, 4, 2], strides=[1, 2, 3],
                                                      auto_pad="same_lower",
                                                      rounding_type="ceil"), "odd"),
    # same_upper with s > k: total clamps to 0 and ceil adds a window past the input.
    "same_upper_ceil_stride_gt_kernel": ((1, 2, 5), dict(kernel=[1], strides=[3],
                                                         auto_pad="same_upper",
                                                         rounding_type="ceil"), "past"),
    "stride_larger_than_kernel": ((2, 2, 9, 7), dict(kernel=[2, 1], strides=[4, 3],
                                                     pads_begin=[1, 0], pads_end=[0, 2]),
                                  "stride>kernel"),
    "kernel_equals_padded_extent": ((2, 2, 3, 4), dict(kernel=[5, 4], strides=[1, 2],
                                                       pads_begin=[1, 0], pads_end=[1, 0],
                                                       rounding_type="ceil"), "k==padded"),
    "kernel_equals_input_valid": ((1, 2, 3, 2, 4), dict(kernel=[3, 2, 4], strides=[2, 2, 2],
                                                        auto_pad="valid"), "k==padded"),
    "pads_at_least_kernel": ((2, 1, 3), dict(kernel=[2], strides=[1], pads_begin=[4],
                                             pads_end=[5], rounding_type="ceil"), "empty"),
    "pads_at_least_kernel_2d_strided": ((1, 2, 4, 3), dict(kernel=[2, 3], strides=[3, 2],
                                                           pads_begin=[2, 3], pads_end=[4, 3],
                                                           rounding_type="floor"), "empty"),
    "size_one_spatial": ((2, 3, 1, 1), dict(kernel=[1, 1], strides=[1, 1]), None),
    "size_one_spatial_padded": ((2, 2, 1, 1, 1), dict(kernel=[2, 3, 1], strides=[1, 2, 5],
                                                      pads_begin=[1, 1, 0], pads_end=[0, 1, 0],
                                                      rounding_type="ceil"), None),
    "size_one_spatial_same": ((1, 2, 1, 5), dict(kernel=[3, 2], strides=[2, 2],
                                                 auto_pad="same_lower"), None),
}


def _has_property(prop, shape, kwargs, empty):
    spatial = shape[2:]
    kernel, strides, _, pads, _ = max_pool_1_geometry(shape, **kwargs)
    out = max_pool_1_shape(shape, **kwargs)[2:]
    if prop == "empty":
        return empty > 0
    if prop == "past":  # the last window ends beyond the padded input
        return any((o - 1) * s + k > d + b + e
                   for o, k, s, d, (b, e) in zip(out, kernel, strides, spatial, pads, strict=True))
    if prop == "odd":
        return any((b + e) % 2 == 1 for b, e in pads)
    if prop == "stride>kernel":
        return all(s > k for s, k in zip(strides, kernel, strict=True))
    if prop == "k==padded":
        return all(k == d + b + e for k, d, (b, e) in zip(kernel, spatial, pads, strict=True))
    return True


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_corner_cases(name):
    shape, kwargs, prop = CORNERS[name]
    rng = np.random.default_rng(sorted(CORNERS).index(name))
    # float32 (also compared with OpenVINO) and one more dtype, cycling through the grid's.
    i = sorted(CORNERS).index(name)
    dtypes = {np.dtype(np.float32), [d for d in GRID_DTYPES if d != np.float32][i % 8]}
    xs = [make_data(rng, shape, dtype, specials=True) for dtype in sorted(dtypes, key=str)]
    for x, out in zip(xs, run_jaxmax_jit([(x, kwargs) for x in xs]), strict=True):
        dtype = x.dtype
        expected, empty = check_against_oracle(x, kwargs, out)
        assert _has_property(prop, shape, kwargs, empty), f"case {name} lost its property"
        if dtype == np.float32:
            full = dict(dict(pads_begin=None, pads_end=None, rounding_type="floor",
                             auto_pad="explicit"), **kwargs)
            np.testing.assert_array_equal(ov_evaluate(x, **full), expected)
        if empty:
            # windows with no input element hold lowest(T), never -inf, 0 or NaN
            assert np.any(expected == np.asarray(lowest(dtype), dtype))


def test_same_lower_and_upper_put_the_odd_pad_on_opposite_sides():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 6)
    lower = np.asarray(jov.max_pool(x, kernel=[4], strides=[1], auto_pad="same_lower"))
    upper = np.asarray(jov.max_pool(x, kernel=[4], strides=[1], auto_pad="same_upper"))
    # total pad 3: same_lower pads (2, 1), same_upper pads (1, 2)
    np.testing.assert_array_equal(lower.ravel(), [1, 2, 3, 4, 5, 5])
    np.testing.assert_array_equal(upper.ravel(), [2, 3, 4, 5, 5, 5])


def test_ceil_windows_in_padding_hold_lowest():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    out = np.asarray(jov.max_pool(x, kernel=[2, 2], strides=[2, 2], pads_begin=[0, 0],
                                  pads_end=[1, 1], rounding_type="ceil"))
    low = np.finfo(np.float32).min
    np.testing.assert_array_equal(out[0, 0], [[5, 7, low], [13, 15, low], [low, low, low]])
    floor = np.asarray(jov.max_pool(x, kernel=[2, 2], strides=[2, 2], pads_begin=[0, 0],
                                    pads_end=[1, 1], rounding_type="floor"))
    np.testing.assert_array_equal(floor[0, 0], [[5, 7], [13, 15]])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_nan_and_infinity_windows(dtype):
    nan, inf = np.nan, np.inf
    # kernel 2, stride 2 over 14 elements plus one pad each side -> 8 windows:
    # [pad, nan] [nan, nan] [-inf, -inf] [nan, -inf] [1, nan] [inf, nan] [-2, -inf] [lowest, pad]
    low = float(lowest(dtype))
    row = [nan, nan, nan, -inf, -inf, nan, -inf, 1, nan, inf, nan, -2, -inf, low]
    x = np.array([row, row[::-1]], np.float64).astype(dtype).reshape(1, 2, 14)
    kwargs = dict(kernel=[2], strides=[2], pads_begin=[1], pads_end=[1])
    out = run_jaxmax(x, **kwargs)
    check_against_oracle(x, kwargs, out)
    np.testing.assert_array_equal(
        out[0, 0].astype(np.float64), [low, low, low, low, 1, inf, -2, low])
    assert not np.isnan(out.astype(np.float64)).any()
    assert not np.isneginf(out.astype(np.float64)).any()


@pytest.mark.parametrize("dtype", (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.uint32)),
                         ids=lambda d: d.name)
def test_integer_padding_only_windows(dtype):
    x = np.array([[[3, 0, 5]]], dtype)
    out = run_jaxmax(x, kernel=[2], strides=[2], pads_begin=[3], pads_end=[3])
    low = np.iinfo(dtype).min  # 0 for unsigned
    np.testing.assert_array_equal(out.ravel(), [low, 3, 5, low])


def test_auto_pad_none_is_explicit_and_pads_default_to_zero():
    rng = np.random.default_rng(7)
    x = make_data(rng, (2, 3, 6, 5), np.float32)
    a = np.asarray(jov.max_pool(x, kernel=[2, 3], strides=[2, 1], pads_begin=[1, 0],
                                pads_end=[1, 2], auto_pad=None))
    b = np.asarray(jov.max_pool(x, kernel=[2, 3], strides=[2, 1], pads_begin=[1, 0],
                                pads_end=[1, 2]))
    np.testing.assert_array_equal(a, b)
    check_against_oracle(x, dict(kernel=[2, 3], strides=[2, 1], pads_begin=[1, 0],
                                 pads_end=[1, 2]), a)
    c = np.asarray(jov.max_pool(x, kernel=[2, 3], strides=[2, 1]))
    check_against_oracle(x, dict(kernel=[2, 3], strides=[2, 1]), c)


# ----------------------------------------------------------------------------- OpenVINO


def _ov_configs(seed, rank, count):
    rng = np.random.default_rng(seed)
    configs = []
    for i in range(count):
        auto_pad, rounding_type = MODES[i % len(MODES)]
        configs.append(random_config(rng, rank, auto_pad, rounding_type))
    return rng, configs


OV_CASES = [(dt, rank) for dt in ("float32", "int32") for rank in (3, 4, 5)]


@pytest.mark.parametrize("dtype,rank", OV_CASES, ids=[f"{d}-rank{r}" for d, r in OV_CASES])
def test_against_openvino_reference(dtype, rank):
    """24 (float32) or 48 (int32) random configurations per rank, every auto_pad x
    rounding_type 3 or 6 times: 216 in all (a float32 compilation costs three int32 ones).
    jaxmax runs them in one jit; OpenVINO's output shape and values, jaxmax's and the NumPy
    oracle's must all agree."""
    _ov()
    dtype = np.dtype(dtype)
    count = 24 if dtype == np.float32 else 48
    rng, configs = _ov_configs(5000 + OV_CASES.index((dtype.name, rank)), rank, count)
    xs = [make_data(rng, shape, dtype, specials=bool(i % 3)) for i, (shape, _) in
          enumerate(configs)]
    outs = run_jaxmax_jit([(x, kw) for x, (_, kw) in zip(xs, configs, strict=True)])
    failures = []
    for x, (shape, kwargs), out in zip(xs, configs, outs, strict=True):
        want_shape = max_pool_1_shape(shape, **kwargs)
        reference = ov_evaluate(x, **kwargs)
        expected = max_pool_1(x, **kwargs)
        if not (out.dtype == reference.dtype == dtype
                and reference.shape == out.shape == want_shape == expected.shape
                and np.array_equal(reference, out, equal_nan=False)
                and np.array_equal(expected, reference)):
            failures.append((shape, kwargs, reference.shape, out.shape, want_shape))
    assert not failures, f"{len(failures)} mismatches, first: {failures[:3]}"


def _shape_configs():
    dims = st.integers(1, 12)

    @st.composite
    def config(draw):
        rank = draw(st.integers(3, 5))
        nsp = rank - 2
        spatial = draw(st.lists(dims, min_size=nsp, max_size=nsp))
        kernel = draw(st.lists(st.integers(1, 8), min_size=nsp, max_size=nsp))
        strides = draw(st.lists(st.integers(1, 6), min_size=nsp, max_size=nsp))
        pb = draw(st.lists(st.integers(0, 7), min_size=nsp, max_size=nsp))
        pe = draw(st.lists(st.integers(0, 7), min_size=nsp, max_size=nsp))
        auto_pad = draw(st.sampled_from(AUTO_PADS))
        rounding_type = draw(st.sampled_from(ROUNDINGS))
        shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), *spatial)
        return shape, dict(kernel=kernel, strides=strides, pads_begin=pb, pads_end=pe,
                           rounding_type=rounding_type, auto_pad=auto_pad)

    return config()


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(_shape_configs())
def test_output_shape_matches_formula_and_openvino_shape_inference(config):
    """Valid configurations: same output shape from the formula, jaxmax (abstract evaluation)
    and OpenVINO. Invalid ones (kernel larger than the padded input): both reject them."""
    _ov()
    shape, kwargs = config
    spatial = shape[2:]
    _, _, _, pads, _ = max_pool_1_geometry(shape, **kwargs)
    valid = all(k <= d + b + e
                for k, d, (b, e) in zip(kwargs["kernel"], spatial, pads, strict=True))
    spec = jax.ShapeDtypeStruct(shape, jnp.float32)
    if valid:
        ours = jax.eval_shape(lambda x: jov.max_pool(x, **kwargs), spec).shape
        assert ours == max_pool_1_shape(shape, **kwargs) == ov_shape(shape, np.float32, **kwargs)
    else:
        with pytest.raises(ValueError, match=r"^MaxPool-1\b.*kernel"):
            jax.eval_shape(lambda x: jov.max_pool(x, **kwargs), spec)
        with pytest.raises(RuntimeError):
            ov_shape(shape, np.float32, **kwargs)


# ----------------------------------------------------------------------------- spec example


@pytest.mark.parametrize("hw", [(1, 1), (2, 9), (5, 5), (6, 7), (8, 8), (13, 4)])
def test_spec_example_same_upper_kernel3_stride2(hw):
    """<data auto_pad="same_upper" kernel="3,3" pads_begin="0,0" pads_end="1,1" strides="2,2"/>:
    the pads are ignored, each spatial output is ceil(D / 2)."""
    shape = (1, 3, *hw)
    kwargs = dict(kernel=[3, 3], strides=[2, 2], pads_begin=[0, 0], pads_end=[1, 1],
                  auto_pad="same_upper", rounding_type="floor")
    want = (1, 3, ceil_div(hw[0], 2), ceil_div(hw[1], 2))
    assert max_pool_1_shape(shape, **kwargs) == want
    assert ov_shape(shape, np.float32, **kwargs) == want
    rng = np.random.default_rng(hw[0] * 100 + hw[1])
    x = make_data(rng, shape, np.float32)
    out = run_jaxmax(x, **kwargs)
    assert out.shape == want
    check_against_oracle(x, kwargs, out)
    np.testing.assert_array_equal(out, ov_evaluate(x, **kwargs))
    # Other pads, or none, change nothing under same_upper.
    other = run_jaxmax(x, **dict(kwargs, pads_begin=[4, 0], pads_end=[0, 3]))
    np.testing.assert_array_equal(other, out)
    np.testing.assert_array_equal(
        run_jaxmax(x, **dict(kwargs, pads_begin=None, pads_end=None)), out)


# ----------------------------------------------------------------------------- errors


def _x(shape=(1, 2, 5, 5), dtype=np.float32):
    return np.zeros(shape, dtype)


GOOD = dict(kernel=[2, 2], strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0])

VALUE_ERRORS = [
    ("rank2", (2, 5), dict(kernel=[2], strides=[1], pads_begin=[0], pads_end=[0]), "data"),
    ("rank6", (1, 1, 2, 2, 2, 2), dict(kernel=[1] * 4, strides=[1] * 4, pads_begin=[0] * 4,
                                       pads_end=[0] * 4), "data"),
    ("kernel_too_long", None, dict(GOOD, kernel=[2, 2, 2]), "kernel"),
    ("kernel_too_short", None, dict(GOOD, kernel=[2]), "kernel"),
    ("strides_length", None, dict(GOOD, strides=[1]), "strides"),
    ("pads_begin_length", None, dict(GOOD, pads_begin=[0, 0, 0]), "pads_begin"),
    ("pads_end_length", None, dict(GOOD, pads_end=[0]), "pads_end"),
    ("kernel_zero", None, dict(GOOD, kernel=[0, 2]), "kernel"),
    ("kernel_negative", None, dict(GOOD, kernel=[2, -1]), "kernel"),
    ("stride_zero", None, dict(GOOD, strides=[1, 0]), "strides"),
    ("stride_negative", None, dict(GOOD, strides=[-1, 1]), "strides"),
    ("pads_begin_negative", None, dict(GOOD, pads_begin=[-1, 0]), "pads_begin"),
    ("pads_end_negative", None, dict(GOOD, pads_end=[0, -2]), "pads_end"),
    ("kernel_larger_than_padded", None, dict(GOOD, kernel=[2, 8], pads_end=[0, 2]), "kernel"),
    ("kernel_larger_than_input_valid", None,
     dict(GOOD, kernel=[6, 2], pads_begin=[3, 0], auto_pad="valid"), "kernel"),
    ("auto_pad_unknown", None, dict(GOOD, auto_pad="same"), "auto_pad"),
    ("auto_pad_empty", None, dict(GOOD, auto_pad=""), "auto_pad"),
    ("auto_pad_notpad", None, dict(GOOD, auto_pad="notset"), "auto_pad"),
    ("rounding_unknown", None, dict(GOOD, rounding_type="round"), "rounding_type"),
    ("rounding_empty", None, dict(GOOD, rounding_type=""), "rounding_type"),
]


@pytest.mark.parametrize("case", VALUE_ERRORS, ids=[c[0] for c in VALUE_ERRORS])
def test_value_errors(case):
    _, shape, kwargs, name = case
    x = _x() if shape is None else _x(shape)
    with pytest.raises(ValueError) as info:
        jov.max_pool(x, **kwargs)
    message = str(info.value)
    assert message.startswith(OP), message
    assert re.search(rf"\b{name}\b", message), message


def test_openvino_rejects_what_we_reject():
    """Stride 0, a kernel larger than the padded input and ranks 2/6 are also errors in
    OpenVINO's shape inference (so jaxmax follows the runtime, not the spec's "from 0")."""
    bad = [((1, 2, 5), dict(kernel=[1], strides=[0], pads_begin=[0], pads_end=[0])),
           ((1, 2, 5), dict(kernel=[7], strides=[1], pads_begin=[0], pads_end=[1])),
           ((1, 2, 5), dict(kernel=[6], strides=[1], pads_begin=[3], pads_end=[3],
                            auto_pad="valid")),
           ((2, 5), dict(kernel=[2], strides=[1], pads_begin=[0], pads_end=[0])),
           ((1, 1, 2, 2, 2, 2), dict(kernel=[1] * 4, strides=[1] * 4, pads_begin=[0] * 4,
                                     pads_end=[0] * 4))]
    for shape, kwargs in bad:
        full = dict(dict(rounding_type="floor", auto_pad="explicit"), **kwargs)
        with pytest.raises(RuntimeError):
            ov_shape(shape, np.float32, **full)
        with pytest.raises(ValueError, match=r"^MaxPool-1"):
            jov.max_pool(_x(shape), **kwargs)
    # and both accept rank 3 and kernel == padded extent
    assert ov_shape((1, 2, 5), np.float32, kernel=[7], strides=[1], pads_begin=[1],
                    pads_end=[1], rounding_type="floor", auto_pad="explicit") == (1, 2, 1)
    assert jov.max_pool(_x((1, 2, 5)), kernel=[7], strides=[1], pads_begin=[1],
                        pads_end=[1]).shape == (1, 2, 1)


TYPE_ERRORS = [
    ("bool_data", _x(dtype=np.bool_), GOOD, "data"),
    ("complex_data", _x(dtype=np.complex64), GOOD, "data"),
    ("auto_pad_int", _x(), dict(GOOD, auto_pad=1), "auto_pad"),
    ("auto_pad_bytes", _x(), dict(GOOD, auto_pad=b"valid"), "auto_pad"),
    ("auto_pad_list", _x(), dict(GOOD, auto_pad=["valid"]), "auto_pad"),
    ("rounding_int", _x(), dict(GOOD, rounding_type=0), "rounding_type"),
    ("kernel_float_list", _x(), dict(GOOD, kernel=[2.0, 2.0]), "kernel"),
    ("kernel_float_array", _x(), dict(GOOD, kernel=np.array([2.0, 2.0])), "kernel"),
    ("kernel_float_mixed", _x(), dict(GOOD, kernel=[2, 1.5]), "kernel"),
    ("strides_float", _x(), dict(GOOD, strides=[1.0, 1.0]), "strides"),
    ("pads_begin_float", _x(), dict(GOOD, pads_begin=[0.5, 0]), "pads_begin"),
]


@pytest.mark.parametrize("case", TYPE_ERRORS, ids=[c[0] for c in TYPE_ERRORS])
def test_type_errors(case):
    _, x, kwargs, name = case
    with pytest.raises(TypeError) as info:
        jov.max_pool(x, **kwargs)
    message = str(info.value)
    assert message.startswith(OP), message
    assert re.search(rf"\b{name}\b", message), message


@pytest.mark.parametrize("name", ["kernel", "strides", "pads_begin", "pads_end"])
def test_traced_attribute_under_jit_asks_for_static(name):
    values = dict(GOOD)

    def f(x, attr):
        return jov.max_pool(x, **dict(values, **{name: attr}))

    with pytest.raises(TypeError) as info:
        jax.jit(f)(_x(), jnp.array(values[name], jnp.int32))
    message = str(info.value)
    assert message.startswith(OP), message
    assert re.search(rf"\b{name}\b", message), message
    assert "static" in message, message
    # marking it static works (a tuple is hashable)
    out = jax.jit(f, static_argnames="attr")(_x(), attr=tuple(values[name]))
    assert out.shape == (1, 2, 4, 4)


def test_traced_data_under_jit_is_fine():
    rng = np.random.default_rng(3)
    x = make_data(rng, (2, 2, 7, 6), np.float32)
    kwargs = dict(kernel=[3, 2], strides=[2, 2], pads_begin=[1, 0], pads_end=[1, 1],
                  rounding_type="ceil")
    out = np.asarray(jax.jit(lambda v: jov.max_pool(v, **kwargs))(x))
    check_against_oracle(x, kwargs, out)
    np.testing.assert_array_equal(out, np.asarray(jov.max_pool(jnp.asarray(x), **kwargs)))
