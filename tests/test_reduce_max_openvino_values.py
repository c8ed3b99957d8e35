"""OpenVINO ``ReduceMax-1`` and ``ReduceLogicalOr-1``: jaxmax.openvino.reduce_max and
reduce_logical_or.

Three kinds of evidence (docs/semantics.md):

* the independent NumPy oracle of tests/reduce_oracle.py (plain Python loops over every output
  element, written from the spec and the max rule ``max(lowest(T), non-NaN elements)``),
  compared exactly on a dtype grid and on the corner cases;
* differential runs against OpenVINO's reference kernels (``Node.evaluate`` of
  ``openvino.opset1.reduce_max`` / ``reduce_logical_or``) on hundreds of seeded random cases,
  plus a small CPU-plugin check; every runtime deviation is excluded by name below;
* the error contract of docs/semantics.md §2 (error class, operator name first, argument named).

Behaviour of ``Node.evaluate`` (OpenVINO 2026.4) found while writing these tests:

* empty ``axes``: not the identity -- every element goes through the max rule on its own
  (NaN and ``-inf`` become ``lowest(T)``; finite values are unchanged). The spec says
  identity and jaxmax returns the data unchanged: REF_EMPTY_AXES_APPLIES_MAX_RULE below.
* float16 and bfloat16: NaN is skipped, but the floor is ``-inf``, not ``lowest(T)`` (an
  all-NaN, all-``-inf`` or empty slice gives ``-inf``), as if the f32 lowest were cast to the
  16-bit type and overflowed: REF_HALF_FLOOR_IS_MINUS_INF below. docs/semantics.md mentions "float16
  lowest as -inf" for the CPU plugin only.
* rank-0 data: axes ``0``, ``-1`` and ``[]`` accepted (the max rule applies for 0 and -1);
  ``keep_dims=True`` is rejected by shape inference ("Accessing out-of-range dimension"), and
  with the axes given as a Parameter instead of a Constant the evaluation segfaulted:
  REF_RANK0_KEEP_DIMS_REJECTED below (jaxmax returns a rank-0 result).
* size-0 dimensions: supported; a reduced size-0 dimension gives lowest(T) (False for or).
* float64 (and int16/uint16) are not implemented by the ReduceMax reference (``evaluate``
  returns False); duplicate axes (also ``[1, -1]``) are accepted by the runtime.
"""

from __future__ import annotations

import re
from functools import partial

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same, is_float, lowest, x64_for
from reduce_oracle import norm_axes, openvino_reduce_max, openvino_reduce_or

pytest.importorskip("openvino")

import openvino.opset1 as ops  # noqa: E402 (after the importorskip)
from ov_reference import Const, Unsupported, compile_cpu, evaluate  # noqa: E402

from jaxmax import openvino as jov  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64))
GRID = (np.float16, BF16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64,
        np.uint32, np.uint64)

REDUCE_MAX = "ReduceMax-1"
REDUCE_OR = "ReduceLogicalOr-1"


def _with_keep(factory, keep, data, axes):
    """An OpenVINO node factory with `keep_dims` bound (for compile_cpu)."""
    return factory(data, axes, keep)


def ids(dtype) -> str:
    return np.dtype(dtype).name


def run_max(x, axes, keep_dims=False):
    with x64_for(np.asarray(x).dtype):
        return np.asarray(jov.reduce_max(x, axes, keep_dims=keep_dims))


def run_or(x, axes, keep_dims=False):
    return np.asarray(jov.reduce_logical_or(x, axes, keep_dims=keep_dims))


# ---------------------------------------------------------------------------------------------
# The oracle (tests/reduce_oracle.py), pinned down.

def test_oracle_lowest_table():
    # The oracle's floor is the one docs/semantics.md states, not -inf.
    assert lowest(np.float32) == np.float32(-3.4028235e38)
    assert lowest(np.float16) == -65504.0
    assert lowest(BF16) == float(np.float32(-3.3895314e38))
    assert lowest(np.int8) == -128 and lowest(np.uint8) == 0 and lowest(np.uint64) == 0
    assert lowest(np.int64) == -(2**63)


