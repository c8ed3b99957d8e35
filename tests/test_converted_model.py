"""A real conversion: the small PyTorch CNN of tests/torch_cnn.py (ceil-mode and dilated
pools), converted by ``openvino.convert_model``, whose MaxPool nodes jaxmax reproduces exactly.

The test reads each MaxPool node's version and attributes from the ``ov.Model``, runs the
model on OpenVINO's CPU plugin with every MaxPool node's input and both outputs (values and
indices) exposed, and calls ``jaxmax.openvino.max_pool`` with those attributes on that input
(not through ``from_node``'s binding, which tests/test_check_cli.py checks on the same model).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
openvino = pytest.importorskip("openvino")

import torch_cnn  # noqa: E402 (after the importorskips)

from jaxmax import openvino as ov  # noqa: E402


def _max_pool_nodes(model):
    return [node for node in model.get_ordered_ops() if node.get_type_name() == "MaxPool"]


def test_converted_max_pool_nodes_are_reproduced_with_their_indices():
    model = torch_cnn.converted()
    x = torch_cnn.cnn()[1]
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
    # PyTorch's ceil rule plain and dilated, and a dilated floor pool
    kinds = {(str(a["rounding_type"]).lower(), tuple(a["dilations"]))
             for a in (node.get_attributes() for node in nodes)}
    assert kinds == {("ceil_torch", (1, 1)), ("ceil_torch", (2, 2)), ("floor", (2, 2))}, kinds
