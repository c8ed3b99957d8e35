"""Tour cases of max pooling: OpenVINO MaxPool-1/-8/-14, ONNX MaxPool and GlobalMaxPool."""

from __future__ import annotations

from functools import partial

import numpy as np

from jaxmax._src.tour.case import Case, unique
from jaxmax._src.tour.references import (
    index_type,
    pool_reference,
    reduce_reference,
    windowed_reference,
)


def max_pool_1_cases() -> list[Case]:
    """OpenVINO MaxPool-1: the spec example and its same_lower mirror, a ceil window in the
    end padding, 3-D pooling."""
    from jaxmax import openvino as ov

    f32 = np.float32
    cases: list[Case] = []

    # OpenVINO MaxPool-1: the spec example (same_upper, kernel 3, stride 2: pads 0 / 1 on a
    # 4x4 input), its same_lower mirror, a ceil window lying in the end padding, 3-D pooling.
    grid = np.arange(16, dtype=f32).reshape(1, 1, 4, 4)
    for auto_pad, expected in (("same_upper", [[10, 11], [14, 15]]),
                               ("same_lower", [[5, 7], [13, 15]])):
        cases.append(Case(
            "openvino.max_pool", "MaxPool-1", f"spec example: {auto_pad}, kernel 3, stride 2",
            grid, partial(ov.max_pool, kernel=[3, 3], strides=[2, 2], pads_begin=[0, 0],
                          pads_end=[1, 1], auto_pad=auto_pad),
            partial(pool_reference, kernel=[3, 3], strides=[2, 2], pads_begin=[0, 0],
                    pads_end=[1, 1], rounding="floor", auto_pad=auto_pad),
            expected=np.array(expected, f32).reshape(1, 1, 2, 2)))
    low16 = np.finfo(np.float16).min
    cases.append(Case(
        "openvino.max_pool", "MaxPool-1", "ceil: last window in padding (float16)",
        grid.astype(np.float16),
        partial(ov.max_pool, kernel=2, strides=2, pads_begin=0, pads_end=1, rounding_type="ceil"),
        partial(pool_reference, kernel=[2, 2], strides=[2, 2], pads_begin=[0, 0],
                pads_end=[1, 1], rounding="ceil", auto_pad="explicit"),
        expected=np.array([[5, 7, low16], [13, 15, low16], [low16] * 3],
                          np.float16).reshape(1, 1, 3, 3)))
    cases.append(Case(
        "openvino.max_pool", "MaxPool-1", "3-D, kernel 2x3x2, pads 1, ceil",
        unique((2, 3, 4, 5, 6), seed=2),
        partial(ov.max_pool, kernel=[2, 3, 2], strides=[2, 1, 2], pads_begin=[1, 0, 1],
                pads_end=[0, 1, 1], rounding_type="ceil"),
        partial(pool_reference, kernel=[2, 3, 2], strides=[2, 1, 2], pads_begin=[1, 0, 1],
                pads_end=[0, 1, 1], rounding="ceil", auto_pad="explicit")))
    return cases

