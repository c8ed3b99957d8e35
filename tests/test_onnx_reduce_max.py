"""Tests of ``jaxmax.onnx.reduce_max``: ONNX ReduceMax, since-versions 1, 11, 12, 13, 18 and 20.

The contract is docs/semantics.md (ONNX ReduceMax) and the ONNX ReduceMax schemas 1-20.
Everything here is checked against oracles that do not call jaxmax:

* ``oracle_reduce_max``: plain Python loops over every output element and every element of its
  reduced slice (NaN propagates, the empty set gives -inf / iinfo.min / False, bool is or);
* hand-written expected values for the corner cases;
* ``onnx.reference.ReferenceEvaluator`` on a model built for every opset 1..20 (axes an attribute
  before 18, an input from 18), and a smaller set against onnxruntime;
* the ONNX backend node test cases for ReduceMax that ship with the installed ``onnx`` package;
* the operator schemas in ``onnx.defs`` for the per-opset dtype table.
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import onnx.backend.test
import pytest
from helpers import assert_same, is_float
from onnx import AttributeProto, TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from jaxmax import onnx as jonnx

try:  # optional: only the onnxruntime differential test needs it
    import onnxruntime as ort
except ImportError:  # pragma: no cover - onnxruntime is installed in the project venv
    ort = None

OP = "ONNX ReduceMax"
BF16 = jnp.bfloat16  # the ml_dtypes bfloat16 scalar type, as a NumPy dtype
LATEST_OPSET = onnx.defs.onnx_opset_version()

# The allowed data types per since-version, written down from docs/semantics.md (ONNX
# ReduceMax) and the spec's type constraints. `test_dtype_table_matches_onnx_schemas` checks
# it against onnx.defs.
_BASE = ("float16", "float32", "float64", "int32", "int64", "uint32", "uint64")
ALLOWED = {
    1: frozenset(_BASE),
    11: frozenset(_BASE),
    12: frozenset(_BASE + ("int8", "uint8")),
    13: frozenset(_BASE + ("int8", "uint8", "bfloat16")),
    18: frozenset(_BASE + ("int8", "uint8", "bfloat16")),
    20: frozenset(_BASE + ("int8", "uint8", "bfloat16", "bool")),
}
ALL_DTYPES = ("bool", "int8", "uint8", "int32", "uint32", "int64", "uint64",
              "float16", "bfloat16", "float32", "float64")
NEVER_ALLOWED = ("int16", "uint16", "complex64")  # no ReduceMax version lists these


def version_of(opset: int) -> int:
    """The since-version in force at `opset`: the largest one that is <= opset (ONNX rule)."""
    return max(v for v in ALLOWED if v <= opset)


def np_dtype(name: str) -> np.dtype:
    return np.dtype(BF16) if name == "bfloat16" else np.dtype(name)


# --------------------------------------------------------------------------------------------
# The NumPy oracle (plain loops) and comparison helpers
# --------------------------------------------------------------------------------------------

def empty_value(dtype):
    """The ONNX empty-set value: -inf (floating), iinfo.min (integers), False (bool)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.bool_(False)
    if is_float(dtype):
        return np.array(-np.inf, dtype)[()]
    return np.array(np.iinfo(dtype).min, dtype)[()]


def oracle_reduce_max(x, axes=None, keepdims=1, noop_with_empty_axes=0):
    """ONNX ReduceMax by loops: every output element folds its reduced slice one by one."""
    x = np.asarray(x)
    r = x.ndim
    given = [] if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
    reduced = []
    for a in given:
        if not -r <= a <= r - 1:
            raise ValueError(f"oracle: axis {a} out of range for rank {r}")
        a = a + r if a < 0 else a
        if a in reduced:
            raise ValueError(f"oracle: repeated axis {a}")
        reduced.append(a)
    if not reduced:
        if noop_with_empty_axes:
            return x.copy()
        reduced = list(range(r))
    kept_shape = tuple(1 if i in reduced else d for i, d in enumerate(x.shape))
    floating = is_float(x.dtype)
    boolean = x.dtype == np.bool_
    out = np.empty(kept_shape, x.dtype)
    for out_idx in np.ndindex(*kept_shape):
        acc = empty_value(x.dtype)
        saw_nan = False
        for red_idx in itertools.product(*(range(x.shape[i]) for i in reduced)):
            idx = list(out_idx)
            for axis, j in zip(reduced, red_idx, strict=True):
                idx[axis] = j
            value = x[tuple(idx)]
            if boolean:
                acc = np.bool_(acc or value)
            elif floating and value != value:
                saw_nan = True
            elif value > acc:
                acc = value
        out[out_idx] = np.array(np.nan, x.dtype)[()] if saw_nan else acc
    if not keepdims:
        out = out.reshape(tuple(d for i, d in enumerate(x.shape) if i not in reduced))
    return out


