"""Both forms of the pooling lowerings, each against the NumPy oracles (tests/pool_oracle.py,
tests/adaptive_unpool_oracle.py): the compact form (one variadic ``reduce_window``, chosen for
large windows and small inputs) and the unrolled taps (chosen for large inputs), forced here with
``pool_compact.FORCE`` on the same small inputs, so each form meets NaN, ``-inf``, lowest(T),
ties and both zero signs. Values are compared exactly, zero signs included; indices exactly;
MaxPool-1 gradients against the hand-computed cotangent.
"""

from __future__ import annotations

import functools
import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from adaptive_unpool_oracle import adaptive_max_pool as adaptive_oracle
from helpers import assert_same, is_float
from jit_batch import jit_each
from pool_oracle import max_pool_1_grad
from pool_oracle import onnx as onnx_oracle
from pool_oracle import openvino as openvino_oracle

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering.pooling import compact as pool_compact

#: The (FORCE, PAIRS) that the programs in JAX's caches were traced under, None before any.
_TRACED_UNDER: list = [None]


@pytest.fixture(autouse=True, scope="module")
def _clear_caches_around_the_module():
    """The forms are chosen while tracing: the programs compiled under a forced form leave with
    the module (the next module finds empty caches)."""
    _TRACED_UNDER[0] = None
    _BATCHES.clear()
    jax.clear_caches()
    yield
    jax.clear_caches()


def _force(monkeypatch, force, pairs):
    """The form forced for the test (`pool_compact.FORCE`, `pool_compact.PAIRS`), JAX's caches
    cleared when it differs from the one the cached programs were traced under (pytest runs the
    tests of one form together: once per form, not once per test)."""
    monkeypatch.setattr(pool_compact, "FORCE", force)
    monkeypatch.setattr(pool_compact, "PAIRS", pairs)
    if _TRACED_UNDER[0] != (force, pairs):
        jax.clear_caches()
        _TRACED_UNDER[0] = (force, pairs)


@pytest.fixture(params=[True, False], ids=["compact", "unrolled"])
def form(request, monkeypatch):
    _force(monkeypatch, request.param, None)
    return request.param


@pytest.fixture(params=["pairs", "triples", "unrolled"])
def pool_form(request, monkeypatch):
    """MaxPool's forms: the compact form's two reductions (`pool_compact.winners`: pairs on
    small inputs with small windows, as these are; triples otherwise), and the unrolled taps."""
    _force(monkeypatch, request.param != "unrolled", request.param == "pairs")
    return request.param


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.standard_normal(shape) * 2)  # ties
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        x = np.where(rng.random(shape) < 0.2, info.min, np.clip(x * 20, info.min, info.max))
        return x.astype(dtype)
    r = rng.random(shape)
    x = np.where(r < 0.1, np.nan, x)
    x = np.where((r >= 0.1) & (r < 0.2), -np.inf, x)
    x = np.where((r >= 0.2) & (r < 0.27), float(jnp.finfo(dtype).min), x)
    x = np.where((r >= 0.27) & (r < 0.4), -0.0, x)
    x = np.where((r >= 0.4) & (r < 0.5), 0.0, x)
    return x.astype(dtype)


def _same_bits(actual, expected, context):
    assert_same(actual, expected, context)
    if is_float(np.asarray(expected).dtype):
        a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
        keep = ~np.isnan(e)
        np.testing.assert_array_equal(np.signbit(a[keep]), np.signbit(e[keep]), err_msg=context)


# (shape, kernel, strides, pads_begin, pads_end, dilations, ceil)
GEOMETRIES = [
    ((2, 3, 7, 9), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), False),
    ((2, 3, 7, 9), (2, 4), (3, 2), (0, 2), (1, 0), (1, 1), True),
    ((1, 2, 8, 8), (3, 3), (1, 1), (1, 1), (1, 1), (2, 2), False),
    ((1, 2, 11), (4,), (2,), (3,), (3,), (1,), True),
    ((1, 2, 11), (2,), (3,), (2,), (2,), (3,), False),
    ((1, 2, 5, 6, 5), (2, 3, 2), (2, 1, 2), (1, 1, 0), (0, 2, 1), (1, 1, 2), True),
    ((1, 2, 3, 4, 3), (2, 4, 3), (4, 4, 2), (0, 0, 2), (3, 0, 0), (1, 1, 1), True),
]
DTYPES = [np.float32, np.float16, jnp.bfloat16, np.int8, np.uint8]


# Each test below checks one case of one form, as before; the cases of one test function and
# one form are computed together, by one program compiled with the fast options their eager
# calls compiled with (tests/jit_batch.py: each call traced as its eager call is, so in the
# form its eager call reaches), the first time a test of that form asks (`_batched`). A batch
# that fails to compute leaves each of its tests to call its case alone, as it did before.
_BATCHES: dict = {}