def test_oracle_self_check():
    # Hand-worked example, so that the oracle itself is pinned down.
    x = np.array([[3.0, np.nan, -1.0], [np.nan, np.nan, np.nan]], np.float32)
    assert_same(openvino_reduce_max(x, [1]), np.array([3.0, lowest(np.float32)], np.float32))
    assert_same(openvino_reduce_max(x, 0, True),
                np.array([[3.0, lowest(np.float32), -1.0]], np.float32))
    assert_same(openvino_reduce_or(np.array([[True, False], [False, False]]), -1),
                np.array([True, False]))


# ---------------------------------------------------------------------------------------------
# Dtype grid against the oracle.

def special_values(dtype) -> list:
    dtype = np.dtype(dtype)
    if is_float(dtype):
        finfo = ml_dtypes.finfo(dtype)
        return [np.nan, np.inf, -np.inf, float(finfo.min), float(finfo.max), 0.0, -0.0, 1.5,
                -2.25, 7.0, float(finfo.tiny), -float(finfo.tiny)]
    info = np.iinfo(dtype)
    values = [int(info.min), int(info.max), 0, 1, int(info.max) - 1, 5]
    if info.min < 0:
        values += [int(info.min) + 1, -1, -7]
    return values


def grid_data(dtype, seed: int) -> np.ndarray:
    """(4, 3, 5) data drawn from the special values, with planted whole slices."""
    rng = np.random.default_rng(seed)
    specials = special_values(dtype)
    picks = rng.integers(0, len(specials), size=(4, 3, 5))
    x = np.array([specials[i] for i in picks.reshape(-1)], dtype=object).reshape(picks.shape)
    if is_float(dtype):
        x[0, 0, :] = np.nan            # all-NaN slice along axis 2 -> lowest
        x[1, 0, :] = -np.inf           # -inf-only slice -> lowest
        x[2, 0, :] = [np.nan, -np.inf, np.nan, -np.inf, np.nan]
        x[3, 0, :] = [np.nan, np.inf, np.nan, 1.0, -np.inf]  # +inf wins over NaN
        x[:, 1, 0] = np.nan            # all-NaN slice along axis 0
        return x.astype(np.float64).astype(dtype)
    info = np.iinfo(dtype)
    x[0, 0, :] = int(info.min)         # extremes survive untouched
    x[1, 0, :] = int(info.max)
    return x.astype(dtype)


# (axes, keep_dims): one compilation each per dtype
GRID_CASES = [(1, False), ([-1, 0], True), (np.array([], np.int64), True), (2, False)]


@pytest.mark.parametrize("dtype", GRID, ids=ids)
def test_reduce_max_dtype_grid(dtype):
    x = grid_data(dtype, seed=GRID.index(dtype))
    for axes, keep in GRID_CASES:
        got = run_max(x, axes, keep)
        assert_same(got, openvino_reduce_max(x, axes, keep))
    if is_float(dtype):  # the planted slices, spelled out
        low = lowest(dtype)
        got = run_max(x, 2).astype(np.float64)
        assert got[0, 0] == low and got[1, 0] == low and got[2, 0] == low
        assert got[3, 0] == np.inf
        assert not np.isnan(got).any() and not np.isneginf(got).any()


def test_reduce_or_grid():
    rng = np.random.default_rng(7)
    x = rng.random((4, 3, 5)) < 0.2
    x[0, 0, :] = False
    x[1, 0, :] = True
    for axes, keep in GRID_CASES:
        assert_same(run_or(x, axes, keep), openvino_reduce_or(x, axes, keep))


# ---------------------------------------------------------------------------------------------
# Corner cases.

@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64], ids=ids)
def test_nan_and_minus_inf_slices_give_lowest(dtype):
    low = lowest(dtype)
    x = np.array([[np.nan, np.nan], [-np.inf, -np.inf], [np.nan, -np.inf], [np.inf, np.nan],
                  [low, np.nan], [1.0, -np.inf], [np.nan, -3.0]], np.float64).astype(dtype)
    want = np.array([low, low, low, np.inf, low, 1.0, -3.0], np.float64).astype(dtype)
    assert_same(run_max(x, 1), want)
    assert_same(run_max(x.T, 0, True), want[None, :])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint32, np.uint64],
                         ids=ids)
