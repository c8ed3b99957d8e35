"""Tour cases of the reductions: OpenVINO ReduceMax-1, ReduceLogicalOr-1 and SegmentMax-16,
ONNX ReduceMax."""

from __future__ import annotations

from functools import partial

import numpy as np

from jaxmax._src.tour.case import Case, unique
from jaxmax._src.tour.references import (
    reduce_reference,
    segment_reference,
)


def openvino_reduce_cases() -> list[Case]:
    """OpenVINO ReduceMax-1 and ReduceLogicalOr-1: the spec text's examples and the NaN rule."""
    from jaxmax import openvino as ov

    f32 = np.float32
    nan, inf = np.nan, np.inf
    low32 = np.finfo(f32).min
    cases: list[Case] = []

    # OpenVINO ReduceMax-1 / ReduceLogicalOr-1: the four layers of the spec text (6x12x10x24).
    big = unique((6, 12, 10, 24), seed=0)
    flags = np.random.default_rng(1).random((6, 12, 10, 24)) < 0.02
    examples = [([2, 3], True, (6, 12, 1, 1)), ([2, 3], False, (6, 12)),
                ([1], False, (6, 10, 24)), ([-2], False, (6, 12, 24))]
    for fn, spec, data, rule in ((ov.reduce_max, "ReduceMax-1", big, "openvino"),
                                 (ov.reduce_logical_or, "ReduceLogicalOr-1", flags, "or")):
        for axes, keep, shape in examples:
            cases.append(Case(
                f"openvino.{fn.__name__}", spec,
                f"spec example: axes {axes}, keep_dims={str(keep).lower()}", data,
                partial(fn, axes=axes, keep_dims=keep),
                partial(reduce_reference, axes=axes, keep=keep, rule=rule), shape=shape))
        if rule == "openvino":
            cases.append(Case(
                "openvino.reduce_max", spec, "NaN skipped; only -inf/NaN -> lowest",
                np.array([[1, nan], [nan, nan], [-inf, -inf], [inf, nan]], f32),
                partial(fn, axes=1), partial(reduce_reference, axes=[1], keep=False, rule=rule),
                expected=np.array([1, low32, low32, inf], f32)))
    return cases

def segment_max_cases() -> list[Case]:
    """OpenVINO SegmentMax-16: the spec text's examples and an empty segment."""
    from jaxmax import openvino as ov

    f32 = np.float32
    low32 = np.finfo(f32).min
    cases: list[Case] = []

    # OpenVINO SegmentMax-16: the description's example and the three examples of the spec text
    # (the text gives ids and counts but no data values; the data here is ours).
    def segment(name, data, ids, count, fill, expected):
        ids = np.array(ids, np.int32)
        cases.append(Case(
            "openvino.segment_max", "SegmentMax-16", name, np.asarray(data),
            partial(ov.segment_max, segment_ids=ids, num_segments=count, fill_mode=fill),
            partial(segment_reference, segment_ids=ids, num_segments=count, fill_mode=fill),
            expected=np.asarray(expected, np.asarray(data).dtype)))

    segment("spec description: ids 0,0,0,1,1,3,5,5, ZERO",
            np.array([3, -1, 2, -7, -4, 9, 0.5, 8], f32), [0, 0, 0, 1, 1, 3, 5, 5], None, "ZERO",
            [3, -4, 0, 9, 0, 8])
    segment("spec example 1: num_segments 2 < 4, ZERO",
            np.array([-5, -2, 4, 3, 7], f32), [0, 0, 2, 3, 3], 2, "ZERO", [-2, 0])
    segment("spec example 2: num_segments 8 > 4, ZERO",
            np.array([-5, -2, 4, 3, 7], f32), [0, 0, 2, 3, 3], 8, "ZERO",
            [-2, 0, 4, 7, 0, 0, 0, 0])
    segment("spec example 3: int32 3x4, LOWEST",
            np.array([[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, -12]], np.int32), [0, 1, 1],
            None, "LOWEST", [[1, -2, 3, -4], [5, 10, 11, 8]])
    segment("empty segment, LOWEST", np.array([1.5, -3, 2], f32), [0, 0, 2], None, "LOWEST",
            [1.5, low32, 2])
    return cases

def onnx_reduce_cases() -> list[Case]:
    """ONNX ReduceMax: the operator page's examples, its NaN rule and bool data."""
    from jaxmax import onnx

    f32 = np.float32
    nan, inf = np.nan, np.inf
    cases: list[Case] = []

    # ONNX ReduceMax: the operator page's examples, one per since-version, and its NaN rule.
    page = np.array([[[5, 1], [20, 2]], [[30, 1], [40, 2]], [[55, 1], [60, 2]]], f32)
    doc_examples: list[tuple[str, list[int] | None, int, int, list]] = [
            ("doc: do_not_keepdims, axes [1]", [1], 0, 18, [[20, 2], [40, 2], [60, 2]]),
            ("doc: keepdims, axes [1]", [1], 1, 13, [[[20, 2]], [[40, 2]], [[60, 2]]]),
            ("doc: default_axes_keepdims", None, 1, 18, [[[60]]]),
            ("doc: negative_axes_keepdims, axes [-2]", [-2], 1, 20,
             [[[20, 2]], [[40, 2]], [[60, 2]]])]
    for name, doc_axes, keepdims, opset, expected in doc_examples:
        cases.append(Case(
            "onnx.reduce_max", f"ReduceMax-{opset}", name, page,
            partial(onnx.reduce_max, axes=doc_axes, keepdims=keepdims, opset=opset),
            partial(reduce_reference, axes=range(3) if doc_axes is None else doc_axes,
                    keep=bool(keepdims), rule="onnx"),
            expected=np.array(expected, f32)))
    cases.append(Case(
        "onnx.reduce_max", "ReduceMax-18", "NaN propagates; -inf stays -inf",
        np.array([[1, nan], [nan, 1], [-inf, -inf], [inf, 2]], f32),
        partial(onnx.reduce_max, axes=[1], keepdims=0, opset=18),
        partial(reduce_reference, axes=[1], keep=False, rule="onnx"),
        expected=np.array([nan, nan, -inf, inf], f32)))
    cases.append(Case(
        "onnx.reduce_max", "ReduceMax-20", "bool data (logical or), axes [0]",
        np.array([[True, False, False], [False, False, True]]),
        partial(onnx.reduce_max, axes=[0], keepdims=0, opset=20),
        partial(reduce_reference, axes=[0], keep=False, rule="or"),
        expected=np.array([True, False, True])))
    return cases
