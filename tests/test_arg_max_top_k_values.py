"""ONNX ArgMax (1, 11, 12, 13), ONNX TopK (1, 10, 11, 24) and OpenVINO TopK-1/-3/-11 against the
NumPy loop oracles of arg_max_oracle.py (docs/semantics.md §6).

Several hundred seeded configurations per operator: ranks 1-4, every axis (positive and negative
spellings), every dtype the version allows, data drawn with heavy ties and, for floats, NaN of
both signs (with payloads), +-inf, +-0 and the extreme finite values. Values are compared bit for
bit (zero signs and NaN payloads), indices exactly with their dtype.
"""

from __future__ import annotations

import warnings

import jax
import ml_dtypes
import numpy as np
import pytest
from arg_max_oracle import onnx_arg_max, top_k
from helpers import is_float, x64_for
from jit_batch import jit_each

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering import arg_max as lowering
from jaxmax._src.lowering import top_k as top_k_lowering

FLOATS = ["float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
BF16 = ["bfloat16"]
ARG_MAX_DTYPES = {1: FLOATS + INTS, 11: FLOATS + INTS, 12: FLOATS + INTS,
                  13: FLOATS + INTS + BF16}
TOP_K_DTYPES = {1: FLOATS, 10: FLOATS, 11: FLOATS + INTS, 24: FLOATS + INTS + BF16}
OV_DTYPES = FLOATS + INTS + BF16
SHAPES = [(7,), (1,), (6, 5), (9, 1), (4, 3, 6), (5, 1, 7), (3, 4, 3, 5), (1, 6, 2, 4)]


def dtype_of(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if is_float(a.dtype):
        return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
    return a


def assert_bits(actual, expected, context=""):
    """Same dtype, shape and bits (zero signs and NaN payloads included)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{context}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{context}: shape {actual.shape} != {expected.shape}"
    np.testing.assert_array_equal(bits(actual), bits(expected), err_msg=context)


def index_dtype(requested) -> np.dtype:
    return np.dtype(requested) if jax.config.jax_enable_x64 else np.dtype(np.int32)


def special_values(dtype: np.dtype) -> list:
    """The values that decide order rules: NaN of both signs (one with a payload), +-inf, +-0,
    the extreme finite values, small ties."""
    if is_float(dtype):
        info = ml_dtypes.finfo(dtype)
        width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
        nan = np.array(np.nan, dtype)
        payload = np.array(int(nan.view(width)) | 1, width).view(dtype)
        neg_nan = np.array(int(nan.view(width)) | (1 << (8 * dtype.itemsize - 1)),
                           width).view(dtype)
        return [nan, payload, neg_nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5,
                info.max, info.min, info.smallest_subnormal, -info.smallest_subnormal]
    info = np.iinfo(dtype)
    return [info.min, info.max, 0, 1, 2, info.max - 1, info.min + 1]


def draw(rng, shape, dtype: np.dtype) -> np.ndarray:
    """Data with heavy ties: about 45% of the elements from the special values, the rest small
    integers 0-3 (many equal) or, for floats, some normals."""
    specials = np.array([np.asarray(v).astype(dtype) for v in special_values(dtype)], dtype)
    u = rng.random(shape)
    out = rng.integers(0, 4, shape).astype(dtype)
    if is_float(dtype):
        normal = (rng.standard_normal(shape) * 10).astype(dtype)
        out = np.where(u >= 0.8, normal, out)
    return np.where(u < 0.45, specials[rng.integers(len(specials), size=shape)], out)


def configs(seed: int, count: int, dtypes: list[str]):
    rng = np.random.default_rng(seed)
    for i in range(count):
        shape = SHAPES[rng.integers(len(SHAPES))]
        dtype = dtype_of(dtypes[i % len(dtypes)])
        axis = int(rng.integers(-len(shape), len(shape)))
        yield rng, shape, dtype, axis


def jitted(calls, fast=True):
    """``[fn(x) for fn, x in calls]``, computed by one jitted program per 64-bit mode (x64 on
    for the calls whose input is 64-bit, as `x64_for` does for an eager call) and input size
    instead of one compile per call (tests/jit_batch.py): each call is traced as an eager
    call traces it (the adapters' static arguments, the lowerings' jitted cores inlined), so
    the forms chosen are the same, and (with `fast`) the small calls compile with the fast
    options their eager calls take (`compile_options.options_for`), the others plainly.
    The results come back as NumPy arrays."""
    out = [None] * len(calls)
    for wide in (False, True):
        chosen = [i for i, (_, x) in enumerate(calls) if (np.dtype(x.dtype).itemsize >= 8) == wide]
        if not chosen:
            continue
        with x64_for(np.int64 if wide else np.int32):
            got = jit_each([(calls[i][0], (calls[i][1],)) for i in chosen], as_eager=fast)
        for i, g in zip(chosen, got, strict=True):
            out[i] = g
    return out


@pytest.fixture(autouse=True)
def _quiet_index_warning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*indices, which JAX stores as int32")
        yield


# --------------------------------------------------------------------------------------------
# ONNX ArgMax
# --------------------------------------------------------------------------------------------

@pytest.fixture(params=[0, None], ids=["sized_forms", "small_input"])
def arg_max_forms(request, monkeypatch):
    """ArgMax's forms for these (small) inputs: with ``SMALL_BYTES = 0`` the forms chosen by
    axis and length (the fold, blocked, lane, chunked and plain paths these tests name), and
    as they are, the small-input path (the key's two reductions)."""
    if request.param is not None:
        monkeypatch.setattr(lowering, "SMALL_BYTES", request.param)
    jax.clear_caches()  # the form is chosen while tracing
    yield request.param
    jax.clear_caches()


@pytest.mark.parametrize("opset", [1, 11, 12, 13])
def test_onnx_arg_max_oracle(opset):
    version = max(v for v in ARG_MAX_DTYPES if v <= opset)
    cases, calls = [], []
    for rng, shape, dtype, axis in configs(opset, 30, ARG_MAX_DTYPES[version]):
        x = draw(rng, shape, dtype)
        keepdims = int(rng.integers(2))
        last = int(rng.integers(2)) if version >= 12 else 0
        cases.append((x, axis, keepdims, last))
        calls.append((lambda v, a=axis, kd=keepdims, la=last: onnx.arg_max(
            v, axis=a, keepdims=kd, select_last_index=la, opset=opset), x))
    for (x, axis, keepdims, last), got in zip(cases, jitted(calls), strict=True):
        context = f"opset {opset} {x.dtype} {x.shape} axis {axis} keepdims {keepdims} last {last}"
        with x64_for(x.dtype):
            want = onnx_arg_max(x, axis, bool(keepdims), bool(last)).astype(index_dtype(np.int64))
            assert_bits(got, want, context)


def test_onnx_arg_max_corner_rows():
    """docs/semantics.md §6.2 and §6.5 rows, one by one."""
    f32 = np.float32
    cases = [
        ([1, np.nan, 3], 0, 1), ([1, np.nan, 3], 1, 1), ([np.nan, np.nan, np.nan], 0, 0),
        ([np.nan, np.nan, np.nan], 1, 2), ([-np.nan, 5, np.nan], 0, 0),
        ([-np.nan, 5, np.nan], 1, 2), ([-0.0, 0.0], 0, 0), ([-0.0, 0.0], 1, 1),
        ([0.0, -0.0], 1, 1), ([-np.inf, -np.inf], 1, 1), ([-np.inf, np.inf, np.inf], 0, 1),
    ]
    for row, last, expected in cases:
        got = onnx.arg_max(np.array(row, f32), keepdims=0, select_last_index=last)
        assert int(got) == expected, (row, last)


def test_onnx_arg_max_long_and_folded_axes(arg_max_forms):
    """Both lowerings: a long last axis (reductions) and short non-last axes (fold), and a long
    non-last axis (reductions)."""
    rng = np.random.default_rng(7)
    cases = [(draw(rng, shape, np.dtype(np.float32)), axis, last) for shape, axis in [
        ((3, 700), 1), ((2, 21, 6, 5), 1), ((80, 3, 2), 0), ((64, 4), 0), ((65, 4), 0),
        ((2, 300, 3), 1)] for last in (0, 1)]
    got = jitted([(lambda v, a=axis, la=last: onnx.arg_max(v, axis=a, select_last_index=la), x)
                  for x, axis, last in cases])
    for (x, axis, last), g in zip(cases, got, strict=True):
        assert_bits(g, onnx_arg_max(x, axis, True, bool(last)).astype(np.int32),
                    f"{x.shape} {axis} {last}")


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.int32])
def test_onnx_arg_max_blocked_fold(dtype, arg_max_forms):
    """An axis before the last of more than 64 elements is folded in blocks: whole blocks (256:
    8 blocks of 32) and blocks with a tail folded on its own (67, 74, 1009: blocks of 16, then 3,
    10 and 1 elements). Special values everywhere (NaN of both signs, +-inf, +-0, subnormals,
    heavy ties), a maximum only in the tail, and a tie between the last block and the tail;
    first and last index."""
    rng = np.random.default_rng(21)
    dtype = np.dtype(dtype)
    big = np.array(100, dtype)
    cases = []
    for n, width in ((256, 32), (67, 16), (74, 16), (1009, 16)):
        assert lowering.block(n) == width and n > lowering.FOLD_LIMIT
        x = draw(rng, (4, n, 5), dtype)
        head = x[:3]
        with np.errstate(invalid="ignore"):  # bfloat16 NaN compares warn
            head[~(head < big)] = 0  # no NaN and nothing from `big` up in the rows set below
        whole = n // width * width
        x[0, whole - 1], x[0, n - 1] = big, big  # first: the block's; last: the tail's
        x[1, n - 1] = big                          # the maximum in the tail only
        x[2, 0], x[2, whole - 1] = big, big        # ties in two blocks
        cases += [(x, n, last) for last in (0, 1)]
    got = jitted([(lambda v, la=last: onnx.arg_max(v, axis=1, keepdims=0, select_last_index=la),
                   x) for x, _, last in cases])
    for (x, n, last), g in zip(cases, got, strict=True):
        want = onnx_arg_max(x, 1, False, bool(last)).astype(np.int32)
        assert_bits(g, want, f"{dtype} n {n} last {last}")


def _primitives(jaxpr):
    """The primitive names of `jaxpr` and of the jaxprs inside its equations."""
    for eqn in jaxpr.eqns:
        yield eqn.primitive.name
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _primitives(inner)


@pytest.mark.parametrize("shape, axis, dtype", [
    ((8, 32000), 1, np.float32), ((16, 50257), 1, np.float32), ((1000, 997), 1, np.float32),
    ((20000, 10), 1, np.float32), ((256, 1000), 1, np.float32), ((8, 32000), 1, "bfloat16"),
    ((64, 100, 49), 1, np.float32), ((64, 21, 49), 1, np.float32), ((8, 4096), 1, np.float16)])
def test_arg_max_paths_do_not_branch_on_the_data(shape, axis, dtype):
    """Every sized form folds keys in one pass: no ``cond`` (a data-dependent second path, as
    the float forms' NaN and zero-maximum checks were) and one fused fold (no reduction over
    the whole input before it): last axes of every length and dtype, axes before the last."""
    x = jax.ShapeDtypeStruct(shape, dtype_of(dtype) if isinstance(dtype, str) else dtype)
    names = list(_primitives(jax.make_jaxpr(lambda v: onnx.arg_max(v, axis=axis))(x).jaxpr))
    assert "cond" not in names and "reduce_sum" not in names, names


def test_arg_max_small_input_is_one_reduction():
    """Inputs of at most `SMALL_BYTES` (every new small shape compiles one program): one
    reduction of (key, index) pairs, over the last axis and before it."""
    for shape, axis in (((16, 1024), 1), ((1, 160, 10, 10), 1), ((3, 7), 0)):
        x = jax.ShapeDtypeStruct(shape, np.float32)
        assert x.size * 4 <= lowering.SMALL_BYTES
        names = list(_primitives(jax.make_jaxpr(lambda v, a=axis: onnx.arg_max(v, axis=a))(
            x).jaxpr))
        reductions = [n for n in names if n.startswith(("reduce", "argmax", "argmin"))]
        assert reductions == ["reduce"], (shape, names)


def test_onnx_arg_max_empty_other_axes():
    got = onnx.arg_max(np.zeros((0, 3), np.float32), axis=1, keepdims=0)
    assert got.shape == (0,)
    got = onnx.arg_max(np.zeros((2, 0, 3), np.float32), axis=2)
    assert got.shape == (2, 0, 1)


# --------------------------------------------------------------------------------------------
# ONNX TopK
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [1, 10, 11, 24])
def test_onnx_top_k_oracle(opset):
    version = max(v for v in TOP_K_DTYPES if v <= opset)
    cases, calls = [], []
    for rng, shape, dtype, axis in configs(100 + opset, 30, TOP_K_DTYPES[version]):
        x = draw(rng, shape, dtype)
        n = shape[axis]
        k = int(rng.integers(1 if version < 10 else 0, n + 1))
        largest = int(rng.integers(2)) if version >= 11 else 1
        sort = int(rng.integers(2)) if version >= 11 else 1
        K = np.array([k], np.int64) if version >= 10 and rng.random() < 0.5 else k
        cases.append((x, axis, k, largest))
        calls.append((lambda v, K=K, a=axis, la=largest, so=sort: onnx.top_k(
            v, K, axis=a, largest=la, sorted=so, opset=opset), x))
    for (x, axis, k, largest), (values, indices) in zip(cases, jitted(calls), strict=True):
        context = f"opset {opset} {x.dtype} {x.shape} axis {axis} k {k} largest {largest}"
        with x64_for(x.dtype):
            want_v, want_i = top_k(x, k, axis, face="onnx", descending=bool(largest))
            assert_bits(values, want_v, context)
            assert_bits(indices, want_i.astype(index_dtype(np.int64)), context)