def test_integer_extremes(dtype):
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    x = np.array([[lo, lo], [hi, lo], [lo, hi], [hi - 1, hi], [0, lo]], dtype)
    assert_same(run_max(x, -1), np.array([lo, hi, hi, hi, 0], dtype))
    assert_same(run_max(x, [0, 1]), np.array(hi, dtype))
    assert_same(run_max(x[:, :0], 1), np.full(5, lo, dtype))  # empty reduction -> lowest


RANK0_AXES = [0, -1, [0], [-1], (0,), np.int64(0), np.array(-1, np.int32),
              np.array([0], np.int64), jnp.array([-1])]
RANK0_EMPTY = [[], (), np.array([], np.int32), jnp.zeros((0,), jnp.int32)]


@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("value", [1.5, np.nan, -np.inf, np.inf, -3.0e38])
def test_rank0(value, keep_dims):
    x = np.array(value, np.float32)
    low = np.float32(lowest(np.float32))
    expected = x if (not np.isnan(x) and x >= low) else np.array(low)
    for axes in RANK0_AXES:
        # A rank-0 input has no axis to keep, so the result stays rank 0 either way.
        assert_same(run_max(x, axes, keep_dims), expected)
        assert_same(run_max(x, axes, keep_dims), openvino_reduce_max(x, axes, keep_dims))
    for axes in RANK0_EMPTY:  # identity: NaN and -inf kept
        assert_same(run_max(x, axes, keep_dims), x)


def test_rank0_int_and_or():
    for axes in RANK0_AXES + RANK0_EMPTY:
        assert_same(run_max(np.array(-7, np.int8), axes), np.array(-7, np.int8))
        assert_same(run_max(np.array(0, np.uint8), axes, True), np.array(0, np.uint8))
        for flag in (True, False):
            assert_same(run_or(np.array(flag), axes, True), np.array(flag))
            assert_same(run_or(np.array(flag), axes), np.array(flag))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, BF16], ids=ids)
def test_size_zero_dims(dtype):
    low = lowest(dtype)
    x = np.zeros((2, 0, 3), dtype)
    cases = [  # (axes, keep_dims, expected shape, fill)
        (1, False, (2, 3), low),
        ([1], True, (2, 1, 3), low),
        ([-2, 0], False, (3,), low),
        ((0, 1, 2), True, (1, 1, 1), low),
        (0, False, (0, 3), None),       # the size-0 dim is kept: empty output
        ([0, 2], True, (1, 0, 1), None),
        ([], False, (2, 0, 3), None),
    ]
    for axes, keep, shape, fill in cases:
        got = run_max(x, axes, keep)
        want = np.zeros(shape, dtype) if fill is None else np.full(shape, fill, dtype)
        assert_same(got, want)
        assert_same(got, openvino_reduce_max(x, axes, keep))
        got_or = run_or(x.astype(bool), axes, keep)
        assert_same(got_or, np.zeros(shape, bool))  # empty or is False


def test_empty_axes_is_identity():
    x = np.array([[np.nan, -np.inf, np.inf], [-3.4028235e38, 0.0, 2.0]], np.float32)
    for axes in ([], (), np.array([], np.int64), np.zeros((0,), np.int32),
                 jnp.array([], jnp.int32)):
        for keep in (False, True):
            got = run_max(x, axes, keep)
            assert_same(got, x)
            assert np.isnan(got[0, 0]) and np.isneginf(got[0, 1])
    bx = np.array([[True, False], [False, False]])
    assert_same(run_or(bx, [], True), bx)
    assert_same(run_max(np.array([[1, -5]], np.int8), ()), np.array([[1, -5]], np.int8))


