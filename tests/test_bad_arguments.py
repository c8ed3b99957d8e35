"""Bad arguments get the contract's error; odd but valid spellings work; nothing aborts.

* A seeded fuzz replaces one argument of a valid call of every public function by a bad value
  and asserts a `TypeError` or `ValueError` whose message starts with the operator's name (no
  other exception type escapes).
* Without ``jax_enable_x64``, concrete 64-bit input that JAX would store changed (integers out of
  the 32-bit range, finite floats that overflow float32) raises `ValueError`; with it, the same
  calls are exact (checked in a subprocess that enables x64).
* Sizes that no array can have: tests/test_sizes_never_abort.py. AdaptiveMaxPool's and
  MaxUnpool's own argument errors: tests/test_adaptive_max_pool_errors.py and
  test_max_unpool_errors.py.
"""

from __future__ import annotations

import inspect
import json
import os
from functools import partial

import jax
import numpy as np
import pytest
from helpers import assert_same, run_python
from pool_oracle import max_pool_1, max_pool_1_grad

from jaxmax import onnx
from jaxmax import openvino as ov

rng0 = np.random.default_rng(0)
F32_4D = rng0.standard_normal((2, 3, 5, 6)).astype(np.float32)
F32_2D = rng0.standard_normal((4, 3)).astype(np.float32)
BOOL_2D = rng0.random((4, 3)) < 0.5


class Opaque:
    """An object no argument accepts."""


# Values that are wrong for every argument of every function.
EVERYWHERE = ["abc", b"bytes", {}, {"a": 1}, Opaque(), 1 + 2j, [[0], [1, 2]], {1, 2},
              np.array(["x"]), np.array([object()]), np.array([1.0], np.longdouble),
              np.array(["2020-01-01"], "datetime64[D]")]
HUGE_INTS = [2**63, 2**64 - 1, -2**63 - 1, 2**70]
ANY_FLAG_BAD = EVERYWHERE + HUGE_INTS + [1.5, float("nan"), np.float32(2.0), [1.0, 2.0]]
ANY_INT_BAD = ANY_FLAG_BAD + [True]  # a bool is no integer attribute

