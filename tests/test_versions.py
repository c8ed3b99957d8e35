"""The version tables (jaxmax/_src/onnx/versions.py, jaxmax/_src/openvino/versions.py) against
independent sources: the installed ONNX operator schemas (``onnx.defs``) and the README's
operator table, which users read and which must list the same versions."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from jaxmax._src.onnx import versions as onnx_versions
from jaxmax._src.openvino import versions as ov_versions

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
_ONNX_TYPE_NAMES = {"float": "float32", "double": "float64"}
# types ONNX allows that JAX has no array type for (they are outside every jaxmax table)
_NOT_IN_JAX = {"string", "complex64", "complex128", "float8e4m3fn", "float8e4m3fnuz",
               "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0"}


def _readme_rows(face: str) -> dict[str, tuple[int, ...]]:
    """Operator -> versions, as the README's operator table (``| face | operator | versions |
    function | page |``) lists them for `face`."""
    label = {"onnx": "ONNX", "openvino": "OpenVINO"}[face]
    rows: dict[str, tuple[int, ...]] = {}
    for line in README.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] == label:
            rows[cells[1]] = tuple(int(v) for v in cells[2].split(","))
    return rows


def test_readme_lists_the_onnx_table():
    assert _readme_rows("onnx") == {op: onnx_versions.TABLE.since_versions(op)
                                    for op in onnx_versions.TABLE}


def test_readme_lists_the_openvino_table():
    assert _readme_rows("openvino") == {op: ov_versions.TABLE.since_versions(op)
                                        for op in ov_versions.TABLE}


def test_onnx_table_matches_the_onnx_schemas():
    """Every since-version is one in ONNX, and its dtypes are the schema's constraint on the
    data input (less the types JAX has no array type for)."""
    onnx = pytest.importorskip("onnx")
    for op, table in onnx_versions.TABLE.items():
        for since, version in table.items():
            schema = onnx.defs.get_schema(op, since)
            assert schema.since_version == since, (op, since)
            name = schema.inputs[0].type_str
            constraint = next(c for c in schema.type_constraints if c.type_param_str == name)
            allowed = {_ONNX_TYPE_NAMES.get(t[len("tensor("):-1], t[len("tensor("):-1])
                       for t in constraint.allowed_type_strs} - _NOT_IN_JAX
            assert version.dtypes is not None
            assert {np.dtype(t).name for t in version.dtypes} == allowed, (op, since)
