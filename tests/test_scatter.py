"""Max-scatter, the hard cases of ``docs/semantics.md §8.8``: every S/O/P value case eagerly,
under ``jit`` with traced data, indices and updates, and under ``vmap`` over a leading batch,
against the contract's value and the sequential-fold oracle, bit for bit (zero signs
included); the traced-index cases; the gradient cases G1-G8; and the errors of §8.6."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scatter_oracle
from helpers import is_float
from scatter_cases import ORACLE, VALUE_CASES, X64_CASES, call

from jaxmax import onnx
from jaxmax import openvino as ov


def assert_bits(actual, expected, context=""):
    """Same dtype, shape and value; NaN equals NaN (any payload); zero signs must match."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{context}: {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{context}: {actual.shape} != {expected.shape}"
    if is_float(expected.dtype):
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(e), err_msg=context)
        keep = ~np.isnan(e)
        np.testing.assert_array_equal(a[keep], e[keep], err_msg=context)
        np.testing.assert_array_equal(np.signbit(a[keep]), np.signbit(e[keep]), err_msg=context)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=context)


def oracle(face, data, indices, updates, kw):
    kind, step = ORACLE[face]
    if kind == "elements":
        return scatter_oracle.scatter_elements(data, indices, updates, kw.get("axis", 0), step,
                                               kw.get("use_init_val", True))
    return scatter_oracle.scatter_nd(data, indices, updates, step)


IDS = [c[0] for c in VALUE_CASES]


def _reversed_case(case):
    """The second batch member of the vmap test: the case with updates reversed along the first
    axis, and its oracle value."""
    _, face, kw, data, indices, updates, _ = case
    updates2 = updates[::-1].copy()
    return updates2, oracle(face, data, indices, updates2, kw)


@pytest.fixture(scope="module")
def value_results():
    """Every value case eagerly-checked (concrete indices, closed over), jitted with traced
    indices and under vmap, all in one jitted program: one call alone was one compile, and
    the compiles were these tests' run time. Each call has parameters of its own. Returns
    {name: (concrete, traced, vmapped)}."""
    def run(args):
        out = {}
        for (name, face, kw, _, indices, _, _), (data, traced, updates, batch) in zip(
                VALUE_CASES, args, strict=True):
            out[name] = (call(face, data, indices, updates, **dict(kw)),
                         call(face, data, traced, updates, **dict(kw)),
                         jax.vmap(lambda d, i, u, face=face, kw=kw: call(face, d, i, u,
                                                                          **dict(kw)))(*batch))
        return out

    args = []
    for case in VALUE_CASES:
        _, _, _, data, indices, updates, _ = case
        updates2, _ = _reversed_case(case)
        batch = (np.stack([data, data]), np.stack([indices, indices]).astype(np.int32),
                 np.stack([updates, updates2]))
        args.append((data, indices.astype(np.int32), updates, batch))
    return jax.jit(run)(args)


@pytest.mark.parametrize("case", VALUE_CASES, ids=IDS)
def test_value_case_eager_and_oracle(case, value_results):
    name, face, kw, data, indices, updates, expected = case
    assert_bits(oracle(face, data, indices, updates, kw), expected, f"{name} oracle")
    assert_bits(value_results[name][0], expected, name)


@pytest.mark.parametrize("case", VALUE_CASES, ids=IDS)
def test_value_case_jit_traced(case, value_results):
    name, face, kw, data, indices, updates, expected = case
    assert_bits(value_results[name][1], expected, name)


@pytest.mark.parametrize("case", VALUE_CASES, ids=IDS)
def test_value_case_vmap(case, value_results):
    name, face, kw, data, indices, updates, expected = case
    # the second batch member is the case with updates reversed along the first axis
    _, expected2 = _reversed_case(case)
    out = value_results[name][2]
    assert_bits(out[0], expected, name)
    assert_bits(out[1], expected2, name + " reversed")


@pytest.mark.parametrize("case", X64_CASES, ids=[c[0] for c in X64_CASES])
def test_int64_exact_with_x64_and_raises_without(case):
    name, face, kw, data, indices, updates, expected = case
    with jax.enable_x64(True):
        assert_bits(call(face, data, indices, updates, **dict(kw)), expected, name)
        assert_bits(jax.jit(lambda d, i, u: call(face, d, i, u))(data, indices, updates),
                    expected, name)
    with pytest.raises(ValueError, match="int64 value 9007199254740993"):
        call(face, data, indices, updates, **dict(kw))


