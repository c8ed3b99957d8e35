"""The name `check` gives an OpenVINO model input.

A port of an IR converted from ONNX can carry several tensor names (``openvino.convert_model``
adds the name of the first tensor computed from an input beside the ONNX input's own, e.g.
``{'rois', '/pool/Concat_output_0'}`` for torchvision's box pooler), and ``get_any_name`` may
return either. The Parameter's friendly name is the graph input's name; `input_name` takes it when
the port carries it (or carries no name), else the smallest of the port's names: a stable name.
"""

from __future__ import annotations


def input_name(port) -> str:
    """The stable name of a model input (an OpenVINO Parameter's output port)."""
    names = port.get_names()
    friendly = port.get_node().get_friendly_name()
    if friendly in names or not names:
        return friendly
    return min(names)
