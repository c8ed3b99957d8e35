"""The ONNX backend node cases of every operator jaxmax has, collected once for every test file.

The cases are regenerated from the installed ``onnx.backend.test`` definitions (onnx 1.23 wheels
ship the generators, not the ``data/node`` .pb files); their tensors go through the TensorProto
serialisation the .pb files use. Only the case modules of jaxmax's operators are imported (onnx
keeps one module per operator, named after it in lower case, and a module's cases are generated
when it is imported): the whole collection generates every operator's ~1,900 cases, 10 s per
pytest worker, for the same 84 cases. Import this module after ``pytest.importorskip("onnx")``.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import warnings

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from jaxmax._src.onnx.node import VERSIONS

#: The case whose expected output is onnx.reference's documented bug (docs/semantics.md §7.2):
#: jaxmax follows onnxruntime and torch (``I`` indexes the given shape).
ORT_INSTEAD = frozenset({"test_maxunpool_export_with_output_shape"})


def _pb_roundtrip(array):
    """What an ``input_*.pb``/``output_*.pb`` file holds: a serialised TensorProto."""
    proto = TensorProto.FromString(numpy_helper.from_array(np.asarray(array)).SerializeToString())
    return numpy_helper.to_array(proto)


#: jaxmax's ONNX operators that onnx has no node cases for.
NO_CASES = frozenset({"MaxRoiPool"})


@functools.cache
def _all_cases() -> dict:
    # importing a case module runs its exporters, which append to the package's list
    from onnx.backend.test.case import node

    modules = {m.name for m in pkgutil.iter_modules(node.__path__)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for op in sorted(set(VERSIONS) - NO_CASES):
            if op.lower() not in modules:
                raise LookupError(f"onnx.backend.test.case.node has no module {op.lower()!r} "
                                  f"for {op}: collect the cases another way")
            importlib.import_module(f"{node.__name__}.{op.lower()}")
    found = {case.name: case for case in node._NodeTestCases
             if case.model is not None and len(case.model.graph.node) == 1
             and case.model.graph.node[0].op_type in VERSIONS and case.data_sets
             and _bound(case.model.graph.node[0])}
    missing = set(VERSIONS) - NO_CASES - {op_type(case) for case in found.values()}
    if missing:
        raise LookupError(f"no onnx node cases collected for {sorted(missing)}")
    return found


def _bound(node) -> bool:
    """Scatter nodes bind with reduction max only (the others: tests/test_scatter_nodes.py)."""
    if node.op_type not in ("ScatterElements", "ScatterND"):
        return True
    return any(a.name == "reduction" and a.s == b"max" for a in node.attribute)


def cases(*op_types: str) -> dict:
    """{name: case} of the single-node cases of `op_types` (every jaxmax operator if none)."""
    return {name: case for name, case in _all_cases().items()
            if not op_types or op_type(case) in op_types}


def op_type(case) -> str:
    return case.model.graph.node[0].op_type


def opset(case) -> int:
    return next(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))


def first_data_set(case) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The inputs and expected outputs of the case's first data set, as the .pb files hold them."""
    inputs, outputs = case.data_sets[0]
    return [_pb_roundtrip(a) for a in inputs], [_pb_roundtrip(a) for a in outputs]


def attributes(case) -> dict:
    """The node's attributes as Python values (strings decoded)."""
    values = {a.name: helper.get_attribute_value(a) for a in case.model.graph.node[0].attribute}
    return {k: v.decode() if isinstance(v, bytes) else v for k, v in values.items()}