def test_onnx_top_k_corner_rows():
    f32 = np.float32
    v, i = onnx.top_k(np.array([-0.0, 0.0], f32), 1)
    assert_bits(v, np.array([-0.0], f32)); assert int(i[0]) == 0  # noqa: E702
    v, i = onnx.top_k(np.array([1, -np.nan, 3], f32), 1)
    assert np.isnan(v[0]) and np.signbit(v[0]) and int(i[0]) == 1
    v, i = onnx.top_k(np.array([np.nan, 1, 2], f32), 3, largest=0)
    assert_bits(i, np.array([1, 2, 0], np.int32))
    v, i = onnx.top_k(np.array([[1, 2]], f32), 0)
    assert v.shape == (1, 0) and i.shape == (1, 0)


# --------------------------------------------------------------------------------------------
# OpenVINO TopK
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [1, 3, 11])
def test_openvino_top_k_oracle(opset):
    cases, calls = [], []
    for rng, shape, dtype, axis in configs(200 + opset, 34, OV_DTYPES):
        x = draw(rng, shape, dtype)
        n = shape[axis]
        k = int(rng.integers(1, n + 1))
        mode = ["max", "min", "MAX", "Min"][rng.integers(4)]
        sort = ["value", "index", "none", "Index"][rng.integers(4)]
        itype = ["i32", "i64"][rng.integers(2)]
        stable = bool(rng.integers(2)) if opset >= 11 and sort.lower() != "none" else False
        cases.append((x, axis, k, mode, sort, itype))
        calls.append((lambda v, k=k, a=axis, m=mode, so=sort, it=itype, st=stable: ov.top_k(
            v, k, axis=a, mode=m, sort=so, index_element_type=it, stable=st, opset=opset), x))
    # plainly compiled: with the fast options (an eager call's) XLA:CPU's elemental emitter
    # drops bfloat16 NaN payloads here (0x7FC1 comes back 0x7FC0; reported)
    for (x, axis, k, mode, sort, itype), (values, indices) in zip(cases, jitted(calls, False),
                                                                strict=True):
        context = f"opset {opset} {x.dtype} {x.shape} axis {axis} k {k} {mode} {sort} {itype}"
        with x64_for(x.dtype):
            want_v, want_i = top_k(x, k, axis, face="openvino",
                                   descending=mode.lower() == "max",
                                   by_index=sort.lower() == "index")
            assert_bits(values, want_v, context)
            want_type = np.int32 if itype == "i32" else index_dtype(np.int64)
            assert_bits(indices, want_i.astype(want_type), context)