AXES_FORMS = [  # (axes as given, same axes as a plain list), data of rank 3
    (1, [1]), (-2, [1]), ([1], [1]), ((1,), [1]), ([0, -1], [0, 2]), ((-1, 0), [2, 0]),
    (np.int32(1), [1]), (np.int64(-3), [0]), (np.array(2, np.int32), [2]),
    (np.array(-1, np.int64), [2]), (np.array([0, 2], np.int64), [0, 2]),
    (np.array([2, -3], np.int32), [2, 0]), (jnp.array([0, -1]), [0, 2]), (jnp.array(1), [1]),
    ([-3, -2, -1], [0, 1, 2]), (np.array([1, 0], np.uint8), [1, 0]),
]


def test_axes_forms_and_negative_axes():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x[0, 1, 2] = np.nan
    bx = rng.random((3, 4, 5)) < 0.15
    keep_dims = False  # keep_dims forms: test_keep_dims_forms
    for given, plain in AXES_FORMS:
        expected = openvino_reduce_max(x, plain, keep_dims)
        assert_same(run_max(x, given, keep_dims), expected)
        assert_same(run_or(bx, given, keep_dims), openvino_reduce_or(bx, plain, keep_dims))
        # and against NumPy's own reduction of NaN-free data as a second opinion
        clean = np.where(np.isnan(x), -np.inf, x)
        np.testing.assert_array_equal(
            expected, np.max(clean, axis=tuple(plain), keepdims=keep_dims))


def test_keep_dims_forms():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    kept = openvino_reduce_max(x, [1], True)
    dropped = openvino_reduce_max(x, [1], False)
    for flag in (True, 1, np.bool_(True), np.int64(1), np.array(1), jnp.array(True)):
        assert_same(run_max(x, 1, flag), kept)
        assert_same(run_or(x > 5, 1, flag), openvino_reduce_or(x > 5, 1, True))
    for flag in (False, 0, np.bool_(False), np.int32(0), jnp.array(0)):
        assert_same(run_max(x, 1, flag), dropped)
    assert_same(np.asarray(jov.reduce_max(x, 1)), dropped)  # the default is False


def test_jit_with_static_axes():
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, np.nan, -np.inf]], np.float32)
    f = jax.jit(jov.reduce_max, static_argnames=("axes", "keep_dims"))
    assert_same(np.asarray(f(x, axes=(1,), keep_dims=True)), openvino_reduce_max(x, [1], True))
    g = jax.jit(lambda b: jov.reduce_logical_or(b, -1))
    assert_same(np.asarray(g(x > 0)), np.array([True, False]))


# ---------------------------------------------------------------------------------------------
# Differential tests against OpenVINO's reference kernels (Node.evaluate).

def ref_reduce_max(x, axes, keep_dims):
    (out,) = evaluate(lambda d, a: ops.reduce_max(d, a, keep_dims), x,
                      Const(np.asarray(axes, np.int64)))
    return out


def ref_reduce_or(x, axes, keep_dims):
    (out,) = evaluate(lambda d, a: ops.reduce_logical_or(d, a, keep_dims), x,
                      Const(np.asarray(axes, np.int64)))
    return out


def random_config(rng):
    """(shape, axes, keep_dims): rank 0-4, dims 1-4 with some size-0 dims, axes in random order
    and sign, sometimes empty."""
    rank = int(rng.integers(0, 5))
    shape = [int(d) for d in rng.integers(1, 5, size=rank)]
    if rank and rng.random() < 0.3:
        shape[int(rng.integers(rank))] = 0
    if rank == 0:
        axes = [[], [0], [-1]][int(rng.integers(3))]
    elif rng.random() < 0.12:
        axes = []
    else:
        axes = [d for d in range(rank) if rng.random() < 0.5] or [int(rng.integers(rank))]
        axes = [d - rank if rng.random() < 0.5 else d for d in axes]
        rng.shuffle(axes)
    # REF_RANK0_KEEP_DIMS_REJECTED: the reference's shape inference rejects keep_dims=True on
    # rank-0 data (and segfaults with dynamic axes); jaxmax's rank-0 keep_dims is covered by
    # test_rank0 against the oracle.
    keep = bool(rng.random() < 0.5) and rank > 0
    return tuple(shape), axes, keep


