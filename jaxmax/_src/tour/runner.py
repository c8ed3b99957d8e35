"""The newcomer's tour behind ``python -m jaxmax``.

Every public operator runs on small built-in inputs: the examples of the specification texts
and a few corner cases where frameworks disagree. Each result is checked against an expected
value computed here without jaxmax (an array copied from the spec example, or a plain NumPy loop
over the slices, windows or segments), then the same call runs once under ``jax.jit``,
``jax.vmap`` (a batch of two inputs) and ``jax.grad`` (floating data), and those are checked as
well. A table is printed; the exit status is non-zero when anything disagrees.

The tour is data: :func:`default_cases` builds the list of :class:`Case` objects and
:func:`run_tour` runs any list of them, so a test can hand it a case with a wrong expected value
and see the tour fail.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from jaxmax._src.tour.references import (
    Reference,
    adaptive_reference,
    arg_max_reference,
    index_type,
    maximum_reference,
    pool_reference,
    reduce_reference,
    segment_reference,
    top_k_reference,
    unpool_reference,
    windowed_reference,
)

# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """One call of one operator with its independent expectation.

    Attributes:
      operator: the public name, e.g. ``"openvino.reduce_max"``.
      spec: the specification and version, e.g. ``"ReduceMax-1"``.
      name: what the case shows.
      data: the input that jit/vmap/grad act on.
      run: ``data -> jax.Array`` (or a tuple of them), the jaxmax call with every other
        argument bound.
      reference: ``data -> Reference``, the NumPy reference for any input of this shape.
      expected: hard-coded expected outputs (from the spec text): one array, or a tuple for
        operators with several outputs; ``None`` uses ``reference(data).outputs``.
      shape: the output shape the spec text states, checked when given.
    """

    operator: str
    spec: str
    name: str
    data: np.ndarray
    run: Callable[[jax.Array], Any]
    reference: Callable[[np.ndarray], Reference]
    expected: np.ndarray | tuple[np.ndarray, ...] | None = None
    shape: tuple[int, ...] | None = None


def _same(actual, expected) -> str | None:
    """``None`` if equal in shape, dtype and every value (NaN equals NaN), else why not."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype}, expected {expected.dtype}"
    try:
        np.testing.assert_array_equal(actual, expected, strict=True)
    except AssertionError as err:
        return " ".join(str(err).split())[:300]
    return None


def _as_tuple(outputs) -> tuple:
    """A call's outputs as a tuple (one array, or the tuple an operator returns)."""
    return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


def _same_outputs(actual, expected) -> str | None:
    """:func:`_same` over every output of a call, naming the output that differs."""
    actual, expected = _as_tuple(actual), _as_tuple(expected)
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        problem = _same(a, e)
        if problem:
            return problem if len(actual) == 1 else f"output {i}: {problem}"
    return None


def _other(data: np.ndarray) -> np.ndarray:
    """A second batch element of the same shape and dtype: the data reversed (negated if bool)."""
    return ~data if data.dtype == np.bool_ else np.flip(data).copy()


def _unique(shape: tuple[int, ...], seed: int, dtype=np.float32) -> np.ndarray:
    """Distinct values (so gradients have no ties), centred on zero, in a seeded order."""
    size = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(size) - size // 2).astype(dtype).reshape(shape)


def default_cases() -> list[Case]:
    """The tour: the spec texts' examples and the corner cases where frameworks disagree."""
    from jaxmax import onnx
    from jaxmax import openvino as ov

    f32 = np.float32
    nan, inf = np.nan, np.inf
    low32 = np.finfo(f32).min
    cases: list[Case] = []

    # OpenVINO ReduceMax-1 / ReduceLogicalOr-1: the four layers of the spec text (6x12x10x24).
    big = _unique((6, 12, 10, 24), seed=0)
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
        _unique((2, 3, 4, 5, 6), seed=2),
        partial(ov.max_pool, kernel=[2, 3, 2], strides=[2, 1, 2], pads_begin=[1, 0, 1],
                pads_end=[0, 1, 1], rounding_type="ceil"),
        partial(pool_reference, kernel=[2, 3, 2], strides=[2, 1, 2], pads_begin=[1, 0, 1],
                pads_end=[0, 1, 1], rounding="ceil", auto_pad="explicit")))

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
    cases += _pool_cases() + _elementwise_cases() + _where_the_maximum_is_cases()
    cases += _family_cases()
    cases += __import__("jaxmax._src.tour.scatter_cases", fromlist=["_"]).scatter_cases()
    return cases


