"""ONNX ArgMax / TopK against onnx.reference and onnxruntime, OpenVINO TopK-1/-3/-11 against
OpenVINO's ``Node.evaluate`` (reference kernels) and CPU plugin (f32 inference precision):
seeded configurations over ranks 1-4, every axis, the dtypes each runtime implements, with NaN,
+-inf, +-0 and heavy ties (docs/semantics.md §6.5).

Runtime deviations from the contract, each excluded explicitly where it is compared:
* onnxruntime ArgMax seeds its scan with the first element, so NaN wins only at index 0
  (``[1, NaN, 3]`` gives 2; all-NaN with ``select_last_index`` gives 0): rows holding a NaN are
  compared with the reference only (``test_onnx_arg_max_nan_rows_where_onnxruntime_differs``
  pins the deviation).
* onnxruntime has no ArgMax kernel for int16, uint16, uint32, uint64, bfloat16, nor a TopK
  kernel for uint16, uint32, uint64, bfloat16 (NOT_IMPLEMENTED; bfloat16 TopK-11 is even
  INVALID_GRAPH, as the schema forbids it): reference only there.
* onnxruntime TopK ``sorted=0`` returns heap order: compared as the same set of (index, value).
* onnxruntime TopK on float16: the opset-1 model fails to load (INVALID_GRAPH, an inserted Cast
  with a mistyped attribute): not compared there; from opset 10 it computes through float32
  casts, so NaN payloads come back canonical: float16 NaN values are compared as NaN, not bits.
* onnx.reference TopK on bfloat16 orders NaN between numbers (ml_dtypes' lexsort): bfloat16 rows
  holding a NaN are left to the NumPy oracle (tests/test_arg_max_top_k_values.py).
* ``Node.evaluate`` (TopK): NaN order is undefined (its comparator is not a strict weak order
  with NaN): rows holding a NaN are excluded; ``sort="none"`` returns an order of its own:
  compared as a set. It has no kernel for some types (``Unsupported``): skipped per type.
* CPU plugin: computes 64-bit types in 32 bits and uint32 as signed int32 (values >= 2**31
  rank below 0): i64/u64/f64/u32 are not compared; breaks ties
  away from the lower index unless ``stable=True`` and ``sort="value"`` (with ``sort="index"``
  even when ``stable=True``): in those cases the selected *values* are compared by key (the
  multiset of keys is unique, which element of a tie is not), and NaN rows are excluded.
* CPU plugin on a CPU with native bfloat16 arithmetic (AVX512_BF16, as this project's machine
  since 2026-11-26): bfloat16 subnormals come back as zeros of the same sign (the kernel runs
  in bfloat16 with denormals flushed; on CPUs without it the plugin computes in float32 and
  keeps them): bfloat16 rows holding a subnormal are excluded there
  (``test_ov_cpu_plugin_bfloat16_subnormals`` pins the two behaviours).
"""

from __future__ import annotations

import warnings

import jax
import ml_dtypes
import numpy as np
import pytest
from arg_max_oracle import top_k as oracle_top_k
from helpers import is_float, x64_for
from jit_batch import jit_each
from test_arg_max_top_k_values import assert_bits, draw

from jaxmax import onnx as jonnx
from jaxmax import openvino as jov

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")