def _batched(test, form, call, cases, case):
    """The result of `case` of `cases` (every case of `test`; ``call(*case)`` is its
    ``(fn, args)``), computed with the others under the current `form`, or alone (its eager
    call) when the batch failed."""
    key = (test, form)
    if key not in _BATCHES:
        try:
            _BATCHES[key] = jit_each([call(*c) for c in cases], as_eager=True)
        except Exception:  # noqa: BLE001 (each test then computes its case alone and says why)
            _BATCHES[key] = None
    if _BATCHES[key] is None:
        fn, args = call(*case)
        return fn(*args)
    return _BATCHES[key][cases.index(case)]


def _ov8_call(geometry, dtype):
    shape, k, s, pb, pe, d, ceil = geometry
    x = _data(shape, dtype, len(shape) + sum(k))
    axis = 2 if len(shape) == 4 else 0

    def pool(v):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ov.max_pool(v, kernel=k, strides=s, pads_begin=pb, pads_end=pe,
                               dilations=d, rounding_type="ceil" if ceil else "floor",
                               opset=8, axis=axis, index_element_type="i32")

    return pool, (x,)


@functools.cache
def _ov8_oracle(geometry, dtype):
    shape, k, s, pb, pe, d, ceil = geometry
    (x,) = _ov8_call(geometry, dtype)[1]
    return openvino_oracle(x, k, s, list(zip(pb, pe, strict=True)), list(d),
                           "ceil" if ceil else "floor", axis=2 if len(shape) == 4 else 0)


POOL_CASES = [(g, d) for g in GEOMETRIES for d in DTYPES]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_openvino_max_pool_8_both_forms(pool_form, geometry, dtype):
    values, indices = _batched("ov8", pool_form, _ov8_call, POOL_CASES, (geometry, dtype))
    want_v, want_i = _ov8_oracle(geometry, dtype)
    _same_bits(values, want_v, f"values, form={pool_form}, {geometry} {dtype}")
    assert_same(indices, want_i.astype(np.int32),
                f"indices, form={pool_form}, {geometry} {dtype}")


def _onnx_call(geometry, dtype):
    shape, k, s, pb, pe, d, ceil = geometry
    x = _data(shape, dtype, len(shape) + sum(k) + 1)

    def pool(v):
        return onnx.max_pool(v, kernel_shape=k, strides=s, pads=pb + pe, dilations=d,
                             ceil_mode=int(ceil), storage_order=int(len(shape) == 5),
                             return_indices=True)

    return pool, (x,)


@functools.cache
def _onnx_oracle(geometry, dtype):
    shape, k, s, pb, pe, d, ceil = geometry
    (x,) = _onnx_call(geometry, dtype)[1]
    return onnx_oracle(x, k, s, pb + pe, list(d), int(ceil), storage_order=int(len(shape) == 5))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_onnx_max_pool_both_forms(pool_form, geometry, dtype):
    y, indices = _batched("onnx", pool_form, _onnx_call, POOL_CASES, (geometry, dtype))
    want_y, want_i = _onnx_oracle(geometry, dtype)
    _same_bits(y, want_y, f"Y, form={pool_form}, {geometry} {dtype}")
    assert_same(indices, want_i.astype(indices.dtype),
                f"Indices, form={pool_form}, {geometry} {dtype}")


GRADIENT_CASES = [(g, opset) for g in GEOMETRIES if set(g[5]) == {1} for opset in (1, 8)]


def _gradient_data(geometry, opset):
    shape, k, s, pb, pe, _, ceil = geometry
    x = _data(shape, np.float32, 7)
    x = np.where(np.isnan(x), 0.0, x).astype(np.float32) + np.float32(0.0)  # no -0.0 ties
    rounding = "ceil" if ceil else "floor"

    def pooled(v):
        out = ov.max_pool(v, kernel=k, strides=s, pads_begin=pb, pads_end=pe,
                          rounding_type=rounding, opset=opset)
        return out[0] if opset == 8 else out

    out = jax.eval_shape(pooled, jax.ShapeDtypeStruct(x.shape, x.dtype))
    ct = np.arange(1, out.size + 1, dtype=np.float32).reshape(out.shape)
    return pooled, x, ct


def _gradients(form):
    key = ("gradient", form)
    if key not in _BATCHES:
        cases = [_gradient_data(*c) for c in GRADIENT_CASES]

        def program(args):
            return [jax.vjp(pooled, v)[1](c)[0]
                    for (pooled, _, _), (v, c) in zip(cases, args, strict=True)]

        _BATCHES[key] = [np.asarray(g) for g in
                         jax.jit(program)([(x, ct) for _, x, ct in cases])]
    return _BATCHES[key]


