"""jaxmax: JAX operators with the exact ONNX and OpenVINO semantics of the max family.

``jaxmax.openvino``: ``reduce_max`` (ReduceMax-1), ``reduce_logical_or`` (ReduceLogicalOr-1),
``max_pool`` (MaxPool-1), ``segment_max`` (SegmentMax-16). ``jaxmax.onnx``: ``reduce_max``
(ReduceMax, opsets 1 to 20).
"""

from jaxmax import onnx, openvino

__version__ = "0.1.0"

__all__ = ["onnx", "openvino", "__version__"]
