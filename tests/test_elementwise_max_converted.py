"""A real conversion: a small PyTorch model with ``torch.maximum`` (broadcasting) and
``clamp_min``, converted by ``openvino.convert_model``; jaxmax reproduces each Maximum node.

The test reads each Maximum node's version and attributes from the ``ov.Model``, runs the model
on the CPU plugin with each node's inputs and output exposed, and calls
``jaxmax.openvino.maximum`` with those attributes on those inputs. The data holds no NaN and no
``-0/+0`` tie, where the CPU plugin returns the second argument instead of the reference's
``a < b ? b : a`` (docs/semantics.md §7.3); with them the node is compared with ``Node.evaluate``.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_same

torch = pytest.importorskip("torch")
openvino = pytest.importorskip("openvino")

from ov_reference import evaluate  # noqa: E402

from jaxmax import openvino as ov  # noqa: E402 (after the importorskips)


class Clip(torch.nn.Module):
    def forward(self, x, y):
        return torch.maximum(x, y) + torch.clamp_min(x, 0.25)


def _maximum_nodes(model):
    return [node for node in model.get_ordered_ops() if node.get_type_name() == "Maximum"]


def test_converted_maximum_nodes_are_reproduced():
    torch.manual_seed(0)
    x, y = torch.randn(2, 3, 4), torch.randn(3, 4)
    model = openvino.convert_model(Clip().eval(), example_input=(x, y))
    nodes = _maximum_nodes(model)
    assert len(nodes) == 2, [n.get_type_name() for n in model.get_ordered_ops()]
    outputs = []
    for node in nodes:
        outputs += [node.input_value(0), node.input_value(1), node.output(0)]
    probe = openvino.Model(outputs, model.get_parameters(), "maximum_probe")
    compiled = openvino.Core().compile_model(probe, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    results = compiled([x.numpy(), y.numpy()])
    for n, node in enumerate(nodes):
        assert node.get_type_info().version_id == "opset1"
        attrs = node.get_attributes()
        a, b, want = (results[3 * n + k] for k in range(3))
        got = ov.maximum(a, b, auto_broadcast=attrs["auto_broadcast"])
        assert_same(got, want, f"node {n} {attrs}")
        # the same node on NaN, infinities and signed-zero ties, against its reference kernel
        special = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0], np.float32)
        rng = np.random.default_rng(n)
        a2 = rng.choice(special, a.shape).astype(np.float32)
        b2 = rng.choice(special, b.shape).astype(np.float32)
        got = np.asarray(ov.maximum(a2, b2, auto_broadcast=attrs["auto_broadcast"]))
        (ref,) = evaluate(lambda p, q, rule=attrs["auto_broadcast"]:
                          openvino.opset1.maximum(p, q, auto_broadcast=rule), a2, b2)
        assert_same(got, ref, f"node {n} specials")
        np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))