def x64_if_needed(*dtype_names):
    """`jax.enable_x64(True)` when a 64-bit dtype is involved, else a null context."""
    if any(np_dtype(d).itemsize == 8 for d in dtype_names):
        return jax.enable_x64(True)
    return contextlib.nullcontext()


def make_data(rng, shape, dtype_name, *, nan=True):
    """Seeded data with ties, extremes and (for floats) NaN / +-inf sprinkled in."""
    dtype = np_dtype(dtype_name)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        return (rng.random(n) < 0.3).reshape(shape)
    if is_float(dtype):
        fi = jnp.finfo(dtype)
        vals = np.where(rng.random(n) < 0.5, rng.integers(-4, 5, n).astype(np.float64),
                        rng.standard_normal(n) * 100.0)
        specials = np.array([np.inf, -np.inf, float(fi.max), float(fi.min), -0.0]
                            + ([np.nan] if nan else []))
        pick = rng.random(n) < 0.15
        vals[pick] = rng.choice(specials, int(pick.sum()))
        return vals.astype(dtype).reshape(shape)
    ii = np.iinfo(dtype)
    small = rng.integers(max(ii.min, -3), 4, n).astype(dtype)
    full = rng.integers(ii.min, ii.max, n, dtype=dtype, endpoint=True)
    extremes = rng.choice(np.array([ii.min, ii.max], dtype), n)
    u = rng.random(n)
    return np.where(u < 0.45, small, np.where(u < 0.9, full, extremes)).astype(dtype).reshape(shape)


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
    return oracle_reduce_max(x, case["axes"], keep, noop)


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


def run_reference(case, x):
    model, axes_feed = build_model(case, x.dtype.name, x.shape)
    return ReferenceEvaluator(model).run(None, feeds_for(x, axes_feed))[0]


def run_onnxruntime(case, x):
    model, axes_feed = build_model(case, x.dtype.name, x.shape)
    options = ort.SessionOptions()
    options.log_severity_level = 3  # opsets < 7 print a "not guaranteed" warning otherwise
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds_for(x, axes_feed))[0]


# --------------------------------------------------------------------------------------------
# Random cases
# --------------------------------------------------------------------------------------------

# A fixed pool of shapes (size-0 dims included) keeps the number of distinct compilations small:
# cases that share shape, dtype, axes and keepdims reuse the jitted executable.
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
# The dtype table
# --------------------------------------------------------------------------------------------

_ONNX_TYPE_NAMES = {"float": "float32", "double": "float64"}


def test_dtype_table_matches_onnx_schemas():
    """The table above agrees with the type constraints of the installed ONNX schemas."""
    for opset in range(1, LATEST_OPSET + 1):
        schema = onnx.defs.get_schema("ReduceMax", opset)
        assert schema.since_version == version_of(opset), opset
        allowed = {_ONNX_TYPE_NAMES.get(t[len("tensor("):-1], t[len("tensor("):-1])
                   for t in schema.type_constraints[0].allowed_type_strs}
        assert allowed == set(ALLOWED[version_of(opset)]), opset


# None and [] reduce all; [2, -3] is (2, 0): axes in descending order
GRID_AXES = [None, [], [-1], (1,), [0, 2], [2, -3]]


