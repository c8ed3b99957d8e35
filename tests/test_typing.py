"""A user's type checker accepts every call form the README and docstrings show.

mypy checks a snippet of those calls against the package's annotations (``py.typed``), and must
also reject a call that is wrong (so the test can fail).
"""

from __future__ import annotations

import re
import textwrap

import pytest

mypy_api = pytest.importorskip("mypy.api")

DOCUMENTED_CALLS = """
    import jax
    import numpy as np
    from jaxmax import onnx
    from jaxmax import openvino as ov

    x = np.zeros((2, 3, 8, 8), np.float32)
    a: jax.Array = ov.reduce_max(x, [1, 2])
    a = ov.reduce_max(x, axes=[2, 3], keep_dims=True)
    a = ov.reduce_max(x, 1)
    a = ov.reduce_max(x, np.array([1]))
    a = ov.reduce_max([[1.0, 2.0]], (0, 1))
    a = ov.reduce_logical_or(x > 0, axes=[1], keep_dims=True)
    a = ov.max_pool(x, kernel=[2, 2], strides=(2, 2))
    a = ov.max_pool(x, kernel=3, strides=2, pads_begin=1, pads_end=1, rounding_type="ceil")
    a = ov.max_pool(x, kernel=3, strides=2, auto_pad="same_upper")
    values, indices = ov.max_pool(x, kernel=2, strides=2, dilations=2, axis=2,
                                  index_element_type="i32", opset=8)
    values, indices = ov.max_pool(x, kernel=2, strides=2, rounding_type="ceil_torch", opset=14)
    a = ov.segment_max(x, [0, 1], num_segments=3, fill_mode="ZERO")
    a = ov.segment_max(x, np.array([0, 0]), fill_mode="LOWEST")
    a = onnx.reduce_max(x, axes=[1], keepdims=0, opset=13)
    a = onnx.reduce_max(x)
    a = onnx.max_pool(x, kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1)
    y, i = onnx.max_pool(x, kernel_shape=[3, 3], dilations=[2, 2], return_indices=True)
    a = onnx.global_max_pool(x, opset=22)
"""


WRONG_CALL = "    a = ov.reduce_max(x, axes='0')\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[str, int]:
    """mypy, once (it reads jax's and numpy's annotations anew on each run), on two user files:
    ``documented.py`` (the calls) and ``wrong.py`` (the calls and a wrong one), with a config of
    its own (not the project's): (report, exit status)."""
    root = tmp_path_factory.mktemp("typing")
    (root / "mypy.ini").write_text("[mypy]\npython_version = 3.11\n")
    (root / "documented.py").write_text(textwrap.dedent(DOCUMENTED_CALLS))
    (root / "wrong.py").write_text(textwrap.dedent(DOCUMENTED_CALLS + WRONG_CALL))
    out, err, status = mypy_api.run(["--no-incremental", "--config-file", str(root / "mypy.ini"),
                                     str(root / "documented.py"), str(root / "wrong.py")])
    return out + err, status


def _errors(report: str, name: str) -> list[str]:
    return [line for line in report.splitlines() if re.search(rf"\b{name}\.py:\d+: error", line)]


def test_documented_call_forms_type_check(report):
    text, _ = report
    assert _errors(text, "documented") == [], text


def test_a_wrong_call_is_rejected(report):
    text, status = report
    wrong = _errors(text, "wrong")
    assert status == 1 and len(wrong) == 1 and 'Argument "axes"' in wrong[0], text
