"""``jaxmax.openvino.from_node`` on nodes built with ``openvino.opsetN``, one per bound operator and
version: the callable's outputs equal OpenVINO's CPU plugin (compiled with
``INFERENCE_PRECISION_HINT=f32``) on tie-free, NaN-free float32 data, where the plugin follows
the spec (where not, docs/semantics.md §3.4-§7.3: NaN order, ties under TopK ``stable=false``,
64-bit integers); then jit, vmap over a leading batch and grad; then the errors.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

openvino = pytest.importorskip("openvino")

import openvino.opset1 as ops1  # noqa: E402 (after the importorskip)
import openvino.opset3 as ops3  # noqa: E402
import openvino.opset8 as ops8  # noqa: E402
import openvino.opset11 as ops11  # noqa: E402
import openvino.opset14 as ops14  # noqa: E402
import openvino.opset16 as ops16  # noqa: E402
from compile_cache import shared_compiles  # noqa: E402,F401 (the fixture)

from jaxmax import openvino as ov  # noqa: E402

pytestmark = pytest.mark.usefixtures("shared_compiles")

F32 = openvino.Type.f32
RNG = np.random.default_rng(0)
X4 = RNG.permutation(2 * 3 * 7 * 6).astype(np.float32).reshape(2, 3, 7, 6) - 40  # no ties
X2 = RNG.permutation(6 * 5).astype(np.float32).reshape(6, 5) - 10


def _param(x, name="x"):
    return ops1.parameter(list(x.shape), openvino.Type(x.dtype), name=name)


def _nodes():
    """(id, node builder -> (node, parameters), runtime inputs, differentiable)."""
    out = []

    def add(name, build, inputs, differentiable=True):
        out.append(pytest.param(build, inputs, differentiable, id=name))

    add("ReduceMax-1", lambda p: ops1.reduce_max(p[0], ops1.constant(np.array([1, -1])),
                                                 keep_dims=True), (X4,))
    add("ReduceMax-1-folded-axes",  # axes computed in the graph, folded by OpenVINO's bounds
        lambda p: ops1.reduce_max(p[0], ops1.convert(ops1.constant(np.array([2], np.int32)),
                                                     "i64")), (X4,))
    add("ReduceLogicalOr-1", lambda p: ops1.reduce_logical_or(
        p[0], ops1.constant(np.array(0)), keep_dims=False), (X2 > 5,), False)
    add("MaxPool-1", lambda p: ops1.max_pool(p[0], [2, 1], [1, 1], [0, 1], [3, 3],
                                             rounding_type="ceil"), (X4,))
    add("MaxPool-8", lambda p: ops8.max_pool(p[0], [2, 2], [1, 2], [1, 0], [1, 1], [3, 2],
                                             rounding_type="ceil", axis=2,
                                             index_element_type="i32"), (X4,))
    add("MaxPool-14", lambda p: ops14.max_pool(p[0], [2, 2], [1, 1], [1, 1], [1, 1], [3, 3],
                                               rounding_type="ceil_torch",
                                               index_element_type="i64"), (X4,))
    add("MaxPool-8-same_lower", lambda p: ops8.max_pool(p[0], [2, 2], [1, 1], [0, 0], [0, 0],
                                                        [2, 3], auto_pad="same_lower"), (X4,))
    add("SegmentMax-16", lambda p: ops16.segment_max(
        p[0], ops1.constant(np.array([0, 0, 2, 2, 2, 5], np.int32)),
        ops1.constant(np.array(7, np.int32)), fill_mode="LOWEST"), (X2,))
    add("SegmentMax-16-runtime-ids", lambda p: ops16.segment_max(
        p[0], p[1], ops1.constant(np.array(5, np.int64)), fill_mode="zero"),
        (X2, np.array([0, 1, 1, 3, 3, 3], np.int32)), False)
    add("Maximum-1", lambda p: ops1.maximum(p[0], p[1]), (X4, X4[:, :1, :, ::-1].copy()))
    add("Maximum-1-constant-b", lambda p: ops1.maximum(p[0], ops1.constant(
        np.float32(3.5))), (X2,))
    add("Maximum-1-pdpd", lambda p: ops1.maximum(p[0], p[1], auto_broadcast="pdpd"),
        (X4, X4[:1, :, :1, :].copy() + 0.5))
    add("TopK-1", lambda p: ops1.topk(p[0], ops1.constant(np.int64(3)), 2, "max", "value"),
        (X4,))
    add("TopK-3", lambda p: ops3.topk(p[0], 2, -1, "min", "index", index_element_type="i64"),
        (X4,))
    add("TopK-11", lambda p: ops11.topk(p[0], 4, 1, "max", "value", stable=True), (X2,))
    # the CPU plugin compiles AdaptiveMaxPool only with i32 indices ("does not support i64")
    add("AdaptiveMaxPool-8", lambda p: ops8.adaptive_max_pool(p[0], [3, 4],
                                                              index_element_type="i32"), (X4,))
    return out


NODES = _nodes()


def _build(build, inputs):
    params = [_param(x, f"in{k}") for k, x in enumerate(inputs)]
    return build(params), params


def _cpu(node, params, inputs):
    model = openvino.Model([node.output(i) for i in range(node.get_output_size())], params)
    compiled = openvino.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(list(inputs))
    return [result[compiled.output(i)] for i in range(node.get_output_size())]


@pytest.mark.parametrize(("build", "inputs", "differentiable"), NODES)
def test_equals_the_cpu_plugin(build, inputs, differentiable):
    node, params = _build(build, inputs)
    with jax.enable_x64(True):
        f = ov.from_node(node)
        assert len(f.input_names) == len(inputs)
        got = f(*inputs)
        expected = _cpu(node, params, inputs)
        assert len(got) == len(expected) == node.get_output_size()
        for k, (a, b) in enumerate(zip(got, expected, strict=True)):
            # the CPU plugin reports some i64 outputs as i32 (AdaptiveMaxPool): compare values,
            # and the dtype against the node's declared element type
            np.testing.assert_array_equal(np.asarray(a), b, err_msg=f.call)
            declared = node.get_output_element_type(k).to_dtype()
            assert np.asarray(a).dtype == declared, (f.call, a.dtype, declared)


@pytest.mark.parametrize(("build", "inputs", "differentiable"), NODES)
def test_jit_vmap_grad(build, inputs, differentiable):
    node, _ = _build(build, inputs)
    f = ov.from_node(node)
    eager = f(*inputs)
    for a, b in zip(eager, jax.jit(f)(*inputs), strict=True):
        np.testing.assert_array_equal(a, b, strict=True)
    # a leading batch of every runtime input (float inputs varied, others repeated)
    batch = [np.stack([x, x * 2 - 7, -x]) if x.dtype.kind == "f" else np.stack([x] * 3)
             for x in inputs]
    batched = jax.vmap(f)(*batch)
    for k, out in enumerate(batched):
        for j in range(3):
            np.testing.assert_array_equal(out[j], f(*[b[j] for b in batch])[k], strict=True)
    if differentiable:
        # jitted: the same JVP and transpose rules as an eager grad, in one XLA program rather
        # than one compile per primitive of the forward and backward pass (87 compiles eager
        # against 14 jitted over the 14 differentiable nodes)
        g = jax.jit(jax.grad(lambda x, *rest: jnp.sum(f(x, *rest)[0] * 1.5)))(*inputs)
        assert g.shape == inputs[0].shape and np.isfinite(np.asarray(g)).all()
        assert np.asarray(g).any()


def test_call_text_and_names():
    x = _param(X4)
    node = ops8.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], axis=2,
                         index_element_type="i32")
    node.set_friendly_name("pool1")
    f = ov.from_node(node)
    assert f.node_name == "pool1" and f.op_type == "MaxPool" and f.version == 8
    assert f.call.startswith("ov.max_pool(data, kernel=[2, 2], strides=[2, 2]")
    assert "index_element_type='i32'" in f.call and f.call.endswith("opset=8)")
    assert len(f.output_names) == 2


def test_operator_jaxmax_lacks():
    node = ops1.relu(_param(X4))
    node.set_friendly_name("act")
    with pytest.raises(ValueError, match=r"'act' \(Relu-1\).*no Relu operator"):
        ov.from_node(node)


def test_non_constant_shape_deciding_input():
    axes = ops1.parameter([1], openvino.Type.i64, name="axes")
    node = ops1.reduce_max(_param(X4), axes)
    node.set_friendly_name("rm")
    with pytest.raises(ValueError, match=r"'rm' \(ReduceMax-1\).*`axes`.*constant.*Parameter"):
        ov.from_node(node)
    ids = ops1.parameter([6], openvino.Type.i32, name="ids")
    node = ops16.segment_max(_param(X2), ids, fill_mode="ZERO")
    with pytest.raises(ValueError, match=r"\(SegmentMax-16\).*`segment_ids`.*not constant"):
        ov.from_node(node)
    # the Python factory gives pdpd axis 0: a b of lower rank is another rule than jaxmax's
    node = ops1.maximum(_param(X4), _param(X4[:, :, 0, 0], "b"), auto_broadcast="pdpd")
    with pytest.raises(ValueError, match=r"\(Maximum-1\).*pdpd with axis 0"):
        ov.from_node(node)
    with pytest.raises(TypeError, match="openvino.Node"):
        ov.from_node("ReduceMax")


def test_missing_runtime_names_the_extra(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "openvino", None)
    with pytest.raises(ImportError, match=r'pip install "jaxmax\[runtimes\]"'):
        ov.from_node(object())