def _pool_cases() -> list[Case]:
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
    grid = _unique((1, 2, 4, 4), seed=3)
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
                rounding="onnx_ceil" if attrs.get("ceil_mode") else "floor",
                auto_pad=attrs.get("auto_pad", "NOTSET"))


def _elementwise_cases() -> list[Case]:
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
    wide = _unique((8, 1, 6, 1), seed=4)
    narrow = _unique((7, 1, 5), seed=5) + 0.5
    cases.append(Case(
        "onnx.max", "Max-8", "broadcasting (8,1,6,1) with (7,1,5)", wide,
        lambda x: onnx.max(x, narrow, opset=8), partial(maximum_reference, b=narrow, rule="ieee"),
        shape=(8, 7, 6, 5)))
    cases.append(Case(
        "openvino.maximum", "Maximum-1", "spec example 2: numpy, (8,1,6,1) with (7,1,5)", wide,
        lambda x: ov.maximum(x, narrow), partial(maximum_reference, b=narrow, rule="openvino"),
        shape=(8, 7, 6, 5)))
    other = _unique((256, 56), seed=6) + 0.5
    cases.append(Case(
        "openvino.maximum", "Maximum-1", "spec example 1: none, (256,56) twice",
        _unique((256, 56), seed=7), lambda x: ov.maximum(x, other, auto_broadcast="none"),
        partial(maximum_reference, b=other, rule="openvino"), shape=(256, 56)))
    cases.append(Case(
        "openvino.maximum", "Maximum-1", "a < b ? b : a: NaN in a wins, ties keep a", a,
        lambda x: ov.maximum(x, b), partial(maximum_reference, b=b, rule="openvino"),
        expected=np.array([nan, 1, nan, -0.0, 0.0, -np.inf], f32)))
    return cases


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    """What happened to one case: the checks run and the failures."""

    case: Case
    checks: list[str]
    failures: list[str]
    jitted: Callable[[jax.Array], Any] | None = None

    @property
    def agrees(self) -> bool:
        return not self.failures


