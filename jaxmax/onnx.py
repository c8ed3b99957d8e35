"""ONNX operators: ``ReduceMax`` (opsets 1 to 20)."""

from jaxmax._src.onnx_ops import reduce_max

__all__ = ["reduce_max"]
