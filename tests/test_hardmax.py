"""ONNX Hardmax 1/11/13 against the NumPy oracle written from docs/semantics.md §11.2
(tests/hardmax_oracle.py), the hard cases H1-H17, onnxruntime and onnx.reference with their
documented deviations excluded by name, and the transforms (jit, vmap, grad, no retrace,
sharded inputs)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hardmax_oracle import hardmax as oracle
from helpers import assert_same, x64_for
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxmax import onnx

NAN = np.nan
X3 = np.array([[[0, 9, 1], [2, 3, 4]], [[5, 1, 1], [1, 7, 0]]], np.float32)

HARD = [  # (name, input, kwargs, expected)
    ("H1", [[3, 0, 1, 2], [2, 5, 1, 0]], {}, [[1, 0, 0, 0], [0, 1, 0, 0]]),
    ("H2", [[3, 3, 3, 1]], {}, [[1, 0, 0, 0]]),
    ("H3", [[1, NAN, 3]], {}, [[0, 1, 0]]),
    ("H4", [[NAN, 1, 3]], {}, [[1, 0, 0]]),
    ("H5", [[1, 3, NAN]], {}, [[0, 0, 1]]),
    ("H6", [[NAN, NAN, NAN]], {}, [[1, 0, 0]]),
    ("H7a", [[-0.0, 0.0]], {}, [[1, 0]]),
    ("H7b", [[0.0, -0.0]], {}, [[1, 0]]),
    ("H8", [[-np.inf, -np.inf]], {}, [[1, 0]]),
    ("H9", X3, {"axis": 1, "opset": 11}, [[[0, 1, 0], [0, 0, 0]], [[0, 0, 0], [0, 1, 0]]]),
    ("H10", X3, {"axis": 0, "opset": 11}, [[[0, 1, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 0]]]),
    ("H11", X3, {"axis": 1}, [[[0, 1, 0], [1, 0, 1]], [[1, 0, 1], [0, 1, 0]]]),
]


@pytest.mark.parametrize("name, x, kw, want", HARD, ids=[h[0] for h in HARD])
def test_hard_cases(name, x, kw, want):
    x = np.asarray(x, np.float32)
    assert_same(onnx.hardmax(x, **kw), np.asarray(want, np.float32), name)
    assert_same(oracle(x, kw.get("axis", 1 if kw.get("opset", 13) < 13 else -1),
                       kw.get("opset", 13)), np.asarray(want, np.float32), f"{name} oracle")


def test_h12_ties_and_h13_empty():
    x = np.random.default_rng(12).integers(0, 4, (256, 1000)).astype(np.float32)
    want = np.zeros_like(x)
    want[np.arange(256), np.argmax(x, 1)] = 1
    assert_same(onnx.hardmax(x), want)
    assert onnx.hardmax(np.zeros((2, 0), np.float32)).shape == (2, 0)
    assert onnx.hardmax(np.zeros((0,), np.float32), axis=0, opset=11).shape == (0,)
    assert onnx.hardmax(np.zeros((0, 3), np.float32), opset=1).shape == (0, 3)


def test_h14_h15_h16_errors_and_types():
    with pytest.raises(ValueError, match="^ONNX Hardmax: `input` must have rank >= 1"):
        onnx.hardmax(np.float32(1))
    with pytest.raises(ValueError, match="^ONNX Hardmax: `axis`"):
        onnx.hardmax(X3, axis=3)
    with pytest.raises(ValueError, match="^ONNX Hardmax: `axis`"):
        onnx.hardmax(np.ones(3, np.float32), opset=11)  # default axis 1 needs rank >= 2
    with pytest.raises(TypeError, match="^ONNX Hardmax: `input` dtype bfloat16"):
        onnx.hardmax(X3.astype(ml_dtypes.bfloat16), opset=11)
    with pytest.raises(TypeError, match="^ONNX Hardmax: `input` dtype int32"):
        onnx.hardmax(X3.astype(np.int32))
    with pytest.raises(TypeError, match="^ONNX Hardmax: `axis` must be static"):
        jax.jit(lambda a: onnx.hardmax(X3, axis=a))(1)
    with pytest.raises(ValueError, match="^ONNX Hardmax: `opset` must be >= 1"):
        onnx.hardmax(X3, opset=0)
    for dtype, opset in ((np.float64, 11), (ml_dtypes.bfloat16, 13), (np.float16, 1)):
        with x64_for(dtype):
            x = X3.astype(dtype)
            assert_same(onnx.hardmax(x, axis=-1, opset=opset), oracle(x, -1, opset))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_seeded_against_oracle(dtype):
    rng = np.random.default_rng(3)
    with x64_for(dtype):
        for shape in [(5, 7), (3, 40, 2), (2, 3, 300), (70, 24)]:
            x = rng.integers(-3, 4, shape).astype(np.float64)
            u = rng.random(shape)
            x[u < 0.05] = NAN
            x[(u > 0.05) & (u < 0.15)] = -0.0
            x[(u > 0.15) & (u < 0.2)] = -np.inf
            x = x.astype(dtype)
            for axis in range(-len(shape), len(shape)):
                for opset in (11, 13) if dtype != ml_dtypes.bfloat16 else (13,):
                    assert_same(onnx.hardmax(x, axis=axis, opset=opset),
                                oracle(x, axis, opset), f"{shape} axis {axis} opset {opset}")


def test_against_runtimes():
    """onnxruntime and onnx.reference on NaN-free data, exactly; with NaN the documented
    deviations (§11.5): onnxruntime skips NaN (or gives no 1 at all when a row starts with one),
    and onnx.reference applies opset 13's rule before 13."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(4)
    x = rng.integers(-3, 4, (4, 6, 5)).astype(np.float32)
    for opset in (11, 13):
        for axis in (0, 1, 2, -1):
            node = helper.make_node("Hardmax", ["x"], ["y"], axis=axis)
            graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
                "x", TensorProto.FLOAT, x.shape)], [helper.make_tensor_value_info(
                    "y", TensorProto.FLOAT, x.shape)])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
            session = ort.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
            got = np.asarray(onnx.hardmax(x, axis=axis, opset=opset))
            assert_same(got, session.run(None, {"x": x})[0], f"ORT {opset} {axis}")
            if opset >= 13 or axis in (2, -1):  # the reference ignores the coercion before 13
                assert_same(got, ReferenceEvaluator(model).run(None, {"x": x})[0])
            else:
                assert not np.array_equal(got, ReferenceEvaluator(model).run(None, {"x": x})[0])
            nan_x = x.copy()
            nan_x[..., 0] = NAN  # every row starts with a NaN
            if opset == 13 and axis == -1:
                assert_same(onnx.hardmax(nan_x), oracle(nan_x, -1, 13))
                theirs = session.run(None, {"x": nan_x})[0]
                assert (theirs[..., 0] == 0).all()  # ORT never puts the 1 on the NaN
                assert (theirs.sum(-1) <= 1).all()


