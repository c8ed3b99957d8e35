"""ONNX operators: ``ReduceMax`` (opsets 1 to 20), ``MaxPool`` (1 to 22), ``GlobalMaxPool``,
``Max`` (1 to 13), ``ArgMax`` (1 to 13), ``TopK`` (1 to 24), ``MaxUnpool`` (9 to 22),
``Hardmax`` (1 to 13), ``MaxRoiPool`` (1 to 22), ``RoiAlign`` (10 to 22),
``ScatterElements`` and ``ScatterND`` (18, reduction max), and
``from_node`` (bind an ``onnx.NodeProto`` of these operators to its jaxmax call)."""

from jaxmax._src.onnx.arg_max import arg_max, top_k
from jaxmax._src.onnx.elementwise import max  # noqa: A004 (shadows the builtin here only)
from jaxmax._src.onnx.hardmax import hardmax
from jaxmax._src.onnx.node import from_node
from jaxmax._src.onnx.pool import global_max_pool, max_pool
from jaxmax._src.onnx.reduce import reduce_max
from jaxmax._src.onnx.roi_align import roi_align
from jaxmax._src.onnx.roi_pool import max_roi_pool
from jaxmax._src.onnx.scatter import scatter_elements, scatter_nd
from jaxmax._src.onnx.unpool import max_unpool

__all__ = ["arg_max", "from_node", "global_max_pool", "hardmax", "max", "max_pool",
           "max_roi_pool", "max_unpool", "reduce_max", "roi_align", "scatter_elements",
           "scatter_nd", "top_k"]