@pytest.mark.parametrize("dtype_name", ALL_DTYPES + NEVER_ALLOWED)
@pytest.mark.parametrize("opset", list(range(1, 21)) + [21, LATEST_OPSET])
def test_dtype_grid_against_oracle(opset, dtype_name):
    """Allowed dtypes agree exactly with the oracle; the others raise TypeError naming `data`."""
    if dtype_name in NEVER_ALLOWED or dtype_name not in ALLOWED[version_of(opset)]:
        x = np.zeros((2, 3), np_dtype(dtype_name))
        with pytest.raises(TypeError) as err:
            jonnx.reduce_max(x, [0], opset=opset)
        msg = str(err.value)
        assert msg.startswith(OP) and "`data`" in msg and dtype_name in msg, msg
        return
    rng = np.random.default_rng(7)  # the same data for a dtype at every opset
    x = make_data(rng, (3, 4, 2), dtype_name)
    with x64_if_needed(dtype_name):
        for axes, keepdims in itertools.product(GRID_AXES, (0, 1)):
            got = jonnx.reduce_max(x, axes, keepdims=keepdims, opset=opset)
            assert_same(got, oracle_reduce_max(x, axes, keepdims),
                        f"opset={opset} {dtype_name} axes={axes} keepdims={keepdims}")


# --------------------------------------------------------------------------------------------
# Corner cases with hand-written expected values
# --------------------------------------------------------------------------------------------

NAN, INF = np.nan, np.inf


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "float32", "float64"])
def test_nan_propagates_and_inf_rules(dtype_name):
    dt = np_dtype(dtype_name)
    x = np.array([[NAN, 1, 2],      # NaN first
                  [1, 2, NAN],      # NaN last
                  [INF, NAN, 1],    # +inf and NaN in the same slice
                  [NAN, INF, -INF],
                  [-INF, -INF, -INF],  # -inf stays -inf (not lowest)
                  [NAN, NAN, NAN],
                  [-INF, 3, INF],   # +inf wins
                  [-INF, -7, -INF]], dt)
    expected = np.array([NAN, NAN, NAN, NAN, -INF, NAN, INF, -7], dt)
    opset = 13 if dtype_name == "bfloat16" else 11
    with x64_if_needed(dtype_name):
        assert_same(jonnx.reduce_max(x, [1], keepdims=0, opset=opset), expected)
        assert_same(jonnx.reduce_max(x, [-1], keepdims=1, opset=20), expected[:, None])
        assert_same(oracle_reduce_max(x, [1], 0), expected)
        # over axis 0 every column holds a NaN
        assert_same(jonnx.reduce_max(x, 0, keepdims=0, opset=18), np.array([NAN] * 3, dt))
        # reduce all
        assert_same(jonnx.reduce_max(x, None, opset=20), np.array([[NAN]], dt))
        assert_same(jonnx.reduce_max(x[4:5], None, keepdims=0), np.array(-INF, dt))


@pytest.mark.parametrize("dtype_name", ["int8", "uint8", "int32", "uint32", "int64", "uint64"])
def test_integer_extremes(dtype_name):
    dt = np.dtype(dtype_name)
    lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
    x = np.array([[lo, lo, lo], [lo, hi, lo], [hi, hi, 0], [0, 1, lo], [hi - 1, lo + 1, 2]], dt)
    expected = np.array([lo, hi, hi, 1, hi - 1], dt)
    with x64_if_needed(dtype_name):
        assert_same(jonnx.reduce_max(x, [1], keepdims=0, opset=20), expected)
        assert_same(jonnx.reduce_max(x, [-1], keepdims=True, opset=13), expected[:, None])
        assert_same(jonnx.reduce_max(x, [0], keepdims=False, opset=12), np.array([hi, hi, 2], dt))
        assert_same(jonnx.reduce_max(x, None, keepdims=0), np.array(hi, dt))
        assert_same(oracle_reduce_max(x, [1], 0), expected)


def test_bool_is_logical_or_at_opset_20():
    x = np.array([[True, True], [True, False], [False, True], [False, False]])
    assert_same(jonnx.reduce_max(x, [1], opset=20), np.array([[True], [True], [True], [False]]))
    assert_same(jonnx.reduce_max(x, [0], keepdims=0, opset=20), np.array([True, True]))
    assert_same(jonnx.reduce_max(x[3:], None, keepdims=0, opset=20), np.array(False))
    assert_same(jonnx.reduce_max(x, None, keepdims=0, opset=LATEST_OPSET), np.array(True))