def random_data(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < rng.choice([0.05, 0.3, 0.8]))
    if is_float(dtype):
        x = np.asarray(np.round(rng.standard_normal(shape) * 4, 1))
        u = np.asarray(rng.random(shape))
        x[u < 0.12] = np.nan
        x[(u >= 0.12) & (u < 0.2)] = -np.inf
        x[(u >= 0.2) & (u < 0.23)] = np.inf
        x[(u >= 0.23) & (u < 0.26)] = lowest(dtype)
        if rng.random() < 0.1:
            x[...] = rng.choice([np.nan, -np.inf])
        return x.astype(dtype)
    info = np.iinfo(dtype)
    if rng.random() < 0.5:  # small range: ties and extremes
        pool = np.array([int(info.min), int(info.max), 0, 1, 2, int(info.min) + 1], dtype)
        return pool[rng.integers(0, len(pool), size=shape)]
    return rng.integers(int(info.min), int(info.max), size=shape, dtype=dtype, endpoint=True)


# dtype -> (configs, data draws per config); draws reuse one jaxmax compilation.
DIFF_MAX = [(np.float32, 14, 6), (np.int32, 12, 6), (np.float16, 6, 4), (BF16, 6, 4),
            (np.int8, 5, 4), (np.uint8, 5, 4), (np.uint32, 5, 4), (np.int64, 5, 4),
            (np.uint64, 5, 4)]  # 308 cases
HALF = (np.dtype(np.float16), BF16)


def check(what: str, actual, expected, case: str):
    try:
        assert_same(actual, expected)
    except AssertionError as err:
        raise AssertionError(f"{what}: {case}\n{err}") from None


def features(shape, axes, keep) -> set[str]:
    """Which corner cases a random configuration exercises (for the coverage assertions)."""
    flat = np.asarray(axes).reshape(-1).tolist()
    tags = {"rank0"} if not shape else set()
    tags |= {"empty-axes"} if not flat else set()
    tags |= {"negative-axis"} if any(a < 0 for a in flat) else set()
    tags |= {"keep_dims"} if keep else set()
    reduced = set(norm_axes(axes, len(shape)))
    if any(d == 0 for i, d in enumerate(shape) if i in reduced):
        tags.add("size0-reduced")
    if any(d == 0 for i, d in enumerate(shape) if i not in reduced):
        tags.add("size0-kept")
    return tags


ALL_FEATURES = {"rank0", "empty-axes", "negative-axis", "keep_dims", "size0-reduced",
                "size0-kept"}


@pytest.mark.parametrize("dtype,configs,draws", DIFF_MAX, ids=[ids(d[0]) for d in DIFF_MAX])
def test_reduce_max_matches_openvino_reference(dtype, configs, draws):
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(1000 + [np.dtype(d[0]) for d in DIFF_MAX].index(dtype))
    compared, seen = 0, set()
    for _ in range(configs):
        shape, axes, keep = random_config(rng)
        seen |= features(shape, axes, keep)
        reduces = bool(norm_axes(axes, len(shape)))
        for _ in range(draws):
            x = random_data(rng, shape, dtype)
            case = f"{dtype.name} shape={shape} axes={axes} keep_dims={keep} x={x.tolist()}"
            got = run_max(x, axes, keep)
            ref = ref_reduce_max(x, axes, keep)
            check("jaxmax differs from the oracle", got, openvino_reduce_max(x, axes, keep), case)
            # REF_HALF_FLOOR_IS_MINUS_INF: for float16/bfloat16 the reference's floor is -inf
            # instead of lowest(T). REF_EMPTY_AXES_APPLIES_MAX_RULE: with empty axes the
            # reference applies the max rule element by element (NaN, -inf -> floor) instead of
            # the spec's identity. The reference is first checked exactly against an oracle
            # modelling both, so the exclusions below hide nothing else.
            floor = -np.inf if dtype in HALF else None
            model = openvino_reduce_max(x, axes, keep, floor=floor, empty_axes_identity=False)
            check("Node.evaluate differs from its model", ref, model, case)
            comparable = np.ones(got.shape, bool)
            ref_as_spec = ref
            if dtype in HALF and reduces:
                # -inf from the reference stands for lowest(T); jaxmax never returns -inf from
                # a non-empty reduction, so mapping only the reference keeps the check exact.
                ref_as_spec = np.where(np.isneginf(ref.astype(np.float64)),
                                       np.array(lowest(dtype), dtype), ref).astype(dtype)
            if not reduces and is_float(dtype):
                # empty axes: compare where the rule leaves the element unchanged; elsewhere
                # jaxmax keeps the element (checked against the identity oracle above)
                xf = x.astype(np.float64)
                comparable = ~(np.isnan(xf) | np.isneginf(xf))
            check("jaxmax differs from Node.evaluate", got[comparable], ref_as_spec[comparable],
                  case)
            compared += 1
    assert compared == configs * draws
    if configs >= 12:  # the long runs must reach every corner case
        assert seen == ALL_FEATURES, ALL_FEATURES - seen


