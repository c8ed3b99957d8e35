"""``jaxmax.onnx.reduce_max`` against the ONNX runtimes (the contract and the oracle tests are in
tests/test_reduce_max_onnx_values.py):

* ``onnx.reference.ReferenceEvaluator`` on a model built for every opset 1..20 (axes an attribute
  before 18, an input from 18), and a smaller set against onnxruntime (the ONNX backend node
  cases are in tests/test_onnx_node_cases.py).

The oracle is ``onnx_reduce_max`` of tests/reduce_oracle.py (plain loops, never jaxmax).
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
from helpers import assert_same, is_float
from jit_batch import jit_each
from reduce_oracle import onnx_reduce_max

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnx.backend.test")

from onnx import AttributeProto, TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_reduce_max_common import (  # noqa: E402
    ALL_DTYPES,
    ALLOWED,
    LATEST_OPSET,
    make_data,
    np_dtype,
    version_of,
)

from jaxmax import onnx as jonnx  # noqa: E402

NAN = np.nan
INF = np.inf

# --------------------------------------------------------------------------------------------
# Cases and models for the runtimes
# --------------------------------------------------------------------------------------------

def call_jaxmax(x, case):
    """`jonnx.reduce_max` with the case's arguments; absent ones use the function's defaults."""
    kwargs = {}
    if case["keepdims"] is not None:
        kwargs["keepdims"] = case["keepdims"]
    if case["noop"] is not None:
        kwargs["noop_with_empty_axes"] = case["noop"]
    return jonnx.reduce_max(x, case["axes"], opset=case["opset"], **kwargs)


def oracle_for(x, case):
    keep = 1 if case["keepdims"] is None else int(case["keepdims"])
    noop = 0 if case["noop"] is None else int(case["noop"])
    return onnx_reduce_max(x, case["axes"], keep, noop)


# --------------------------------------------------------------------------------------------
# ONNX models for the runtimes
# --------------------------------------------------------------------------------------------

def build_model(case, dtype_name, shape):
    """A one-node ReduceMax model for `case["opset"]`: axes an attribute before 18, an input
    from 18."""
    opset = case["opset"]
    elem = helper.np_dtype_to_tensor_dtype(np_dtype(dtype_name))
    inputs = [helper.make_tensor_value_info("data", elem, list(shape))]
    node_inputs = ["data"]
    attrs = []
    if case["keepdims"] is not None:
        attrs.append(helper.make_attribute("keepdims", int(case["keepdims"])))
    axes = case["axes"]
    axes_list = None if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
    if opset < 18:
        if axes_list is not None:
            attrs.append(helper.make_attribute("axes", axes_list, attr_type=AttributeProto.INTS))
    else:
        if case["noop"] is not None:
            attrs.append(helper.make_attribute("noop_with_empty_axes", int(case["noop"])))
        if axes_list is not None:
            inputs.append(
                helper.make_tensor_value_info("axes", TensorProto.INT64, [len(axes_list)]))
            node_inputs.append("axes")
    node = helper.make_node("ReduceMax", node_inputs, ["reduced"])
    node.attribute.extend(attrs)
    output = helper.make_tensor_value_info("reduced", elem, None)
    graph = helper.make_graph([node], "reduce_max", inputs, [output])
    opset_imports = [helper.make_opsetid("", opset)]
    # opsets 2-4 were never released on their own: take the IR version of the last release before
    ir_version = helper.find_min_ir_version_for(opset_imports, ignore_unknown=True)
    model = helper.make_model(graph, opset_imports=opset_imports, ir_version=ir_version)
    feeds_axes = None
    if opset >= 18 and axes_list is not None:
        feeds_axes = np.array(axes_list, np.int64).reshape(len(axes_list))
    return model, feeds_axes


def feeds_for(x, axes_feed):
    feeds = {"data": x}
    if axes_feed is not None:
        feeds["axes"] = axes_feed
    return feeds


def batch_model(cases, xs):
    """One model holding each case's ReduceMax node (all of one opset), its inputs and output
    renamed ``data{j}``, ``axes{j}``, ``reduced{j}``: a batch of cases, one session. Returns the
    model and its feeds."""
    graph, feeds = None, {}
    for j, (case, x) in enumerate(zip(cases, xs, strict=True)):
        model, axes_feed = build_model(case, x.dtype.name, x.shape)
        one = model.graph
        for value in list(one.input) + list(one.output):
            value.name = f"{value.name}{j}"
        node = one.node[0]
        node.input[:] = [f"{name}{j}" for name in node.input]
        node.output[:] = [f"reduced{j}"]
        feeds.update({f"{k}{j}": v for k, v in feeds_for(x, axes_feed).items()})
        if graph is None:
            graph, first = one, model
        else:
            graph.input.extend(one.input)
            graph.output.extend(one.output)
            graph.node.extend(one.node)
    return first, feeds


def run_reference_batch(cases, xs):
    """onnx.reference's result for each (case, x), by one evaluator."""
    model, feeds = batch_model(cases, xs)
    return ReferenceEvaluator(model).run(None, feeds)


