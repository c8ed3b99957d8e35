"""ONNX adapters, one module per operator family: the spec's attribute names and defaults, the
opset table (largest since-version <= opset), validation, then a call into ``_src/lowering``."""