def test_reduce_logical_or_matches_openvino_reference():
    rng = np.random.default_rng(2024)
    compared, seen = 0, set()
    for _ in range(25):
        shape, axes, keep = random_config(rng)
        seen |= features(shape, axes, keep)
        for _ in range(8):
            x = random_data(rng, shape, np.bool_)
            case = f"shape={shape} axes={axes} keep_dims={keep} x={x.tolist()}"
            got = run_or(x, axes, keep)
            check("jaxmax differs from the oracle", got, openvino_reduce_or(x, axes, keep), case)
            check("jaxmax differs from Node.evaluate", got, ref_reduce_or(x, axes, keep), case)
            compared += 1
    assert compared == 200  # 25 configs x 8 draws
    assert seen == ALL_FEATURES, ALL_FEATURES - seen


def test_reference_deviations_documented_above():
    """Pins the reference behaviour the exclusions above rely on (OpenVINO 2026.4).

    If a new OpenVINO changes it, this fails and the exclusions can be narrowed.
    """
    x = np.array([[np.nan, -np.inf, 2.0]], np.float32)
    # REF_EMPTY_AXES_APPLIES_MAX_RULE: the spec says identity; jaxmax keeps NaN and -inf.
    low = np.float32(lowest(np.float32))
    assert_same(ref_reduce_max(x, [], False), np.array([[low, low, 2.0]], np.float32))
    assert_same(run_max(x, [], False), x)
    # REF_HALF_FLOOR_IS_MINUS_INF
    for dtype in HALF:
        h = np.array([[np.nan, np.nan], [-np.inf, -np.inf], [1.0, np.nan]]).astype(dtype)
        ref = ref_reduce_max(h, [1], False).astype(np.float64)
        np.testing.assert_array_equal(ref, [-np.inf, -np.inf, 1.0])
        assert_same(run_max(h, [1]), np.array([lowest(dtype)] * 2 + [1.0]).astype(dtype))
        assert_same(run_max(h[:, :0], [1]), np.full(3, lowest(dtype), dtype))
    # REF_RANK0_KEEP_DIMS_REJECTED
    with pytest.raises(RuntimeError):
        ref_reduce_max(np.array(1.0, np.float32), [0], True)
    # the ReduceMax reference has no float64 kernel
    with pytest.raises(Unsupported):
        ref_reduce_max(np.zeros((2, 2)), [1], False)


