"""A real conversion: a PyTorch module with graph-network max aggregation
(``scatter_reduce(0, index.view(-1, 1).expand_as(src), src, "amax")``, include_self True and
False), converted by ``openvino.convert_model`` (ScatterElementsUpdate-12 nodes) and exported to
ONNX by both torch exporters. The dynamo exporter (``torch.onnx.export(..., dynamo=True)``,
onnxscript) emits ScatterElements-18 with reduction max for include_self=True, and for
include_self=False a ScatterElements with reduction min of lowest(f32) onto the touched rows
followed by the max one; the TorchScript exporter (``dynamo=False``) emits the max node for
include_self=True and refuses include_self=False. Each max node is reproduced exactly through
``from_node`` (against the sequential-fold oracle on the node's own inputs, and against torch)
and through ``python -m jaxmax check``; a ScatterElements node with another reduction is listed
as not covered."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from test_scatter import assert_bits, oracle

torch = pytest.importorskip("torch")
openvino = pytest.importorskip("openvino")
onnx = pytest.importorskip("onnx")

from compile_cache import shared_compiles  # noqa: E402,F401 (the fixture)

from jaxmax import onnx as jonnx  # noqa: E402
from jaxmax import openvino as ov  # noqa: E402
from jaxmax._src.check import cli  # noqa: E402

pytestmark = pytest.mark.usefixtures("shared_compiles")


class MaxAggregation(torch.nn.Module):
    def __init__(self, include_self_false=True):
        super().__init__()
        self.include_self_false = include_self_false

    def forward(self, x, src, index):
        idx = index.view(-1, 1).expand_as(src)
        a = x.scatter_reduce(0, idx, src, "amax", include_self=True)
        if not self.include_self_false:
            return a, x.scatter_reduce(0, idx, src, "sum")
        return a, x.scatter_reduce(0, idx, src, "amax", include_self=False)


def _inputs(nan=True):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    src = rng.standard_normal((9, 4)).astype(np.float32)
    if nan:
        src[0, 1] = np.nan
    index = rng.integers(0, 4, 9).astype(np.int64)  # row 4 untouched
    return x, src, index


def _check(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = cli.main([str(a) for a in argv], out, err)
    return status, out.getvalue() + err.getvalue()


def test_openvino_converted_scatter_nodes_are_reproduced(tmp_path):
    x, src, index = _inputs()
    model = openvino.convert_model(MaxAggregation(), example_input=tuple(
        torch.from_numpy(a) for a in (x, src, index)))
    nodes = [n for n in model.get_ordered_ops() if n.get_type_name() == "ScatterElementsUpdate"]
    assert sorted(bool(n.get_attributes()["use_init_val"]) for n in nodes) == [False, True]
    outputs = []
    for node in nodes:
        outputs += [node.input_value(k) for k in range(3)] + [node.output(0)]
    probe = openvino.Model(outputs, model.get_parameters(), "scatter_probe")
    compiled = openvino.Core().compile_model(probe, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    results = compiled([x, src, index])
    for n, node in enumerate(nodes):
        assert node.get_type_info().version_id == "opset12"
        fn = ov.from_node(node)
        assert fn.call.startswith("ov.scatter_elements_update(")
        data, idx, upd, want = (results[4 * n + k] for k in range(4))
        runtime = [a for name, a in zip(("data", "indices", "updates"), (data, idx, upd),
                                        strict=True) if name in fn.input_names]
        (got,) = fn(*runtime)
        assert_bits(got, want)  # the NaN is alone in its target: no CPU-plugin deviation
    path = tmp_path / "agg.xml"
    openvino.save_model(model, str(path), compress_to_fp16=False)
    np.savez(tmp_path / "in.npz", **{p.get_friendly_name(): a for p, a in zip(
        model.get_parameters(), (x, src, index), strict=True)})
    status, text = _check(path, "--inputs", tmp_path / "in.npz")
    assert status == 0, text
    assert len(re.findall(r"ScatterElementsUpdate-12\s+ov\.scatter_elements_update", text)) == 2
    assert re.search(r"^2 of 2 max-family nodes exact", text, re.M), text
    # NaN and zeros of both signs routed to shared rows: the CPU plugin's own fold (NaN updates
    # ignored, the current zero kept), excused element by element (docs/semantics.md §8.4)
    src = np.array(src)
    src[:, 2] = np.where(index % 2 == 0, np.nan, -0.0)
    x = np.array(x)
    x[:, 2] = 0.0
    np.savez(tmp_path / "in.npz", **{p.get_friendly_name(): a for p, a in zip(
        model.get_parameters(), (x, src, index), strict=True)})
    status, text = _check(path, "--inputs", tmp_path / "in.npz")
    assert status == 0, text
    assert re.search(r"^0 of 2 max-family nodes exact, 2 runtime deviation\(s\)", text,
                     re.M), text
    assert len(re.findall(r"each explained: \d+ elements?: NaN order \(", text)) == 2, text
    assert re.search(r"\d+ elements?: sign of a \+-0 tie \(", text), text  # include_self


def _export(module, path):
    x, src, index = _inputs()
    torch.onnx.export(module, tuple(torch.from_numpy(a) for a in (x, src, index)), str(path),
                      dynamo=False, opset_version=18, input_names=["x", "src", "index"])
    return onnx.load(str(path))


def _reductions(model):
    return sorted(next(a.s.decode() for a in n.attribute if a.name == "reduction")
                  for n in model.graph.node if n.op_type == "ScatterElements")


def test_onnx_exported_scatter_nodes_are_reproduced(tmp_path):
    path = tmp_path / "agg.onnx"
    model = _export(MaxAggregation(include_self_false=False), path)
    assert _reductions(model) == ["add", "max"]
    x, src, index = _inputs()
    (node,) = [n for n in model.graph.node if n.op_type == "ScatterElements"
               and any(a.name == "reduction" and a.s == b"max" for a in n.attribute)]
    values = _node_values(model, [*node.input, *node.output], {"x": x, "src": src,
                                                                "index": index})
    data, idx, upd = (values[t] for t in node.input)
    (got,) = jonnx.from_node(node, opset=18)(data, idx, upd)
    assert_bits(got, oracle("se", data, idx, upd, {"axis": 0}))
    args = tuple(torch.from_numpy(a) for a in (x, src, index))
    assert_bits(got, MaxAggregation(include_self_false=False)(*args)[0].numpy())  # torch's
    # the NaN: onnxruntime's fold may let a later update replace it, a documented deviation
    # (docs/semantics.md §8.4) `check` excuses element by element
    np.savez(tmp_path / "in.npz", x=x, src=src, index=index)
    status, text = _check(path, "--inputs", tmp_path / "in.npz")
    assert status == 0, text
    assert re.search(r"ScatterElements-18\s+onnx\.scatter_elements\(", text), text
    _assert_nan_deviation_only(text)
    assert re.search(r"not covered \(.*ScatterElements", text), text
    assert "reduction 'add'" in text


def test_include_self_false_has_no_onnx_export():
    with pytest.raises(Exception, match="include_self=False"):
        _export(MaxAggregation(), io.BytesIO())


class OneAggregation(torch.nn.Module):
    def __init__(self, include_self):
        super().__init__()
        self.include_self = include_self

    def forward(self, x, src, index):
        idx = index.view(-1, 1).expand_as(src)
        return x.scatter_reduce(0, idx, src, "amax", include_self=self.include_self)


def _node_values(model, names, feeds):
    """The values of the tensors `names` in an onnxruntime run of `model` (as extra outputs)."""
    ort = pytest.importorskip("onnxruntime")
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    probe.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names)
    session = ort.InferenceSession(probe.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return dict(zip(names, session.run(None, feeds), strict=True))


@pytest.mark.parametrize("include_self", [True, False], ids=["include_self", "no_self"])
def test_dynamo_exported_scatter_nodes_are_reproduced(tmp_path, include_self):
    pytest.importorskip("onnxscript")
    x, src, index = _inputs()
    args = tuple(torch.from_numpy(a) for a in (x, src, index))
    module = OneAggregation(include_self)
    program = torch.onnx.export(module, args, dynamo=True, opset_version=18,
                                input_names=["x", "src", "index"], verbose=False)
    model = program.model_proto
    assert _reductions(model) == (["max"] if include_self else ["max", "min"])
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    scatters = [n for n in model.graph.node if n.op_type == "ScatterElements"]
    feeds = {"x": x, "src": src, "index": index}
    values = _node_values(model, sorted({t for n in scatters for t in (*n.input, *n.output)}),
                          feeds)
    for node in scatters:
        if not any(a.name == "reduction" and a.s == b"max" for a in node.attribute):
            continue
        fn = jonnx.from_node(node, opset=opset)
        data, idx, upd = (values[t] for t in node.input)
        (got,) = fn(data, idx, upd)
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        assert_bits(got, oracle("se", data, idx, upd, {"axis": axis}))
        if node.output[0] == model.graph.output[0].name:  # the module's result: torch's too
            assert_bits(got, module(*args).numpy())
    path = tmp_path / "agg.onnx"
    onnx.save(model, str(path))
    np.savez(tmp_path / "in.npz", **feeds)
    status, text = _check(path, "--inputs", tmp_path / "in.npz")
    assert status == 0, text
    assert re.search(r"ScatterElements-18\s+onnx\.scatter_elements\(", text), text
    _assert_nan_deviation_only(text)
    assert ("reduction 'min': jaxmax binds reduction 'max' only" in text) is not include_self


def _assert_nan_deviation_only(text):
    # the NaN's target: onnxruntime lets a later update replace it (docs/semantics.md §8.4)
    assert re.search(r"^0 of 1 max-family nodes exact, 1 runtime deviation\(s\)", text,
                     re.M), text
    assert re.search(r"each explained: 1 element: NaN order \(", text), text