import openvino.opset1 as ov1  # noqa: E402
import openvino.opset3 as ov3  # noqa: E402
import openvino.opset11 as ov11  # noqa: E402
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from ov_reference import Const, Unsupported, compile_cpu, evaluate  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(t) for t in (np.float16, np.float32, np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                              np.uint32, np.uint64)]
ORT_ARG_MAX_MISSING = {np.dtype(t) for t in (np.int16, np.uint16, np.uint32, np.uint64)} | {BF16}
ORT_TOP_K_MISSING = {np.dtype(t) for t in (np.uint16, np.uint32, np.uint64)} | {BF16}
SHAPES = [(6,), (5, 4), (3, 5, 4), (2, 3, 4, 5), (1, 7), (4, 1, 3)]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*indices, which JAX stores as int32")
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _model(op, x, attrs, opset, k=None):
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    inputs = [helper.make_tensor_value_info("x", elem, list(x.shape))]
    names = ["x"]
    initial = []
    if k is not None:
        initial.append(helper.make_tensor("K", onnx.TensorProto.INT64, [1], [k]))
        names.append("K")
    int64 = onnx.TensorProto.INT64
    outputs = [("y", int64)] if op == "ArgMax" else [("values", elem), ("indices", int64)]
    node = helper.make_node(op, names, [o for o, _ in outputs], **attrs)
    outs = [helper.make_tensor_value_info(o, t, None) for o, t in outputs]
    graph = helper.make_graph([node], op.lower(), inputs, outs, initializer=initial)
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(graph, opset_imports=opsets,
                             ir_version=helper.find_min_ir_version_for(opsets, ignore_unknown=True))


def run_reference(model, x):
    return ReferenceEvaluator(model).run(None, {"x": x})


def run_ort(model, x):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def nan_rows(x, axis, keepdims=True):
    """True where the slice along `axis` holds a NaN (shape of the reduced output)."""
    if not is_float(x.dtype):
        return np.zeros(np.delete(x.shape, axis) if not keepdims else
                        tuple(1 if i == axis % x.ndim else d for i, d in enumerate(x.shape)),
                        bool)
    return np.isnan(x.astype(np.float64)).any(axis=axis, keepdims=keepdims)


def bf16_subnormal_rows(x, axis):
    """True where a bfloat16 slice along `axis` holds a subnormal (kept dims; False for other
    dtypes): the CPU plugin may flush them (module docstring)."""
    if x.dtype != BF16:
        return np.zeros(tuple(1 if i == axis % x.ndim else d for i, d in enumerate(x.shape)),
                        bool)
    v = np.abs(x.astype(np.float64))
    tiny = float(ml_dtypes.finfo(BF16).smallest_normal)
    return ((v > 0) & (v < tiny)).any(axis=axis, keepdims=True)


def configs(seed, count, dtypes):
    rng = np.random.default_rng(seed)
    for i in range(count):
        shape = SHAPES[rng.integers(len(SHAPES))]
        yield rng, shape, dtypes[i % len(dtypes)], int(rng.integers(-len(shape), len(shape)))


# --------------------------------------------------------------------------------------------
# ONNX ArgMax
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [11, 12, 13])
def test_onnx_arg_max_against_runtimes(opset):
    dtypes = FLOATS + INTS + ([BF16] if opset >= 13 else [])
    cases = []
    for rng, shape, dtype, axis in configs(opset, 25, dtypes):
        x = draw(rng, shape, dtype)
        keepdims = int(rng.integers(2))
        last = int(rng.integers(2)) if opset >= 12 else 0
        cases.append((x, shape, dtype, axis, keepdims, last))
    ours = _batched([(lambda v, a=axis, kd=keepdims, la=last: jonnx.arg_max(
        v, axis=a, keepdims=kd, select_last_index=la, opset=opset), x)
        for x, _, _, axis, keepdims, last in cases])
    for (x, shape, dtype, axis, keepdims, last), got in zip(cases, ours, strict=True):
        attrs = {"axis": axis, "keepdims": keepdims}
        if opset >= 12:
            attrs["select_last_index"] = last
        model = _model("ArgMax", x, attrs, opset)
        context = f"opset {opset} {dtype} {shape} axis {axis} keepdims {keepdims} last {last}"
        assert_bits(got, run_reference(model, x)[0], "reference " + context)
        if dtype not in ORT_ARG_MAX_MISSING:
            expected = run_ort(model, x)[0]
            # onnxruntime: NaN wins only at index 0 (module docstring): NaN rows excluded
            keep = ~nan_rows(x, axis, bool(keepdims))
            np.testing.assert_array_equal(got[keep], expected[keep], "onnxruntime " + context)


