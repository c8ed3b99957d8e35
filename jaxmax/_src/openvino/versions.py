"""The OpenVINO versions jaxmax implements: the one table, per operator, from since-version (the
opset that introduced it) to what it adds. The data types are each version's "any real or
integer type" (checked by the adapters), so no version lists them.

An OpenVINO model's opset picks the version, the largest since-version ``<= opset``
(``TABLE.select``). The adapters in ``_src/openvino``, ``openvino.from_node``
(``node.VERSIONS``) and ``check --help`` read this table; adding a version is one row here.
"""

from __future__ import annotations

from jaxmax._src.version_table import Version, VersionTable

#: OpenVINO operator -> since-version -> what it adds (docs/semantics.md §3, §5-§7).
TABLE = VersionTable({
    "ReduceMax": {1: Version()},
    "ReduceLogicalOr": {1: Version()},
    "MaxPool": {
        1: Version(),
        8: Version(adds=("Indices output", "dilations", "axis", "index_element_type")),
        14: Version(adds=("rounding_type 'ceil_torch'",)),
    },
    "SegmentMax": {16: Version()},
    "Maximum": {1: Version()},
    "TopK": {1: Version(), 3: Version(), 11: Version(adds=("stable",))},
    "AdaptiveMaxPool": {8: Version()},
    "ROIAlign": {3: Version(), 9: Version(adds=("aligned_mode",))},
    # ROIPooling-1 first appears in opset2 (docs/semantics.md §11.1)
    "ROIPooling": {2: Version()},
    # reduction "max" exists from these versions; the adapters gate ScatterElementsUpdate-3 and
    # ScatterNDUpdate-3 by their reductions (docs/semantics.md §8.1)
    "ScatterElementsUpdate": {12: Version(adds=("reduction max",))},
    "ScatterNDUpdate": {15: Version(adds=("reduction max",))},
})