CALLS = {
    # op prefix, function, valid keyword arguments, {argument: bad values}
    "ov.reduce_max": ("ReduceMax-1", ov.reduce_max, dict(data=F32_2D, axes=[0]), {
        "data": EVERYWHERE + [None, BOOL_2D, np.array([1 + 1j]), np.array([2**40, 3]),
                             np.array([1e300, 0.0]), [[1, 2], [3]]],
        "axes": ANY_INT_BAD + [None, 2**40, -3, 2, [0, 0], [0, -2], np.ones((2, 2), int), "0",
                               [0.5]],
        "keep_dims": ANY_FLAG_BAD + [None, 2, -1, "yes", [1], np.array([1, 0]), []],
    }),
    "ov.reduce_logical_or": ("ReduceLogicalOr-1", ov.reduce_logical_or,
                             dict(data=BOOL_2D, axes=1), {
        "data": EVERYWHERE + [None, F32_2D, np.array([1, 0]), [[True], [False, True]]],
        "axes": ANY_INT_BAD + [None, 2**40, 5, [1, 1], np.ones((1, 1), int)],
        "keep_dims": ANY_FLAG_BAD + [None, 3, "no"],
    }),
    "ov.max_pool": (("MaxPool-1", "MaxPool"), ov.max_pool,
                    dict(data=F32_4D, kernel=2, strides=1, pads_begin=[0, 1], pads_end=1), {
        "data": EVERYWHERE + [None, F32_2D, F32_4D[..., None, None], F32_4D > 0,
                              F32_4D.astype(np.complex64), F32_4D.astype(np.float64) * 1e300,
                              np.full((1, 1, 2, 2), 2**40)],
        "kernel": ANY_INT_BAD + [None, 0, -1, [2, 0], [2, 2, 2], [2], 2**62, 2**63 - 1, 7, "2",
                                 np.ones((2, 2), int), []],
        "strides": ANY_INT_BAD + [None, 0, -2, [1, 1, 1], [], "1"],
        "pads_begin": ANY_INT_BAD + [-1, [0, -1], [0, 0, 0], 2**40, 2**62, "0", []],
        "pads_end": ANY_INT_BAD + [-1, [1], 2**40, 2**61, 2**63 - 1, "1",
                                   np.array([1, 2**63], np.uint64)],
        "rounding_type": EVERYWHERE[:5] + [None, 1, "round", "", ["ceil"], "ceil_torch"],
        "auto_pad": EVERYWHERE[:5] + [1, "same", "", ["valid"], "notset"],
        # MaxPool-1 has none of MaxPool-8's attributes
        "dilations": ANY_INT_BAD + [2, [1, 2], 0, [1, 1, 1]],
        "axis": ANY_INT_BAD + [1, -1, 2**40, "0"],
        "index_element_type": EVERYWHERE[:5] + ["i32", np.int32, "u8", np.int8, None, 5],
        "opset": ANY_INT_BAD + [None, 0, -1, "1"],
    }),
    "ov.max_pool8": (("MaxPool-8", "MaxPool"), ov.max_pool,
                     dict(data=F32_4D, kernel=2, strides=1, dilations=[1, 2], axis=2,
                          index_element_type="i32", opset=8), {
        "data": EVERYWHERE + [None, F32_2D, F32_4D > 0, F32_4D.astype(np.complex64)],
        "kernel": ANY_INT_BAD + [0, [2], 4],  # 4 dilated by 2 spans 7 > 6
        "dilations": ANY_INT_BAD + [0, -1, [1, 0], [1, 1, 1], 7],
        "axis": ANY_INT_BAD + [4, -5, 2**40, None, "2"],
        "index_element_type": EVERYWHERE[:5] + ["u8", "i16", "", np.int8, np.float32, None, 5],
        "rounding_type": ["ceil_torch", "torch", None],  # ceil_torch needs MaxPool-14
        "opset": ANY_INT_BAD + [None, 0, -1, "8"],
    }),
    "onnx.max_pool": ("ONNX MaxPool", onnx.max_pool,
                      dict(X=F32_4D, kernel_shape=[2, 2], strides=[1, 1], pads=[0, 1, 1, 0],
                           dilations=[1, 2], ceil_mode=1, storage_order=1, return_indices=True,
                           auto_pad="NOTSET", opset=22), {
        "X": EVERYWHERE + [None, F32_2D, F32_4D > 0, F32_4D.astype(np.int32),
                           F32_4D.astype(np.complex64), np.full((1, 1, 2, 2), 1e300)],
        "kernel_shape": ANY_INT_BAD + [None, 0, [2], [2, 2, 2], [2, 9], -1],
        "strides": ANY_INT_BAD + [0, [1], [1, -1]],
        "pads": ANY_INT_BAD + [[0, 1], [-1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [2**62] * 4],
        "dilations": ANY_INT_BAD + [0, [1, 0], [1], 9],
        "ceil_mode": ANY_FLAG_BAD + [None, 2, -1, "1"],
        "storage_order": ANY_FLAG_BAD + [None, 2, "0"],
        "return_indices": ANY_FLAG_BAD + [None, 2, "yes"],
        "auto_pad": EVERYWHERE[:5] + [None, 1, "same", "SAME_UPPER", "valid", "explicit"],
        "opset": ANY_INT_BAD + [None, 0, -1, 7, 9, "22"],
    }),
    "onnx.global_max_pool": ("ONNX GlobalMaxPool", onnx.global_max_pool,
                             dict(X=F32_4D, opset=22), {
        "X": EVERYWHERE + [None, F32_2D, F32_4D > 0, F32_4D.astype(np.int8),
                           F32_4D.astype(np.complex64)],
        "opset": ANY_INT_BAD + [None, 0, -1, "22"],
    }),
    "ov.segment_max": ("SegmentMax-16", ov.segment_max,
                       dict(data=F32_2D, segment_ids=[0, 0, 1, 3], num_segments=None,
                            fill_mode="ZERO"), {
        "data": EVERYWHERE + [None, np.float32(1.0), BOOL_2D, F32_2D.astype(np.complex64),
                              np.array([2**40, 1, 2, 3])],
        "segment_ids": EVERYWHERE + [None, [0.0, 0, 1, 1], np.array([0, 0, 1, 1], np.uint8),
                                     np.array([0, 0, 1, 1], np.int16), [0, 1], [[0, 0, 1, 1]],
                                     [1, 0, 0, 0], [-1, 0, 0, 1], [0, 0, 1, 2**32 + 1],
                                     [0, 0, 1, 2**63], [0, 0, 1, 2**62]],
        "num_segments": ANY_INT_BAD + [-1, [3], 2**62, "3"],
        "fill_mode": EVERYWHERE[:5] + [None, 0, "zeros", "", ["ZERO"]],
    }),
    "ov.maximum": ("Maximum-1", ov.maximum,
                   dict(a=F32_2D, b=F32_2D, auto_broadcast="numpy", opset=1), {
        "a": EVERYWHERE + [None, BOOL_2D, F32_2D.astype(np.complex64), np.array([2**40]),
                           F32_2D.astype(np.float16), np.ones((2, 3), np.float32)],
        "b": EVERYWHERE + [None, BOOL_2D, np.array([1e300]), F32_2D.astype(np.int32),
                           np.ones((4, 3, 1), np.float32)],
        "auto_broadcast": EVERYWHERE[:5] + [None, 0, "bidirectional", "", ["numpy"]],
        "opset": ANY_INT_BAD + [0, -1, "1"],
    }),
    "onnx.max": ("ONNX Max", lambda x, y, opset: onnx.max(x, y, opset=opset),
                 dict(x=F32_2D, y=F32_2D, opset=13), {
        "x": EVERYWHERE + [None, BOOL_2D, F32_2D.astype(np.complex64), np.array([2**40]),
                           F32_2D.astype(np.float16), np.ones((2, 3), np.float32)],
        "y": EVERYWHERE + [None, np.array([1e300]), F32_2D.astype(np.int8)],
        "opset": ANY_INT_BAD + [0, -1, "13"],
    }),
    "onnx.reduce_max": ("ONNX ReduceMax", onnx.reduce_max,
                        dict(data=F32_2D, axes=[1], keepdims=0, opset=18), {
        "data": EVERYWHERE + [F32_2D.astype(np.complex64), BOOL_2D, np.array([2**40]),
                              np.array([-1e300])],
        "axes": ANY_INT_BAD + [2**40, 2, [1, 1], np.ones((2, 1), int)],
        "keepdims": ANY_FLAG_BAD + [None, 2, -1, "1", [1]],
        "noop_with_empty_axes": ANY_FLAG_BAD + [None, 2, "0"],
        "opset": ANY_INT_BAD + [None, 0, -1, "18"],
    }),
    "onnx.arg_max": ("ONNX ArgMax", onnx.arg_max,
                     dict(data=F32_2D, axis=1, keepdims=0, select_last_index=1, opset=13), {
        "data": EVERYWHERE + [None, np.float32(1.0), BOOL_2D, F32_2D.astype(np.complex64),
                              np.array([[2**40, 1]]), np.zeros((4, 0), np.float32),
                              np.full((2, 2), 1e300)],
        "axis": ANY_INT_BAD + [2, -3, 2**40, None, "0", [1]],
        "keepdims": ANY_FLAG_BAD + [None, 2, -1, "1"],
        "select_last_index": ANY_FLAG_BAD + [None, 2, "0"],
        "opset": ANY_INT_BAD + [None, 0, -1, 11, "13"],  # 11: no select_last_index
    }),
    "onnx.top_k": ("ONNX TopK", onnx.top_k,
                   dict(X=F32_2D, K=2, axis=1, largest=0, sorted=1, opset=24), {
        "X": EVERYWHERE + [None, np.float32(1.0), BOOL_2D, F32_2D.astype(np.complex64),
                           np.full((2, 3), 1e300), np.ones((4, 3), np.float16).astype(object)],
        "K": ANY_INT_BAD + [None, -1, 4, [2, 2], np.array([[2]]), np.array(2), [2.0], 2**40,
                            np.array([1.5])],
        "axis": ANY_INT_BAD + [2, -3, None, "1"],
        "largest": ANY_FLAG_BAD + [None, 2, "1"],
        "sorted": ANY_FLAG_BAD + [None, 2, -1],
        "opset": ANY_INT_BAD + [None, 0, -1, 10, "24"],  # 10: no largest
    }),
    "ov.top_k": (("TopK-11", "TopK-3", "TopK-1", "TopK"), ov.top_k,
                 dict(data=F32_2D, k=2, axis=1, mode="max", sort="value",
                      index_element_type="i32", stable=True, opset=11), {
        "data": EVERYWHERE + [None, np.float32(1.0), BOOL_2D, F32_2D.astype(np.complex64),
                              np.array([[2**40, 1]])],
        "k": ANY_INT_BAD + [None, 0, -1, 4, [2], [[2]], 2**40, "2"],
        "axis": ANY_INT_BAD + [2, -3, None],
        "mode": EVERYWHERE[:5] + [None, 1, "maximum", "", ["max"]],
        "sort": EVERYWHERE[:5] + [None, 1, "values", "none", ""],  # none: stable=True
        "index_element_type": EVERYWHERE[:5] + ["u8", "i16", "", np.int8, np.float32, None, 5],
        "stable": ANY_FLAG_BAD + [None, 2, "yes"],
        "opset": ANY_INT_BAD + [None, 0, -1, 3, "11"],  # 3: no stable
    }),
}


def _starts_with_operator(message, prefix):
    """Whether `message` starts with the operator name `prefix` (or one of several)."""
    prefixes = (prefix,) if isinstance(prefix, str) else prefix
    return message.startswith(tuple(p + ":" for p in prefixes))


def _expect_contract_error(prefix, fn, kwargs):
    with pytest.raises((TypeError, ValueError)) as info:
        fn(**kwargs)
    assert _starts_with_operator(str(info.value), prefix), (type(info.value), str(info.value))


def _bad_cases():
    """(id, prefix, function, kwargs): every bad value of every argument, one at a time."""
    for face, (prefix, fn, valid, bad) in CALLS.items():
        for name, values in bad.items():
            for i, value in enumerate(values):
                yield f"{face}-{name}-{i}", prefix, fn, {**valid, name: value}


def _combination_cases(count=400, seed=20261124):
    """Seeded: one to three arguments of a random function replaced by random bad values."""
    rng = np.random.default_rng(seed)
    faces = sorted(CALLS)
    for i in range(count):
        face = faces[rng.integers(len(faces))]
        prefix, fn, valid, bad = CALLS[face]
        names = sorted(bad)
        chosen = rng.choice(names, size=rng.integers(1, min(3, len(names)) + 1), replace=False)
        kwargs = dict(valid)
        for name in chosen:
            kwargs[name] = bad[name][rng.integers(len(bad[name]))]
        yield f"combination-{i}-{face}-{'+'.join(chosen)}", prefix, fn, kwargs


def _all_fuzz_cases():
    return [*_bad_cases(), *_combination_cases()]


def _report_fuzz(start=0):
    """Child process: run the fuzz cases from `start`, one JSON line before and one after each
    call."""
    for case_id, _, fn, kwargs in _all_fuzz_cases()[start:]:
        print(json.dumps({"start": case_id}), flush=True)
        try:
            fn(**kwargs)
            kind, message, is_contract = "no error", "", False
        except Exception as err:  # noqa: BLE001 - every escaping type is reported
            kind, message = type(err).__name__, str(err)
            is_contract = isinstance(err, (TypeError, ValueError))
        print(json.dumps({"case": case_id, "kind": kind, "contract": is_contract,
                          "message": message[:300]}), flush=True)


@pytest.fixture(scope="module")
def fuzz_results():
    """The fuzz, run in child interpreters: a call that kills the process is recorded as such
    (with the child's last words) and the next child goes on after it, so a regression to an
    abort fails its own cases instead of killing pytest."""
    order = [case[0] for case in _FUZZ]
    rows, start = {}, 0
    for _ in range(12):  # at most 20 process deaths are reported one by one
        result = run_python(f"""
            import runpy, sys
            sys.path.insert(0, {os.path.dirname(__file__)!r})  # helpers, pool_oracle (as pytest)
            fuzz = runpy.run_path({__file__!r}, run_name="jaxmax_bad_argument_fuzz")
            fuzz["_report_fuzz"]({start})
        """)
        started = None
        for line in result.stdout.splitlines():
            row = json.loads(line)
            if "start" in row:
                started = row["start"]
            else:
                rows[row["case"]], started = row, None
        if result.returncode == 0 or started is None:
            break
        rows[started] = {"case": started, "kind": f"process died (exit {result.returncode})",
                         "contract": False, "message": result.stderr[-1500:]}
        start = order.index(started) + 1
    return rows


_FUZZ = _all_fuzz_cases()


@pytest.mark.parametrize("case_id,prefix", [(c[0], c[1]) for c in _FUZZ], ids=[c[0] for c in _FUZZ])
def test_bad_argument_fuzz(fuzz_results, case_id, prefix):
    assert case_id in fuzz_results, "not reached: the child processes died too often"
    row = fuzz_results[case_id]
    assert row["contract"], row  # a TypeError or ValueError (AxisError included), nothing else
    assert _starts_with_operator(row["message"], prefix), row


def test_the_fuzz_is_large_and_covers_every_argument():
    assert len(list(_bad_cases())) >= 300 and len(_FUZZ) >= 800
    covered = {(face, name) for face, (_, _, _, bad) in CALLS.items() for name in bad}
    public = {"ov.reduce_max": ov.reduce_max, "ov.reduce_logical_or": ov.reduce_logical_or,
              "ov.max_pool": ov.max_pool, "ov.segment_max": ov.segment_max,
              "onnx.reduce_max": onnx.reduce_max, "onnx.max_pool": onnx.max_pool,
              "onnx.global_max_pool": onnx.global_max_pool}
    for face, fn in public.items():
        for name in inspect.signature(fn).parameters:
            assert (face, name) in covered, (face, name)


def test_onnx_pooling_dtype_and_version_gates():
    """ONNX MaxPool: int8/uint8 from 12, bfloat16 from 22; GlobalMaxPool: bfloat16 from 22;
    Indices and storage_order from 8, ceil_mode and dilations from 10."""
    import ml_dtypes

    x = np.zeros((1, 1, 4), np.float32)
    for dtype, first in ((np.int8, 12), (np.uint8, 12), (ml_dtypes.bfloat16, 22)):
        _expect_contract_error("ONNX MaxPool", onnx.max_pool,
                               dict(X=x.astype(dtype), kernel_shape=[2], opset=first - 1))
        assert onnx.max_pool(x.astype(dtype), kernel_shape=[2], opset=first).dtype == dtype
    _expect_contract_error("ONNX GlobalMaxPool", onnx.global_max_pool,
                           dict(X=x.astype(ml_dtypes.bfloat16), opset=21))
    for attrs, first in ((dict(return_indices=True), 8), (dict(storage_order=1), 8),
                         (dict(ceil_mode=1), 10), (dict(dilations=[1]), 10)):
        with pytest.raises(ValueError, match=f"before opset {first}"):
            onnx.max_pool(x, kernel_shape=[2], opset=first - 1, **attrs)
        onnx.max_pool(x, kernel_shape=[2], opset=first, **attrs)


def test_bad_onnx_dtype_and_version_gates():
    x8 = np.array([[1, -2]], np.int8)
    _expect_contract_error("ONNX ReduceMax", onnx.reduce_max, dict(data=x8, opset=11))
    _expect_contract_error("ONNX ReduceMax", onnx.reduce_max,
                           dict(data=np.array([True]), opset=18))
    _expect_contract_error("ONNX ReduceMax", onnx.reduce_max,
                           dict(data=F32_2D, axes=[], noop_with_empty_axes=1, opset=13))


# --------------------------------------------------------------------------------------------
# Valid spellings: case, NumPy scalars, 0-d arrays, empty lists
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rounding,auto_pad", [("CEIL", "EXPLICIT"), ("Floor", "Explicit"),
                                               ("ceil", None)])