@pytest.mark.parametrize("opset", [1, 8])
@pytest.mark.parametrize("geometry", [g for g in GEOMETRIES if set(g[5]) == {1}])
def test_openvino_max_pool_1_gradient_both_forms(pool_form, geometry, opset):
    # opset 8 computes the indices beside the values (the compact form: from one reduction),
    # whose values must differentiate as MaxPool-1's; each case's forward pass and transpose
    # are jitted (jax.vjp outside jit compiles the forward pass, then each piece of the
    # transpose, separately: the same arithmetic), every case of the form in one program
    shape, k, s, pb, pe, _, ceil = geometry
    _, x, ct = _gradient_data(geometry, opset)
    grad = _gradients(pool_form)[GRADIENT_CASES.index((geometry, opset))]
    want = max_pool_1_grad(x, ct, k, s, pb, pe, "ceil" if ceil else "floor")
    assert_same(np.asarray(grad, np.float64), want,
                f"gradient, form={pool_form}, {geometry} opset {opset}")


ADAPTIVE_CASES = [(shape, out, dtype)
                  for shape, out in [((2, 3, 7, 9), (3, 4)), ((1, 2, 5, 14), (7, 3)),
                                     ((1, 2, 3, 3), (5, 7)), ((1, 1, 13), (4,)),
                                     ((1, 2, 4, 5, 6), (2, 3, 4)), ((2, 3, 16, 16), (4, 4))]
                  for dtype in [np.float32, np.float16, np.int8]]


def _adaptive_call(shape, out, dtype):
    return (lambda v: ov.adaptive_max_pool(v, out, index_element_type="i32"),
            (_data(shape, dtype, sum(shape)),))


@pytest.mark.parametrize("shape,out,dtype", ADAPTIVE_CASES,
                         ids=[f"shape{i // 3}-out{i // 3}-{np.dtype(d).name}"
                              for i, (_, _, d) in enumerate(ADAPTIVE_CASES)])
def test_adaptive_max_pool_both_forms(form, shape, out, dtype):
    values, indices = _batched("adaptive", form, _adaptive_call, ADAPTIVE_CASES,
                               (shape, out, dtype))
    (x,) = _adaptive_call(shape, out, dtype)[1]
    want_v, want_i = adaptive_oracle(x, out, np.int32)
    _same_bits(values, want_v, f"values, compact={form}, {shape} -> {out} {dtype}")
    assert_same(indices, want_i, f"indices, compact={form}, {shape} -> {out} {dtype}")


def _lowered(f, platforms) -> str:
    spec = jax.ShapeDtypeStruct((1, 3, 13, 14), np.float32)
    return jax.jit(f).trace(spec).lower(lowering_platforms=platforms).as_text()


def test_each_platform_gets_its_program(monkeypatch):
    # a small input: the compact form (one variadic reduce_window, pairs of value and index)
    # on CPU; MaxPool-1's values elsewhere XLA's windowed max (`stablehlo.maximum`) under the
    # NaN check; MaxPool-8 reads values and indices from the one compact reduction everywhere
    # (its indices need the compact winners on every platform), lowered for one platform or
    # for several (as jax.export does)
    attrs = dict(kernel=(3, 3), strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1))
    def variadic(text):  # pairs or triples (pool_compact.winners)
        return re.search(r':[23] = "stablehlo.reduce_window"', text) is not None

    _force(monkeypatch, None, None)
    values = _lowered(lambda v: ov.max_pool(v, opset=1, **attrs), ("cpu",))
    assert variadic(values) and "stablehlo.maximum" not in values
    values = _lowered(lambda v: ov.max_pool(v, opset=1, **attrs), ("cuda",))
    assert not variadic(values) and "stablehlo.maximum" in values
    for platforms in (("cpu",), ("cuda",), ("cpu", "cuda")):
        both = _lowered(lambda v: ov.max_pool(v, opset=8, index_element_type="i32", **attrs),
                        platforms)
        assert both.count('"stablehlo.reduce_window"') == 1, platforms
        assert variadic(both) and "stablehlo.maximum" not in both, platforms


@pytest.mark.parametrize("compact", ["pairs", "triples"])
def test_compact_forms_order_subnormals_by_their_bits(compact, monkeypatch):
    # XLA's CPU float compare takes a subnormal for zero (docs/semantics.md §9.3); both compact
    # reductions compare keys made of the bits, so the winner is the oracle's (the ONNX value
    # keeps its bits; OpenVINO's max(lowest(T), winner) may be flushed, §9.3, so only its index
    # is compared)
    _force(monkeypatch, True, compact == "pairs")
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    pool = np.array([0.0, -0.0, tiny, 2 * tiny, -tiny, -1.0], np.float32)
    x = pool[np.random.default_rng(5).integers(0, len(pool), (1, 2, 9, 8))]
    y, i = onnx.max_pool(x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         return_indices=True)
    want_y, want_i = onnx_oracle(x, [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], 0)
    np.testing.assert_array_equal(np.asarray(y).view(np.uint32), want_y.view(np.uint32))
    assert_same(i, want_i.astype(i.dtype), compact)
    _, j = ov.max_pool(x, kernel=(3, 3), strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1),
                       opset=8, index_element_type="i32")
    _, want_j = openvino_oracle(x, (3, 3), (2, 2), [(1, 1), (1, 1)], [1, 1], "floor")
    assert_same(j, want_j.astype(np.int32), compact)
