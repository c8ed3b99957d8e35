"""jaxmax: JAX operators with the exact ONNX and OpenVINO semantics of the max family.

``jaxmax.openvino``: ``reduce_max`` (ReduceMax-1), ``reduce_logical_or`` (ReduceLogicalOr-1),
``max_pool`` (MaxPool-1/-8/-14), ``segment_max`` (SegmentMax-16), ``top_k`` (TopK-1/-3/-11),
``adaptive_max_pool`` (AdaptiveMaxPool-8), ``maximum`` (Maximum-1), ``from_node``.

``jaxmax.onnx``: ``reduce_max`` (ReduceMax 1-20), ``max_pool`` (MaxPool 1-22),
``global_max_pool``, ``arg_max`` (ArgMax 1-13), ``top_k`` (TopK 1-24), ``max_unpool``
(MaxUnpool 9-22), ``max`` (Max 1-13), ``from_node``.

``python -m jaxmax`` runs a tour of every operator; ``python -m jaxmax check MODEL`` checks a
model's max-family nodes against jaxmax.
"""

from jaxmax import onnx, openvino

__version__ = "0.2.0"

__all__ = ["onnx", "openvino", "__version__"]
