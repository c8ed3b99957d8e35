"""OpenVINO operators: ``ReduceMax-1``, ``ReduceLogicalOr-1``, ``MaxPool-1``/``-8``/``-14``,
``SegmentMax-16``, ``Maximum-1``, ``TopK-1``/``-3``/``-11``, ``AdaptiveMaxPool-8``,
``ROIAlign-3``/``-9``, ``ScatterElementsUpdate-12`` and ``ScatterNDUpdate-15`` (reduction max),
``ROIPooling-1`` (method max), and
``from_node`` (bind an ``openvino.Node`` of these operators to its jaxmax call)."""

from jaxmax._src.openvino.adaptive_pool import adaptive_max_pool
from jaxmax._src.openvino.elementwise import maximum
from jaxmax._src.openvino.node import from_node
from jaxmax._src.openvino.pool import max_pool
from jaxmax._src.openvino.reduce import reduce_logical_or, reduce_max
from jaxmax._src.openvino.roi_align import roi_align
from jaxmax._src.openvino.roi_pooling import roi_pooling
from jaxmax._src.openvino.scatter import scatter_elements_update, scatter_nd_update
from jaxmax._src.openvino.segment import segment_max
from jaxmax._src.openvino.top_k import top_k

__all__ = ["adaptive_max_pool", "from_node", "max_pool", "maximum", "reduce_logical_or",
           "reduce_max", "roi_align", "roi_pooling", "scatter_elements_update",
           "scatter_nd_update", "segment_max", "top_k"]
