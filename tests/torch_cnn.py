"""The small PyTorch CNN the converted-model tests share: the max-family layers a ported model
holds, built once per process.

Three MaxPool layers: ``pool1`` in ceil mode with padding and ``return_indices``, ``pool2``
dilated (floor), ``pool3`` in ceil mode and dilated, on an axis where ceil mode adds a window;
then ``maximum``, ``adaptive_max_pool2d``, ``amax``, ``topk`` and ``argmax``.
``tests/test_check_cli.py`` checks it through ``python -m jaxmax check`` (exported to ONNX and
converted to OpenVINO), ``tests/test_converted_model.py`` each OpenVINO MaxPool node against
``jaxmax.openvino.max_pool`` called with the node's attributes.

torch is imported on the first call, so that a test module importing this one can skip without
it.
"""

from __future__ import annotations

import functools

SHAPE = (2, 3, 15, 17)


@functools.cache
def cnn():
    """(model in eval mode, example input of shape `SHAPE`), seeded."""
    import torch

    class CNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.pool1 = torch.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True,
                                            return_indices=True)
            self.pool2 = torch.nn.MaxPool2d(2, stride=1, dilation=2)
            # on pool1's 8 x 9 output: 3 x 3, ceil mode adding the third row of windows
            self.pool3 = torch.nn.MaxPool2d(3, stride=2, dilation=2, ceil_mode=True)
            self.conv2 = torch.nn.Conv2d(8, 8, 1)

        def forward(self, x):
            p1, indices = self.pool1(self.conv(x))
            p2 = self.pool2(p1)
            m = torch.maximum(p2, self.conv2(p2))
            # ONNX export needs output sizes that divide the input (6, 7)
            adaptive = torch.nn.functional.adaptive_max_pool2d(m, (3, 7))
            amax = torch.amax(m, dim=(2, 3))
            flat = m.flatten(1)
            top_values, top_indices = torch.topk(flat, 5, dim=1)
            return (p1, indices, self.pool3(p1), adaptive, amax, top_values, top_indices,
                    flat.argmax(dim=1))

    torch.manual_seed(0)
    return CNN().eval(), torch.randn(*SHAPE)


@functools.cache
def converted():
    """The CNN converted by ``openvino.convert_model`` (an ``openvino.Model``)."""
    import openvino

    model, x = cnn()
    return openvino.convert_model(model, example_input=x, input=[SHAPE])


def save(root):
    """The CNN exported to ONNX (``torch.onnx.export(dynamo=False)``, opset 17, input "x") and
    converted to OpenVINO IR in the folder `root`: (ONNX path, IR .xml path)."""
    import openvino
    import torch

    model, x = cnn()
    onnx_path, xml_path = root / "cnn.onnx", root / "cnn.xml"
    torch.onnx.export(model, (x,), str(onnx_path), dynamo=False, opset_version=17,
                      input_names=["x"])
    openvino.save_model(converted(), str(xml_path), compress_to_fp16=False)
    return onnx_path, xml_path
