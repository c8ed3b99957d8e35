"""ONNX operators: ``ReduceMax`` (opsets 1 to 20), ``MaxPool`` (1 to 22), ``GlobalMaxPool``,
``Max`` (1 to 13), and
``from_node`` (bind an ``onnx.NodeProto`` of these operators to its jaxmax call)."""

from jaxmax._src.onnx.elementwise import max  # noqa: A004 (shadows the builtin here only)
from jaxmax._src.onnx.node import from_node
from jaxmax._src.onnx.pool import global_max_pool, max_pool
from jaxmax._src.onnx.reduce import reduce_max

__all__ = ["from_node", "global_max_pool", "max", "max_pool", "reduce_max"]