def test_s26_traced_out_of_range_indices_are_dropped():
    fn = jax.jit(lambda i: call("se", np.zeros(4, np.float32), i, np.array([9, 9, 3],
                                                                            np.float32)))
    assert_bits(fn(np.array([-5, 4, 1], np.int32)), np.array([0, 3, 0, 0], np.float32))
    for face in ("seu",):
        fn = jax.jit(lambda i, face=face: call(face, np.zeros(4, np.float32), i,
                                               np.array([9, 9, 3], np.float32)))
        assert_bits(fn(np.array([-5, 4, 1], np.int32)), np.array([0, 3, 0, 0], np.float32))


@pytest.mark.parametrize("face", ["snd", "sndu"])
def test_s30_traced_coordinate_out_of_range_drops_the_slice(face):
    fn = jax.jit(lambda i: call(face, np.zeros((3, 4), np.float32), i, np.array([1, 2],
                                                                                np.float32)))
    expected = np.zeros((3, 4), np.float32)
    expected[1, 1] = 2  # not aliased: [0, 5] would be flat offset 5 = (1, 1)
    assert_bits(fn(np.array([[0, 5], [1, 1]], np.int32)), expected)


def test_traced_uint32_index_beyond_int32_is_dropped_not_wrapped():
    fn = jax.jit(lambda i: call("seu", np.zeros(4, np.float32), i, np.array([9, 3],
                                                                            np.float32)))
    assert_bits(fn(np.array([2**32 - 1, 2], np.uint32)), np.array([0, 0, 3, 0], np.float32))


def grads(face, data, indices, updates, **kw):
    return jax.grad(lambda d, u: call(face, d, indices, u, **kw).sum(),
                    argnums=(0, 1))(data, updates)


GRAD_CASES = [
    ("G1", "se", {}, [2.0], np.array([0, 0]), [2.0, 2.0], [1 / 3], [1 / 3, 1 / 3]),
    ("G2", "se", {}, [-0.0], np.array([0, 0]), [0.0, -1.0], [0.5], [0.5, 0.0]),
    ("G3", "se", {}, [1.0], np.array([0, 0]), [np.nan, 2.0], [0.0], [1.0, 0.0]),
    ("G4", "seu", {}, [-1.0], np.array([0, 0, 0]), [0.0, -0.0, -5.0], [0.0], [0.0, 1.0, 0.0]),
    ("G5", "seu", {}, [2.0], np.array([0, 0]), [2.0, 2.0], [0.0], [0.0, 1.0]),
    ("G6", "seu", {"use_init_val": False}, [5.0, 7.0], np.array([0]), [3.0], [0.0, 1.0],
     [1.0]),
    ("G7", "sndu", {}, [2.0], np.array([[0], [0]]), [2.0, 2.0], [1.0], [0.0, 0.0]),
    ("G1nd", "snd", {}, [2.0], np.array([[0], [0]]), [2.0, 2.0], [1 / 3], [1 / 3, 1 / 3]),
    ("G3nd", "snd", {}, [np.nan], np.array([[0], [0]]), [np.nan, 2.0], [0.5], [0.5, 0.0]),
    ("G-seu-nan", "seu", {}, [1.0], np.array([0, 0]), [np.nan, np.nan], [0.0], [0.0, 1.0]),
    ("G-sndu-nan", "sndu", {}, [np.nan], np.array([[0], [0]]), [3.0, 4.0], [1.0], [0.0, 0.0]),
]


@pytest.fixture(scope="module")
def gradient_results():
    """Every gradient case with concrete indices (closed over, as an eager call has them) and
    with traced ones, in one jitted program (one case alone was one compile each way; each
    call has parameters of its own): {(name, traced): (d data, d updates)}."""
    def run(args):
        out = {}
        for (name, face, kw, _, indices, *_), (data, traced, updates) in zip(
                GRAD_CASES, args, strict=True):
            out[name, False] = grads(face, data, indices.astype(np.int32), updates, **kw)
            out[name, True] = grads(face, data, traced, updates, **kw)
        return out

    return jax.jit(run)([(np.asarray(data, np.float32), indices.astype(np.int32),
                          np.asarray(updates, np.float32))
                         for _, _, _, data, indices, updates, *_ in GRAD_CASES])


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
@pytest.mark.parametrize("jit", [False, True])
def test_gradient_cases(case, jit, gradient_results):
    name, face, kw, data, indices, updates, g_data, g_upd = case
    gd, gu = gradient_results[name, jit]
    np.testing.assert_allclose(np.asarray(gd), np.array(g_data, np.float32), rtol=1e-6,
                               err_msg=f"{name} jit={jit}")
    np.testing.assert_allclose(np.asarray(gu), np.array(g_upd, np.float32), rtol=1e-6,
                               err_msg=f"{name} jit={jit}")