def test_openvino_top_k_corner_rows():
    f32 = np.float32
    x = np.array([1, np.nan, 3, -0.0, 0.0], f32)
    v, i = ov.top_k(x, 5, axis=0, mode="max", sort="value")
    assert_bits(i, np.array([2, 0, 3, 4, 1], np.int32))
    v, i = ov.top_k(x, 5, axis=0, mode="min", sort="value")
    assert_bits(i, np.array([3, 4, 0, 2, 1], np.int32))
    v, i = ov.top_k(x, 2, axis=0, mode="min", sort="index")
    assert_bits(v, np.array([-0.0, 0.0], f32))
    assert_bits(i, np.array([3, 4], np.int32))


@pytest.mark.parametrize("small_bytes", [0, None], ids=["plain_try", "key_only"])
def test_top_k_float32_plain_path_and_its_exits(small_bytes, monkeypatch):
    """float32 in descending order first tries the plain ``lax.top_k`` (exact without NaN in the
    data and without a selected zero): NaN-free data, data whose selection reaches the zeros
    (``-0.0`` before ``+0.0`` by index), subnormals next to zeros, and one NaN, per face. Inputs
    of at most ``top_k.SMALL_BYTES`` (these) take the key alone, whose float32 form must rank
    the same data the same way: both paths run, the try forced by ``SMALL_BYTES = 0``."""
    if small_bytes is not None:
        monkeypatch.setattr(top_k_lowering, "SMALL_BYTES", small_bytes)
    jax.clear_caches()  # the path is chosen while tracing
    rng = np.random.default_rng(11)
    tiny = np.float32(ml_dtypes.finfo(np.float32).smallest_subnormal)
    rows = {
        "normals": rng.standard_normal((6, 40)).astype(np.float32),
        "zeros reached": np.where(rng.random((6, 40)) < 0.5, np.float32(-0.0),
                                  -np.abs(rng.standard_normal((6, 40))).astype(np.float32)),
        "zero ties": np.tile(np.array([0.0, -0.0, -1.0, 0.0, -0.0, -2.0] * 5, np.float32), (3, 1)),
        "subnormals": np.tile(np.array([-tiny, 0.0, tiny, -0.0, -1.0] * 4, np.float32), (2, 1)),
    }
    with_nan = rows["normals"].copy()
    with_nan[2, 7] = np.nan
    with_nan[4, 1] = -np.nan
    rows["one NaN"] = with_nan
    # the OpenVINO face decides from the selected values: -NaN (payloads differ) not selected,
    # selected, or as the only elements past the numbers; +NaN, which lax.top_k selects first
    nans = np.array([0x7FC00000, 0xFFC00000, 0xFF800001, 0x7F800002],
                    np.uint32).view(np.float32)
    negative = rows["normals"].copy()
    negative[:, ::5] = nans[1]
    negative[1, 3], negative[3, 4] = nans[2], nans[2]
    rows["-NaN only"] = negative
    few = np.tile(nans[[1, 2, 1, 2, 1]], (2, 8))
    few[:, 5:8] = np.array([2.0, -1.0, -3.0], np.float32)
    rows["-NaN reached"] = few
    positive = rows["normals"].copy()
    positive[:, 9] = nans[0]
    positive[5, 30] = nans[3]
    rows["+NaN"] = positive
    cases = [(name, k) for name in rows for k in (1, 3, 12)]
    got = iter(jitted([call for name, k in cases for call in (
        (lambda v, k=k: onnx.top_k(v, k), rows[name]),
        (lambda v, k=k: ov.top_k(v, k, axis=1, mode="max", sort="value"), rows[name]))]))
    for name, k in cases:
        x = rows[name]
        v, i = next(got)
        want_v, want_i = top_k(x, k, -1, face="onnx", descending=True)
        assert_bits(v, want_v, f"onnx {name} {k}")
        assert_bits(i, want_i.astype(np.int32), f"onnx {name} {k}")
        v, i = next(got)
        want_v, want_i = top_k(x, k, -1, face="openvino", descending=True)
        assert_bits(v, want_v, f"ov {name} {k}")
        assert_bits(i, want_i.astype(np.int32), f"ov {name} {k}")
    monkeypatch.undo()
    jax.clear_caches()


