"""ONNX Max against onnxruntime and onnx.reference, OpenVINO Maximum-1 against OpenVINO's
``Node.evaluate`` (its reference kernels): seeded configurations over broadcasting shapes, every
dtype the version allows, and NaN, +-inf and +-0 in every position (docs/semantics.md §7.3).

Runtime deviations from the contract, each excluded explicitly below:
* onnxruntime's zero on a ``-0.0``/``+0.0`` tie depends on the length and broadcasting, and
  onnx.reference returns the second argument on ties (float16: the first): jaxmax gives the
  IEEE ``+0.0`` in either order, so those elements are compared by value, not sign.
* onnxruntime 1.32 has no Max kernel for int16, uint16, bfloat16 (NOT_IMPLEMENTED), nor for
  float64 below opset 8: those are checked against onnx.reference only.
* ``Node.evaluate`` has no Maximum kernel for int8, uint8, int16, uint16, float64 (returns
  False): those are checked against the NumPy oracle (test_elementwise_max_values.py) only.
"""

from __future__ import annotations

import warnings

import max_cases as mc
import numpy as np
import pytest
from helpers import assert_same, is_float, x64_for
from jit_batch import jit_each

from jaxmax import onnx as jonnx
from jaxmax import openvino as ov_max

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")

import openvino.opset1 as ov_ops  # noqa: E402
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from ov_reference import evaluate  # noqa: E402

ONNX_DTYPES = {6: mc.FLOATS, 8: mc.FLOATS, 12: mc.FLOATS + mc.INTEGERS, 13: mc.ALL}
ORT_MISSING = {np.dtype(np.int16), np.dtype(np.uint16), mc.BF16}
EVALUATE_MISSING = {np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.float64)}


def max_model(dtype, shape_lists, opset):
    """One Max node per list of input shapes in `shape_lists` (a batch of cases in one model,
    one session): node j reads ``x{i}_{j}`` and writes ``y{j}``."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inputs = [helper.make_tensor_value_info(f"x{i}_{j}", elem, list(s))
              for j, shapes in enumerate(shape_lists) for i, s in enumerate(shapes)]
    nodes = [helper.make_node("Max", [f"x{i}_{j}" for i in range(len(shapes))], [f"y{j}"])
             for j, shapes in enumerate(shape_lists)]
    outputs = [helper.make_tensor_value_info(f"y{j}", elem, None) for j in range(len(nodes))]
    graph = helper.make_graph(nodes, "max", inputs, outputs)
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(graph, opset_imports=opsets,
                             ir_version=helper.find_min_ir_version_for(opsets, ignore_unknown=True))


def _feeds(batch):
    return {f"x{i}_{j}": x for j, xs in enumerate(batch) for i, x in enumerate(xs)}


def run_ort_batch(batch, opset):
    """onnxruntime's Max of each input list of `batch`, by one session."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    model = max_model(batch[0][0].dtype, [[x.shape for x in xs] for xs in batch], opset)
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, _feeds(batch))