@pytest.mark.parametrize("face", ["se", "seu"])
def test_g8_traced_dropped_index_gets_no_gradient(face):
    fn = jax.jit(jax.grad(lambda d, u, i: call(face, d, i, u).sum(), argnums=(0, 1)))
    gd, gu = fn(np.zeros(4, np.float32), np.ones(1, np.float32), np.array([4], np.int32))
    np.testing.assert_array_equal(gd, np.ones(4, np.float32))
    np.testing.assert_array_equal(gu, np.zeros(1, np.float32))


def test_gradient_under_vmap():
    def one(d, u):
        return jax.grad(lambda d, u: call("seu", d, np.array([0, 0]), u).sum(),
                        argnums=(0, 1))(d, u)
    gd, gu = jax.vmap(one)(np.array([[2.0], [5.0]], np.float32),
                           np.array([[2.0, 2.0], [1.0, 3.0]], np.float32))
    np.testing.assert_array_equal(gd, np.array([[0.0], [1.0]], np.float32))
    np.testing.assert_array_equal(gu, np.array([[0.0, 1.0], [0.0, 0.0]], np.float32))


def test_no_retrace_on_a_second_call():
    traces = []

    def f(d, i, u):
        traces.append(1)
        return call("seu", d, i, u)

    fn = jax.jit(f)
    args = (np.zeros((3, 2), np.float32), np.array([[0, 1], [2, 0]], np.int32),
            np.ones((2, 2), np.float32))
    fn(*args).block_until_ready()
    fn(args[0] + 1, args[1][::-1].copy(), args[2] * 2).block_until_ready()
    assert len(traces) == 1