def run_onnxruntime_batch(cases, xs):
    """onnxruntime's result for each (case, x), by one session."""
    model, feeds = batch_model(cases, xs)
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.log_severity_level = 3  # opsets < 7 print a "not guaranteed" warning otherwise
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_reference(case, x):
    return run_reference_batch([case], [x])[0]


def run_onnxruntime(case, x):
    return run_onnxruntime_batch([case], [x])[0]


def jaxmax_batch(cases, xs):
    """`call_jaxmax` of each (case, x), every case in one jitted program (one compile,
    tests/jit_batch.py): each call's axes and attributes are static, as in a jit of it alone."""
    return jit_each([(lambda x, case=case: call_jaxmax(x, case), (x,))
                     for case, x in zip(cases, xs, strict=True)])


# --------------------------------------------------------------------------------------------
# Random cases
# --------------------------------------------------------------------------------------------

# A fixed pool of shapes (size-0 dims included); the cases of a test are compiled as one
# program (`jaxmax_batch`).
SHAPES = [(), (5,), (0,), (3, 4), (1, 6), (4, 0), (2, 3, 4), (3, 1, 2), (2, 0, 3),
          (2, 3, 1, 2), (1, 2, 2, 3)]
CASES_PER_OPSET = 13


def random_case(rng, opset, dtype):
    """Random (shape, axes in one of its accepted forms, keepdims, noop) for `opset`."""
    version = version_of(opset)
    shape = SHAPES[int(rng.integers(len(SHAPES)))]
    r = len(shape)
    u = rng.random()
    if r == 0 or u < 0.12:
        axes = None
    elif u < 0.22:
        axes = [] if rng.random() < 0.5 else np.zeros(0, np.int64)
    else:
        k = int(rng.integers(1, r + 1))
        picked = [int(a) - (r if rng.random() < 0.5 else 0) for a in rng.permutation(r)[:k]]
        form = int(rng.integers(4))
        if k == 1 and form == 0:
            axes = picked[0]
        elif form == 1:
            axes = tuple(picked)
        elif form == 2:
            axes = np.array(picked, np.int64 if rng.random() < 0.5 else np.int32)
        else:
            axes = picked
    keepdims = [None, 0, 1, True, False][int(rng.integers(5))]
    noop = None
    if version >= 18:
        noop = [None, 0, 1, 1][int(rng.integers(4))]
    return {"opset": opset, "dtype": dtype, "shape": shape, "axes": axes,
            "keepdims": keepdims, "noop": noop}


def cases_for_opset(opset, n=CASES_PER_OPSET):
    rng = np.random.default_rng(1000 + opset)
    # every dtype the version allows, in a random order, then again: all are covered per opset
    dtypes = [str(d) for d in rng.permutation(sorted(ALLOWED[version_of(opset)]))]
    return [random_case(rng, opset, dtypes[i % len(dtypes)]) for i in range(n)]


