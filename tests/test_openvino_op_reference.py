"""OpenVINO's own MaxPool-8 reference vectors reproduce exactly, values and indices.

The vectors are transcribed (as data) from OpenVINO's functional op_reference tests for
``op::v8::MaxPool`` (openvinotoolkit/openvino, src/plugins/template/tests/functional/
op_reference/max_pool.cpp; all with ``rounding_type`` floor): i32 and i64 indices, axis 0, 2
and 3, strides, dilations, pads, same_lower/same_upper, 1-D, 2-D and 3-D.
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxmax import openvino as ov

A = [8, -9, 1, -16, -14, 15, -17, 19, -13, 3, 10, 17, 16, -11, -15, 20]
B = [0, -2, 24, 13, 7, -5, -4, 4, 21, -18, 81, 20, -15, 37, 23, 41, 18, 42, 8, 32, 9, 57, 58,
     29, 3]
C = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 20, 30, 40, -20, 60, 70, 80, 50, 50, 1, 2, 3, -15, -10,
     50, 30, 81]
NINE = list(range(1, 10))

# (shape, dtype, data, values, index type, indices, strides, dilations, pads_begin, pads_end,
#  kernel, auto_pad, axis)
VECTORS = [
    ((1, 1, 9), "int32", NINE, [2, 3, 4, 5, 6, 7, 8, 9], "i64", [1, 2, 3, 4, 5, 6, 7, 8],
     [1], [1], [0], [0], [2], "explicit", 0),
    ((1, 1, 9), "int32", NINE, [2, 4, 6, 8], "i64", [1, 3, 5, 7], [2], [1], [0], [0], [2],
     "explicit", 0),
    ((1, 1, 9), "int32", NINE, [1, 3, 5, 7, 9], "i64", [0, 2, 4, 6, 8], [2], [1], [0], [0],
     [2], "same_lower", 0),
    ((1, 1, 9), "int32", NINE, [2, 4, 6, 8, 9], "i64", [1, 3, 5, 7, 8], [2], [1], [0], [0],
     [2], "same_upper", 0),
    ((1, 1, 9), "int32", NINE, [3, 5, 7, 9], "i32", [2, 4, 6, 8], [2], [2], [0], [0], [2],
     "explicit", 0),
    ((1, 2, 4), "float32", [1.0, 2.0, 3.0, 4.0, 0.0, -3.14, -2.71, 5.0], [3.0, 4.0, 0.0, 5.0],
     "i32", [2, 3, 4, 7], [1], [1], [0], [0], [3], "explicit", 0),
    ((1, 2, 4), "float32", [1.0, 2.0, 3.0, 4.0, 0.0, -3.14, -2.71, 5.0], [3.0, 4.0, 0.0, 5.0],
     "i32", [2, 3, 0, 3], [1], [1], [0], [0], [3], "explicit", 2),
    ((1, 1, 9), "int32", [1, 9, 3, 8, 5, 2, 6, 4, 7], [1, 9, 6, 7], "i32", [0, 1, 6, 8], [3],
     [1], [2], [2], [3], "explicit", 0),
    ((1, 1, 3, 3), "int32", [3, 9, 10, 5, 7, 2, 18, 8, -2], [9, 10, 18, 8], "i32",
     [1, 2, 6, 7], [1, 1], [1, 1], [0, 0], [0, 0], [2, 2], "explicit", 0),
    ((1, 1, 4, 4), "int32", A, [15, 15, 19, 15, 15, 19, 16, 10, 20], "i32",
     [5, 5, 7, 5, 5, 7, 12, 10, 15], [1, 1], [1, 1], [0, 0], [0, 0], [2, 2], "explicit", 0),
    ((1, 1, 4, 4), "int32", A, [15, 19, 16, 20], "i32", [5, 7, 12, 15], [2, 2], [1, 1],
     [0, 0], [0, 0], [2, 2], "explicit", 0),
    ((1, 1, 4, 4), "int32", A, [10, 17, 16, 20], "i32", [10, 11, 12, 15], [1, 1], [2, 2],
     [0, 0], [0, 0], [2, 2], "explicit", 0),
    ((1, 1, 4, 4), "int32", A, [15, 19, 16, 20], "i32", [5, 7, 12, 15], [1, 1], [1, 1],
     [0, 0], [0, 0], [3, 3], "explicit", 0),
    ((1, 1, 5, 5), "int32", B, [0, 21, 81, 37], "i32", [0, 8, 10, 13], [2, 3], [1, 1],
     [0, 0], [0, 0], [2, 2], "explicit", 0),
    ((1, 1, 5, 5), "int32", B, [0, 24, 57, 58], "i32", [0, 2, 21, 22], [3, 2], [1, 1],
     [0, 0], [0, 0], [2, 2], "explicit", 0),
    ((1, 1, 5, 5), "int32", B, [81, 24, 81, 58], "i32", [10, 2, 10, 22], [2, 2], [2, 2],
     [0, 0], [0, 0], [2, 2], "explicit", 0),
    ((1, 1, 5, 5), "int32", B, [0, 24, 21, 81, 42, 37, 57, 58, 32], "i32",
     [0, 2, 8, 10, 17, 13, 21, 22, 19], [2, 2], [1, 1], [1, 1], [1, 1], [3, 3], "explicit", 0),
    ((1, 1, 5, 5), "int32", B, [81, 37, 81, 58, 58, 58], "i32", [10, 13, 10, 22, 22, 22],
     [2, 2], [1, 1], [0, 0], [2, 1], [3, 3], "explicit", 0),
    ((1, 2, 3, 3), "int64", B[:18], [13, 24, 13, 21, 81, 81, 41, 42], "i64",
     [3, 2, 3, 8, 1, 1, 6, 8], [1, 1], [1, 1], [0, 0], [0, 0], [2, 2], "explicit", 2),
    ((1, 1, 2, 2), "int32", [1, 2, 3, 4], [1, 2, 3, 4], "i32", [0, 1, 2, 3], [1, 1], [1, 1],
     [0, 0], [0, 0], [1, 1], "explicit", 0),
    ((1, 1, 3, 3, 3), "int32", C, [40, 60, 80, 80, 50, 60, 80, 81], "i32",
     [12, 14, 16, 16, 18, 14, 16, 26], [1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0], [2, 2, 2],
     "explicit", 0),
    ((1, 1, 3, 3, 3), "int32", C, [-20] * 8, "i32", [13] * 8, [2, 2, 2], [2, 2, 2], [1, 1, 1],
     [1, 1, 1], [2, 2, 2], "explicit", 0),
    ((1, 1, 3, 3, 3), "int32", C, [8, 80, 81], "i32", [8, 16, 26], [1, 1, 1], [1, 1, 1],
     [0, 0, 0], [0, 0, 0], [1, 3, 3], "explicit", 0),
    ((1, 1, 3, 3, 3), "int32", C, [4, 5, 7, 8, 40, 60, 80, 80, 50, 2, 50, 81], "i32",
     [4, 5, 7, 8, 3, 5, 7, 7, 0, 2, 6, 8], [1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0],
     [1, 2, 2], "explicit", 3),
]


@pytest.mark.parametrize("vector", VECTORS, ids=[f"v{i}" for i in range(len(VECTORS))])
def test_openvino_reference_vector(vector):
    (shape, dtype, data, values, index_type, indices, strides, dilations, pads_begin, pads_end,
     kernel, auto_pad, axis) = vector
    if dtype == "int64":
        dtype = "int32"  # without x64 JAX holds int64 data as int32; these values fit
    x = np.array(data, dtype).reshape(shape)
    got_values, got_indices = ov.max_pool(
        x, kernel=kernel, strides=strides, pads_begin=pads_begin, pads_end=pads_end,
        dilations=dilations, auto_pad=auto_pad, axis=axis, index_element_type=index_type,
        opset=8)
    np.testing.assert_array_equal(np.asarray(got_values).reshape(-1), values)
    np.testing.assert_array_equal(np.asarray(got_indices).reshape(-1), indices)