# The CPU plugin deviates more (docs/semantics.md §3.4): NaN handling is order-dependent,
# 64-bit and unsigned 32-bit integers are computed in 32 bits, float16 lowest is -inf, and empty
# axes fail to compile. Found here and not in docs/semantics.md: int32 data is reduced in float32
# (values beyond 2**24 are rounded). This check uses NaN-free float32, int32 within 2**23, int8
# and bool data, with non-empty axes.
def test_cpu_plugin_agrees_on_plain_data():
    rng = np.random.default_rng(99)
    checked = 0
    for dtype in (np.float32, np.int32, np.int8, np.bool_):
        for _ in range(4):
            shape, axes, keep = random_config(rng)
            if not norm_axes(axes, len(shape)):
                continue  # CPU plugin: empty axes fail (documented)
            x = random_data(rng, shape, dtype)
            if dtype == np.float32:
                x = np.where(np.isnan(x), np.float32(-1.5), x)  # CPU NaN rule is order-dependent
            if dtype == np.int32:
                # CPU_INT32_VIA_FLOAT32 (not in docs/semantics.md): the plugin rounds int32 data to
                # float32, e.g. 1160084780 -> 1160084736; keep |x| <= 2**24, where that is exact.
                x = (x // 256).astype(np.int32)
            factory = ops.reduce_logical_or if dtype == np.bool_ else ops.reduce_max
            (cpu,) = compile_cpu(partial(_with_keep, factory, keep), x,
                                 Const(np.asarray(axes, np.int64)))
            got = run_or(x, axes, keep) if dtype == np.bool_ else run_max(x, axes, keep)
            assert_same(got, cpu)
            checked += 1
    assert checked >= 8


# ---------------------------------------------------------------------------------------------
# Errors (docs/semantics.md §2).

F2 = np.zeros((2, 3), np.float32)
B2 = np.zeros((2, 3), bool)
F0 = np.array(1.0, np.float32)
B0 = np.array(True)

BAD = [  # (id, op name, function, data, axes, keep_dims, error, argument named)
    ("max-bool-data", REDUCE_MAX, jov.reduce_max, B2, 0, False, TypeError, "data"),
    ("max-bool-scalar", REDUCE_MAX, jov.reduce_max, True, 0, False, TypeError, "data"),
    ("max-complex64", REDUCE_MAX, jov.reduce_max, F2.astype(np.complex64), 0, False, TypeError,
     "data"),
    ("max-complex128", REDUCE_MAX, jov.reduce_max, np.zeros(3, np.complex128), 0, False,
     TypeError, "data"),
    ("max-string-data", REDUCE_MAX, jov.reduce_max, np.array(["a", "b"]), 0, False, TypeError,
     "data"),
    ("or-float-data", REDUCE_OR, jov.reduce_logical_or, F2, 0, False, TypeError, "data"),
    ("or-int-data", REDUCE_OR, jov.reduce_logical_or, np.zeros(3, np.int32), 0, False,
     TypeError, "data"),
    ("or-uint8-data", REDUCE_OR, jov.reduce_logical_or, np.zeros(3, np.uint8), 0, False,
     TypeError, "data"),
    ("or-complex", REDUCE_OR, jov.reduce_logical_or, np.zeros(3, np.complex64), 0, False,
     TypeError, "data"),
]
for _name, _fn, _data in ((REDUCE_MAX, jov.reduce_max, F2), (REDUCE_OR, jov.reduce_logical_or, B2)):
    _tag = "max" if _name == REDUCE_MAX else "or"
    BAD += [
        (f"{_tag}-float-axis", _name, _fn, _data, 1.0, False, TypeError, "axes"),
        (f"{_tag}-float-axes-list", _name, _fn, _data, [0.0], False, TypeError, "axes"),
        (f"{_tag}-float-axes-np", _name, _fn, _data, np.array([1.0]), False, TypeError, "axes"),
        (f"{_tag}-float-axes-jnp", _name, _fn, _data, jnp.array([1.0]), False, TypeError, "axes"),
        (f"{_tag}-bool-axis", _name, _fn, _data, True, False, TypeError, "axes"),
        (f"{_tag}-bool-axes-list", _name, _fn, _data, [True], False, TypeError, "axes"),
        (f"{_tag}-str-axis", _name, _fn, _data, "1", False, TypeError, "axes"),
        (f"{_tag}-none-axes", _name, _fn, _data, None, False, TypeError, "axes"),
        (f"{_tag}-axes-rank2", _name, _fn, _data, [[0]], False, ValueError, "axes"),
        (f"{_tag}-axes-rank2-np", _name, _fn, _data, np.zeros((1, 2), np.int64), False,
         ValueError, "axes"),
        (f"{_tag}-axis-2-rank2", _name, _fn, _data, 2, False, ValueError, "axes"),
        (f"{_tag}-axis-minus3-rank2", _name, _fn, _data, -3, False, ValueError, "axes"),
        (f"{_tag}-axes-out-list", _name, _fn, _data, [0, 5], False, ValueError, "axes"),
        (f"{_tag}-axes-out-np", _name, _fn, _data, np.array([-4], np.int32), False, ValueError,
         "axes"),
        (f"{_tag}-rank0-axis1", _name, _fn, F0 if _tag == "max" else B0, 1, False, ValueError,
         "axes"),
        (f"{_tag}-rank0-axis-minus2", _name, _fn, F0 if _tag == "max" else B0, [-2], False,
         ValueError, "axes"),
        (f"{_tag}-dup", _name, _fn, _data, [1, 1], False, ValueError, "axes"),
        (f"{_tag}-dup-normalised", _name, _fn, _data, [1, -1], False, ValueError, "axes"),
        (f"{_tag}-dup-normalised-3", _name, _fn, _data, (0, -2, 1), True, ValueError, "axes"),
        (f"{_tag}-dup-np", _name, _fn, _data, np.array([0, 0], np.int32), False, ValueError,
         "axes"),
        (f"{_tag}-rank0-dup", _name, _fn, F0 if _tag == "max" else B0, [0, -1], False,
         ValueError, "axes"),
        (f"{_tag}-keep-2", _name, _fn, _data, 0, 2, ValueError, "keep_dims"),
        (f"{_tag}-keep-minus1", _name, _fn, _data, 0, -1, ValueError, "keep_dims"),
        (f"{_tag}-keep-half", _name, _fn, _data, 0, 0.5, TypeError, "keep_dims"),
        (f"{_tag}-keep-str", _name, _fn, _data, 0, "true", TypeError, "keep_dims"),
        (f"{_tag}-keep-none", _name, _fn, _data, 0, None, TypeError, "keep_dims"),
        (f"{_tag}-keep-list", _name, _fn, _data, 0, [1], TypeError, "keep_dims"),
    ]


def check_message(err: BaseException, op: str, argument: str):
    message = str(err)
    assert message.startswith(op), message
    assert re.search(rf"\b{argument}\b", message), message


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_raises(case):
    _, op, fn, data, axes, keep, error, argument = case
    with pytest.raises(error) as info:
        fn(data, axes, keep_dims=keep)
    # TypeError cases must not be ValueErrors and vice versa (AxisError is both an IndexError
    # and a ValueError, never a TypeError).
    assert not (error is TypeError and isinstance(info.value, ValueError))
    assert not (error is ValueError and isinstance(info.value, TypeError))
    check_message(info.value, op, argument)


@pytest.mark.parametrize("op,fn,data", [(REDUCE_MAX, jov.reduce_max, F2),
                                        (REDUCE_OR, jov.reduce_logical_or, B2)])
def test_traced_static_arguments_raise(op, fn, data):
    with pytest.raises(TypeError) as info:
        jax.jit(lambda x, a: fn(x, a))(data, jnp.array([0]))
    check_message(info.value, op, "axes")
    assert "static" in str(info.value)
    with pytest.raises(TypeError) as info:
        jax.jit(lambda x, a: fn(x, a))(data, 1)  # a traced scalar axis
    check_message(info.value, op, "axes")
    assert "static" in str(info.value)
    with pytest.raises(TypeError) as info:
        jax.jit(lambda x, k: fn(x, 0, keep_dims=k))(data, True)
    check_message(info.value, op, "keep_dims")
    assert "static" in str(info.value)


@pytest.mark.parametrize("row", [[-0.0, 0.0], [-1.0, -0.0, 0.0], [-0.0, 0.0, -0.0, np.nan]],
                         ids=["-0 +0", "-1 -0 +0", "-0 +0 -0 nan"])
def test_zero_sign_of_a_signed_zero_tie_is_the_reference_one(row):
    x = np.array([row], np.float32)
    (want,) = evaluate(lambda d, a: ops.reduce_max(d, a, True), x, Const(np.array([1])))
    got = np.asarray(jov.reduce_max(x, 1, keep_dims=True))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)