@pytest.mark.parametrize("dtype_name", ALL_DTYPES)
def test_empty_set(dtype_name):
    """A reduced dimension of size 0 gives -inf / iinfo.min / False (the schema's rule)."""
    dt = np_dtype(dtype_name)
    fill = empty_value(dt)
    x = np.zeros((2, 0, 3), dt)
    with x64_if_needed(dtype_name):
        assert_same(jonnx.reduce_max(x, [1]), np.full((2, 1, 3), fill, dt))
        assert_same(jonnx.reduce_max(x, [-2], keepdims=0), np.full((2, 3), fill, dt))
        assert_same(jonnx.reduce_max(x, [], keepdims=0), np.array(fill, dt))
        # noop_with_empty_axes keeps the empty input as it is
        assert_same(jonnx.reduce_max(x, [], noop_with_empty_axes=1), x)
        if dtype_name in ("float32", "int32", "uint8", "bool"):  # (fewer compilations)
            assert_same(jonnx.reduce_max(x, [1, 2], keepdims=0), np.full((2,), fill, dt))
            assert_same(jonnx.reduce_max(x, None), np.full((1, 1, 1), fill, dt))
            assert_same(jonnx.reduce_max(np.zeros((0,), dt), 0, keepdims=0), np.array(fill, dt))
            # an empty dimension that is kept: the output is empty too
            assert_same(jonnx.reduce_max(x, [0, 2], keepdims=0), np.zeros((0,), dt))
            assert_same(jonnx.reduce_max(x, [2]), np.zeros((2, 0, 1), dt))
    if is_float(dt):
        assert np.isneginf(np.asarray(fill, np.float64))
    elif dt != np.bool_:
        assert fill == np.iinfo(dt).min


@pytest.mark.parametrize("dtype_name", ["float32", "int8", "bool", "bfloat16"])
def test_rank_0(dtype_name):
    dt = np_dtype(dtype_name)
    x = np.array(True if dt == np.bool_ else -3, dt)
    for axes in (None, [], (), np.zeros(0, np.int64)):
        for keepdims in (0, 1):
            assert_same(jonnx.reduce_max(x, axes, keepdims=keepdims), x)
        opset = 18 if dt != np.bool_ else 20
        assert_same(jonnx.reduce_max(x, axes, noop_with_empty_axes=1, opset=opset), x)
    if is_float(dt):
        nan = np.array(NAN, dt)
        assert_same(jonnx.reduce_max(nan, None), nan)
        assert_same(jonnx.reduce_max(np.array(-INF, dt), None, keepdims=0), np.array(-INF, dt))
    for bad in ([0], -1, [-1]):  # the range [-r, r-1] is empty for r = 0, as onnx.reference says
        with pytest.raises(ValueError) as err:
            jonnx.reduce_max(x, bad)
        assert str(err.value).startswith(OP) and "`axes`" in str(err.value)


def test_axes_none_empty_and_noop():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, ::-1] * np.float32(-1) + 5
    x = np.ascontiguousarray(x)
    reduce_all_keep = np.full((1, 1, 1), x.max(), np.float32)
    reduce_all_drop = np.array(x.max(), np.float32)
    for opset in (1, 11, 12, 13, 17, 18, 19, 20, LATEST_OPSET):
        for axes in (None, [], (), np.zeros(0, np.int64), jnp.zeros(0, jnp.int32)):
            assert_same(jonnx.reduce_max(x, axes, opset=opset), reduce_all_keep)
            assert_same(jonnx.reduce_max(x, axes, keepdims=0, opset=opset), reduce_all_drop)
    for opset in (18, 19, 20, LATEST_OPSET):
        for axes in (None, [], np.zeros(0, np.int64)):
            for noop in (1, True):
                for keepdims in (0, 1):
                    assert_same(jonnx.reduce_max(x, axes, keepdims=keepdims,
                                                 noop_with_empty_axes=noop, opset=opset), x)
            assert_same(jonnx.reduce_max(x, axes, noop_with_empty_axes=0, opset=opset),
                        reduce_all_keep)
        # with non-empty axes the flag changes nothing
        assert_same(jonnx.reduce_max(x, [1], keepdims=0, noop_with_empty_axes=1, opset=opset),
                    oracle_reduce_max(x, [1], 0))