def test_string_attributes_ignore_case(rounding, auto_pad):
    got = ov.max_pool(F32_4D, kernel=np.int64(2), strides=np.array(2), pads_begin=(0, 1),
                      pads_end=np.array([1, 0]), rounding_type=rounding, auto_pad=auto_pad)
    want = max_pool_1(F32_4D, (2, 2), (2, 2), (0, 1), (1, 0), rounding.lower())
    assert_same(got, want)


@pytest.mark.parametrize("spelling", ["SAME_UPPER", "same_upper", "Same_Upper"])
def test_auto_pad_any_case(spelling):
    got = ov.max_pool(F32_4D, kernel=3, strides=2, auto_pad=spelling)
    # same_upper for D=5, k=3, s=2: pad 1 + 1; for D=6: pad 0 + 1
    assert_same(got, max_pool_1(F32_4D, (3, 3), (2, 2), (1, 0), (1, 1)))


def test_fill_mode_any_case_and_empty_ids():
    for fill in ("zero", "Zero", "ZERO"):
        got = ov.segment_max(F32_2D, [0, 0, 2, 2], fill_mode=fill)
        np.testing.assert_array_equal(got[1], np.zeros(3, np.float32))
    for ids in ([], (), np.zeros(0, np.int32)):
        out = ov.segment_max(np.zeros((0, 3), np.float32), ids, fill_mode="LOWEST")
        assert out.shape == (0, 3)
        out = ov.segment_max(np.zeros((0, 3), np.float32), ids, 2, fill_mode="LOWEST")
        np.testing.assert_array_equal(out, np.full((2, 3), np.finfo(np.float32).min))


