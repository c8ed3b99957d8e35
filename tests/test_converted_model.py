"""A real conversion: a small PyTorch CNN with ``ceil_mode=True`` pools, converted by
``openvino.convert_model``, whose MaxPool nodes jaxmax reproduces exactly.

The test reads each MaxPool node's version and attributes from the ``ov.Model``, runs the
model on OpenVINO's CPU plugin with every MaxPool node's input and both outputs (values and
indices) exposed, and calls ``jaxmax.openvino.max_pool`` with those attributes on that input.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
openvino = pytest.importorskip("openvino")

from jaxmax import openvino as ov  # noqa: E402 (after the importorskips)


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.pool1 = torch.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.conv2 = torch.nn.Conv2d(8, 8, 3)
        self.pool2 = torch.nn.MaxPool2d(2, stride=2, ceil_mode=True)
        self.pool3 = torch.nn.MaxPool2d(3, stride=2, dilation=2, ceil_mode=True)

    def forward(self, x):
        h = self.pool1(torch.relu(self.conv1(x)))
        h = self.pool2(torch.relu(self.conv2(h)))
        return self.pool3(h).flatten(1)


def _max_pool_nodes(model):
    return [node for node in model.get_ordered_ops() if node.get_type_name() == "MaxPool"]


def test_converted_max_pool_nodes_are_reproduced_with_their_indices():
    torch.manual_seed(0)
    net = SmallCNN().eval()
    x = torch.randn(2, 3, 29, 31)
    model = openvino.convert_model(net, example_input=x)
    nodes = _max_pool_nodes(model)
    assert len(nodes) == 3
    outputs = []
    for node in nodes:
        outputs += [node.input_value(0), node.output(0), node.output(1)]
    probe = openvino.Model(outputs, model.get_parameters(), "max_pool_probe")
    compiled = openvino.Core().compile_model(probe, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    results = compiled(x.numpy())
    for n, node in enumerate(nodes):
        version = node.get_type_info().version_id
        assert version == "opset14", version  # what the converter emits for PyTorch
        attrs = node.get_attributes()
        data, want_values, want_indices = (results[3 * n + k] for k in range(3))
        auto_pad = str(attrs["auto_pad"]).lower()
        values, indices = ov.max_pool(
            data, kernel=attrs["kernel"], strides=attrs["strides"],
            pads_begin=attrs["pads_begin"], pads_end=attrs["pads_end"],
            dilations=attrs["dilations"], rounding_type=str(attrs["rounding_type"]).lower(),
            auto_pad="explicit" if auto_pad in ("explicit", "notset") else auto_pad,
            axis=attrs["axis"], index_element_type=str(attrs["index_element_type"]),
            opset=14)
        np.testing.assert_array_equal(np.asarray(values), want_values, strict=True)
        np.testing.assert_array_equal(np.asarray(indices), want_indices.astype(indices.dtype))
    # the first and last nodes really use PyTorch's ceil rule, one of them dilated
    assert {str(n.get_attributes()["rounding_type"]).lower() for n in nodes} == {"ceil_torch"}
    assert any(list(n.get_attributes()["dilations"]) != [1, 1] for n in nodes)