def test_default_keepdims_is_1_and_default_opset_allows_bool():
    x = np.array([[5, 1], [20, 2]], np.float32)
    assert_same(jonnx.reduce_max(x, [1]), np.array([[5], [20]], np.float32))
    assert_same(jonnx.reduce_max(x), np.array([[20]], np.float32))
    assert_same(jonnx.reduce_max(np.array([[False, True]]), [1], keepdims=0), np.array([True]))


@pytest.mark.parametrize("axes, reduced", [
    (1, [1]), (-1, [2]), (np.int32(-3), [0]), (np.array(2), [2]), ((0,), [0]),
    ([0, 2], [0, 2]), ([2, 0], [0, 2]), ([-1, -3], [0, 2]), ([1, -1, 0], [0, 1, 2]),
    (np.array([0, -1], np.int64), [0, 2]), (np.array([1], np.uint8), [1]),
    (jnp.array([-2, 2]), [1, 2]), ([np.int64(1), np.int64(2)], [1, 2]),
])
@pytest.mark.parametrize("keepdims", [0, 1, True, False, np.int64(1), np.bool_(False)])
def test_axes_forms_and_negative_axes(axes, reduced, keepdims):
    """Every accepted axes form equals the reduction over the normalised positive axes."""
    rng = np.random.default_rng(3)
    x = make_data(rng, (2, 3, 4), "float32")
    got = jonnx.reduce_max(x, axes, keepdims=keepdims, opset=18)
    assert_same(got, oracle_reduce_max(x, reduced, int(keepdims)))
    assert_same(jonnx.reduce_max(x, axes, keepdims=keepdims, opset=11), got)


def test_keepdims_shapes_by_hand():
    x = np.array([[[5, 1], [20, 2]], [[30, 1], [40, 2]], [[55, 1], [60, 2]]], np.float32)
    assert_same(jonnx.reduce_max(x, [1], keepdims=0),
                np.array([[20, 2], [40, 2], [60, 2]], np.float32))
    assert_same(jonnx.reduce_max(x, [1], keepdims=1),
                np.array([[[20, 2]], [[40, 2]], [[60, 2]]], np.float32))
    assert_same(jonnx.reduce_max(x, [0, 2], keepdims=True), np.array([[[55], [60]]], np.float32))
    assert_same(jonnx.reduce_max(x, [0, 2], keepdims=False), np.array([55, 60], np.float32))


def test_jit_equals_eager_and_oracle():
    rng = np.random.default_rng(5)
    x = make_data(rng, (3, 4, 2), "float32")
    f = jax.jit(jonnx.reduce_max,
                static_argnames=("axes", "keepdims", "noop_with_empty_axes", "opset"))
    for axes in (None, (0,), (-1, 0), ()):
        for keepdims in (0, 1):
            expected = oracle_reduce_max(x, axes, keepdims)
            assert_same(f(x, axes=axes, keepdims=keepdims, opset=13), expected)
            assert_same(jonnx.reduce_max(x, axes, keepdims=keepdims, opset=13), expected)
    g = jax.jit(lambda d: jonnx.reduce_max(d, [1, 2], keepdims=0))
    assert_same(g(x), oracle_reduce_max(x, [1, 2], 0))


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

_F32 = np.zeros((2, 3), np.float32)