def test_arg_max_float32_folds_on_special_rows(arg_max_forms):
    """float32 over a last axis of 90 (12 runs of 8 lanes, the last overlapping the one
    before), over axis 0 of 90 (the blocked fold) and over a last axis of 9 (element by
    element): NaN-free data, -inf rows, maxima that are zeros (``-0.0``/``+0.0`` ties) or
    subnormals, and one NaN."""
    assert not lowering.lanes(90) and lowering.wide_lanes(90) == 8
    rng = np.random.default_rng(12)
    tiny = np.float32(ml_dtypes.finfo(np.float32).smallest_subnormal)
    ties = rng.integers(-2, 3, (5, 90)).astype(np.float32)
    rows = {
        "normals": rng.standard_normal((5, 90)).astype(np.float32),
        "ties": ties,
        "-inf rows": np.where(rng.random((5, 90)) < 0.9, -np.inf, ties).astype(np.float32),
        "zero maxima": -np.abs(ties) * np.where(rng.random((5, 90)) < 0.5, 1, -1).astype(
            np.float32) * 0,
        "subnormal maxima": np.where(rng.random((5, 90)) < 0.3, tiny, -np.abs(ties)).astype(
            np.float32),
    }
    rows["zero maxima"][:, ::7] = -1.0
    with_nan = rows["ties"].copy()
    with_nan[3, 50] = np.nan
    rows["one NaN"] = with_nan
    cases = [(name, axis, data, last) for name, x in rows.items()
             for axis, data in ((1, x), (0, x.T.copy()), (-1, x[:, :9])) for last in (0, 1)]
    got = jitted([(lambda v, a=axis, la=last: onnx.arg_max(v, axis=a, keepdims=0,
                                                           select_last_index=la), data)
                  for _, axis, data, last in cases])
    for (name, axis, data, last), g in zip(cases, got, strict=True):
        want = onnx_arg_max(data, axis, False, bool(last)).astype(np.int32)
        assert_bits(g, want, f"{name} axis {axis} last {last}")