def test_transforms():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, (4, 3, 8)).astype(np.float32)
    f = jax.jit(lambda v: onnx.hardmax(v, axis=1))
    assert_same(f(x), onnx.hardmax(x, axis=1))
    assert_same(jax.vmap(lambda v: onnx.hardmax(v, axis=0))(x), onnx.hardmax(x, axis=1))
    assert_same(jax.vmap(lambda v: onnx.hardmax(v, axis=-1), in_axes=1, out_axes=1)(x),
                onnx.hardmax(x))
    g = jax.grad(lambda v: jnp.sum(onnx.hardmax(v) * 3.0))(x)  # H17
    assert_same(g, np.zeros_like(x))
    traces = []
    h = jax.jit(lambda v: (traces.append(1), onnx.hardmax(v))[1])
    h(x)
    h(x + 1)
    assert len(traces) == 1


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=str)
@pytest.mark.parametrize("spec", [P("a", "b"), P(None, "b", "a")], ids=str)
def test_sharded_exact(axis_type, spec):
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    x = np.random.default_rng(6).integers(0, 3, (4, 8, 8)).astype(np.float32)
    x[0, 0, 3] = NAN
    xs = jax.device_put(x, NamedSharding(mesh, spec))
    for axis, opset in ((-1, 13), (1, 13), (1, 11)):
        want = oracle(x, axis, opset)
        assert_same(onnx.hardmax(xs, axis=axis, opset=opset), want)
        assert_same(jax.jit(lambda v, a=axis, o=opset: onnx.hardmax(v, axis=a, opset=o))(xs),
                    want)