def run_reference_batch(batch, opset):
    """onnx.reference's Max of each input list of `batch`, by one evaluator."""
    model = max_model(batch[0][0].dtype, [[x.shape for x in xs] for xs in batch], opset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return ReferenceEvaluator(model).run(None, _feeds(batch))


def run_ort(xs, opset):
    return run_ort_batch([xs], opset)[0]


def run_reference(xs, opset):
    return run_reference_batch([xs], opset)[0]


def zero_tie_mask(xs):
    """Elements where the inputs' maximum is a zero reached by both -0.0 and +0.0: the runtimes
    choose a zero there by their own rules (docs/semantics.md §7.3), jaxmax gives +0.0."""
    wide = np.broadcast_arrays(*(np.asarray(x).astype(np.float64) for x in xs))
    stacked = np.stack(wide)
    top = np.max(np.where(np.isnan(stacked), -np.inf, stacked), axis=0)
    has_neg = np.any((stacked == 0) & np.signbit(stacked), axis=0)
    has_pos = np.any((stacked == 0) & ~np.signbit(stacked), axis=0)
    return (top == 0) & has_neg & has_pos & ~np.any(np.isnan(stacked), axis=0)


def assert_matches(actual, expected, context, ignore_zero_sign=None):
    """Exact values and dtype; zero signs too, except where `ignore_zero_sign` is True."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert_same(actual, expected, context, zero_signs=False)
    if is_float(expected.dtype):
        keep = ~np.isnan(expected.astype(np.float64))
        if ignore_zero_sign is not None:
            keep &= ~ignore_zero_sign
        np.testing.assert_array_equal(np.signbit(actual.astype(np.float64))[keep],
                                      np.signbit(expected.astype(np.float64))[keep],
                                      err_msg=f"{context}: zero signs")


def _shape_sets(opset):
    if opset < 8:
        return [((5,), (5,)), ((2, 3), (2, 3)), ((), ()), ((4,), (4,), (4,)), ((17,), (17,))]
    return mc.BROADCAST_PAIRS + [((2, 3), (3,), (1, 1)), ((4,), (4,), (4,)),
                                 ((3, 1, 2), (1, 4, 1), (2,)), ((3,),)]


@pytest.mark.parametrize("opset,dtype", [(v, d) for v, ds in ONNX_DTYPES.items() for d in ds],
                         ids=str)
def test_onnx_max_against_runtimes(opset, dtype):
    # every case of the test in one jitted program (one compile with the fast options,
    # tests/jit_batch.py), one onnx.reference model and one onnxruntime session (one Max
    # node per case)
    rng = np.random.default_rng(7 * opset + mc.ALL.index(dtype))
    use_ort = dtype not in ORT_MISSING and not (opset < 8 and dtype == np.float64)
    with x64_for(dtype):
        cases = [(round_, shapes, [mc.values(rng, dtype, s) for s in shapes])
                 for round_ in range(2) for shapes in _shape_sets(opset)]
        batch = [xs for _, _, xs in cases]
        got = jit_each([(lambda *xs: jonnx.max(*xs, opset=opset), xs) for xs in batch],
                       as_eager=True)
        reference = run_reference_batch(batch, opset)
        runtime = run_ort_batch(batch, opset) if use_ort else [None] * len(cases)
        for (round_, shapes, xs), y, want_ref, want_ort in zip(cases, got, reference, runtime,
                                                               strict=True):
            ties = zero_tie_mask(xs) if is_float(dtype) else None
            context = f"opset {opset} {dtype} {shapes} round {round_}"
            # onnx.reference: the second argument on a +-0 tie (docs/semantics.md §7.3)
            assert_matches(y, want_ref, "reference " + context, ties)
            if use_ort:
                # onnxruntime: the zero of a +-0 tie varies with length (docs/semantics.md §7.3)
                assert_matches(y, want_ort, "onnxruntime " + context, ties)


def test_onnx_max_zero_ties_are_ieee_where_the_runtimes_split():
    """The excluded elements: jaxmax gives +0.0 on every -0/+0 tie, while onnx.reference gives
    the second argument's zero and onnxruntime the first's at length 2 (probed)."""
    a = np.array([-0.0, 0.0], np.float32)
    b = np.array([0.0, -0.0], np.float32)
    assert not np.signbit(np.asarray(jonnx.max(a, b))).any()
    assert not np.signbit(np.asarray(jonnx.max(b, a))).any()
    np.testing.assert_array_equal(np.signbit(run_reference([a, b], 13)), [False, True])
    np.testing.assert_array_equal(np.signbit(run_ort([a, b], 13)), [True, False])


OV_DTYPES = [d for d in mc.ALL if d not in EVALUATE_MISSING]


def ov_evaluate(a, b, rule):
    def factory(x, y):
        if rule != "pdpd":
            return ov_ops.maximum(x, y, auto_broadcast=rule)
        # The Python factory sets PDPD's axis to 0; the spec's default (and jaxmax's) is -1:
        # build the node with numpy broadcasting, then switch it and re-infer its shape.
        node = ov_ops.maximum(x, y, auto_broadcast="numpy")
        node.set_attribute("auto_broadcast", "pdpd")
        node.set_attribute("auto_broadcast.auto_broadcast_axis", -1)
        node.validate_and_infer_types()
        return node

    return evaluate(factory, a, b)[0]


@pytest.mark.parametrize("dtype", OV_DTYPES, ids=str)
@pytest.mark.parametrize("rule", ["numpy", "none", "pdpd"])
def test_ov_maximum_against_evaluate(dtype, rule):
    # every case of the test in one jitted program (one compile with the fast options,
    # tests/jit_batch.py)
    rng = np.random.default_rng(31 * mc.ALL.index(dtype) + len(rule))
    pairs = {"numpy": mc.BROADCAST_PAIRS, "pdpd": mc.PDPD_PAIRS,
             "none": [(s, s) for s, _ in mc.BROADCAST_PAIRS]}[rule]
    with x64_for(dtype):
        cases = [(round_, sa, sb, mc.values(rng, dtype, sa), mc.values(rng, dtype, sb))
                 for round_ in range(2) for sa, sb in pairs]
        got = jit_each([(lambda a, b: ov_max.maximum(a, b, auto_broadcast=rule), (a, b))
                        for *_, a, b in cases], as_eager=True)
        for (round_, sa, sb, a, b), y in zip(cases, got, strict=True):
            assert_matches(y, ov_evaluate(a, b, rule), f"{rule} {dtype} {sa} {sb} {round_}")


@pytest.mark.parametrize("dtype", [d for d in OV_DTYPES if is_float(d)], ids=str)
def test_ov_maximum_every_special_pair_against_evaluate(dtype):
    a, b = mc.every_zero_and_nan_position(dtype)
    for x, y in ((a, b), (b, a)):
        assert_matches(ov_max.maximum(x, y), ov_evaluate(x, y, "numpy"), str(dtype))


@pytest.mark.parametrize("sa,sb", mc.PDPD_BAD)
def test_pdpd_shapes_openvino_rejects(sa, sb):
    """The shapes jaxmax rejects under pdpd are the ones OpenVINO's shape inference rejects."""
    with pytest.raises(RuntimeError):
        ov_evaluate(np.ones(sa, np.float32), np.ones(sb, np.float32), "pdpd")
    with pytest.raises(ValueError, match="^Maximum-1: "):
        ov_max.maximum(np.ones(sa, np.float32), np.ones(sb, np.float32), auto_broadcast="pdpd")