def test_arg_max_float32_overlapping_runs(arg_max_forms):
    """float32 over a last axis that no run width divides (150: 10 runs of 16 lanes; 100: 13
    of 8; 34: 5 of 8; the last run starts at ``n - width`` and rereads the run before's tail):
    a NaN (either sign) after the maximum, NaN in several runs, ``inf`` and ``-inf`` together
    (a NaN sum without a NaN), the largest finite values, ties across runs and inside the
    overlap, a maximum only in the last run's own elements, -inf rows; jit and eager."""
    rng = np.random.default_rng(13)
    base = rng.integers(-3, 4, (10, 150)).astype(np.float32)
    x = base.copy()
    x[0, 100] = np.nan            # NaN after the maximum
    x[1, 5], x[1, 110] = -np.nan, np.nan
    x[2, 3], x[2, 4] = np.inf, -np.inf
    x[3, 70], x[3, 71] = np.finfo(np.float32).max, np.finfo(np.float32).max
    x[4, :] = -np.inf
    x[5, 10], x[5, 90] = 9.0, 9.0  # a tie across runs
    x[6, 61], x[6, 2] = np.inf, -np.inf
    x[6, 80] = np.nan
    x[7, 29], x[7, 31], x[7, 33] = 9.0, 9.0, 9.0  # in the overlap of 34 (its last run 26-33)
    x[7, 140], x[7, 143] = 9.0, 9.0  # and in the overlap of 150 (the last run 134-149)
    x[8, 33], x[8, 149], x[8, 99] = 9.0, 9.0, 9.0  # at the end: the last run's own elements
    x[9, 25], x[9, 26] = 9.0, 9.0  # one before the last run of 34, one its first element
    for last in (0, 1):
        for data in (x, x[:, :100], x[:, :34]):
            n = data.shape[1]
            assert not lowering.lanes(n) and n % lowering.wide_lanes(n)
            got = onnx.arg_max(data, axis=1, keepdims=0, select_last_index=last)
            want = onnx_arg_max(data, 1, False, bool(last)).astype(np.int32)
            assert_bits(got, want, f"{data.shape} last {last}")
            got = jax.jit(lambda v, last=last: onnx.arg_max(v, axis=-1, select_last_index=last))(
                data)
            assert_bits(got, onnx_arg_max(data, 1, True, bool(last)).astype(np.int32),
                        f"jit {data.shape} last {last}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int8", "uint16",
                                   "int32", "uint64"])