@pytest.mark.parametrize("axes", [np.int64(1), np.array(1), np.array([1], np.uint8), (1,), [-1]])
def test_axes_spellings(axes):
    np.testing.assert_array_equal(ov.reduce_max(F32_2D, axes), F32_2D.max(1))
    np.testing.assert_array_equal(onnx.reduce_max(F32_2D, axes, keepdims=np.int8(0)),
                                  F32_2D.max(1))


def test_64_bit_values_that_survive_follow_jax():
    """Without x64, int64 in the int32 range and float64 that only rounds are accepted."""
    if jax.config.jax_enable_x64:
        pytest.skip("x64 mode is on")
    ints = np.array([2**31 - 1, -2**31, 5], np.int64)
    np.testing.assert_array_equal(ov.reduce_max(ints, 0), np.int32(2**31 - 1))
    floats = np.array([1e-300, 3.4e38, -np.inf, np.nan], np.float64)
    np.testing.assert_array_equal(onnx.reduce_max(floats, [0], keepdims=0), np.float32(np.nan))
    np.testing.assert_array_equal(ov.reduce_max(floats, 0), np.float32(3.4e38))
    ids = np.array([0, 0, 1, 1], np.int64)
    np.testing.assert_array_equal(ov.segment_max(F32_2D, ids, fill_mode="ZERO"),
                                  np.stack([F32_2D[:2].max(0), F32_2D[2:].max(0)]))


