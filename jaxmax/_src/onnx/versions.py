"""The ONNX versions jaxmax implements: the one table, per operator, from since-version to the
data types that version allows (the schema's type constraint on the data input) and what it adds
(attributes, inputs or behaviour).

ONNX picks an operator's version as the largest since-version ``<= opset``
(``TABLE.select``).
The adapters in ``_src/onnx``, ``onnx.from_node`` (``node.VERSIONS``) and ``check --help`` read
this table; adding a version is one row here.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmax._src.version_table import Version, VersionTable


def _types(*names: str) -> frozenset[np.dtype]:
    return frozenset(np.dtype(jnp.dtype(n)) for n in names)


_FLOATS = ("float16", "float32", "float64")
_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_REDUCE = ("float16", "float32", "float64", "int32", "int64", "uint32", "uint64")
_BYTES = ("int8", "uint8")
# every real, integer and bool type (complex and string have no maximum)
_SCATTER = ("bool", "bfloat16", *_FLOATS, *_INTS)

#: ONNX operator -> since-version -> the data types it allows and what it adds
#: (docs/semantics.md §4-§7).
TABLE = VersionTable({
    "ReduceMax": {
        1: Version(_types(*_REDUCE)),
        11: Version(_types(*_REDUCE)),
        12: Version(_types(*_REDUCE, *_BYTES)),
        13: Version(_types(*_REDUCE, *_BYTES, "bfloat16")),
        18: Version(_types(*_REDUCE, *_BYTES, "bfloat16"), ("axes input", "noop_with_empty_axes")),
        20: Version(_types(*_REDUCE, *_BYTES, "bfloat16", "bool")),
    },
    "MaxPool": {
        1: Version(_types(*_FLOATS)),
        8: Version(_types(*_FLOATS), ("Indices output", "storage_order")),
        10: Version(_types(*_FLOATS), ("ceil_mode", "dilations")),
        11: Version(_types(*_FLOATS)),
        12: Version(_types(*_FLOATS, *_BYTES)),
        22: Version(_types(*_FLOATS, *_BYTES, "bfloat16")),
    },
    "GlobalMaxPool": {
        1: Version(_types(*_FLOATS)),
        22: Version(_types(*_FLOATS, "bfloat16")),
    },
    "Max": {
        1: Version(_types(*_FLOATS)),
        6: Version(_types(*_FLOATS)),
        8: Version(_types(*_FLOATS), ("broadcasting",)),
        12: Version(_types(*_FLOATS, *_INTS)),
        13: Version(_types(*_FLOATS, *_INTS, "bfloat16")),
    },
    "ArgMax": {
        1: Version(_types(*_FLOATS, *_INTS)),
        11: Version(_types(*_FLOATS, *_INTS)),
        12: Version(_types(*_FLOATS, *_INTS), ("select_last_index",)),
        13: Version(_types(*_FLOATS, *_INTS, "bfloat16")),
    },
    "TopK": {
        1: Version(_types(*_FLOATS)),
        10: Version(_types(*_FLOATS), ("K input",)),
        11: Version(_types(*_FLOATS, *_INTS), ("largest", "sorted")),
        24: Version(_types(*_FLOATS, *_INTS, "bfloat16")),
    },
    "MaxUnpool": {
        9: Version(_types(*_FLOATS)),
        11: Version(_types(*_FLOATS)),
        22: Version(_types(*_FLOATS, "bfloat16")),
    },
    "Hardmax": {
        1: Version(_types(*_FLOATS)),
        11: Version(_types(*_FLOATS)),
        13: Version(_types(*_FLOATS, "bfloat16"), ("one axis, no 2-D coercion",)),
    },
    "MaxRoiPool": {
        1: Version(_types(*_FLOATS)),
        22: Version(_types(*_FLOATS, "bfloat16")),
    },
    "RoiAlign": {
        10: Version(_types(*_FLOATS)),
        16: Version(_types(*_FLOATS), ("coordinate_transformation_mode",)),
        22: Version(_types(*_FLOATS, "bfloat16")),
    },
    # jaxmax implements reduction "max" only, which exists from 18; the adapters gate the
    # earlier since-versions (11, 13, 16) by their reductions (docs/semantics.md §8.1)
    "ScatterElements": {18: Version(_types(*_SCATTER), ("reduction max",))},
    "ScatterND": {18: Version(_types(*_SCATTER), ("reduction max",))},
})