def describe(case):
    return (f"opset={case['opset']} dtype={case.get('dtype')} shape={case.get('shape')} "
            f"axes={case['axes']!r} keepdims={case['keepdims']!r} noop={case['noop']!r}")


# --------------------------------------------------------------------------------------------
# Differential: onnx.reference, every opset 1..20 (and two later ones)
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", list(range(1, 21)) + [21, LATEST_OPSET])
def test_random_cases_against_onnx_reference(opset):
    # one jitted program and one onnx.reference model for the test's cases (eager calls: in
    # test_reference_agrees_on_handwritten_corners and test_onnxruntime_corners)
    data_rng = np.random.default_rng(2000 + opset)
    cases = cases_for_opset(opset)
    with jax.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # onnx.reference on NaN / empty input
        xs = [make_data(data_rng, case["shape"], case["dtype"]) for case in cases]
        for case, x, got, expected in zip(cases, xs, jaxmax_batch(cases, xs),
                                          run_reference_batch(cases, xs), strict=True):
            # onnx.reference's zero on a -0/+0 tie follows NumPy's reduction order
            # (docs/semantics.md §4): values only
            assert_same(got, expected, "onnx.reference: " + describe(case), zero_signs=False)
            assert_same(got, oracle_for(x, case), "oracle: " + describe(case))


def test_random_case_generator_covers_the_space():
    """The random cases above reach every dtype, both keepdims, noop and size-0 reductions."""
    cases = [c for opset in range(1, 21) for c in cases_for_opset(opset)]
    assert len(cases) >= 250
    assert {c["dtype"] for c in cases} == set(ALL_DTYPES)
    assert {c["keepdims"] for c in cases} >= {None, 0, 1}
    assert any(c["noop"] == 1 for c in cases)
    assert any(c["axes"] is None for c in cases)
    assert any(c["axes"] is not None and np.size(c["axes"]) == 0 for c in cases)
    assert any(0 in c["shape"] for c in cases)
    assert any(np.any(np.asarray(c["axes"]) < 0) for c in cases if c["axes"] is not None)