@pytest.mark.parametrize("call,argument", [
    (lambda: ov.reduce_max(np.array([2**40 + 5, 3]), 0), "data"),
    (lambda: ov.reduce_max(np.array([1e300, 3.0]), 0), "data"),
    (lambda: onnx.reduce_max(np.array([-1e300, 3.0]), [0]), "data"),
    (lambda: onnx.reduce_max([2**40, 1], [0]), "data"),
    (lambda: ov.reduce_max(np.array([2**40], np.uint64), 0), "data"),
    (lambda: ov.max_pool(np.full((1, 1, 2, 2), -2**40), kernel=1, strides=1), "data"),
    (lambda: ov.segment_max(np.arange(6, dtype=np.float32),
                            np.array([0, 0, 1, 1, 2, 2**32 + 1]), 4, fill_mode="ZERO"),
     "segment_ids"),
    (lambda: ov.segment_max(np.array([1e39, 0.0]), [0, 1], fill_mode="ZERO"), "data"),
])
def test_64_bit_values_that_would_change_raise(call, argument):
    if jax.config.jax_enable_x64:
        pytest.skip("x64 mode is on")
    with pytest.raises(ValueError, match=f"`{argument}`.*jax_enable_x64"):
        call()


def test_64_bit_values_are_exact_with_x64():
    result = run_python("""
        import json
        import numpy as np
        import jax
        from jaxmax import onnx, openvino as ov
        assert jax.config.jax_enable_x64
        d6 = np.array([1, 0, 3, 2, 4, 5], np.float64)
        out = {
            "int": int(ov.reduce_max(np.array([2**40 + 5, 3]), 0)),
            "f64": float(ov.reduce_max(np.array([1e300, -1e300]), 0)),
            "onnx": float(onnx.reduce_max(np.array([-1e300, -2e300]), [0], keepdims=0)),
            "seg": np.asarray(ov.segment_max(d6, np.array([0, 0, 1, 1, 2, 2**32 + 1]), 4,
                                             fill_mode="ZERO")).tolist(),
            "pool": int(ov.max_pool(np.full((1, 1, 2, 2), -2**40), kernel=2,
                                    strides=1)[0, 0, 0, 0]),
            # traced ids cannot be checked: out-of-range ones are dropped, never wrapped
            "traced": np.asarray(jax.jit(
                lambda d, i: ov.segment_max(d, i, 4, fill_mode="ZERO"))(
                    d6, np.array([0, 0, 1, 1, -2**32 + 1, 2**32 + 2]))).tolist(),
        }
        print(json.dumps(out))
    """, env_x64=True)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out == {"int": 2**40 + 5, "f64": 1e300, "onnx": -1e300, "seg": [1.0, 3.0, 4.0, 0.0],
                   "pool": -2**40, "traced": [1.0, 3.0, 0.0, 0.0]}


