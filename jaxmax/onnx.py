"""ONNX operators: ``ReduceMax`` (opsets 1 to 20), ``MaxPool`` (1 to 22), ``GlobalMaxPool``."""

from jaxmax._src.onnx_ops import reduce_max
from jaxmax._src.onnx_pool_ops import global_max_pool, max_pool

__all__ = ["global_max_pool", "max_pool", "reduce_max"]