F = np.zeros(4, np.float32)
ERRORS = [
    ("S11", lambda: call("se", np.zeros((2, 2), np.float32), np.array([[1, 0, 1]]),
                         np.array([[7, 8, 9]], np.float32)), ValueError,
     r"^ONNX ScatterElements: `indices` shape \(1, 3\) exceeds"),
    ("S11-jit", lambda: jax.jit(lambda i, u: call("se", np.zeros((2, 2), np.float32), i, u))(
        np.array([[1, 0, 1]]), np.array([[7, 8, 9]], np.float32)), ValueError, "exceeds"),
    ("S12-4", lambda: call("se", F, np.array([4]), np.ones(1, np.float32)), ValueError,
     r"holds 4 at position \[0\], outside \[-4, 3\] for axis 0 of size 4"),
    ("S12-5", lambda: call("se", F, np.array([0, -5]), np.ones(2, np.float32)), ValueError,
     r"holds -5 at position \[1\]"),
    ("S18-16", lambda: onnx.scatter_elements(F, np.array([0]), np.ones(1, np.float32),
                                             reduction="max", opset=16), ValueError,
     "needs opset 18"),
    ("S18-maxx", lambda: onnx.scatter_elements(F, np.array([0]), np.ones(1, np.float32),
                                               reduction="maxx"), ValueError, "'maxx'"),
    ("S18-case", lambda: onnx.scatter_nd(F, np.array([[0]]), np.ones(1, np.float32),
                                         reduction="MAX"), ValueError, "exact spelling"),
    ("S22", lambda: call("snd", np.zeros((3, 4), np.float32), np.array([[0, 5]]),
                         np.ones(1, np.float32)), ValueError,
     r"holds 5 at position \[0, 1\], outside \[-4, 3\] for axis 1"),
    ("S27", lambda: onnx.scatter_elements(F, np.array([0]), np.ones(1, np.float32),
                                          reduction="add"), NotImplementedError, "'add'"),
    ("S27-none", lambda: onnx.scatter_nd(F, np.array([[0]]), np.ones(1, np.float32)),
     NotImplementedError, "'none'"),
    ("S28", lambda: call("se", np.zeros(2, np.complex64), np.array([0]),
                         np.ones(1, np.complex64)), TypeError, "complex64"),
    ("S29", lambda: jax.jit(lambda a: call("se", F, np.array([0]), np.ones(1, np.float32),
                                           axis=a))(0), TypeError, "`axis` must be static"),
    ("O11", lambda: call("seu", np.zeros((2, 2), np.float32), np.array([[1, 0, 1]]),
                         np.array([[7, 8, 9]], np.float32)), ValueError,
     r"^ScatterElementsUpdate-12: `indices` shape"),
    ("O12", lambda: call("seu", F, np.array([-5]), np.ones(1, np.float32)), ValueError,
     r"^ScatterElementsUpdate-12: `indices` holds -5"),
    ("O16-11", lambda: ov.scatter_elements_update(F, np.array([0]), np.ones(1, np.float32), 0,
                                                  reduction="max", opset=11), ValueError,
     r"^ScatterElementsUpdate-3: "),
    ("O16-2", lambda: ov.scatter_elements_update(F, np.array([0]), np.ones(1, np.float32), 0,
                                                 reduction="max", opset=2), ValueError,
     r"^ScatterElementsUpdate: "),
    ("O-use-init-3", lambda: ov.scatter_elements_update(
        F, np.array([0]), np.ones(1, np.float32), 0, reduction="none", use_init_val=False,
        opset=11), ValueError, "use_init_val"),
    ("O-sum", lambda: ov.scatter_elements_update(F, np.array([0]), np.ones(1, np.float32), 0,
                                                 reduction="Sum"), NotImplementedError, "'Sum'"),
    ("O-axis-array", lambda: ov.scatter_elements_update(
        F, np.array([0]), np.ones(1, np.float32), np.array([0, 1]), reduction="max"),
     ValueError, "one-element"),
    ("P7", lambda: ov.scatter_nd_update(F, np.array([[0]]), np.ones(1, np.float32),
                                        reduction="max", opset=14), ValueError,
     r"^ScatterNDUpdate-3: "),
    ("P-opset3", lambda: ov.scatter_nd_update(F, np.array([[0]]), np.ones(1, np.float32),
                                              reduction="max", opset=3), ValueError,
     r"^ScatterNDUpdate: "),
    ("P-sub", lambda: ov.scatter_nd_update(F, np.array([[0]]), np.ones(1, np.float32),
                                           reduction="sub"), NotImplementedError, "'sub'"),
    ("dtype-mismatch", lambda: call("se", F, np.array([0]), np.ones(1, np.float64)),
     TypeError, "one dtype"),
    ("float-indices", lambda: call("se", F, np.array([0.0]), np.ones(1, np.float32)),
     TypeError, "`indices` must be int32 or int64"),
    ("uint-indices-onnx", lambda: call("se", F, np.array([0], np.uint8),
                                       np.ones(1, np.float32)), TypeError, "`indices`"),
    ("rank0", lambda: call("se", np.float32(1), np.array(0), np.float32(1)), ValueError,
     "rank >= 1"),
    ("rank-differs", lambda: call("se", F, np.array([[0]]), np.ones((1, 1), np.float32)),
     ValueError, "data's rank"),
    ("updates-shape", lambda: call("se", F, np.array([0, 1]), np.ones(1, np.float32)),
     ValueError, "`updates` must have the shape of `indices`"),
    ("axis-range", lambda: call("se", F, np.array([0]), np.ones(1, np.float32), axis=1),
     ValueError, r"`axis` 1 out of range \[-1, 0\]"),
    ("nd-k", lambda: call("snd", F, np.array([[0, 0]]), np.ones(1, np.float32)), ValueError,
     "exceeds the rank"),
    ("nd-updates", lambda: call("snd", np.zeros((2, 3), np.float32), np.array([[0]]),
                                np.ones(2, np.float32)), ValueError, r"\(1, 3\)"),
    ("nd-rank0-indices", lambda: call("snd", F, np.array(0), np.ones(1, np.float32)),
     ValueError, "`indices` must have rank >= 1"),
    ("bf16-opset11", lambda: onnx.scatter_elements(
        np.zeros(2, jnp.bfloat16), np.array([0]), np.ones(1, jnp.bfloat16), reduction="none",
        opset=11), NotImplementedError, "'none'"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(case):
    name, fn, exc, pattern = case
    with pytest.raises(exc, match=pattern):
        fn()


def test_reduction_must_be_a_string():
    with pytest.raises(TypeError, match="^ONNX ScatterND: `reduction` must be a string"):
        onnx.scatter_nd(F, np.array([[0]]), np.ones(1, np.float32), reduction=None)
    with pytest.raises(TypeError, match="^ScatterNDUpdate-15: `reduction` must be a string"):
        ov.scatter_nd_update(F, np.array([[0]]), np.ones(1, np.float32), reduction=3)


def test_traced_use_init_val_and_opset_raise_type_error():
    with pytest.raises(TypeError, match="`use_init_val`"):
        jax.jit(lambda b: ov.scatter_elements_update(F, np.array([0]), np.ones(1, np.float32),
                                                     0, reduction="max", use_init_val=b))(True)
    with pytest.raises(TypeError, match="`opset`"):
        jax.jit(lambda o: onnx.scatter_nd(F, np.array([[0]]), np.ones(1, np.float32),
                                          reduction="max", opset=o))(18)


def test_ov_scalar_update_may_be_one_element():
    out = ov.scatter_nd_update(np.zeros((2, 2), np.float32), np.array([0, 1]),
                               np.array([5.0], np.float32), reduction="max")
    assert_bits(out, np.array([[0, 5], [0, 0]], np.float32))