# --------------------------------------------------------------------------------------------
# Strides beyond the input: lowered to an equivalent stride, same values and gradients
# --------------------------------------------------------------------------------------------

def test_large_strides_give_the_spec_windows():
    rng = np.random.default_rng(7)
    for _ in range(12):
        nsp = int(rng.integers(1, 3))
        shape = tuple(int(d) for d in rng.integers(1, 6, nsp))
        x = rng.permutation(np.prod(shape) * 2).astype(np.float32).reshape((1, 2, *shape)) - 7
        pb = [int(p) for p in rng.integers(0, 3, nsp)]
        pe = [int(p) for p in rng.integers(0, 3, nsp)]
        k = [int(rng.integers(1, d + a + b + 1)) for d, a, b in zip(shape, pb, pe, strict=True)]
        s = [int(rng.choice([rng.integers(1, 4), rng.integers(d + a + b - kk, d + a + b + 4),
                             2**40]))
             for d, a, b, kk in zip(shape, pb, pe, k, strict=True)]
        s = [max(v, 1) for v in s]
        ceil = bool(rng.integers(2))
        rounding = "ceil" if ceil else "floor"
        attrs = dict(kernel=k, strides=s, pads_begin=pb, pads_end=pe, rounding_type=rounding)
        want = max_pool_1(x, **attrs)  # the windows the spec defines with the given stride
        got = ov.max_pool(x, **attrs)
        assert_same(got, want, f"{shape} k{k} s{s} {pb} {pe} {ceil}")
        # jitted: one program per case (eager, the gradient ran op by op, 1.6x the CPU time)
        got_grad = jax.jit(jax.grad(lambda v, attrs=attrs: ov.max_pool(v, **attrs).sum()))(x)
        np.testing.assert_array_equal(got_grad, max_pool_1_grad(x, np.ones(want.shape), **attrs))