def test_arg_max_last_axis_folds_of_every_dtype(dtype, arg_max_forms):
    """Every dtype over a last axis folds keys: element by element (3, 15), by runs of 8 lanes
    (16; 17, the last run overlapping) and wider runs (300: 13 runs of 24 lanes; 1001: 16 of
    64): special values everywhere, heavy ties; first and last index."""
    rng = np.random.default_rng(23)
    dt = dtype_of(dtype)
    cases = [(draw(rng, (6, n), dt), last) for n in (3, 15, 16, 17, 300, 1001)
             for last in (0, 1)]
    got = jitted([(lambda v, la=last: onnx.arg_max(v, axis=-1, keepdims=0,
                                                    select_last_index=la), x)
                  for x, last in cases])
    for (x, last), g in zip(cases, got, strict=True):
        with x64_for(dt):
            want = onnx_arg_max(x, 1, False, bool(last)).astype(index_dtype(np.int64))
            assert_bits(g, want, f"{dtype} n {x.shape[1]} last {last}")


def test_arg_max_float32_lane_fold_and_its_exits(arg_max_forms):
    """float32 over a last axis of 8 * c elements, 2 <= c <= 128, folds at most 32 runs of
    8 * m lanes: ties within a lane, across lanes and across runs, -inf rows, a NaN (either
    sign) before or after the maximum, a zero or subnormal slice maximum (the key's path),
    -0.0/+0.0 ties; first and last index."""
    rng = np.random.default_rng(15)
    assert lowering.lanes(1000) == 40 and lowering.lanes(16) == 8 and lowering.lanes(960) == 32
    x = rng.integers(-3, 4, (12, 1000)).astype(np.float32)  # 25 runs of 40 lanes
    x[0, 9], x[0, 49], x[0, 17], x[0, 998] = 9.0, 9.0, 9.0, 9.0  # one lane, two runs, two lanes
    x[1, :] = -np.inf
    x[2, 700] = 50.0
    x[3, :] = -1.0
    x[3, 3], x[3, 500] = np.float32(1e-45), np.float32(1e-45)  # a subnormal maximum
    x[4, :] = np.where(np.arange(1000) % 3, -0.0, 0.0).astype(np.float32)  # a zero maximum
    x[5, :] = -5.0
    x[5, 16], x[5, 8] = np.float32(-1e-40), np.float32(-2e-40)  # subnormals, negative
    for last in (0, 1):
        for data in (x, x[:, :16], x[:, :960], x[2:3, :]):  # 40, 8 and 32 lanes
            assert lowering.lanes(data.shape[1])
            got = onnx.arg_max(data, axis=1, keepdims=0, select_last_index=last)
            assert_bits(got, onnx_arg_max(data, 1, False, bool(last)).astype(np.int32),
                        f"{data.shape} last {last}")
        with_nan = x.copy()
        with_nan[0, 500], with_nan[2, 3], with_nan[6, 40] = np.nan, -np.nan, np.nan
        with_nan[6, 41] = np.nan
        got = jax.jit(lambda v, last=last: onnx.arg_max(v, axis=-1, select_last_index=last))(
            with_nan)
        assert_bits(got, onnx_arg_max(with_nan, 1, True, bool(last)).astype(np.int32),
                    f"NaN, jit, last {last}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
@pytest.mark.parametrize("nan_order", ["first", "last"])
def test_compare_key_orders_like_the_rule(dtype, nan_order):
    """`order.compare_key` (every fold's key, and the compact pooling pairs') against a NumPy
    reading of the rule on every pair of special values: NaN of either sign above (`first`) or
    below (`last`) every number, -0.0 equal to +0.0, subnormals and infinities in numeric
    order."""
    from jaxmax._src.lowering.order import compare_key as key_of

    info = ml_dtypes.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    values = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, 2 * tiny,
                       float(info.tiny), -float(info.tiny), 1.0, -1.0, float(info.max),
                       -float(info.max)], dtype)
    with x64_for(np.dtype(dtype)):
        got = np.asarray(jax.jit(lambda v: key_of(v, nan_order=nan_order))(values))
    as_float = values.astype(np.float64)

    def rank(v):  # NaN first: above +inf; last: below -inf; -0.0 == +0.0 as floats compare
        return (np.inf, 1) if np.isnan(v) and nan_order == "first" else (
            (-np.inf, -1) if np.isnan(v) else (v, 0))

    for i, a in enumerate(as_float):
        for j, b in enumerate(as_float):
            want = int(rank(a) > rank(b)) - int(rank(a) < rank(b))
            assert np.sign(int(got[i]) - int(got[j])) == want, (values[i], values[j])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_compare_key_orders_every_bit_pattern(dtype):
    """`order.compare_key` against a NumPy reading of the rule on every bit pattern of 16-bit
    floats and a million float32 patterns (both NaN orders): sorted by the rule (NaN above or
    below every number, numbers by value, -0.0 equal to +0.0), the keys never decrease, and two
    neighbours share a key exactly where the rule ties them."""
    from jaxmax._src.lowering.order import compare_key as key_of
    if np.dtype(dtype).itemsize == 2:
        patterns = np.arange(1 << 16, dtype=np.uint16)
    else:
        rng = np.random.default_rng(24)
        patterns = rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)
        patterns[:8] = [0, 0x80000000, 1, 0x80000001, 0x7F800000, 0xFF800000, 0x7F800001,
                        0xFFFFFFFF]
    values = patterns.view(dtype)
    as_float = values.astype(np.float64)
    nan = np.isnan(as_float)
    number = np.where(nan, 0.0, as_float)
    for nan_order in ("first", "last"):
        got = np.asarray(jax.jit(lambda v, o=nan_order: key_of(v, nan_order=o))(values))
        group = np.where(nan, 1 if nan_order == "first" else -1, 0)
        by_rule = np.lexsort((number, group))
        steps = np.diff(got[by_rule].astype(np.int64))
        ties = (np.diff(group[by_rule]) == 0) & (np.diff(number[by_rule]) == 0)
        assert np.all(steps >= 0), (dtype, nan_order)
        np.testing.assert_array_equal(steps == 0, ties, err_msg=f"{dtype} {nan_order}")