def test_onnx_arg_max_nan_rows_where_onnxruntime_differs():
    """The excluded rows: jaxmax and onnx.reference say NaN is the maximum, onnxruntime 1.32
    does not (docs/semantics.md §6.5)."""
    x = np.array([[1, np.nan, 3], [np.nan, np.nan, np.nan]], np.float32)
    model = _model("ArgMax", x, {"axis": 1, "keepdims": 0, "select_last_index": 1}, 13)
    with x64_for(np.int64):
        got = np.asarray(jonnx.arg_max(x, axis=1, keepdims=0, select_last_index=1))
    np.testing.assert_array_equal(got, [1, 2])
    np.testing.assert_array_equal(run_reference(model, x)[0], [1, 2])
    np.testing.assert_array_equal(run_ort(model, x)[0], [2, 0])


# --------------------------------------------------------------------------------------------
# ONNX TopK
# --------------------------------------------------------------------------------------------

def _rows_as_sets(values, indices, axis):
    """Per row, the (index, value bits) pairs sorted by index: order-free comparison."""
    v = np.moveaxis(values, axis, -1)
    i = np.moveaxis(indices, axis, -1)
    order = np.argsort(i, axis=-1, kind="stable")
    return np.take_along_axis(i, order, -1), np.take_along_axis(v, order, -1)