@pytest.mark.parametrize("data, kwargs, error, argname", [
    # dtypes the opset does not allow
    (np.zeros((2,), np.int8), {"opset": 11}, TypeError, "data"),
    (np.zeros((2,), np.uint8), {"opset": 1}, TypeError, "data"),
    (np.zeros((2,), np.uint8), {"opset": 10}, TypeError, "data"),
    (np.zeros((2,), BF16), {"opset": 12}, TypeError, "data"),
    (np.zeros((2,), bool), {"opset": 18}, TypeError, "data"),
    (np.zeros((2,), bool), {"opset": 19}, TypeError, "data"),
    (np.zeros((2,), bool), {"opset": 13}, TypeError, "data"),
    (np.zeros((2,), np.int16), {"opset": 20}, TypeError, "data"),
    # opset
    (_F32, {"opset": 0}, ValueError, "opset"),
    (_F32, {"opset": -3}, ValueError, "opset"),
    (_F32, {"opset": 13.0}, TypeError, "opset"),
    # noop_with_empty_axes does not exist before 18
    (_F32, {"opset": 13, "noop_with_empty_axes": 1}, ValueError, "noop_with_empty_axes"),
    (_F32, {"opset": 17, "noop_with_empty_axes": True}, ValueError, "noop_with_empty_axes"),
    (_F32, {"opset": 1, "noop_with_empty_axes": 1, "axes": []}, ValueError, "noop_with_empty_axes"),
    (_F32, {"opset": 18, "noop_with_empty_axes": 2}, ValueError, "noop_with_empty_axes"),
    # keepdims
    (_F32, {"keepdims": 2}, ValueError, "keepdims"),
    (_F32, {"keepdims": -1}, ValueError, "keepdims"),
    (_F32, {"keepdims": 1.0}, TypeError, "keepdims"),
    # axes out of range / repeated
    (_F32, {"axes": [2]}, ValueError, "axes"),
    (_F32, {"axes": [-3]}, ValueError, "axes"),
    (_F32, {"axes": 5, "opset": 11}, ValueError, "axes"),
    (_F32, {"axes": [0, 0]}, ValueError, "axes"),
    (_F32, {"axes": [1, -1]}, ValueError, "axes"),
    (_F32, {"axes": np.array([0, -2]), "opset": 13}, ValueError, "axes"),
    # axes of the wrong kind
    (_F32, {"axes": [0.0]}, TypeError, "axes"),
    (_F32, {"axes": 1.0}, TypeError, "axes"),
    (_F32, {"axes": np.array([1.0], np.float32), "opset": 18}, TypeError, "axes"),
    (_F32, {"axes": True}, TypeError, "axes"),
])
def test_bad_input_raises(data, kwargs, error, argname):
    kwargs = dict(kwargs)
    axes = kwargs.pop("axes", [0])
    with pytest.raises(error) as err:
        jonnx.reduce_max(data, axes, **kwargs)
    msg = str(err.value)  # (an AxisError is a ValueError)
    assert msg.startswith(OP), msg
    assert f"`{argname}`" in msg, msg


def test_axes_spellings_agree_and_bad_axes_raise_every_time():
    # ints and tuples of ints are normalised once and then looked up: the lookup must give the
    # other spellings' result, and a bad value must raise on every call, not only the first
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5
    want = oracle_reduce_max(x, axes=[0, 2], keepdims=0)
    for axes in ((0, 2), (0, -1), [0, 2], np.array([0, 2]), (2, 0)):
        for _ in range(2):
            assert_same(jonnx.reduce_max(x, axes, keepdims=0), want, f"axes={axes!r}")
    assert_same(jonnx.reduce_max(x, -2, keepdims=0, opset=11),
                oracle_reduce_max(x, axes=[1], keepdims=0))
    # the same spelling on data of another rank names other axes
    for data in (x, x[0], x[:, :, :1, None]):
        assert_same(jonnx.reduce_max(data, (-1, 0), keepdims=0),
                    oracle_reduce_max(data, axes=[-1, 0], keepdims=0), f"rank {data.ndim}")
    for axes, error in (((0, 0), ValueError), ((3,), ValueError), (-4, ValueError),
                        ((True,), TypeError), ((1.0,), TypeError)):
        for _ in range(2):
            with pytest.raises(error, match=OP):
                jonnx.reduce_max(x, axes)


@pytest.mark.parametrize("opset", [18, 20])
def test_traced_static_arguments_raise_type_error(opset):
    x = jnp.zeros((2, 3), jnp.float32)
    traced = {
        "axes": lambda d, v: jonnx.reduce_max(d, v, opset=opset),
        "keepdims": lambda d, v: jonnx.reduce_max(d, [0], keepdims=v, opset=opset),
        "noop_with_empty_axes": lambda d, v: jonnx.reduce_max(d, [], noop_with_empty_axes=v,
                                                              opset=opset),
        "opset": lambda d, v: jonnx.reduce_max(d, [0], opset=v),
    }
    values = {"axes": jnp.array([0]), "keepdims": 1, "noop_with_empty_axes": 1, "opset": opset}
    for name, fn in traced.items():
        with pytest.raises(TypeError) as err:
            jax.jit(fn)(x, values[name])
        msg = str(err.value)
        assert msg.startswith(OP) and f"`{name}`" in msg and "static" in msg, msg


