"""Tour cases of OpenVINO AdaptiveMaxPool-8 and ONNX MaxUnpool."""

from __future__ import annotations

from functools import partial

import numpy as np

from jaxmax._src.tour.case import Case, unique
from jaxmax._src.tour.references import (
    adaptive_reference,
    unpool_reference,
)


def adaptive_unpool_cases() -> list[Case]:
    """OpenVINO AdaptiveMaxPool-8 (the page's shape example, overlapping windows, O > L) and
    ONNX MaxUnpool (the operator page's example; duplicate indices)."""
    from jaxmax import onnx
    from jaxmax import openvino as ov

    f32 = np.float32
    cases: list[Case] = []
    cases.append(Case(
        "openvino.adaptive_max_pool", "AdaptiveMaxPool-8",
        "spec example: (1,3,32,32) to (16,16), i64", unique((1, 3, 32, 32), seed=11),
        partial(ov.adaptive_max_pool, output_shape=[16, 16]),
        partial(adaptive_reference, output_shape=[16, 16]), shape=(1, 3, 16, 16)))
    cases.append(Case(
        "openvino.adaptive_max_pool", "AdaptiveMaxPool-8",
        "overlapping windows: 14x9 to 5x3, i32", unique((2, 2, 14, 9), seed=12),
        partial(ov.adaptive_max_pool, output_shape=[5, 3], index_element_type="i32"),
        partial(adaptive_reference, output_shape=[5, 3], index_dtype=np.int32)))
    cases.append(Case(
        "openvino.adaptive_max_pool", "AdaptiveMaxPool-8",
        "O > L repeats elements; ties to the first", np.array([[[1, 3, 3]]], f32),
        partial(ov.adaptive_max_pool, output_shape=[5], index_element_type="i32"),
        partial(adaptive_reference, output_shape=[5], index_dtype=np.int32),
        expected=(np.array([[[1, 3, 3, 3, 3]]], f32),
                  np.array([[[0, 1, 1, 1, 2]]], np.int32))))
    where = np.array([[[[5, 7], [13, 15]]]], np.int64)
    cases.append(Case(
        "onnx.max_unpool", "MaxUnpool-22", "doc: maxunpool_export_without_output_shape",
        np.array([[[[1, 2], [3, 4]]]], f32),
        partial(onnx.max_unpool, I=where, kernel_shape=[2, 2], strides=[2, 2]),
        partial(unpool_reference, indices=where, output_shape=(1, 1, 4, 4)),
        expected=np.array([[[[0, 0, 0, 0], [0, 1, 0, 2], [0, 0, 0, 0], [0, 3, 0, 4]]]], f32)))
    twice = np.array([[[0, 3, 3, 5]]], np.int64)
    cases.append(Case(
        "onnx.max_unpool", "MaxUnpool-22", "duplicate index: the last writer wins",
        np.array([[[1.5, -2, 7, 4]]], f32),
        partial(onnx.max_unpool, I=twice, kernel_shape=[2], strides=[2]),
        partial(unpool_reference, indices=twice, output_shape=(1, 1, 8)),
        expected=np.array([[[1.5, 0, 0, 7, 0, 4, 0, 0]]], f32)))
    return cases
