"""Tests for ``jaxmax.openvino.segment_max`` (OpenVINO ``SegmentMax-16``).

Oracles:
* ``segment_max`` of tests/segment_oracle.py: a plain NumPy/Python loop over segments and
  elements written from the spec text and docs/semantics.md (the max rule:
  ``max(lowest(T), non-NaN members)``; an empty segment, decided by counting members, gets 0 or
  lowest(T)).
* OpenVINO's CPU plugin (``openvino.opset16.segment_max``), compiled with f32 inference
  precision, on seeded random cases.

Compilation is the cost here (every new shape / ``num_segments`` / ``fill_mode`` is a new XLA
executable), so the cases are grouped so that many of them share one shape.
"""

from __future__ import annotations

import collections
import functools
import itertools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same as _assert_same
from helpers import lowest as _lowest
from helpers import x64_for
from segment_oracle import segment_max

from jaxmax import openvino as jov

OP = "SegmentMax-16"

# --------------------------------------------------------------------------------------------
# The oracle (tests/segment_oracle.py), pinned down; dtype helpers
# --------------------------------------------------------------------------------------------


def _is_int(dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def _highest(dtype):
    dtype = np.dtype(dtype)
    if _is_int(dtype):
        return np.array(np.iinfo(dtype).max, dtype)
    return np.array(ml_dtypes.finfo(dtype).max, dtype)


def test_oracle_sanity():
    """The oracle itself, on a case worked out by hand."""
    data = np.array([1, 2, 3, 4, 5], np.float32)
    _assert_same(segment_max(data, [0, 0, 2, 3, 3], None, "ZERO"),
                 np.array([2, 0, 3, 5], np.float32))
    low = np.finfo(np.float32).min
    _assert_same(segment_max(np.array([np.nan, -np.inf, -7], np.float32), [0, 1, 3], 5, "ZERO"),
                 np.array([low, low, 0, -7, 0], np.float32))


# --------------------------------------------------------------------------------------------
# Dtype x rank x layout x num_segments x fill_mode grid against the oracle
# --------------------------------------------------------------------------------------------

_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
           np.int8, np.uint8, np.int32, np.int64, np.uint32, np.uint64]
_DTYPE_IDS = [np.dtype(d).name for d in _DTYPES]

# Eight rows each. The first group has max(id) + 1 == 6, so num_segments=None always gives 6
# segments and all of them share one compiled executable per dtype / rank / fill mode.
_LAYOUTS_MAX5 = {
    "all_in_one_last": [5] * 8,                   # leading empties 0..4, one segment
    "many_empty": [1, 1, 1, 3, 3, 5, 5, 5],       # empties 0, 2, 4
    "leading_and_gap": [2, 2, 4, 4, 4, 4, 5, 5],  # empties 0, 1, 3
}
# Other layouts: used with an explicit num_segments (None would mean other output shapes).
_LAYOUTS_OTHER = {
    "all_in_one_first": [0] * 8,
    "one_each": list(range(8)),
    "two_blocks": [0, 0, 0, 0, 1, 1, 1, 1],       # with num_segments 3 / 9: trailing empties
}
_LAYOUTS_ALL = {**_LAYOUTS_MAX5, **_LAYOUTS_OTHER}

_TRAILING = {1: (), 2: (3,), 3: (2, 3)}

# (rank, num_segments, fill_mode) per dtype. "jnp:9" is a concrete jnp scalar built under the
# dtype's x64 setting. Every dtype meets both fill modes (and a lower-case spelling), a smaller
# and a larger num_segments, and num_segments 0; the rank-1/rank-3 fill modes alternate between
# dtypes so that every (rank, fill mode) pair occurs. (Each entry is one XLA compilation.)
def _grid_configs(dtype_index: int):
    odd = dtype_index % 2
    return [
        (2, None, "ZERO"),                                # default max(id) + 1
        (2, None, "LOWEST"),
        (1, np.int64(3), "lowest" if odd else "zero"),    # smaller: ids >= 3 dropped
        (3, "jnp:9", "ZERO" if odd else "LOWEST"),        # larger: trailing empty segments
        (2, 0, "zero" if odd else "LOWEST"),              # no output segments at all
    ]


