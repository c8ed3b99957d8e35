"""``jaxmax.onnx.from_node``: constants, jit, vmap over a leading batch of the runtime inputs
and grad on one node per operator; the errors for an operator jaxmax lacks, a non-constant
shape-deciding input, an unknown attribute. Every ONNX backend node case runs through
``from_node`` in tests/test_onnx_node_cases.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
node_cases = pytest.importorskip("onnx.backend.test.case.node")

from onnx import helper  # noqa: E402 (after the importorskips)

from jaxmax import onnx as jonnx  # noqa: E402


def test_constants_by_input_name_and_by_tensor_name():
    node = helper.make_node("ReduceMax", ["x", "the_axes"], ["y"], keepdims=0)
    x = np.array([[1.0, 5.0], [3.0, 2.0]], np.float32)
    for key in ("the_axes", "axes"):
        f = jonnx.from_node(node, opset=18, constants={key: np.array([0])})
        assert f.input_names == ("x",)
        np.testing.assert_array_equal(f(x)[0], np.array([3.0, 5.0], np.float32))
    assert "axes=[0]" in f.call and "opset=18" in f.call
    # a graph-wide dict: keys of other nodes' inputs are ignored
    f = jonnx.from_node(node, opset=18, constants={"the_axes": np.array([1]), "w": np.ones(3)})
    np.testing.assert_array_equal(f(x)[0], np.array([5.0, 3.0], np.float32))


# --- jit, vmap, grad on the same node kinds ------------------------------------------------

def _transform_cases():
    """One node per operator, with its runtime inputs."""
    rng = np.random.default_rng(0)
    x = rng.permutation(2 * 3 * 6 * 6).astype(np.float32).reshape(2, 3, 6, 6)  # no ties
    out = [
        (helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=1), 18,
         {"axes": np.array([2, 3])}, (x,), True),
        (helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], strides=[2, 2],
                          pads=[1, 1, 1, 1], ceil_mode=1, dilations=[1, 2]), 12, {}, (x,), True),
        (helper.make_node("GlobalMaxPool", ["x"], ["y"]), 22, {}, (x,), True),
        (helper.make_node("Max", ["x", "z"], ["y"]), 13, {}, (x, x[:, :, ::-1]), True),
    ]
    out.append((helper.make_node("ArgMax", ["x"], ["y"], axis=2, keepdims=0), 13, {},
                (x,), False))
    out.append((helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1), 11,
                {"k": np.array([3])}, (x,), True))
    _, idx = jonnx.max_pool(x, kernel_shape=[2, 2], strides=[2, 2], return_indices=True)
    out.append((helper.make_node("MaxUnpool", ["y", "i"], ["z"], kernel_shape=[2, 2],
                                 strides=[2, 2]), 11, {"i": np.asarray(idx)},
                (x[:, :, ::2, ::2].copy(),), True))
    return out


TRANSFORM = _transform_cases()


@pytest.mark.parametrize("case", TRANSFORM, ids=lambda c: c[0].op_type)
def test_jit_vmap_grad(case):
    node, opset, constants, inputs, differentiable = case
    f = jonnx.from_node(node, opset=opset, constants=constants)
    eager = f(*inputs)
    jitted = jax.jit(f)(*inputs)
    for a, b in zip(eager, jitted, strict=True):
        np.testing.assert_array_equal(a, b, strict=True)
    # vmap over a new leading batch of the runtime inputs equals a loop
    batch = [np.stack([x, x * 2 - 7, -x]) for x in inputs]
    batched = jax.vmap(f)(*batch)
    for k, out in enumerate(batched):
        for j in range(3):
            np.testing.assert_array_equal(out[j], f(*[b[j] for b in batch])[k], strict=True)
    if differentiable:
        g = jax.grad(lambda *xs: jnp.sum(f(*xs)[0] * 1.5))(*inputs)
        assert g.shape == inputs[0].shape and np.isfinite(np.asarray(g)).all()
        assert np.asarray(g).any()


# --- errors ----------------------------------------------------------------------------------

def test_operator_jaxmax_lacks():
    node = helper.make_node("Relu", ["x"], ["y"], name="act1")
    with pytest.raises(ValueError, match=r"'act1' \(Relu-14\).*no Relu operator"):
        jonnx.from_node(node, opset=17)


def test_non_constant_shape_deciding_input():
    node = helper.make_node("ReduceMax", ["x", "axes_t"], ["y"], name="rm")
    with pytest.raises(ValueError, match=r"'rm' \(ReduceMax-18\).*`axes`.*'axes_t'.*constant"):
        jonnx.from_node(node, opset=18)
    # before 18 axes is an attribute: nothing to be constant
    f = jonnx.from_node(helper.make_node("ReduceMax", ["x"], ["y"], axes=[0]), opset=13)
    assert f.input_names == ("x",)


def test_unknown_attribute_and_bad_arguments():
    node = helper.make_node("MaxPool", ["x"], ["y"], name="p", kernel_shape=[2], bogus=1)
    with pytest.raises(ValueError, match=r"'p' \(MaxPool-12\).*`bogus`"):
        jonnx.from_node(node, opset=12)
    with pytest.raises(TypeError, match="NodeProto"):
        jonnx.from_node("MaxPool", opset=12)
    with pytest.raises(TypeError, match="opset"):
        jonnx.from_node(node, opset="12")
    f = jonnx.from_node(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2]), opset=12)
    with pytest.raises(TypeError, match="1 runtime input"):
        f()


def test_importing_jaxmax_imports_no_runtime():
    import subprocess
    import sys
    code = ("import sys, jaxmax, jaxmax.onnx, jaxmax.openvino; "
            "print(sorted(m for m in ('onnx', 'openvino', 'onnxruntime') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_missing_runtime_names_the_extra(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "onnx", None)  # makes `import onnx` raise ImportError
    with pytest.raises(ImportError, match=r'pip install "jaxmax\[runtimes\]"'):
        jonnx.from_node(object(), opset=13)