def test_errors_are_raised_for_traced_data_too():
    """The dtype check needs only the (static) dtype, so it fires inside jit as well."""
    with pytest.raises(TypeError) as err:
        jax.jit(lambda d: jonnx.reduce_max(d, [0], opset=11))(jnp.zeros((2,), jnp.int8))
    assert str(err.value).startswith(OP) and "`data`" in str(err.value)
    with pytest.raises(ValueError) as err:
        jax.jit(lambda d: jonnx.reduce_max(d, [3]))(jnp.zeros((2,), jnp.float32))
    assert str(err.value).startswith(OP) and "`axes`" in str(err.value)


# --------------------------------------------------------------------------------------------
# Differential: onnx.reference, every opset 1..20 (and two later ones)
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", list(range(1, 21)) + [21, LATEST_OPSET])
def test_random_cases_against_onnx_reference(opset):
    data_rng = np.random.default_rng(2000 + opset)
    cases = cases_for_opset(opset)
    with jax.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # onnx.reference on NaN / empty input
        for case in cases:
            x = make_data(data_rng, case["shape"], case["dtype"])
            got = call_jaxmax(x, case)
            expected = run_reference(case, x)
            assert_same(got, expected, "onnx.reference: " + describe(case))
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


# onnxruntime deviations from the contract, excluded by name. None of them is listed in
# docs/semantics.md (section 4 documents no onnxruntime deviation); all three are reported.
ORT_DEVIATIONS = {
    # NaN does not propagate: onnxruntime keeps a NaN only when it comes first in the slice,
    # max([1, NaN, 3]) -> 3, max([+inf, NaN]) -> inf. docs/semantics.md (ONNX ReduceMax): NaN
    # propagates (numpy semantics, as onnx.reference). The onnxruntime tests therefore draw
    # NaN-free data.
    "nan_in_data": lambda case, x: is_float(x.dtype) and bool(np.isnan(x.astype(np.float64)).any()),
    # On an input with a size-0 dimension, negative axes are ignored: shape (2, 0, 3) with
    # axes=[-2] returns the input unchanged (shape (2, 0, 3)) instead of -inf of shape (2, 1, 3)
    # or (2, 3); the same axes written as positive numbers are right.
    "negative_axes_on_empty_input": lambda case, x: x.size == 0 and _negative_axes(case),
    # Bool data with a size-0 dimension raises "ReduceMax is not defined for empty set with
    # bool type"; the ReduceMax-20 schema (and docs/semantics.md (ONNX ReduceMax)) give False.
    "bool_empty_input": lambda case, x: x.dtype == np.bool_ and x.size == 0,
}


def ort_deviation(case, x):
    """The name of the onnxruntime deviation this case would hit, or None."""
    for name, hits in ORT_DEVIATIONS.items():
        if hits(case, x):
            return name
    return None


@pytest.mark.skipif(ort is None, reason="onnxruntime is not installed")
def test_random_cases_against_onnxruntime():
    """The first cases of the reference test per opset (the jitted executables are reused).

    Dtypes onnxruntime has no kernel for are left out, and so are the cases that hit one of the
    named `ORT_DEVIATIONS` (NaN-free data is drawn, so ``nan_in_data`` never matches here).
    """
    checked, excluded = 0, set()
    with jax.enable_x64(True):
        for opset in range(1, 21):
            data_rng = np.random.default_rng(3000 + opset)
            for case in cases_for_opset(opset)[:7]:
                if not ort_supports(case):
                    continue
                x = make_data(data_rng, case["shape"], case["dtype"], nan=False)
                deviation = ort_deviation(case, x)
                if deviation is not None:
                    excluded.add(deviation)
                    continue
                assert_same(call_jaxmax(x, case), run_onnxruntime(case, x),
                            "onnxruntime: " + describe(case))
                checked += 1
    assert checked >= 60, (checked, excluded)


@pytest.mark.skipif(ort is None, reason="onnxruntime is not installed")
def test_onnxruntime_corners():
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


