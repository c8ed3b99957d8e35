"""The issue's real conversion: a small PyTorch model with ``nn.AdaptiveMaxPool2d((5, 3))`` on a
14x9 input plus ``torch.maximum``, converted by ``openvino.convert_model``; jaxmax reproduces each
AdaptiveMaxPool and Maximum node exactly.

The test reads every node's version and attributes from the ``ov.Model`` (AdaptiveMaxPool's
``output_shape`` is its constant second input), runs the model on the CPU plugin with each node's
inputs and outputs exposed (f32 inference precision), and calls ``jaxmax.openvino`` with those
attributes on those inputs. The converter's node asks for i32 indices (asserted below), which the
plugin compiles; the whole chain is also compared with the model's output and PyTorch's forward.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
openvino = pytest.importorskip("openvino")

from jaxmax import openvino as ov  # noqa: E402 (after the importorskips)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = torch.nn.AdaptiveMaxPool2d((5, 3))

    def forward(self, x, y):
        return torch.maximum(self.pool(x), y)


def _assert_exact(actual, expected, context):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, context
    np.testing.assert_array_equal(actual, expected, err_msg=context)
    np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected), err_msg=context)


def test_converted_adaptive_max_pool_and_maximum():
    torch.manual_seed(0)
    x, y = torch.randn(2, 4, 14, 9), torch.randn(4, 5, 3)
    x[0, 0, 3, 2] = x[0, 0, 3, 3]  # a tie inside a window
    model = openvino.convert_model(Head().eval(), example_input=(x, y))
    ops = {node.get_type_name(): node for node in model.get_ordered_ops()}
    pool, maximum = ops["AdaptiveMaxPool"], ops["Maximum"]
    assert pool.get_type_info().version_id == "opset8"
    assert maximum.get_type_info().version_id == "opset1"
    shape_node = pool.input_value(1).get_node()
    assert shape_node.get_type_name() == "Constant"
    output_shape = shape_node.get_data()
    assert output_shape.tolist() == [5, 3]
    pool_attrs, max_attrs = pool.get_attributes(), maximum.get_attributes()

    outputs = [pool.input_value(0), pool.output(0), pool.output(1),
               maximum.input_value(0), maximum.input_value(1), maximum.output(0)]
    probe = openvino.Model(outputs, model.get_parameters(), "adaptive_probe")
    compiled = openvino.Core().compile_model(probe, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    results = compiled([x.numpy(), y.numpy()])
    data, want_v, want_i, a, b, want_max = (results[k] for k in range(6))

    values, indices = ov.adaptive_max_pool(data, output_shape, index_element_type="i32",
                                           opset=8)
    _assert_exact(values, want_v, "AdaptiveMaxPool values")
    np.testing.assert_array_equal(np.asarray(indices), want_i)
    assert pool_attrs["index_element_type"] == "i32"
    got = ov.maximum(a, b, auto_broadcast=max_attrs["auto_broadcast"])
    _assert_exact(got, want_max, "Maximum")
    # the whole chain from the model's inputs, against the model's own output
    chained = ov.maximum(ov.adaptive_max_pool(x.numpy(), output_shape,
                                              index_element_type="i32")[0], y.numpy(),
                         auto_broadcast=max_attrs["auto_broadcast"])
    whole = openvino.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    _assert_exact(chained, whole([x.numpy(), y.numpy()])[0], "model")
    # and PyTorch's own forward, which the conversion preserves
    _assert_exact(chained, Head().eval()(x, y).detach().numpy(), "torch")