def pool_cases() -> list[Case]:
    """OpenVINO MaxPool-8/-14 (the MaxPool-8 page's seven examples), ONNX MaxPool and
    GlobalMaxPool (the operator page's examples, from the ONNX node tests)."""
    from jaxmax import onnx
    from jaxmax import openvino as ov

    f32 = np.float32
    cases: list[Case] = []
    square = np.array([[-1, 2, 3], [4, 5, -6], [-7, 8, 9]], f32)
    nine = np.arange(1, 10, dtype=f32).reshape(3, 3)
    eighteen = np.arange(1, 19, dtype=f32).reshape(1, 2, 3, 3)
    # Example 1 as printed has -6 (index 5) at [1][3], whose window holds 3 (index 2) and -6:
    # a typo on the page (the reference kernel and the CPU plugin give 3 / 2); corrected here.
    pages: list[tuple[str, np.ndarray, dict, list, list]] = [
        ("example 1: explicit pads 1, kernel 2 (page typo at [1][3] corrected)",
         square[None, None],
         dict(kernel=[2, 2], strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1]),
         [[-1, 2, 3, 3], [4, 5, 5, 3], [4, 8, 9, 9], [-7, 8, 9, 9]],
         [[0, 1, 2, 2], [3, 4, 4, 2], [3, 7, 8, 8], [6, 7, 8, 8]]),
        ("example 2: 1-D, valid, kernel 3", np.array([[[-1, 2, 3, 5, -7, 9, 1]]], f32),
         dict(kernel=[3], strides=[1], auto_pad="valid"), [[3, 5, 5, 9, 9]], [[2, 3, 3, 5, 5]]),
        ("example 3: same_lower, kernel 2", square[None, None],
         dict(kernel=[2, 2], strides=[1, 1], auto_pad="same_lower"),
         [[-1, 2, 3], [4, 5, 5], [4, 8, 9]], [[0, 1, 2], [3, 4, 4], [3, 7, 8]]),
        ("example 4: same_upper, two channels",
         np.stack([square, np.array([[2, -1, 5], [6, -7, 1], [8, 2, -3]], f32)])[None],
         dict(kernel=[2, 2], strides=[1, 1], auto_pad="same_upper"),
         [[[5, 5, 3], [8, 9, 9], [8, 9, 9]], [[6, 5, 5], [8, 2, 1], [8, 2, -3]]],
         [[[4, 4, 2], [7, 8, 8], [7, 8, 8]], [[12, 11, 11], [15, 16, 14], [15, 16, 17]]]),
        ("example 5: valid, ceil, stride 2", square[None, None],
         dict(kernel=[2, 2], strides=[2, 2], auto_pad="valid", rounding_type="ceil"),
         [[5, 3], [8, 9]], [[4, 2], [7, 8]]),
        ("example 6: dilations 2, pads 1", nine[None, None],
         dict(kernel=[2, 2], strides=[1, 1], dilations=[2, 2], pads_begin=[1, 1],
              pads_end=[1, 1]),
         [[5, 6, 5], [8, 9, 8], [5, 6, 5]], [[4, 5, 4], [7, 8, 7], [4, 5, 4]]),
        ("example 7: axis 2", eighteen,
         dict(kernel=[2, 2], strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], axis=2),
         [[[5, 6], [8, 9]], [[14, 15], [17, 18]]], [[[4, 5], [7, 8]], [[4, 5], [7, 8]]])]
    for name, data, attrs, values, indices in pages:
        expected_values = np.array(values, f32).reshape(data.shape[:2] + np.shape(values)[-(
            data.ndim - 2):])
        shape = expected_values.shape
        cases.append(Case(
            "openvino.max_pool", "MaxPool-8", f"spec example {name[8:]}", data,
            partial(ov.max_pool, **attrs, opset=8),
            partial(windowed_reference, **_ov_pool_geometry(attrs), rule="openvino",
                    axis=attrs.get("axis", 0)),
            expected=(expected_values,
                      np.array(indices).astype(index_type()).reshape(shape))))
    grid = unique((1, 2, 4, 4), seed=3)
    for rounding in ("ceil_torch", "ceil"):
        attrs = dict(kernel=[2, 2], strides=[2, 2], pads_begin=[0, 0], pads_end=[1, 1],
                     rounding_type=rounding)
        cases.append(Case(
            "openvino.max_pool", "MaxPool-14",
            f"rounding {rounding}: " + ("3x3" if rounding == "ceil" else "2x2, none in padding"),
            grid, partial(ov.max_pool, **attrs, opset=14),
            partial(windowed_reference, **_ov_pool_geometry(attrs), rule="openvino"),
            shape=(1, 2, 2, 2) if rounding == "ceil_torch" else (1, 2, 3, 3)))

    ramp = np.arange(1, 26, dtype=f32).reshape(1, 1, 5, 5)
    onnx_pages: list[tuple[str, np.ndarray, dict, list, list | None]] = [
        ("maxpool_2d_precomputed_pads: kernel 5, pads 2", ramp,
         dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
         [[13, 14, 15, 15, 15], [18, 19, 20, 20, 20]] + [[23, 24, 25, 25, 25]] * 3, None),
        ("maxpool_with_argmax_2d_precomputed_pads: Indices", ramp,
         dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
         [[13, 14, 15, 15, 15], [18, 19, 20, 20, 20]] + [[23, 24, 25, 25, 25]] * 3,
         [[12, 13, 14, 14, 14], [17, 18, 19, 19, 19]] + [[22, 23, 24, 24, 24]] * 3),
        ("maxpool_2d_precomputed_same_upper: stride 2", ramp,
         dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
         [[7, 9, 10], [17, 19, 20], [22, 24, 25]], None),
        ("maxpool_2d_ceil: ceil_mode", np.arange(1, 17, dtype=f32).reshape(1, 1, 4, 4),
         dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), [[11, 12], [15, 16]], None),
        ("maxpool_2d_dilations: dilations 2", np.arange(1, 17, dtype=f32).reshape(1, 1, 4, 4),
         dict(kernel_shape=[2, 2], strides=[1, 1], dilations=[2, 2]), [[11, 12], [15, 16]],
         None),
        ("maxpool_2d_uint8", ramp.astype(np.uint8), dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
         [[13, 14, 15, 15, 15], [18, 19, 20, 20, 20]] + [[23, 24, 25, 25, 25]] * 3, None)]
    for name, data, attrs, values, doc_indices in onnx_pages:
        want = np.array(values, data.dtype).reshape(1, 1, *np.shape(values))
        with_doc_indices = doc_indices is not None
        cases.append(Case(
            "onnx.max_pool", "MaxPool-22", f"doc: {name}", data,
            partial(onnx.max_pool, **attrs, return_indices=with_doc_indices),
            partial(windowed_reference, **_onnx_pool_geometry(attrs), rule="onnx",
                    outputs=2 if with_doc_indices else 1),
            expected=(want, np.array(doc_indices).astype(index_type()).reshape(want.shape))
            if with_doc_indices else want))
    nan = np.nan
    cases.append(Case(
        "onnx.max_pool", "MaxPool-22", "NaN wins (first NaN's index); -inf stays -inf",
        np.array([[[1, nan, 3, nan, -np.inf, -np.inf]]], f32),
        partial(onnx.max_pool, kernel_shape=[2], strides=[2], return_indices=True),
        partial(windowed_reference, **_onnx_pool_geometry(dict(kernel_shape=[2], strides=[2])),
                rule="onnx"),
        expected=(np.array([[[nan, nan, -np.inf]]], f32),
                  np.array([[[1, 3, 4]]]).astype(index_type()))))
    cases.append(Case(
        "onnx.global_max_pool", "GlobalMaxPool-22", "doc: globalmaxpool_precomputed",
        nine[None, None], onnx.global_max_pool,
        partial(reduce_reference, axes=[2, 3], keep=True, rule="onnx"),
        expected=np.array([[[[9]]]], f32)))
    cases.append(Case(
        "onnx.global_max_pool", "GlobalMaxPool-22", "3-D spatial, NaN propagates",
        np.array([[[[[1, nan], [2, 3]]], [[[4, 5], [6, -np.inf]]]]], f32),
        onnx.global_max_pool, partial(reduce_reference, axes=[2, 3, 4], keep=True, rule="onnx"),
        expected=np.array([nan, 6], f32).reshape(1, 2, 1, 1, 1)))
    return cases

def _ov_pool_geometry(attrs: dict) -> dict:
    """The reference's geometry arguments for an ``ov.max_pool`` call's attributes."""
    rank = len(attrs["kernel"])
    return dict(kernel=attrs["kernel"], strides=attrs["strides"],
                dilations=attrs.get("dilations"),
                pads_begin=attrs.get("pads_begin", [0] * rank),
                pads_end=attrs.get("pads_end", [0] * rank),
                rounding=attrs.get("rounding_type", "floor"),
                auto_pad=attrs.get("auto_pad", "explicit"))


def _onnx_pool_geometry(attrs: dict) -> dict:
    """The reference's geometry arguments for an ``onnx.max_pool`` call's attributes."""
    rank = len(attrs["kernel_shape"])
    pads = attrs.get("pads", [0] * 2 * rank)
    return dict(kernel=attrs["kernel_shape"], strides=attrs.get("strides", [1] * rank),
                dilations=attrs.get("dilations"), pads_begin=pads[:rank], pads_end=pads[rank:],
                rounding="ceil_torch" if attrs.get("ceil_mode") else "floor",
                auto_pad=attrs.get("auto_pad", "NOTSET"))