# --------------------------------------------------------------------------------------------
# The ONNX backend node test cases for ReduceMax shipped with the installed onnx package
# --------------------------------------------------------------------------------------------

# The cases onnx 1.23's generator (onnx/backend/test/case/node/reducemax.py) defines.
EXPECTED_BACKEND_CASES = {
    "test_reduce_max_do_not_keepdims_example", "test_reduce_max_do_not_keepdims_random",
    "test_reduce_max_keepdims_example", "test_reduce_max_keepdims_random",
    "test_reduce_max_default_axes_keepdim_example", "test_reduce_max_default_axes_keepdims_random",
    "test_reduce_max_negative_axes_keepdims_example",
    "test_reduce_max_negative_axes_keepdims_random",
    "test_reduce_max_bool_inputs", "test_reduce_max_empty_set", "test_reduce_max_empty_set_bool",
}


def _pb_roundtrip(array):
    """What the ``input_*.pb``/``output_*.pb`` files hold: a serialised TensorProto."""
    proto = TensorProto.FromString(numpy_helper.from_array(np.asarray(array)).SerializeToString())
    return numpy_helper.to_array(proto)


def _load_backend_cases():
    """{name: (model, [(inputs, outputs), ...])} for ReduceMax.

    The data directory ``onnx/backend/test/data/node/test_reduce_max_*`` (model.onnx and
    test_data_set_*/{input,output}_*.pb) is read when the installed package has it. Wheels of
    onnx 1.23 ship the generators under ``onnx.backend.test.case`` but not that directory, so then
    the cases are produced by ``collect_testcases`` and their tensors go through the same
    TensorProto serialisation the .pb files use.
    """
    cases = {}
    node_dir = Path(onnx.backend.test.__file__).parent / "data" / "node"
    for case_dir in sorted(node_dir.glob("test_reduce_max*")) if node_dir.is_dir() else []:
        if case_dir.name.endswith("_expanded"):
            continue
        model = onnx.load(str(case_dir / "model.onnx"))
        data_sets = []
        for ds in sorted(case_dir.glob("test_data_set_*")):
            def read(prefix, ds=ds):
                files = sorted(ds.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[-1]))
                return [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in files]
            data_sets.append((read("input"), read("output")))
        cases[case_dir.name] = (model, data_sets)
    if not cases:
        from onnx.backend.test.case.node import collect_testcases

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            generated = collect_testcases("ReduceMax")
        for tc in generated:
            if tc.model is None or tc.model.graph.node[0].op_type != "ReduceMax":
                continue
            model = onnx.load_from_string(tc.model.SerializeToString())
            data_sets = [([_pb_roundtrip(a) for a in ins], [_pb_roundtrip(a) for a in outs])
                         for ins, outs in tc.data_sets]
            cases[tc.name] = (model, data_sets)
    return cases


BACKEND_CASES = _load_backend_cases()


def test_backend_cases_found():
    assert len(BACKEND_CASES) >= len(EXPECTED_BACKEND_CASES), sorted(BACKEND_CASES)
    assert EXPECTED_BACKEND_CASES <= set(BACKEND_CASES), sorted(BACKEND_CASES)


def _model_opset(model):
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    assert len(versions) == 1, model.opset_import
    return versions[0]


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_node_case(name):
    model, data_sets = BACKEND_CASES[name]
    (node,) = model.graph.node
    assert node.op_type == "ReduceMax"
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    opset = _model_opset(model)
    assert data_sets
    for inputs, outputs in data_sets:
        values = dict(zip([n for n in node.input if n], inputs, strict=True))
        data = values[node.input[0]]
        if len(node.input) > 1 and node.input[1]:
            axes = values[node.input[1]]  # an input from opset 18 on
        else:
            axes = attrs.get("axes")  # an attribute before 18 (or absent)
        kwargs = {"opset": opset}
        if "keepdims" in attrs:
            kwargs["keepdims"] = attrs["keepdims"]
        if "noop_with_empty_axes" in attrs:
            kwargs["noop_with_empty_axes"] = attrs["noop_with_empty_axes"]
        with x64_if_needed(data.dtype.name):
            got = jonnx.reduce_max(data, axes, **kwargs)
        (expected,) = outputs
        assert_same(got, expected, name)
