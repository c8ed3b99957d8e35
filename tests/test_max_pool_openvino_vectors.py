"""OpenVINO's own MaxPool-8/-14 vectors reproduce exactly, values and indices.

The vectors (``tests/ov_reference_cases.py``, transcribed as data and credited there) are the
48 op_reference vectors of OpenVINO's functional tests (24 for MaxPool-8, 24 for MaxPool-14:
floor, ceil and ceil_torch; i32/i64 indices; axis 0, 2 and 3; strides, dilations, pads,
same_lower/same_upper; 1-D to 3-D) and the 8 worked examples of OpenVINO's pooling shape-rules
page (one value there is an erratum, corrected and marked). jaxmax must give each exactly, and
so must OpenVINO's reference kernels (``Node.evaluate``), which confirms the transcription.
"""

from __future__ import annotations

import numpy as np
import pytest
from ov_reference_cases import OP_REFERENCE, SPEC_EXAMPLES

from jaxmax import openvino as ov

VECTORS = OP_REFERENCE + SPEC_EXAMPLES
IDS = [f"{v.source}-{i}" for i, v in enumerate(VECTORS)]


def _data(vector):
    # without x64 JAX holds int64 data as int32; every value here fits
    dtype = "int32" if vector.dtype == "int64" else vector.dtype
    return np.array(vector.data, dtype).reshape(vector.shape)


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_jaxmax_reproduces_the_vector(vector):
    values, indices = ov.max_pool(
        _data(vector), kernel=vector.kernel, strides=vector.strides,
        pads_begin=vector.pads_begin, pads_end=vector.pads_end, dilations=vector.dilations,
        rounding_type=vector.rounding_type, auto_pad=vector.auto_pad, axis=vector.axis,
        index_element_type=vector.index_type, opset=8 if vector.source == "v8" else 14)
    assert values.shape == vector.out_shape
    np.testing.assert_array_equal(np.asarray(values).reshape(-1), vector.values)
    np.testing.assert_array_equal(np.asarray(indices).reshape(-1), vector.indices)


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_openvino_reference_kernels_agree(vector):
    pytest.importorskip("openvino")
    import ov_reference as ovr  # after the skip: its own import errors are failures
    ops = pytest.importorskip("openvino.opset8" if vector.source == "v8" else "openvino.opset14")
    values, indices = ovr.evaluate(
        lambda d: ops.max_pool(d, list(vector.strides), list(vector.dilations),
                               list(vector.pads_begin), list(vector.pads_end),
                               list(vector.kernel), vector.rounding_type,
                               None if vector.auto_pad == "explicit" else vector.auto_pad,
                               vector.index_type, vector.axis),
        np.array(vector.data, vector.dtype).reshape(vector.shape))
    np.testing.assert_array_equal(values.reshape(-1), vector.values)
    np.testing.assert_array_equal(indices.reshape(-1), vector.indices)
