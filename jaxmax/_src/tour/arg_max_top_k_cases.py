"""Tour cases of where the maximum is: ONNX ArgMax and TopK, OpenVINO TopK-1/-3/-11."""

from __future__ import annotations

from functools import partial

import numpy as np

from jaxmax._src.tour.case import Case, unique
from jaxmax._src.tour.references import (
    Reference,
    arg_max_reference,
    index_type,
    top_k_reference,
)


def arg_max_top_k_cases() -> list[Case]:
    """ONNX ArgMax and TopK (the operator pages' examples, from the ONNX node tests), OpenVINO
    TopK (the TopK-11 page's example and shape example), and the NaN / signed-zero / tie rows
    where the runtimes disagree."""
    from jaxmax import onnx
    from jaxmax import openvino as ov

    f32 = np.float32
    nan = np.nan
    cases: list[Case] = []
    page = np.array([[2, 2], [3, 10]], f32)
    for name, attrs, want in (
            ("argmax_default_axis_example: axis 0, keepdims", dict(keepdims=1), [[1, 1]]),
            ("argmax_no_keepdims_example: axis 1", dict(axis=1, keepdims=0), [0, 1]),
            ("argmax_keepdims_example_select_last_index", dict(axis=1, select_last_index=1),
             [[1], [1]])):
        cases.append(Case(
            "onnx.arg_max", "ArgMax-13", f"doc: {name}", page, partial(onnx.arg_max, **attrs),
            partial(arg_max_reference, axis=attrs.get("axis", 0),
                    keepdims=bool(attrs.get("keepdims", 1)),
                    select_last=bool(attrs.get("select_last_index", 0))),
            expected=np.array(want).astype(index_type())))
    cases.append(Case(
        "onnx.arg_max", "ArgMax-13", "NaN is the maximum: [1, NaN, 3, NaN] -> 1 (last: 3)",
        np.array([[1, nan, 3, nan], [1, nan, 3, nan]], f32),
        lambda x: (onnx.arg_max(x[0], keepdims=0), onnx.arg_max(x[1], select_last_index=1)),
        lambda x: Reference(arg_max_reference(x[0], 0, False).value,
                            extra=(arg_max_reference(x[1], 0, True, True).value,)),
        expected=(np.array(1).astype(index_type()), np.array([3]).astype(index_type()))))

    ramp = np.arange(12, dtype=f32).reshape(3, 4)
    k3 = np.array([3], np.int64)
    cases.append(Case(
        "onnx.top_k", "TopK-24", "doc: top_k, K=[3], axis 1", ramp,
        partial(onnx.top_k, K=k3, axis=1),
        partial(top_k_reference, k=3, axis=1, largest=True, nan="top"),
        expected=(np.array([[3, 2, 1], [7, 6, 5], [11, 10, 9]], f32),
                  np.array([[3, 2, 1]] * 3).astype(index_type()))))
    smallest = np.array([[0, 1, 2, 3], [4, 5, 6, 7], [11, 10, 9, 8]], f32)
    cases.append(Case(
        "onnx.top_k", "TopK-24", "doc: top_k_smallest, largest=0", smallest,
        partial(onnx.top_k, K=k3, axis=1, largest=0),
        partial(top_k_reference, k=3, axis=1, largest=False, nan="top"),
        expected=(np.array([[0, 1, 2], [4, 5, 6], [8, 9, 10]], f32),
                  np.array([[0, 1, 2], [0, 1, 2], [3, 2, 1]]).astype(index_type()))))
    cases.append(Case(
        "onnx.top_k", "TopK-24", "NaN above numbers; -0 == +0, ties by index",
        np.array([[1, -nan, 3, 2], [-0.0, 0.0, -1, -2]], f32),
        partial(onnx.top_k, K=2), partial(top_k_reference, k=2, axis=-1, largest=True, nan="top"),
        expected=(np.array([[nan, 3], [-0.0, 0.0]], f32),
                  np.array([[1, 2], [0, 1]]).astype(index_type()))))
    cases.append(Case(
        "onnx.top_k", "TopK-1", "k attribute, axis 0", unique((5, 3), seed=8),
        partial(onnx.top_k, K=2, axis=0, opset=1),
        partial(top_k_reference, k=2, axis=0, largest=True, nan="top")))

    example = np.array([5, 3, 1, 2, 5, 5], f32)
    cases.append(Case(
        "openvino.top_k", "TopK-11", "spec example: mode min, sort index, k 4, stable", example,
        partial(ov.top_k, k=4, axis=0, mode="min", sort="index", stable=True),
        partial(top_k_reference, k=4, axis=0, largest=False, nan="last", by_index=True,
                index_dtype=np.int32),
        expected=(np.array([5, 3, 1, 2], f32), np.array([0, 1, 2, 3], np.int32))))
    cases.append(Case(
        "openvino.top_k", "TopK-11", "spec shape example: (1,3,224,224), k 10, axis 3, i64",
        unique((1, 3, 224, 224), seed=9),
        partial(ov.top_k, k=10, axis=3, mode="max", sort="value", stable=True,
                index_element_type="i64"),
        partial(top_k_reference, k=10, axis=3, largest=True, nan="last"),
        shape=(1, 3, 224, 10)))
    for mode in ("max", "min"):
        cases.append(Case(
            "openvino.top_k", "TopK-11", f"NaN ranks after every number (mode {mode})",
            np.array([nan, 1, 3, -0.0, 0.0], f32),
            partial(ov.top_k, k=4, axis=0, mode=mode, sort="value"),
            partial(top_k_reference, k=4, axis=0, largest=mode == "max", nan="last",
                    index_dtype=np.int32),
            expected=(np.array([3, 1, -0.0, 0.0] if mode == "max" else [-0.0, 0.0, 1, 3], f32),
                      np.array([2, 1, 3, 4] if mode == "max" else [3, 4, 1, 2], np.int32))))
    for opset, spec in ((1, "TopK-1"), (3, "TopK-3")):
        cases.append(Case(
            "openvino.top_k", spec, "k 2 along axis 1, sort index", unique((3, 5), seed=10),
            partial(ov.top_k, k=2, axis=1, mode="max", sort="index", opset=opset),
            partial(top_k_reference, k=2, axis=1, largest=True, nan="last", by_index=True,
                    index_dtype=np.int32)))
    return cases