def _median_seconds(fn: Callable[[jax.Array], Any], x: jax.Array, repeats: int) -> float:
    """Median wall time of `repeats` calls of an already compiled `fn`."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(x))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_case(case: Case, transforms: bool = True) -> Outcome:
    """Check one case eagerly and under ``jax.jit``; with `transforms`, also under ``jax.vmap``
    (a batch of the data and its reverse) and, for finite floating data, ``jax.grad``."""
    outcome = Outcome(case, [], [])

    def check(label: str, actual, expected) -> None:
        outcome.checks.append(label)
        problem = _same_outputs(actual, expected)
        if problem:
            outcome.failures.append(f"{label}: {problem}")

    data = np.asarray(case.data)
    x = jnp.asarray(data)
    try:
        reference = case.reference(data)
        expected = (reference.outputs if case.expected is None
                    else tuple(np.asarray(e) for e in _as_tuple(case.expected)))
        if case.shape is not None and expected[0].shape != tuple(case.shape):
            outcome.failures.append(
                f"expected shape {expected[0].shape}, the spec says {case.shape}")
        if case.expected is not None and _same_outputs(reference.outputs, expected):
            outcome.failures.append(  # the NumPy loops must reproduce the spec example too
                f"the NumPy reference gives {[r.tolist() for r in reference.outputs]}, "
                f"the spec example {[e.tolist() for e in expected]}")
        check("eager", case.run(x), expected)
        outcome.jitted = jax.jit(case.run)
        check("jit", outcome.jitted(x), expected)
        if not transforms:
            return outcome

        other = _other(data)
        batched = jax.jit(jax.vmap(case.run))(jnp.stack([x, jnp.asarray(other)]))
        check("vmap", batched, tuple(np.stack(pair) for pair in zip(
            expected, case.reference(other).outputs, strict=True)))

        first = expected[0]
        if (np.issubdtype(data.dtype, np.floating) and np.isfinite(data).all()
                and np.issubdtype(first.dtype, np.floating)):
            # integer cotangents keep every gradient sum exact
            cotangent = (np.arange(first.size) % 5 + 1).astype(first.dtype).reshape(first.shape)
            grad = jax.jit(jax.grad(
                lambda v: jnp.sum(_as_tuple(case.run(v))[0] * cotangent)))(x)
            outcome.checks.append("grad")
            want = reference.vjp(data, cotangent)
            got = np.asarray(grad, np.float64)
            if not np.allclose(got, want, rtol=1e-6, atol=0):
                outcome.failures.append(f"grad: max abs difference {np.abs(got - want).max()}")
    except Exception as err:  # a crash is a disagreement, reported in the table, never hidden
        outcome.failures.append(f"raised {type(err).__name__}: {err}")
    return outcome


_COLUMNS = ("operator", "spec version", "cases", "backend", "checked", "agree", "jit median")


def _format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms"


def _widths(rows: Sequence[Sequence[str]]) -> list[int]:
    return [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() + "\n"


def run_tour(cases: Sequence[Case], out: TextIO = sys.stdout, repeats: int = 20,
             verbose: bool = False) -> int:
    """Run `cases`, print the table, and return the exit status: 0 if every case agrees.

    One row per (operator, spec version). Every case is checked eagerly and under ``jax.jit``;
    the first case of a row also under ``jax.vmap``, and the first one with finite floating data
    under ``jax.grad``. The time is the median of `repeats` jitted calls of the row's first case.
    """
    backend = jax.default_backend()
    out.write(f"jaxmax tour: jax {jax.__version__}, backend {backend}, "
              f"{jax.device_count()} device(s)\n\n")
    groups: dict[tuple[str, str], list[Case]] = {}
    for case in cases:
        groups.setdefault((case.operator, case.spec), []).append(case)

    rows, outcomes = [], []
    for (operator, spec), members in groups.items():
        need_grad = True
        group_outcomes = []
        for i, case in enumerate(members):
            floating = np.issubdtype(np.asarray(case.data).dtype, np.floating)
            finite = floating and np.isfinite(case.data).all()
            outcome = run_case(case, transforms=i == 0 or (need_grad and finite))
            need_grad = need_grad and "grad" not in outcome.checks
            group_outcomes.append(outcome)
        head = group_outcomes[0]
        seconds = None
        if head.jitted is not None and head.agrees:
            seconds = _median_seconds(head.jitted, jnp.asarray(head.case.data), repeats)
        checked = ["values"] + [c for c in ("jit", "vmap", "grad")
                                if any(c in o.checks for o in group_outcomes)]
        agrees = all(o.agrees for o in group_outcomes)
        rows.append((operator, spec, str(len(members)), backend, " ".join(checked),
                     "yes" if agrees else "no", _format_seconds(seconds)))
        outcomes += group_outcomes

    widths = _widths(rows + [_COLUMNS])
    out.write(_line(_COLUMNS, widths))
    out.write(_line(["-" * w for w in widths], widths))
    for row in rows:
        out.write(_line(row, widths))
    out.write("\n")
    if verbose:
        cells = [("ok" if o.agrees else "NO", o.case.operator, o.case.spec, o.case.name,
                  " ".join(o.checks)) for o in outcomes]
        widths = _widths(cells)
        for c in cells:
            out.write(_line(c, widths))
        out.write("\n")
    failed = [o for o in outcomes if not o.agrees]
    for o in failed:
        for failure in o.failures:
            out.write(f"DISAGREES {o.case.operator} ({o.case.spec}) [{o.case.name}] {failure}\n")
    if failed:
        out.write(f"{len(failed)} of {len(outcomes)} cases disagree.\n")
        return 1
    out.write(f"All {len(outcomes)} cases agree with the expected values (spec examples and "
              f"NumPy loops), eagerly and under jit, vmap and grad.\n")
    return 0


_DESCRIPTION = """\
A short tour of jaxmax that needs no arguments and no network. It runs every public operator
on small built-in inputs: the examples of the specification texts and operator pages, plus the
corner cases where frameworks disagree (NaN, -inf, signed zeros, ties, empty segments, ceil
windows in the padding, same_lower, overlapping adaptive windows, duplicate unpool indices).

  openvino: reduce_max, reduce_logical_or, max_pool (MaxPool-1/-8/-14), segment_max, top_k
            (TopK-1/-3/-11), adaptive_max_pool, maximum
  onnx:     reduce_max, max_pool, global_max_pool, arg_max, top_k, max_unpool, max

