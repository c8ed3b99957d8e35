"""Tour cases of the elementwise maximum: ONNX Max and OpenVINO Maximum-1."""

from __future__ import annotations

from functools import partial

import numpy as np

from jaxmax._src.tour.case import Case, unique
from jaxmax._src.tour.references import (
    maximum_reference,
)


def elementwise_cases() -> list[Case]:
    """ONNX Max (the operator page's example) and OpenVINO Maximum-1 (the page's two shape
    examples), and the NaN / signed-zero row where the two faces differ."""
    from jaxmax import onnx
    from jaxmax import openvino as ov

    f32 = np.float32
    nan = np.nan
    cases: list[Case] = []
    second, third = np.array([1, 4, 4], f32), np.array([2, 5, 3], f32)
    cases.append(Case(
        "onnx.max", "Max-13", "doc: max_example (three inputs)", np.array([3, 2, 1], f32),
        lambda a: onnx.max(a, second, third),
        partial(maximum_reference, b=np.maximum(second, third), rule="ieee"),
        expected=np.array([3, 5, 4], f32)))
    a = np.array([nan, 1, nan, -0.0, 0.0, -np.inf], f32)
    b = np.array([1, nan, nan, 0.0, -0.0, nan], f32)
    cases.append(Case(
        "onnx.max", "Max-13", "IEEE: NaN propagates, max(-0, +0) = +0", a,
        lambda x: onnx.max(x, b), partial(maximum_reference, b=b, rule="ieee"),
        expected=np.array([nan, nan, nan, 0.0, 0.0, nan], f32)))
    wide = unique((8, 1, 6, 1), seed=4)
    narrow = unique((7, 1, 5), seed=5) + 0.5
    cases.append(Case(
        "onnx.max", "Max-8", "broadcasting (8,1,6,1) with (7,1,5)", wide,
        lambda x: onnx.max(x, narrow, opset=8), partial(maximum_reference, b=narrow, rule="ieee"),
        shape=(8, 7, 6, 5)))
    cases.append(Case(
        "openvino.maximum", "Maximum-1", "spec example 2: numpy, (8,1,6,1) with (7,1,5)", wide,
        lambda x: ov.maximum(x, narrow), partial(maximum_reference, b=narrow, rule="openvino"),
        shape=(8, 7, 6, 5)))
    other = unique((256, 56), seed=6) + 0.5
    cases.append(Case(
        "openvino.maximum", "Maximum-1", "spec example 1: none, (256,56) twice",
        unique((256, 56), seed=7), lambda x: ov.maximum(x, other, auto_broadcast="none"),
        partial(maximum_reference, b=other, rule="openvino"), shape=(256, 56)))
    cases.append(Case(
        "openvino.maximum", "Maximum-1", "a < b ? b : a: NaN in a wins, ties keep a", a,
        lambda x: ov.maximum(x, b), partial(maximum_reference, b=b, rule="openvino"),
        expected=np.array([nan, 1, nan, -0.0, 0.0, -np.inf], f32)))
    return cases