@pytest.mark.parametrize("length", [150, 1009])  # 10 runs of 16 lanes, 16 runs of 64
def test_arg_max_float32_zero_maxima(length, arg_max_forms):
    """Slices whose maximum is zero: rows of -0.0/+0.0, zeros after negatives, a negative
    subnormal before the first zero (a float compare that treats subnormals as zero would pick
    it), a positive subnormal after the zeros (the true maximum), zero rows next to NaN rows
    (NaN of either sign: the first or last NaN), ``inf`` and ``-inf`` together; first and last
    index."""
    assert not lowering.lanes(length) and length % lowering.wide_lanes(length)
    rng = np.random.default_rng(21)
    x = -np.abs(rng.standard_normal((8, length))).astype(np.float32) - 1
    x[0, :] = np.where(np.arange(length) % 3, -0.0, 0.0)
    x[1, 100], x[1, 7], x[1, length - 1] = -0.0, 0.0, 0.0
    x[2, 3], x[2, 60] = np.float32(-1e-45), 0.0
    x[3, 20], x[3, 120] = 0.0, np.float32(1e-44)
    x[4, 90] = -0.0
    x[5, 30], x[5, 140] = np.nan, -np.nan
    x[6, :] = 0.0
    x[7, 9], x[7, 11] = np.inf, -np.inf  # a NaN sum without a NaN
    cases = [(rows, last) for last in (0, 1)
             for rows in (x[[0, 1, 4, 6]], x[[0, 1, 4, 5, 6]], x[[0, 2]], x[[1, 3]], x[[5, 7]],
                          x[[5, 6]])]
    got = jitted([(lambda v, la=last: onnx.arg_max(v, axis=-1, keepdims=0,
                                                    select_last_index=la), rows)
                  for rows, last in cases])
    for (rows, last), g in zip(cases, got, strict=True):
        assert_bits(g, onnx_arg_max(rows, 1, False, bool(last)).astype(np.int32),
                    f"{length} last {last} rows {rows.shape}")
