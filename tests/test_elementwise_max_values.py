"""ONNX Max (1, 6, 8, 12, 13) and OpenVINO Maximum-1 (docs/semantics.md §7.3-§7.4) against the NumPy
scalar oracles in max_oracle.py and the bad-input contract (the ONNX node cases are in
tests/test_onnx_node_cases.py).

Zero signs are compared bit for bit (``assert_same`` alone treats ``-0.0 == +0.0``).
"""

from __future__ import annotations

import itertools

import jax
import max_cases as mc
import numpy as np
import pytest
from helpers import assert_same, is_float, x64_for
from jit_batch import jit_each
from max_oracle import onnx_max, select_max

from jaxmax import onnx as jonnx
from jaxmax import openvino as ov

ONNX_DTYPES = {1: mc.FLOATS, 6: mc.FLOATS, 8: mc.FLOATS, 12: mc.FLOATS + mc.INTEGERS,
               13: mc.ALL}


def assert_exact(actual, expected, context=""):
    """`assert_same`, and the sign of every zero (and of every other non-NaN value)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert_same(actual, expected, context)
    if is_float(expected.dtype):
        keep = ~np.isnan(expected.astype(np.float64))
        np.testing.assert_array_equal(np.signbit(actual.astype(np.float64))[keep],
                                      np.signbit(expected.astype(np.float64))[keep],
                                      err_msg=f"{context}: zero signs")


# --------------------------------------------------------------------------------------------
# Every ordered pair of NaN, +-inf, +-0 and small values, at several lengths, eager and jitted
# --------------------------------------------------------------------------------------------

SPECIAL_DTYPES = mc.FLOATS + [mc.BF16]


@pytest.mark.parametrize("dtype", SPECIAL_DTYPES, ids=str)
def test_every_special_pair(dtype):
    # every length and face jitted in one program (one compile, tests/jit_batch.py); the eager
    # path (the same lowering after concrete validation) at the longest length
    a, b = mc.every_zero_and_nan_position(dtype)
    lengths = (1, 2, 3, 4, 7, 8, 16, 17, 81)  # vector widths and tails
    faces = (("onnx", jonnx.max, onnx_max), ("ov", ov.maximum, select_max))
    with x64_for(dtype):
        cases = [(face, fn, oracle, n) for n in lengths for face, fn, oracle in faces]
        jitted = jit_each([(fn, (a[:n], b[:n])) for _, fn, _, n in cases])
        for (face, fn, oracle, n), got in zip(cases, jitted, strict=True):
            x, y = a[:n], b[:n]
            want = oracle(x, y)
            assert_exact(got, want, f"{face} jit {dtype} n={n}")
            if n == lengths[-1]:
                assert_exact(fn(x, y), want, f"{face} eager {dtype} n={n}")
        # (81,) against each value as a broadcast (1,) and as a scalar, in both orders
        for s in (b[i:i + 1] for i in range(len(b))):
            assert_exact(jonnx.max(a, s), onnx_max(a, s), f"onnx bcast {dtype}")
            assert_exact(jonnx.max(s[0], a), onnx_max(s[0], a), f"onnx bcast {dtype}")
            assert_exact(ov.maximum(a, s), select_max(a, s), f"ov bcast {dtype}")
            assert_exact(ov.maximum(s[0], a), select_max(s[0], a), f"ov bcast {dtype}")


def test_semantics_table_row():
    """docs/semantics.md §7.3's table, both faces."""
    a = np.array([np.nan, 1, np.nan, -0.0, 0.0, -np.inf], np.float32)
    b = np.array([1, np.nan, np.nan, 0.0, -0.0, np.nan], np.float32)
    nan = np.nan
    assert_exact(jonnx.max(a, b), np.array([nan, nan, nan, 0.0, 0.0, nan], np.float32))
    assert_exact(ov.maximum(a, b), np.array([nan, 1, nan, -0.0, 0.0, -np.inf], np.float32))


# --------------------------------------------------------------------------------------------
# Seeded configurations against the oracles
# --------------------------------------------------------------------------------------------

