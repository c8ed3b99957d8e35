"""Tests of ``jaxmax.onnx.reduce_max``: ONNX ReduceMax, since-versions 1, 11, 12, 13, 18 and 20.

The contract is docs/semantics.md §4 and the ONNX ReduceMax schemas 1-20.
Everything here is checked against oracles that do not call jaxmax:

* ``onnx_reduce_max`` of tests/reduce_oracle.py: plain Python loops over every output element
  and every element of its reduced slice (NaN propagates, the empty set gives -inf / iinfo.min
  / False, bool is or);
* hand-written expected values for the corner cases;
* the operator schemas in ``onnx.defs`` for the per-opset dtype table.

The runtimes (``onnx.reference``, onnxruntime, the ONNX backend node cases) are in
tests/test_reduce_max_onnx_runtimes.py.
"""


from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_same, is_float, onnx_empty, x64_for
from reduce_oracle import onnx_reduce_max

onnx = pytest.importorskip("onnx")

from onnx_reduce_max_common import (  # noqa: E402 (after the importorskip)
    ALL_DTYPES,
    ALLOWED,
    BF16,
    LATEST_OPSET,
    NEVER_ALLOWED,
    make_data,
    np_dtype,
    version_of,
)

from jaxmax import onnx as jonnx  # noqa: E402

OP = "ONNX ReduceMax"


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
    with x64_for(np_dtype(dtype_name)):
        for axes, keepdims in itertools.product(GRID_AXES, (0, 1)):
            got = jonnx.reduce_max(x, axes, keepdims=keepdims, opset=opset)
            assert_same(got, onnx_reduce_max(x, axes, keepdims),
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
    with x64_for(np_dtype(dtype_name)):
        assert_same(jonnx.reduce_max(x, [1], keepdims=0, opset=opset), expected)
        assert_same(jonnx.reduce_max(x, [-1], keepdims=1, opset=20), expected[:, None])
        assert_same(onnx_reduce_max(x, [1], 0), expected)
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
    with x64_for(np_dtype(dtype_name)):
        assert_same(jonnx.reduce_max(x, [1], keepdims=0, opset=20), expected)
        assert_same(jonnx.reduce_max(x, [-1], keepdims=True, opset=13), expected[:, None])
        assert_same(jonnx.reduce_max(x, [0], keepdims=False, opset=12), np.array([hi, hi, 2], dt))
        assert_same(jonnx.reduce_max(x, None, keepdims=0), np.array(hi, dt))
        assert_same(onnx_reduce_max(x, [1], 0), expected)


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
    fill = onnx_empty(dt)
    x = np.zeros((2, 0, 3), dt)
    with x64_for(np_dtype(dtype_name)):
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
                    onnx_reduce_max(x, [1], 0))


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
    assert_same(got, onnx_reduce_max(x, reduced, int(keepdims)))
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
            expected = onnx_reduce_max(x, axes, keepdims)
            assert_same(f(x, axes=axes, keepdims=keepdims, opset=13), expected)
            assert_same(jonnx.reduce_max(x, axes, keepdims=keepdims, opset=13), expected)
    g = jax.jit(lambda d: jonnx.reduce_max(d, [1, 2], keepdims=0))
    assert_same(g(x), onnx_reduce_max(x, [1, 2], 0))


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
    want = onnx_reduce_max(x, axes=[0, 2], keepdims=0)
    for axes in ((0, 2), (0, -1), [0, 2], np.array([0, 2]), (2, 0)):
        for _ in range(2):
            assert_same(jonnx.reduce_max(x, axes, keepdims=0), want, f"axes={axes!r}")
    assert_same(jonnx.reduce_max(x, -2, keepdims=0, opset=11),
                onnx_reduce_max(x, axes=[1], keepdims=0))
    # the same spelling on data of another rank names other axes
    for data in (x, x[0], x[:, :, :1, None]):
        assert_same(jonnx.reduce_max(data, (-1, 0), keepdims=0),
                    onnx_reduce_max(data, axes=[-1, 0], keepdims=0), f"rank {data.ndim}")
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