Every result is compared, exactly (values, indices, dtypes, zero signs), with an expected value
computed without jaxmax: the values of the spec example, or plain NumPy loops over the slices,
windows, rows or segments. Every case is also run under jax.jit; the first case of each row
also under jax.vmap (a batch of two inputs) and, for floating data, jax.grad (checked against
the NumPy gradient routing).

The table has one row per operator and spec version: the number of cases, the backend
(jax.default_backend()), the checks run, whether everything agreed, and the median time of a
jitted call of the row's first case.

`python -m jaxmax check MODEL` checks a model's max-family nodes instead (see
`python -m jaxmax check --help`)."""


def main(argv: Sequence[str] | None = None, cases: Sequence[Case] | None = None,
         out: TextIO = sys.stdout) -> int:
    """Command-line entry point; returns the exit status (1 if any case disagrees)."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxmax", description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: 0 when every case agrees, 1 otherwise.")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also list every case with the checks it ran")
    parser.add_argument("--repeats", type=int, default=20, metavar="N",
                        help="timed calls of the jitted function per row (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    with warnings.catch_warnings():
        # int64 indices are int32 without jax_enable_x64: JAX says so once per call site; the
        # tour's references expect the int32 and the table is what the reader wants to see
        warnings.filterwarnings("ignore", message=".*which JAX stores as int32.*")
        warnings.filterwarnings("ignore", message=".*[Ee]xplicitly requested dtype.*int64.*")
        return run_tour(default_cases() if cases is None else cases, out=out,
                        repeats=args.repeats, verbose=args.verbose)


def _where_the_maximum_is_cases() -> list[Case]:
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
        "onnx.top_k", "TopK-1", "k attribute, axis 0", _unique((5, 3), seed=8),
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
        _unique((1, 3, 224, 224), seed=9),
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
            "openvino.top_k", spec, "k 2 along axis 1, sort index", _unique((3, 5), seed=10),
            partial(ov.top_k, k=2, axis=1, mode="max", sort="index", opset=opset),
            partial(top_k_reference, k=2, axis=1, largest=True, nan="last", by_index=True,
                    index_dtype=np.int32)))
    return cases


def _family_cases() -> list[Case]:
    """OpenVINO AdaptiveMaxPool-8 (the page's shape example, overlapping windows, O > L) and
    ONNX MaxUnpool (the operator page's example; duplicate indices)."""
    from jaxmax import onnx
    from jaxmax import openvino as ov

    f32 = np.float32
    cases: list[Case] = []
    cases.append(Case(
        "openvino.adaptive_max_pool", "AdaptiveMaxPool-8",
        "spec example: (1,3,32,32) to (16,16), i64", _unique((1, 3, 32, 32), seed=11),
        partial(ov.adaptive_max_pool, output_shape=[16, 16]),
        partial(adaptive_reference, output_shape=[16, 16]), shape=(1, 3, 16, 16)))
    cases.append(Case(
        "openvino.adaptive_max_pool", "AdaptiveMaxPool-8",
        "overlapping windows: 14x9 to 5x3, i32", _unique((2, 2, 14, 9), seed=12),
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