def _value_pool(dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if _is_int(dtype):
        vals = [int(_lowest(dtype)), 0, 1, 2, 7, int(_highest(dtype))]
        if dtype.kind == "i":
            vals += [-3, -1]
        return np.array(vals, dtype)
    vals = [-np.inf, float(_lowest(dtype)), 0.0, np.nan, np.inf, -2.0, -1.0, 1.0, 3.0, 5.0]
    return np.array(vals, dtype)


def _grid_data(rng, dtype, ids, rank) -> np.ndarray:
    pool = _value_pool(dtype)
    shape = (len(ids),) + _TRAILING[rank]
    data = pool[rng.integers(0, len(pool), size=shape)]
    if len(ids) and not _is_int(dtype):
        flat = data.reshape(len(ids), -1)
        ids = np.asarray(ids)
        flat[ids == ids[-1], 0] = np.nan          # an all-NaN segment column -> lowest(T)
        if flat.shape[1] > 1:
            flat[ids == ids[0], 1] = -np.inf      # an all -inf segment column -> lowest(T)
        if flat.shape[1] > 2:
            flat[ids == ids[0], 2] = 0.0          # a real maximum of 0 under LOWEST
        data = flat.reshape(shape)
    return data


def _num_segments_arg(spec):
    if isinstance(spec, str) and spec.startswith("jnp:"):
        return jnp.asarray(int(spec[4:]))
    return spec


@pytest.mark.parametrize("dtype", _DTYPES, ids=_DTYPE_IDS)
def test_grid_against_oracle(dtype):
    rng = np.random.default_rng(1000 + _DTYPES.index(dtype))
    with x64_for(dtype):
        checked = 0
        for rank, ns_spec, fill in _grid_configs(_DTYPES.index(dtype)):
            layouts = _LAYOUTS_MAX5 if ns_spec is None else _LAYOUTS_ALL
            for name, ids_list in layouts.items():
                ids = np.array(ids_list, np.int64 if np.dtype(dtype).itemsize == 8 else np.int32)
                data = _grid_data(rng, dtype, ids, rank)
                ns = _num_segments_arg(ns_spec)
                got = jov.segment_max(data, ids, ns, fill_mode=fill)
                want = segment_max(data, ids, ns, fill)
                try:
                    _assert_same(got, want)
                except AssertionError as err:
                    raise AssertionError(
                        f"layout={name} rank={rank} num_segments={ns_spec!r} fill={fill}\n"
                        f"ids={ids}\ndata={data!r}\n{err}") from None
                checked += 1
        assert checked == 2 * 3 + 3 * 6


@pytest.mark.parametrize("dtype", _DTYPES, ids=_DTYPE_IDS)
def test_zero_length_data(dtype):
    """No rows: every segment is empty (0 or lowest(T)); None gives 0 segments."""
    rank = 1 + _DTYPES.index(dtype) % 3
    fills = ("ZERO", "lowest") if _DTYPES.index(dtype) % 2 else ("zero", "LOWEST")
    with x64_for(dtype):
        data = np.zeros((0,) + _TRAILING[rank], dtype)
        ids = np.zeros((0,), np.int32)
        got = jov.segment_max(data, ids, fill_mode=fills[0])
        _assert_same(got, np.zeros((0,) + _TRAILING[rank], dtype))
        got = jov.segment_max(data, ids, 4, fill_mode=fills[1])
        want = segment_max(data, ids, 4, fills[1])
        _assert_same(got, want)
        fill_value = 0 if fills[1].upper() == "ZERO" else _lowest(dtype)
        _assert_same(got, np.full((4,) + _TRAILING[rank], fill_value, dtype))


@pytest.mark.parametrize("dtype", _DTYPES, ids=_DTYPE_IDS)
def test_emptiness_is_by_membership(dtype):
    """A segment whose real maximum is 0, lowest(T), -inf or all NaN is not empty.

    Hand-written expectations (no oracle): under ZERO a real maximum lowest(T) stays lowest(T);
    under LOWEST a real maximum 0 stays 0; only segment 4 (no member) takes the fill value.
    """
    dt = np.dtype(dtype)
    low = _lowest(dt)
    is_float = not _is_int(dt)
    ninf = -np.inf if is_float else low       # for integers the "-inf" column is lowest(T)
    nan = np.nan if is_float else low         # for integers the "NaN" entries are lowest(T)
    one = 1
    top = np.inf if is_float else _highest(dt)
    ids = np.array([0, 1, 1, 2, 3, 3, 5, 5], np.int64 if dt.itemsize == 8 else np.int32)
    data = np.array([
        [0, low, ninf],        # seg 0: max 0, lowest, -inf -> lowest
        [nan, nan, ninf],      # seg 1
        [nan, low, ninf],      #        all-NaN, lowest, -inf -> lowest
        [ninf, 0, nan],        # seg 2: -inf -> lowest, 0, all-NaN -> lowest
        [low, ninf, 0],        # seg 3
        [nan, nan, 0],         #        lowest, -inf -> lowest, 0 (ties)
        [nan, one, top],       # seg 5
        [one, nan, nan],       #        NaN loses: 1, 1, +inf
    ], dt)
    with x64_for(dtype):
        for fill in ("ZERO", "LOWEST"):
            empty = 0 if fill == "ZERO" else low
            want = np.array([
                [0, low, low],
                [low, low, low],
                [low, 0, low],
                [low, low, 0],
                [empty, empty, empty],
                [one, one, top],
            ], dt)
            got = jov.segment_max(data, ids, fill_mode=fill)
            _assert_same(got, want)
            _assert_same(segment_max(data, ids, None, fill), want)


def test_oracle_lowest_table():
    """The oracle's lowest(T) is finfo.min / iinfo.min / 0 for unsigned, never -inf (the
    emptiness test checks that jaxmax's LOWEST fill equals it for every dtype)."""
    expected = {
        "float16": -65504.0, "bfloat16": -3.3895313892515355e38,
        "float32": -3.4028234663852886e38, "float64": -1.7976931348623157e308,
        "int8": -128, "uint8": 0, "int32": -2**31, "int64": -2**63, "uint32": 0, "uint64": 0,
    }
    for dtype in _DTYPES:
        low = _lowest(dtype)
        assert low.dtype == np.dtype(dtype)
        assert (int(low) if _is_int(dtype) else float(low)) == expected[np.dtype(dtype).name]


# --------------------------------------------------------------------------------------------
# The spec's examples (concrete values chosen here; shapes and fill rules as in the text)
# --------------------------------------------------------------------------------------------

_EX_DATA = np.array([1, 2, 3, 4, 5], np.float32)
_EX_IDS = np.array([0, 0, 2, 3, 3], np.int32)
_EX3_DATA = np.array([[1, -2, 3, -4], [5, -6, -7, 8], [-9, 10, 11, -12]], np.int32)
_EX3_IDS = np.array([0, 1, 1], np.int64)

SPEC_EXAMPLES = {
    # Example 1: num_segments (I64 scalar) 2 < max(id) + 1 = 4; ZERO.
    "example1": (_EX_DATA, _EX_IDS, np.int64(2), "ZERO", np.array([2, 0], np.float32)),
    # Example 2: num_segments 8 > max(id) + 1; ZERO pads with zeros.
    "example2": (_EX_DATA, _EX_IDS, np.int64(8), "ZERO",
                 np.array([2, 0, 3, 5, 0, 0, 0, 0], np.float32)),
    # Example 3: 3x4 I32 data, I64 ids [0, 1, 1], LOWEST, no num_segments -> 2x4.
    "example3": (_EX3_DATA, _EX3_IDS, None, "LOWEST",
                 np.array([[1, -2, 3, -4], [5, 10, 11, 8]], np.int32)),
    # The detailed description: ids [0,0,0,1,1,3,5,5], no num_segments, ZERO -> 6 segments.
    "description": (np.array([3, 9, 1, -4, -2, 6, 0, -1], np.float32),
                    np.array([0, 0, 0, 1, 1, 3, 5, 5], np.int32), None, "ZERO",
                    np.array([9, -2, 0, 6, 0, 0], np.float32)),
    # The docs/semantics.md / docstring example.
    "doctest": (_EX_DATA, _EX_IDS, None, "ZERO", np.array([2, 0, 3, 5], np.float32)),
}


@pytest.mark.parametrize("name", list(SPEC_EXAMPLES))
def test_spec_examples(name):
    data, ids, ns, fill, want = SPEC_EXAMPLES[name]
    got = jov.segment_max(data, ids, ns, fill_mode=fill)
    _assert_same(got, want)
    _assert_same(segment_max(data, ids, ns, fill), want)


def test_spec_example3_lowest_fill():
    """Example 3's LOWEST fill shows when a segment is empty: int32 lowest, not 0."""
    got = jov.segment_max(_EX3_DATA, np.array([0, 2, 2], np.int64), fill_mode="LOWEST")
    want = np.array([[1, -2, 3, -4], [-2**31] * 4, [5, 10, 11, 8]], np.int32)
    _assert_same(got, want)


# --------------------------------------------------------------------------------------------
# Under jit: traced ids with a static num_segments
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fill", ["ZERO", "LOWEST"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["float32", "int32"])
def test_jit_traced_ids_out_of_range_and_unsorted(dtype, fill):
    """Traced ids are not checked: ids outside [0, 5) are dropped, unsorted ids still give the
    per-id maximum (docs/semantics.md §3.3)."""
    f = jax.jit(lambda d, i: jov.segment_max(d, i, 5, fill_mode=fill))
    rng = np.random.default_rng(7 if dtype == np.float32 else 8)
    pool = _value_pool(dtype)
    fixed_ids = np.array([4, -1, 0, 7, 4, 5, 0, 2, -3, 2], np.int32)
    saw_dropped = saw_unsorted = False
    for trial in range(25):
        ids = fixed_ids if trial == 0 else rng.integers(-3, 9, size=10).astype(np.int32)
        data = pool[rng.integers(0, len(pool), size=(10, 3))]
        got = f(data, ids)
        _assert_same(got, segment_max(data, ids, 5, fill))
        saw_dropped |= bool(((ids < 0) | (ids >= 5)).any())
        saw_unsorted |= bool((np.diff(ids) < 0).any())
    assert saw_dropped and saw_unsorted
    # The same ids given eagerly are rejected (they can be checked there).
    with pytest.raises(ValueError, match=rf"^{OP}.*segment_ids"):
        jov.segment_max(data, fixed_ids, 5, fill_mode=fill)


def test_jit_traced_ids_hand_example():
    """Dropped and unsorted ids, expected values written by hand."""
    f = jax.jit(lambda d, i: jov.segment_max(d, i, 4, fill_mode="ZERO"))
    data = np.array([10, 3, 7, 99, 5, -8, 42], np.float32)
    ids = np.array([2, 0, 2, 4, 0, 3, -1], np.int32)   # 4 and -1 are dropped; 1 is empty
    _assert_same(f(data, ids), np.array([5, 0, 10, -8], np.float32))


# --------------------------------------------------------------------------------------------
# Errors (docs/semantics.md §2): the class, the operator name first, the argument named
# --------------------------------------------------------------------------------------------

_D = np.arange(4, dtype=np.float32)
_I = np.array([0, 0, 1, 1], np.int32)

_ERROR_CASES = {
    "unsorted_ids": (lambda: jov.segment_max(_D, np.array([0, 1, 0, 1]), fill_mode="ZERO"),
                     ValueError, "segment_ids"),
    "negative_ids": (lambda: jov.segment_max(_D, np.array([-1, 0, 1, 1]), fill_mode="ZERO"),
                     ValueError, "segment_ids"),
    "ids_2d": (lambda: jov.segment_max(_D, _I.reshape(2, 2), fill_mode="ZERO"),
               ValueError, "segment_ids"),
    "ids_wrong_length": (lambda: jov.segment_max(_D, np.array([0, 0, 1]), fill_mode="ZERO"),
                         ValueError, "segment_ids"),
    "float_ids": (lambda: jov.segment_max(_D, np.array([0.0, 0, 1, 1]), fill_mode="ZERO"),
                  TypeError, "segment_ids"),
    "negative_num_segments": (lambda: jov.segment_max(_D, _I, -1, fill_mode="ZERO"),
                              ValueError, "num_segments"),
    "float_num_segments": (lambda: jov.segment_max(_D, _I, 2.0, fill_mode="ZERO"),
                           TypeError, "num_segments"),
    "unknown_fill_mode": (lambda: jov.segment_max(_D, _I, fill_mode="MIN"),
                          ValueError, "fill_mode"),
    "fill_mode_none": (lambda: jov.segment_max(_D, _I, fill_mode=None), TypeError, "fill_mode"),
    "bool_data": (lambda: jov.segment_max(np.array([True, False, True, True]), _I,
                                          fill_mode="ZERO"),
                  TypeError, "data"),
    "rank0_data": (lambda: jov.segment_max(np.float32(3), np.array([0]), fill_mode="ZERO"),
                   ValueError, "data"),
    "traced_num_segments": (
        lambda: jax.jit(lambda d, i, n: jov.segment_max(d, i, n, fill_mode="ZERO"))(_D, _I, 2),
        TypeError, "num_segments.*static"),
    "none_num_segments_traced_ids": (
        lambda: jax.jit(lambda d, i: jov.segment_max(d, i, fill_mode="ZERO"))(_D, _I),
        TypeError, "num_segments.*static"),
}


@pytest.mark.parametrize("name", list(_ERROR_CASES))
def test_bad_input_raises(name):
    call, cls, pattern = _ERROR_CASES[name]
    with pytest.raises(cls, match=rf"^{OP}: (?s:.*){pattern}"):
        call()


def test_missing_fill_mode_is_type_error():
    with pytest.raises(TypeError, match="fill_mode"):
        jov.segment_max(_D, _I)  # the keyword-only argument is required
    with pytest.raises(TypeError):
        jov.segment_max(_D, _I, 2, "ZERO")  # fill_mode is keyword-only


# --------------------------------------------------------------------------------------------
# Differential tests against OpenVINO's CPU plugin
# --------------------------------------------------------------------------------------------

# Known deviations of the CPU plugin (OpenVINO 2026.4) from the spec / reference kernel, by
# name. Candidate cases of these kinds are excluded (and counted) below; jaxmax's behaviour for
# them is covered by the oracle tests above.
PLUGIN_DEVIATIONS = {
    # Zero-length data (data.shape[0] == 0): the plugin fails ("Check '!!ptr' failed ... ptr is
    # Null" from shape inference), writes garbage, or crashes the process, depending on the
    # model; constant-folding shape inference without num_segments segfaults.
    "zero_length_data",
    # Negative ids (invalid input): the plugin aborts the whole process ("double free or
    # corruption"). jaxmax rejects them eagerly (test_bad_input_raises), so none are generated.
    "negative_ids",
    # LOWEST for int64 (-2**31), unsigned (2**31 for u32/u64) and float16 (-inf) data is wrong in
    # the plugin (it computes in 32 bits): only float32 and int32 data are generated here.
    "lowest_int64_unsigned_float16",
}

_PLUGIN_FILLS = ("ZERO", "LOWEST")
# (data type, segment_ids type, num_segments given, data rank). num_segments gets the other
# integer type than the ids (Example 1 of the spec: I32 ids, I64 num_segments).
_PLUGIN_CONFIGS = [
    (data_type, ids_type, with_ns, rank)
    for data_type in ("float32", "int32")
    for (ids_type, with_ns), rank in zip(
        itertools.product(("int32", "int64"), (False, True)), (1, 2, 3, 2), strict=True)
]
_PLUGIN_CASES_PER_CONFIG = 30   # 8 configurations x 30 cases x 2 fill modes -> 480 comparisons
_PLUGIN_ROWS = 12               # one data shape and one segment count (6) per rank: jaxmax
_PLUGIN_COUNT = 6               # compiles 2 dtypes x 3 ranks x 2 fill modes executables


@pytest.fixture(scope="module")
def ov_core():
    openvino = pytest.importorskip("openvino")
    return openvino.Core()


@functools.cache
def _plugin_request(core, data_type: str, ids_type: str, rank: int, with_ns: bool):
    """One compiled model with dynamic dimensions and one output per fill mode."""
    import openvino as ov
    import openvino.opset16 as ops

    types = {"float32": ov.Type.f32, "int32": ov.Type.i32, "int64": ov.Type.i64}
    data = ops.parameter(ov.PartialShape([-1] * rank), types[data_type])
    ids = ops.parameter(ov.PartialShape([-1]), types[ids_type])
    params = [data, ids]
    if with_ns:
        ns = ops.parameter(ov.PartialShape([]),
                           types["int64" if ids_type == "int32" else "int32"])
        params.append(ns)
        nodes = [ops.segment_max(data, ids, ns, fill_mode=fill) for fill in _PLUGIN_FILLS]
    else:
        nodes = [ops.segment_max(data, ids, fill_mode=fill) for fill in _PLUGIN_FILLS]
    model = ov.Model([node.output(0) for node in nodes], params)
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return compiled.create_infer_request()


def _run_plugin(core, data, ids, ns) -> dict[str, np.ndarray]:
    """The plugin's results for both fill modes, keyed "ZERO" / "LOWEST"."""
    ids_type = np.dtype(ids.dtype).name
    req = _plugin_request(core, np.dtype(data.dtype).name, ids_type, data.ndim, ns is not None)
    inputs = [data, ids]
    if ns is not None:
        inputs.append(np.array(ns, np.int64 if ids_type == "int32" else np.int32))
    results = req.infer(inputs)
    return {fill: np.array(results[k], copy=True) for k, fill in enumerate(_PLUGIN_FILLS)}


def _plugin_deviation(data, ids) -> str | None:
    if data.shape[0] == 0:
        return "zero_length_data"
    if ids.size and ids.min() < 0:
        return "negative_ids"
    if np.dtype(data.dtype).name not in ("float32", "int32"):
        return "lowest_int64_unsigned_float16"
    return None


def _random_plugin_case(rng, data_type, ids_type, with_ns, rank, k):
    rows = 0 if k % 15 == 14 else _PLUGIN_ROWS   # zero-length candidates: excluded by name
    if with_ns:
        hi = int(rng.integers(1, 2 * _PLUGIN_COUNT + 1))   # max(id) below or above num_segments
        lo = int(rng.integers(0, hi))                       # leading empty segments
        ids = np.sort(rng.integers(lo, hi, size=rows))
        ns = _PLUGIN_COUNT
    else:
        lo = int(rng.integers(0, _PLUGIN_COUNT))
        ids = np.sort(rng.integers(lo, _PLUGIN_COUNT, size=rows))
        if rows:
            ids[-1] = _PLUGIN_COUNT - 1                     # so max(id) + 1 == _PLUGIN_COUNT
        ns = None
    pool = _value_pool(data_type)
    if k % 3 == 0:   # few distinct values: ties, all-NaN and all-(-inf) segments
        pool = pool[:4]
    data = pool[rng.integers(0, len(pool), size=(rows,) + _TRAILING[rank])]
    return data, ids.astype(ids_type), ns


def test_against_openvino_cpu_plugin(ov_core):
    """Random cases: jaxmax == the CPU plugin == the oracle, both fill modes."""
    compared = 0
    excluded = collections.Counter()
    seen = collections.Counter()
    for index, (data_type, ids_type, with_ns, rank) in enumerate(_PLUGIN_CONFIGS):
        rng = np.random.default_rng(500 + index)
        for k in range(_PLUGIN_CASES_PER_CONFIG):
            data, ids, ns = _random_plugin_case(rng, data_type, ids_type, with_ns, rank, k)
            reason = _plugin_deviation(data, ids)
            if reason is not None:
                assert reason in PLUGIN_DEVIATIONS
                excluded[reason] += 1
                continue
            plugin = _run_plugin(ov_core, data, ids, ns)
            for fill in _PLUGIN_FILLS:
                got = jov.segment_max(data, ids, ns, fill_mode=fill)
                want = segment_max(data, ids, ns, fill)
                for label, expected in (("plugin", plugin[fill]), ("oracle", want)):
                    try:
                        _assert_same(got, expected)
                    except AssertionError as err:
                        raise AssertionError(
                            f"jaxmax vs {label}: config={(data_type, ids_type, with_ns, rank)} "
                            f"case={k} fill={fill}\nids={ids} num_segments={ns}\n"
                            f"data={data!r}\n{err}") from None
                compared += 1
            present = set(ids.tolist())
            seen["empty_segment"] += any(j not in present for j in range(want.shape[0]))
            seen["dropped_ids"] += bool(ns is not None and ids.max() >= ns)
            seen["nan"] += bool(data.dtype.kind == "f" and np.isnan(data).any())
            seen["lowest"] += bool((data == _lowest(data.dtype)).any())
    assert compared >= 400, (compared, excluded)
    assert set(excluded) == {"zero_length_data"}, excluded
    # The random cases reach the interesting situations often.
    assert min(seen.values()) >= 40, seen


@pytest.mark.parametrize("name", list(SPEC_EXAMPLES))
def test_spec_examples_on_openvino_cpu_plugin(ov_core, name):
    data, ids, ns, fill, want = SPEC_EXAMPLES[name]
    ns = None if ns is None else int(ns)
    _assert_same(_run_plugin(ov_core, data, ids, ns)[fill], want)


def test_openvino_plugin_nan_rule(ov_core):
    """How the plugin treats NaN: skipped wherever it appears (never wins, order does not
    matter), an all-NaN segment gives lowest(T), as jaxmax and the reference kernel."""
    low = np.finfo(np.float32).min
    nan = np.nan
    data = np.array([[nan, 1.0], [3.0, nan], [nan, nan], [nan, -np.inf], [2.0, nan],
                     [nan, nan]], np.float32)
    ids = np.array([0, 0, 1, 1, 2, 2], np.int32)
    want = np.array([[3, 1], [low, low], [2, low], [0, 0]], np.float32)
    # The same data with the rows reversed: segment 0 and 2 swap their members and the NaN
    # positions inside each segment flip.
    for d, w in ((data, want), (data[::-1].copy(), want[[2, 1, 0, 3]])):
        _assert_same(_run_plugin(ov_core, d, ids, 4)["ZERO"], w)
        _assert_same(jov.segment_max(d, ids, 4, fill_mode="ZERO"), w)