@pytest.mark.parametrize("opset", [1, 10, 11, 24])
def test_onnx_top_k_against_runtimes(opset):
    dtypes = FLOATS + (INTS if opset >= 11 else []) + ([BF16] if opset >= 24 else [])
    cases = []
    for rng, shape, dtype, axis in configs(50 + opset, 25, dtypes):
        x = draw(rng, shape, dtype)
        n = shape[axis]
        k = int(rng.integers(1 if opset < 10 else 0, n + 1))
        largest = int(rng.integers(2)) if opset >= 11 else 1
        sort = int(rng.integers(2)) if opset >= 11 else 1
        cases.append((x, shape, dtype, axis, k, largest, sort))
    ours = _batched([(lambda v, k=k, a=axis, la=largest, so=sort: jonnx.top_k(
        v, k, axis=a, largest=la, sorted=so, opset=opset), x)
        for x, _, _, axis, k, largest, sort in cases])
    for (x, shape, dtype, axis, k, largest, sort), (values, indices) in zip(cases, ours,
                                                                            strict=True):
        attrs = {"axis": axis}
        if opset >= 11:
            attrs.update(largest=largest, sorted=sort)
        if opset < 10:
            attrs["k"] = k
        model = _model("TopK", x, attrs, opset, k=None if opset < 10 else k)
        context = f"opset {opset} {dtype} {shape} axis {axis} k {k} largest {largest} s {sort}"
        ref_v, ref_i = run_reference(model, x)
        if dtype == BF16:
            # onnx.reference orders bfloat16 NaN between numbers (module docstring)
            keep = ~nan_rows(x, axis)
            keep = np.broadcast_to(keep, values.shape)
            assert_bits(values[keep], ref_v[keep], "reference " + context)
            np.testing.assert_array_equal(indices[keep], ref_i[keep], "reference " + context)
        else:
            assert_bits(values, ref_v, "reference " + context)
            np.testing.assert_array_equal(indices, ref_i, "reference " + context)
        # onnxruntime: float16 TopK-1 does not load (module docstring)
        if dtype not in ORT_TOP_K_MISSING and not (dtype == np.float16 and opset < 10):
            ort_v, ort_i = run_ort(model, x)
            if dtype == np.float16:  # through float32 casts: canonical NaN (module docstring)
                values, ort_v = (np.where(np.isnan(v), np.float16(np.nan), v)
                                 for v in (values, ort_v))
            if sort:
                assert_bits(values, ort_v, "onnxruntime " + context)
                np.testing.assert_array_equal(indices, ort_i, "onnxruntime " + context)
            else:  # heap order (module docstring): the same set of (index, value)
                got_i, got_v = _rows_as_sets(values, indices, axis)
                want_i, want_v = _rows_as_sets(ort_v, ort_i, axis)
                np.testing.assert_array_equal(got_i, want_i, "onnxruntime " + context)
                assert_bits(got_v, want_v, "onnxruntime " + context)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_top_k_along_long_axes_against_runtimes(dtype):
    """Axes long enough for the selection by chunk maxima (lowering/top_k_chunked.py), with NaN,
    +-0 and heavy ties across chunks: ONNX TopK-11 against onnx.reference and onnxruntime,
    OpenVINO TopK-11 (stable, by value and by index) against ``Node.evaluate``, with NaN made
    ``-0.0`` there."""
    from jaxmax._src.lowering import top_k_chunked

    rng = np.random.default_rng(61)
    for shape, axis, k in [((16, 1024), 1, 5), ((2, 2048, 4), 1, 9), ((4, 8, 640), 2, 3)]:
        assert top_k_chunked.chunk_size(shape, axis, k, dtype)
        x = draw(rng, shape, np.dtype(dtype))
        for largest in (1, 0):
            model = _model("TopK", x, {"axis": axis, "largest": largest, "sorted": 1}, 11, k=k)
            context = f"{dtype} {shape} axis {axis} k {k} largest {largest}"
            with x64_for(dtype, np.int64):
                values, indices = (np.asarray(a) for a in jonnx.top_k(
                    x, k, axis=axis, largest=largest))
            for name, (want_v, want_i) in (("reference", run_reference(model, x)),
                                           ("onnxruntime", run_ort(model, x))):
                assert_bits(values, want_v, f"{name} {context}")
                np.testing.assert_array_equal(indices, want_i, f"{name} {context}")
        # every drawn row of this length holds a NaN, whose order evaluate leaves undefined
        # (module docstring): their NaN become -0.0, more ties with the zeros
        x = np.where(np.isnan(x), np.array(-0.0, x.dtype), x) if is_float(x.dtype) else x
        for mode in ("max", "min"):
            for sort in ("value", "index"):
                try:
                    ref_v, ref_i = evaluate(_ov_node(11, k, axis, mode, sort, "i64", True), x,
                                            Const(np.array(k, np.int64)))
                except Unsupported:  # no uint8 kernel (module docstring)
                    continue
                values, indices = _ours(x, k, axis, mode, sort, "i64", True, 11)
                context = f"{dtype} {shape} axis {axis} k {k} {mode} {sort}"
                assert_bits(values, ref_v, context)
                np.testing.assert_array_equal(indices, ref_i.astype(np.int64), context)


# --------------------------------------------------------------------------------------------
# OpenVINO TopK-1/-3/-11
# --------------------------------------------------------------------------------------------

OV_DTYPES = FLOATS + INTS + [BF16]
FACTORIES = {1: ov1.topk, 3: ov3.topk, 11: ov11.topk}


def _ov_node(opset, k, axis, mode, sort, itype, stable):
    def factory(x, kk):
        if opset == 11:
            return ov11.topk(x, kk, axis, mode, sort, itype, stable)
        return FACTORIES[opset](x, kk, axis, mode, sort, itype)
    return factory


def ov_configs(seed, count, dtypes):
    for rng, shape, dtype, axis in configs(seed, count, dtypes):
        x = draw(rng, shape, dtype)
        k = int(rng.integers(1, shape[axis] + 1))
        mode = ["max", "min"][rng.integers(2)]
        sort = ["value", "index", "none"][rng.integers(3)]
        itype = ["i32", "i64"][rng.integers(2)]
        yield rng, x, axis, k, mode, sort, itype