def test_reference_agrees_on_handwritten_corners():
    """onnx.reference and jaxmax on the corner inputs, for the versions that allow them."""
    x = np.array([[NAN, 1, 2], [1, 2, NAN], [INF, NAN, 1], [-INF, -INF, -INF]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for opset in (1, 11, 13, 18, 20):
            case = {"opset": opset, "axes": [1], "keepdims": 0, "noop": None}
            assert_same(call_jaxmax(x, case), run_reference(case, x), describe(case))
        for dtype_name, opset in (("float32", 20), ("int32", 11), ("uint8", 12), ("bool", 20),
                                  ("bfloat16", 13)):
            e = np.zeros((2, 0, 3), np_dtype(dtype_name))
            case = {"opset": opset, "axes": [1], "keepdims": 1, "noop": None}
            assert_same(call_jaxmax(e, case), run_reference(case, e), describe(case))


# --------------------------------------------------------------------------------------------
# Differential: onnxruntime
# --------------------------------------------------------------------------------------------

# onnxruntime 1.31's CPU provider has no ReduceMax kernel for these (NOT_IMPLEMENTED), and for
# float16 below opset 11 its graph optimiser inserts an invalid Cast (INVALID_GRAPH).
ORT_UNSUPPORTED_DTYPES = frozenset({"uint32", "uint64", "bfloat16"})


def ort_supports(case):
    if case["dtype"] in ORT_UNSUPPORTED_DTYPES:
        return False
    return not (case["dtype"] == "float16" and case["opset"] < 11)


def _negative_axes(case):
    return case["axes"] is not None and bool(np.any(np.asarray(case["axes"]) < 0))


# onnxruntime deviations from the contract, excluded by name. Only the first is listed in
# docs/semantics.md (§3.4, §4); all three are reported.
ORT_DEVIATIONS = {
    # NaN does not propagate: onnxruntime keeps a NaN only when it comes first in the slice,
    # max([1, NaN, 3]) -> 3, max([+inf, NaN]) -> inf. docs/semantics.md §4: NaN
    # propagates (numpy semantics, as onnx.reference). The onnxruntime tests therefore draw
    # NaN-free data.
    "nan_in_data": lambda case, x: is_float(x.dtype) and bool(np.isnan(x.astype(np.float64)).any()),
    # On an input with a size-0 dimension, negative axes are ignored: shape (2, 0, 3) with
    # axes=[-2] returns the input unchanged (shape (2, 0, 3)) instead of -inf of shape (2, 1, 3)
    # or (2, 3); the same axes written as positive numbers are right.
    "negative_axes_on_empty_input": lambda case, x: x.size == 0 and _negative_axes(case),
    # Bool data with a size-0 dimension raises "ReduceMax is not defined for empty set with
    # bool type"; the ReduceMax-20 schema (and docs/semantics.md §4) give False.
    "bool_empty_input": lambda case, x: x.dtype == np.bool_ and x.size == 0,
}


def ort_deviation(case, x):
    """The name of the onnxruntime deviation this case would hit, or None."""
    for name, hits in ORT_DEVIATIONS.items():
        if hits(case, x):
            return name
    return None


def test_random_cases_against_onnxruntime():
    pytest.importorskip("onnxruntime")
    """The first cases of the reference test per opset (the jitted executables are reused).

    Dtypes onnxruntime has no kernel for are left out, and so are the cases that hit one of the
    named `ORT_DEVIATIONS` (NaN-free data is drawn, so ``nan_in_data`` never matches here).
    """
    checked, excluded = 0, set()
    with jax.enable_x64(True):
        for opset in range(1, 21):  # one jitted program and one session per opset
            data_rng = np.random.default_rng(3000 + opset)
            batch = []
            for case in cases_for_opset(opset)[:7]:
                if not ort_supports(case):
                    continue
                x = make_data(data_rng, case["shape"], case["dtype"], nan=False)
                deviation = ort_deviation(case, x)
                if deviation is not None:
                    excluded.add(deviation)
                    continue
                batch.append((case, x))
            if not batch:
                continue
            cases, xs = [c for c, _ in batch], [x for _, x in batch]
            for case, got, expected in zip(cases, jaxmax_batch(cases, xs),
                                           run_onnxruntime_batch(cases, xs), strict=True):
                assert_same(got, expected, "onnxruntime: " + describe(case))
                checked += 1
    assert checked >= 60, (checked, excluded)


def test_onnxruntime_corners():
    pytest.importorskip("onnxruntime")
    """Empty sets, -inf, +inf, int extremes and bool on onnxruntime (see `ORT_DEVIATIONS`)."""
    cases = [
        (np.array([[-INF, -INF], [-INF, INF], [3, -INF]], np.float32), 11),
        (np.zeros((2, 0, 3), np.float32), 13),
        (np.zeros((2, 0, 3), np.int64), 18),
        (np.zeros((2, 0, 3), np.int8), 20),
        # not (np.zeros((2, 0, 3), bool), 20): the ORT_DEVIATIONS entry "bool_empty_input"
        (np.array([[-128, -128], [127, -128]], np.int8), 12),
        (np.array([[True, False], [False, False]]), 20),
        (np.array([[np.iinfo(np.int64).min] * 2, [np.iinfo(np.int64).max, 0]], np.int64), 13),
    ]
    with jax.enable_x64(True):
        for x, opset in cases:
            for keepdims in (0, 1):
                case = {"opset": opset, "axes": [1], "keepdims": keepdims, "noop": None}
                assert ort_deviation(case, x) is None
                assert_same(call_jaxmax(x, case), run_onnxruntime(case, x), describe(case))
                assert_same(call_jaxmax(x, case), oracle_for(x, case), describe(case))