def test_data_given_as_a_list_of_traced_values():
    """Lists holding tracers are stacked by JAX (their values cannot be checked)."""
    assert jax.jit(lambda a, b: ov.reduce_max([a, b], 0))(1.0, 2.0) == 2.0
    assert jax.jit(lambda a, b: onnx.reduce_max([a, b], keepdims=0))(1.0, 2.0) == 2.0
    ids = jax.jit(lambda d, i: ov.segment_max(d, [i, i, i + 1], 2, fill_mode="ZERO"))(
        np.array([1.0, 3.0, 2.0], np.float32), 0)
    np.testing.assert_array_equal(ids, [3.0, 2.0])


def test_ragged_or_foreign_data_is_a_type_error():
    for data in ([[1.0], [2.0, 3.0]], np.array([1.0], np.longdouble), "abc", {"a": 1}):
        for call in (partial(ov.reduce_max, data, 0), partial(onnx.reduce_max, data),
                     partial(ov.max_pool, data, kernel=1, strides=1),
                     partial(ov.segment_max, data, [0], fill_mode="ZERO")):
            with pytest.raises(TypeError, match=r"^(ReduceMax-1|ONNX ReduceMax|MaxPool-1|"
                                                r"SegmentMax-16): `data`"):
                call()


# --------------------------------------------------------------------------------------------
# ONNX ArgMax / TopK and OpenVINO TopK: version and dtype gates (docs/semantics.md §6.1)
# --------------------------------------------------------------------------------------------

def test_arg_max_top_k_fuzz_covers_every_argument():
    for face, fn in {"onnx.arg_max": onnx.arg_max, "onnx.top_k": onnx.top_k,
                     "ov.top_k": ov.top_k}.items():
        bad = CALLS[face][3]
        for name in inspect.signature(fn).parameters:
            assert name in bad, (face, name)