TRIPLES = [((2, 3), (3,), (1, 1)), ((4,), (4,), (4,)), ((), (2, 2), (2, 1)),
           ((3, 1, 2), (1, 4, 1), (2,))]


def _onnx_shape_sets(version):
    if version < 8:
        return [((5,), (5,)), ((2, 3), (2, 3)), ((), ()), ((4,), (4,), (4,)), ((3,),)]
    return [pair for pair in mc.BROADCAST_PAIRS] + TRIPLES + [((3,),), ((2, 1),)]


# opsets 6 and 12 (same rules as 1 and 8, 8 and 13 on their dtypes) are run against
# onnxruntime and onnx.reference in test_elementwise_max_runtimes.py; their gates are tested below
@pytest.mark.parametrize("opset,dtype", [(v, d) for v, ds in ONNX_DTYPES.items() for d in ds
                                         if v in (1, 8, 13)], ids=str)
def test_onnx_max_against_oracle(opset, dtype):
    # every shape set jitted in one program (one compile, tests/jit_batch.py); the eager path
    # is test_every_special_pair's and the bad-input tests'
    rng = np.random.default_rng(opset * 1000 + mc.ALL.index(dtype))
    with x64_for(dtype):
        cases = [(shapes, [mc.values(rng, dtype, s) for s in shapes])
                 for shapes in _onnx_shape_sets(opset)]
        got = jit_each([(lambda *xs: jonnx.max(*xs, opset=opset), xs) for _, xs in cases])
        for (shapes, xs), y in zip(cases, got, strict=True):
            assert_exact(y, onnx_max(*xs), f"{opset} {dtype} {shapes}")


@pytest.mark.parametrize("dtype", mc.ALL, ids=str)
@pytest.mark.parametrize("rule", ["numpy", "none", "pdpd"])
def test_ov_maximum_against_oracle(dtype, rule):
    # every shape pair jitted in one program (one compile, tests/jit_batch.py)
    rng = np.random.default_rng(mc.ALL.index(dtype) + 100 * len(rule))
    pairs = {"numpy": mc.BROADCAST_PAIRS, "pdpd": mc.PDPD_PAIRS,
             "none": [(s, s) for s, _ in mc.BROADCAST_PAIRS]}[rule]
    with x64_for(dtype):
        cases = [(sa, sb, mc.values(rng, dtype, sa), mc.values(rng, dtype, sb))
                 for sa, sb in pairs]
        got = jit_each([(lambda a, b: ov.maximum(a, b, auto_broadcast=rule.upper()), (a, b))
                        for _, _, a, b in cases])
        for (sa, sb, a, b), y in zip(cases, got, strict=True):
            assert_exact(y, select_max(a, b), f"{rule} {dtype} {sa} {sb}")


def test_integers_are_exact_at_the_extremes():
    with jax.enable_x64(True):
        for dtype in mc.INTEGERS:
            info = np.iinfo(dtype)
            a = np.array([info.min, info.max, info.max - 1, info.min], dtype)
            b = np.array([info.max, info.min, info.max, info.min + 1], dtype)
            assert_exact(jonnx.max(a, b), np.maximum(a, b), str(dtype))
            assert_exact(ov.maximum(a, b), np.maximum(a, b), str(dtype))


# --------------------------------------------------------------------------------------------
# Bad input: each raises before anything is computed, with the operator's prefix
# --------------------------------------------------------------------------------------------

F32 = np.ones(3, np.float32)


