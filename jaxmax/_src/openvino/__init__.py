"""OpenVINO adapters, one module per operator family: the spec's attribute names and defaults,
the opset's version, validation, then a call into ``_src/lowering``."""