def _ours(x, k, axis, mode, sort, itype, stable, opset):
    with x64_for(x.dtype, np.int64):
        values, indices = jov.top_k(x, k, axis=axis, mode=mode, sort=sort,
                                    index_element_type=itype, stable=stable, opset=opset)
        return np.asarray(values), np.asarray(indices).astype(np.int64)


def _batched(calls):
    """``[fn(x) for fn, x in calls]`` in 64-bit mode (the eager calls here run under
    ``x64_for(dtype, np.int64)``, always on), traced as their eager calls trace and compiled
    as they compile, but in one program for the small inputs (tests/jit_batch.py) instead
    of one per call. NumPy results; only the eager path's concrete input checks are not
    taken (the configurations here are valid)."""
    with jax.enable_x64(True):
        return jit_each([(fn, (x,)) for fn, x in calls], as_eager=True)


def _ours_batched(cases, opset):
    """`_ours` of every ``(x, axis, k, mode, sort, itype, stable)`` of `cases`, batched."""
    got = _batched([(lambda v, k=k, a=axis, m=mode, so=sort, it=itype, st=stable: jov.top_k(
        v, k, axis=a, mode=m, sort=so, index_element_type=it, stable=st, opset=opset), x)
        for x, axis, k, mode, sort, itype, stable in cases])
    return [(values, indices.astype(np.int64)) for values, indices in got]


@pytest.mark.parametrize("opset", [1, 3, 11])
def test_ov_top_k_against_evaluate(opset):
    cases, refs = [], []
    for rng, x, axis, k, mode, sort, itype in ov_configs(80 + opset, 36, OV_DTYPES):
        stable = bool(rng.integers(2)) if opset >= 11 and sort != "none" else False
        try:
            refs.append(evaluate(_ov_node(opset, k, axis, mode, sort, itype, stable), x,
                                 Const(np.array(k, np.int64))))
        except Unsupported:
            continue
        cases.append((x, axis, k, mode, sort, itype, stable))
    compared = 0
    for (x, axis, k, mode, sort, itype, _), (ref_v, ref_i), (values, indices) in zip(
            cases, refs, _ours_batched(cases, opset), strict=True):
        # NaN order is undefined in the reference kernel (module docstring): NaN rows excluded
        keep = np.broadcast_to(~nan_rows(x, axis), values.shape)
        context = f"opset {opset} {x.dtype} {x.shape} axis {axis} k {k} {mode} {sort} {itype}"
        if sort == "none":  # its own order (module docstring): the same set
            keep_rows = ~nan_rows(x, axis)
            got_i, got_v = _rows_as_sets(values, indices, axis)
            want_i, want_v = _rows_as_sets(ref_v, ref_i.astype(np.int64), axis)
            sel = np.broadcast_to(np.moveaxis(keep_rows, axis, -1), got_i.shape)
            np.testing.assert_array_equal(got_i[sel], want_i[sel], context)
            assert_bits(got_v[sel], want_v[sel], context)
        else:
            assert_bits(values[keep], ref_v[keep], context)
            np.testing.assert_array_equal(indices[keep], ref_i.astype(np.int64)[keep], context)
        compared += 1
    assert compared >= 15


def _sorted_keys(values, axis):
    """Per row, the values as float64 sorted (zero signs ignored): the selected multiset."""
    v = np.moveaxis(values, axis, -1).astype(np.float64) + 0.0
    return np.sort(v, axis=-1)