@pytest.mark.parametrize("call,error,words", [
    (lambda: jonnx.max(), ValueError, "`inputs`"),
    (lambda: jonnx.max(F32, opset=0), ValueError, "`opset`"),
    (lambda: jonnx.max(F32, opset=2.0), TypeError, "`opset`"),
    (lambda: jonnx.max(F32, np.ones(2, np.float32)), ValueError, "(3,), (2,)"),
    (lambda: jonnx.max(F32, np.ones((3, 1), np.float32), opset=6), ValueError, "opset 8"),
    (lambda: jonnx.max(F32, np.ones(1, np.float32), opset=1), ValueError, "one shape"),
    (lambda: jonnx.max(np.ones(3, np.int32), opset=11), TypeError, "int32"),
    (lambda: jonnx.max(np.ones(3, mc.BF16), opset=12), TypeError, "bfloat16"),
    (lambda: jonnx.max(np.ones(3, bool)), TypeError, "bool"),
    (lambda: jonnx.max(F32, np.ones(3, np.float16)), TypeError, "same dtype"),
    (lambda: jonnx.max(F32, [[1, 2], [3]]), TypeError, "`inputs[1]`"),
    (lambda: jonnx.max(F32, "abc"), TypeError, "`inputs[1]`"),
    (lambda: jonnx.max(np.array([2**40], np.int64)), ValueError, "`inputs[0]`"),
    (lambda: ov.maximum(F32, F32, opset=0), ValueError, "`opset`"),
    (lambda: ov.maximum(F32, F32, auto_broadcast="bidirectional"), ValueError,
     "`auto_broadcast`"),
    (lambda: ov.maximum(F32, F32, auto_broadcast=None), TypeError, "`auto_broadcast`"),
    (lambda: ov.maximum(F32, np.ones(1, np.float32), auto_broadcast="none"), ValueError,
     "'none'"),
    (lambda: ov.maximum(F32, np.ones(2, np.float32)), ValueError, "do not broadcast"),
    (lambda: ov.maximum(np.ones(3, bool), np.ones(3, bool)), TypeError, "`a`"),
    (lambda: ov.maximum(F32, np.ones(3, bool)), TypeError, "`b`"),
    (lambda: ov.maximum(F32, np.ones(3, np.int32)), TypeError, "element type"),
    (lambda: ov.maximum(np.ones(3, np.complex64), F32), TypeError, "`a`"),
    (lambda: ov.maximum(np.array([2**40]), np.array([1])), ValueError, "`a`"),
    (lambda: ov.maximum(F32, [[1.0], [2.0, 3.0]]), TypeError, "`b`"),
] + [
    (lambda sa=sa, sb=sb: ov.maximum(np.ones(sa, np.float32), np.ones(sb, np.float32),
                                     auto_broadcast="PdPd"), ValueError, "'pdpd'")
    for sa, sb in mc.PDPD_BAD
])
def test_bad_input(call, error, words):
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert message.startswith(("ONNX Max: ", "Maximum-1: ")), message
    assert words in message, message


def test_traced_opset_raises_type_error():
    with pytest.raises(TypeError, match="^ONNX Max: .*`opset`"):
        jax.jit(lambda o: jonnx.max(F32, opset=o))(13)
    with pytest.raises(TypeError, match="^Maximum-1: .*`opset`"):
        jax.jit(lambda o: ov.maximum(F32, F32, opset=o))(1)


def test_every_opset_selects_its_version():
    """Ints are refused below 12 and bf16 below 13, at every opset in between (as
    onnxruntime's graph check: INVALID_GRAPH for int32 at 6 and 8, bf16 at 12)."""
    for opset in range(1, 25):
        int_ok = opset >= 12
        bf_ok = opset >= 13
        for data, ok in ((np.ones(2, np.int32), int_ok), (np.ones(2, mc.BF16), bf_ok)):
            if ok:
                jonnx.max(data, data, opset=opset)
            else:
                with pytest.raises(TypeError, match="^ONNX Max: "):
                    jonnx.max(data, data, opset=opset)
        broadcast_ok = opset >= 8
        if broadcast_ok:
            jonnx.max(F32, F32[:1], opset=opset)
        else:
            with pytest.raises(ValueError, match="^ONNX Max: "):
                jonnx.max(F32, F32[:1], opset=opset)


def test_signatures():
    for shapes in itertools.product([(2,), (1,)], repeat=3):
        xs = [np.zeros(s, np.float32) for s in shapes]
        assert jonnx.max(*xs).shape == np.broadcast_shapes(*shapes)
    assert ov.maximum(F32, F32, auto_broadcast="Explicit").shape == (3,)