@pytest.mark.parametrize("call,error,match", [
    # a dtype the version forbids
    (lambda: onnx.arg_max(F32_2D.astype(jax.numpy.bfloat16), opset=12), TypeError, "ArgMax-12"),
    (lambda: onnx.top_k(F32_2D.astype(np.int32), 1, opset=10), TypeError, "TopK-10"),
    (lambda: onnx.top_k(F32_2D.astype(jax.numpy.bfloat16), 1, opset=23), TypeError, "TopK-11"),
    (lambda: onnx.arg_max(BOOL_2D), TypeError, "bool"),
    (lambda: onnx.top_k(BOOL_2D, 1), TypeError, "bool"),
    (lambda: ov.top_k(BOOL_2D, 1, axis=0, mode="max", sort="value"), TypeError, "bool"),
    # an attribute the version lacks
    (lambda: onnx.arg_max(F32_2D, select_last_index=1, opset=11), ValueError, "opset 12"),
    (lambda: onnx.top_k(F32_2D, 1, largest=0, opset=10), ValueError, "opset 11"),
    (lambda: onnx.top_k(F32_2D, 1, sorted=0, opset=1), ValueError, "opset 11"),
    (lambda: ov.top_k(F32_2D, 1, axis=0, mode="max", sort="value", stable=True, opset=3),
     ValueError, "TopK-11"),
    # K / k shape and range
    (lambda: onnx.top_k(F32_2D, np.array([1]), opset=1), ValueError, "rank"),
    (lambda: onnx.top_k(F32_2D, 0, opset=1), ValueError, r"\[1, 3\]"),
    (lambda: onnx.top_k(F32_2D, 4), ValueError, r"\[0, 3\]"),
    (lambda: onnx.top_k(F32_2D, -1), ValueError, r"\[0, 3\]"),
    (lambda: onnx.top_k(F32_2D, np.array([[1]])), ValueError, "rank"),
    (lambda: onnx.top_k(F32_2D, np.array([1, 1])), ValueError, "1-D"),
    (lambda: ov.top_k(F32_2D, 0, axis=1, mode="max", sort="value"), ValueError, r"\[1, 3\]"),
    (lambda: ov.top_k(F32_2D, 4, axis=1, mode="max", sort="value"), ValueError, r"\[1, 3\]"),
    # axis, rank 0, empty reduced axis
    (lambda: onnx.arg_max(F32_2D, axis=2), ValueError, "axis"),
    (lambda: onnx.top_k(F32_2D, 1, axis=-3), ValueError, "axis"),
    (lambda: ov.top_k(F32_2D, 1, axis=2, mode="max", sort="value"), ValueError, "axis"),
    (lambda: onnx.arg_max(np.float32(1.0)), ValueError, "rank"),
    (lambda: onnx.top_k(np.float32(1.0), 1), ValueError, "rank"),
    (lambda: ov.top_k(np.float32(1.0), 1, axis=0, mode="max", sort="value"), ValueError, "rank"),
    (lambda: onnx.arg_max(np.zeros((0, 3), np.float32)), ValueError, "empty"),
    # flags outside 0/1, string attributes
    (lambda: onnx.arg_max(F32_2D, keepdims=2), ValueError, "keepdims"),
    (lambda: onnx.arg_max(F32_2D, select_last_index=2), ValueError, "select_last_index"),
    (lambda: onnx.top_k(F32_2D, 1, largest=2), ValueError, "largest"),
    (lambda: onnx.top_k(F32_2D, 1, sorted=-1), ValueError, "sorted"),
    (lambda: ov.top_k(F32_2D, 1, axis=0, mode="max", sort="none", stable=True), ValueError,
     "stable"),
    (lambda: ov.top_k(F32_2D, 1, axis=0, mode="max", sort="value", index_element_type="u32"),
     ValueError, "index_element_type"),
    (lambda: ov.top_k(F32_2D, 1, axis=0, mode="largest", sort="value"), ValueError, "mode"),
    (lambda: ov.top_k(F32_2D, 1, axis=0, mode="max", sort="ascending"), ValueError, "sort"),
    # traced static arguments
    (lambda: jax.jit(lambda k: onnx.top_k(F32_2D, k))(1), TypeError, "static"),
    (lambda: jax.jit(lambda k: ov.top_k(F32_2D, k, axis=0, mode="max", sort="value"))(1),
     TypeError, "static"),
])
def test_arg_max_top_k_gates(call, error, match):
    with pytest.raises(error, match=match) as info:
        call()
    assert str(info.value).startswith(("ONNX ArgMax: ", "ONNX TopK: ", "TopK-1: ", "TopK-3: ",
                                       "TopK-11: ", "TopK: ")), str(info.value)


def test_arg_max_top_k_odd_but_valid_spellings():
    with jax.enable_x64(True):
        v, i = onnx.top_k(F32_2D, np.array([2], np.int32), axis=np.int64(-1))
        assert v.shape == (4, 2) and i.dtype == np.int64
        assert onnx.arg_max(F32_2D, axis=np.array(1), keepdims=True).shape == (4, 1)
    v, i = ov.top_k(F32_2D, np.array(2), axis=0, mode="MIN", sort="Index",
                    index_element_type=np.int32, stable=1)
    assert v.shape == (2, 3) and i.dtype == np.int32
