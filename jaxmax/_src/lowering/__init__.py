"""Spec-agnostic lowerings: the computations both faces share (max reductions, pool phases and
their winners, segment max). The adapters in ``_src/onnx`` and ``_src/openvino`` validate the
specs' attributes and call these with canonical static arguments; nothing here names a spec."""