@pytest.mark.parametrize("opset", [1, 3, 11])
def test_ov_top_k_against_cpu_plugin(opset):
    # the plugin computes 64 bits in 32 and uint32 as int32 (module docstring)
    dtypes = [d for d in OV_DTYPES if d.itemsize < 8 and d != np.uint32]
    cases = []
    for rng, x, axis, k, mode, sort, itype in ov_configs(90 + opset, 18, dtypes):
        stable = bool(rng.integers(2)) if opset >= 11 and sort != "none" else False
        cases.append((x, axis, k, mode, sort, itype, stable))
    for (x, axis, k, mode, sort, itype, stable), (values, indices) in zip(
            cases, _ours_batched(cases, opset), strict=True):
        ref_v, ref_i = compile_cpu(_ov_node(opset, k, axis, mode, sort, itype, stable), x,
                                   Const(np.array(k, np.int64)))
        context = f"opset {opset} {x.dtype} {x.shape} axis {axis} k {k} {mode} {sort} {stable}"
        # NaN: position-dependent on the CPU plugin; bfloat16 subnormals may be flushed (module
        # docstring): those rows excluded
        keep = np.broadcast_to(~nan_rows(x, axis) & ~bf16_subnormal_rows(x, axis), values.shape)
        if stable and sort == "value":
            assert_bits(values[keep], ref_v[keep], context)
            np.testing.assert_array_equal(indices[keep], ref_i.astype(np.int64)[keep], context)
        else:  # ties may go to another element (module docstring): the selected multiset
            rows = np.moveaxis(keep, axis, -1)
            np.testing.assert_array_equal(_sorted_keys(values, axis)[rows],
                                          _sorted_keys(ref_v, axis)[rows], context)


def test_ov_cpu_plugin_bfloat16_subnormals():
    """The excluded bfloat16 case: the CPU plugin returns the selected subnormals either as they
    are (the oracle's answer, and jaxmax's) or, with native bfloat16 arithmetic, as zeros of the
    same sign; its indices are the oracle's either way (no other number lies between them and
    zero here)."""
    tiny = float(ml_dtypes.finfo(BF16).smallest_subnormal)
    x = np.array([[-2.0, 3 * tiny, -tiny, 1.0, -5.0, -0.0]], np.float32).astype(BF16)
    node = _ov_node(11, 3, 1, "max", "value", "i32", True)
    cpu_v, cpu_i = compile_cpu(node, x, Const(np.array(3, np.int64)))
    want_v, want_i = oracle_top_k(x, 3, 1, face="openvino", descending=True)
    values, indices = _ours(x, 3, 1, "max", "value", "i32", True, 11)
    assert_bits(values, want_v)
    np.testing.assert_array_equal(indices, want_i)
    np.testing.assert_array_equal(cpu_i, want_i)
    wide = want_v.astype(np.float32)
    flushed = np.where(np.abs(wide) < float(ml_dtypes.finfo(BF16).tiny),
                       np.copysign(np.float32(0), wide), wide).astype(BF16)
    assert np.array_equal(cpu_v.view(np.uint16), want_v.view(np.uint16)) or np.array_equal(
        cpu_v.view(np.uint16), flushed.view(np.uint16)), (cpu_v, want_v)


def test_ov_cpu_plugin_tie_deviation_is_real():
    """The excluded case exists: with ``sort="index"`` and ``stable=True`` the CPU plugin picks
    tied elements other than the lowest indices (here on rows of 143 elements, k = 74), while
    jaxmax, the reference kernel and the NumPy oracle pick the lowest indices."""
    x = np.random.default_rng(2).integers(0, 4, (4, 143)).astype(np.float32)
    node = _ov_node(11, 74, 1, "max", "index", "i32", True)
    k = Const(np.array(74, np.int64))
    _, cpu_i = compile_cpu(node, x, k)
    _, ref_i = evaluate(node, x, k)
    values, indices = _ours(x, 74, 1, "max", "index", "i32", True, 11)
    want_v, want_i = oracle_top_k(x, 74, 1, face="openvino", descending=True, by_index=True)
    np.testing.assert_array_equal(indices, want_i)
    np.testing.assert_array_equal(ref_i, want_i)
    assert not np.array_equal(cpu_i, want_i)  # the plugin's deviation (module docstring)
