"""``jaxmax.onnx.from_node`` on every ONNX backend node case of every operator jaxmax has.

The cases are regenerated from the installed ``onnx.backend.test`` definitions (as in
test_onnx_node_cases.py): each case's graph is one node, its model's opset is the version, its
initializers (none today) are the constants, and the callable from ``from_node`` must reproduce
every expected output exactly, dtype included (under ``jax_enable_x64``, as ONNX is 64-bit).
Nothing is hand-translated: the attributes come from the node and the schema's defaults.

Known, documented deviation (SEMANTICS.md 7.2): ``test_maxunpool_export_with_output_shape``
expects the reference's top-left copy of the inferred block, jaxmax follows onnxruntime and
torch (``I`` indexes the given shape); that one case is compared against onnxruntime instead.

Then: jit, vmap over a leading batch of the runtime inputs, and grad on the same nodes; the
errors for an operator jaxmax lacks, a non-constant shape-deciding input, an unknown attribute.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
node_cases = pytest.importorskip("onnx.backend.test.case.node")

from onnx import helper, numpy_helper  # noqa: E402 (after the importorskips)

from jaxmax import onnx as jonnx  # noqa: E402
from jaxmax._src.onnx.node import VERSIONS  # noqa: E402

OPS = tuple(VERSIONS)
#: the case whose expected output is the reference's documented bug (SEMANTICS.md 7.2)
ORT_INSTEAD = {"test_maxunpool_export_with_output_shape"}


def _bound_reduction(node) -> bool:
    """Scatter nodes bind with reduction max only (the others: tests/test_scatter_nodes.py)."""
    if node.op_type not in ("ScatterElements", "ScatterND"):
        return True
    return any(a.name == "reduction" and a.s == b"max" for a in node.attribute)


def _cases():
    # collect_testcases imports the case modules once and caches; collect everything, keep ours
    return {case.name: case for case in node_cases.collect_testcases(None)
            if len(case.model.graph.node) == 1
            and case.model.graph.node[0].op_type in OPS and case.data_sets
            and _bound_reduction(case.model.graph.node[0])}


CASES = _cases()


def _op(name):
    return CASES[name].model.graph.node[0].op_type


#: the inputs that decide the output shape: the node cases feed them as graph inputs, a model
#: would hold them as initializers; either way from_node needs their values
SHAPE_INPUTS = {("ReduceMax", 1), ("TopK", 1), ("MaxUnpool", 2)}


def _bind(case, inputs):
    model = case.model
    node = model.graph.node[0]
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input]
    for k, tensor in enumerate(node.input):
        if (node.op_type, k) in SHAPE_INPUTS and tensor in graph_inputs:
            constants[tensor] = inputs[graph_inputs.index(tensor)]
    return jonnx.from_node(node, opset=opset, constants=constants), node


def test_every_operator_has_node_cases():
    ops = {_op(name) for name in CASES}
    assert ops == set(OPS), sorted(set(OPS) - ops)
    assert len(CASES) == 74, len(CASES)  # 71 + 3 scatter cases with reduction max


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_case(name):
    case = CASES[name]
    (inputs, outputs), = case.data_sets[:1]
    with jax.enable_x64(True):
        f, node = _bind(case, inputs)
        by_name = dict(zip([i.name for i in case.model.graph.input], inputs, strict=True))
        runtime = [by_name[name] for name in f.input_names]
        assert len(runtime) == len(f.input_names)
        got = f(*runtime)
        if name in ORT_INSTEAD:
            ort = pytest.importorskip("onnxruntime")
            session = ort.InferenceSession(case.model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
            outputs = session.run(None, dict(zip([i.name for i in case.model.graph.input],
                                                 inputs, strict=True)))
        assert len(got) == len(outputs)
        for actual, expected in zip(got, outputs, strict=True):
            np.testing.assert_array_equal(np.asarray(actual), expected, err_msg=name,
                                          strict=True)


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
