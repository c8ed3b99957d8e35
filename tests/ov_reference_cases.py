"""OpenVINO's own MaxPool-8 / MaxPool-14 vectors, as data: values and indices.

Sources (facts and test vectors only, transcribed by hand; OpenVINO, Intel Corporation,
Apache-2.0):

* :data:`OP_REFERENCE` -- the functional op_reference tests of openvinotoolkit/openvino,
  ``src/plugins/template/tests/functional/op_reference/max_pool.cpp``: the 24
  ``ReferenceMaxPoolLayerTestV8`` vectors and the 24 ``ReferenceMaxPoolLayerTestV14`` vectors
  (48). i32 and i64 indices, axis 0, 2 and 3, strides, dilations, pads, same_lower/same_upper,
  floor / ceil / ceil_torch, 1-D, 2-D and 3-D; i32, i64 and f32 data.
* :data:`SPEC_EXAMPLES` -- the 8 worked examples of the pooling shape-rules page that the
  MaxPool-8/-14 specifications link to (``docs/articles_en/documentation/openvino-ir-format/
  operation-sets/operation-specs/pooling/pooling_shape_rules.rst``); the page gives no data
  type, int32 is used. One value of example 1 is wrong on the page (see the erratum there).

Each vector is a :class:`Vector`; ``test_openvino_op_reference.py`` checks that jaxmax and
``Node.evaluate`` reproduce every one exactly.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Vector", "OP_REFERENCE", "SPEC_EXAMPLES"]


@dataclasses.dataclass(frozen=True)
class Vector:
    source: str  # "v8" / "v14" (op_reference suite) or "spec"
    shape: tuple[int, ...]
    dtype: str  # numpy name of the data type
    data: tuple
    out_shape: tuple[int, ...]
    values: tuple
    index_type: str  # "i32" / "i64"
    indices: tuple
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    kernel: tuple[int, ...]
    rounding_type: str = "floor"
    auto_pad: str = "explicit"
    axis: int = 0


NINE = (1, 2, 3, 4, 5, 6, 7, 8, 9)
F = (1.0, 2.0, 3.0, 4.0, 0.0, -3.14, -2.71, 5.0)
SHUFFLED = (1, 9, 3, 8, 5, 2, 6, 4, 7)
A = (8, -9, 1, -16, -14, 15, -17, 19, -13, 3, 10, 17, 16, -11, -15, 20)
B = (0, -2, 24, 13, 7, -5, -4, 4, 21, -18, 81, 20, -15, 37, 23, 41, 18, 42, 8, 32, 9, 57, 58,
     29, 3)
C = (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 20, 30, 40, -20, 60, 70, 80, 50, 50, 1, 2, 3, -15, -10, 50,
     30, 81)


def _v(source, shape, dtype, data, out_shape, values, index_type, indices, strides, dilations,
       pads_begin, pads_end, kernel, rounding_type="floor", auto_pad="explicit", axis=0):
    r = len(kernel)
    return Vector(source, tuple(shape), dtype, tuple(data), tuple(out_shape), tuple(values),
                  index_type, tuple(indices), tuple(strides), tuple(dilations),
                  tuple(pads_begin) or (0,) * r, tuple(pads_end) or (0,) * r, tuple(kernel),
                  rounding_type, auto_pad, axis)


def _suite(source, roundings):
    """The op_reference suite for one version. The V14 list is the V8 list with these
    rounding types and the two 5x5 3x3-kernel padded vectors in swapped order (the same
    inputs, attributes and expected outputs otherwise), as in max_pool.cpp."""
    r = iter(roundings)
    # one call per vector, in max_pool.cpp's order, so that each reads against its source: the
    # like-shaped rows are transcribed data, not repeated logic
    vectors = [
        # ----- 1-D
        _v(source, (1, 1, 9), "int32", NINE, (1, 1, 8), (2, 3, 4, 5, 6, 7, 8, 9),
           "i64", (1, 2, 3, 4, 5, 6, 7, 8), [1], [1], [], [], [2], next(r)),
        _v(source, (1, 1, 9), "int32", NINE, (1, 1, 4), (2, 4, 6, 8),
           "i64", (1, 3, 5, 7), [2], [1], [], [], [2], next(r)),
        _v(source, (1, 1, 9), "int32", NINE, (1, 1, 5), (1, 3, 5, 7, 9),
           "i64", (0, 2, 4, 6, 8), [2], [1], [], [], [2], next(r), "same_lower"),
        _v(source, (1, 1, 9), "int32", NINE, (1, 1, 5), (2, 4, 6, 8, 9),
           "i64", (1, 3, 5, 7, 8), [2], [1], [], [], [2], next(r), "same_upper"),
        _v(source, (1, 1, 9), "int32", NINE, (1, 1, 4), (3, 5, 7, 9),
           "i32", (2, 4, 6, 8), [2], [2], [], [], [2], next(r)),
        _v(source, (1, 2, 4), "float32", F, (1, 2, 2), (3.0, 4.0, 0.0, 5.0),
           "i32", (2, 3, 4, 7), [1], [1], [], [], [3], next(r)),
        _v(source, (1, 2, 4), "float32", F, (1, 2, 2), (3.0, 4.0, 0.0, 5.0),
           "i32", (2, 3, 0, 3), [1], [1], [], [], [3], next(r), "explicit", 2),
        _v(source, (1, 1, 9), "int32", SHUFFLED, (1, 1, 4), (1, 9, 6, 7),
           "i32", (0, 1, 6, 8), [3], [1], [2], [2], [3], next(r)),
        # ----- 2-D
        _v(source, (1, 1, 3, 3), "int32", (3, 9, 10, 5, 7, 2, 18, 8, -2), (1, 1, 2, 2),
           (9, 10, 18, 8), "i32", (1, 2, 6, 7), [1, 1], [1, 1], [], [], [2, 2], next(r)),
        _v(source, (1, 1, 4, 4), "int32", A, (1, 1, 3, 3),
           (15, 15, 19, 15, 15, 19, 16, 10, 20), "i32", (5, 5, 7, 5, 5, 7, 12, 10, 15),
           [1, 1], [1, 1], [], [], [2, 2], next(r)),
        _v(source, (1, 1, 4, 4), "int32", A, (1, 1, 2, 2), (15, 19, 16, 20), "i32",
           (5, 7, 12, 15), [2, 2], [1, 1], [], [], [2, 2], next(r)),
        _v(source, (1, 1, 4, 4), "int32", A, (1, 1, 2, 2), (10, 17, 16, 20), "i32",
           (10, 11, 12, 15), [1, 1], [2, 2], [], [], [2, 2], next(r)),
        _v(source, (1, 1, 4, 4), "int32", A, (1, 1, 2, 2), (15, 19, 16, 20), "i32",
           (5, 7, 12, 15), [1, 1], [1, 1], [], [], [3, 3], next(r)),
        _v(source, (1, 1, 5, 5), "int32", B, (1, 1, 2, 2), (0, 21, 81, 37), "i32",
           (0, 8, 10, 13), [2, 3], [1, 1], [], [], [2, 2], next(r)),
        _v(source, (1, 1, 5, 5), "int32", B, (1, 1, 2, 2), (0, 24, 57, 58), "i32",
           (0, 2, 21, 22), [3, 2], [1, 1], [], [], [2, 2], next(r)),
        _v(source, (1, 1, 5, 5), "int32", B, (1, 1, 2, 2), (81, 24, 81, 58), "i32",
           (10, 2, 10, 22), [2, 2], [2, 2], [], [], [2, 2], next(r)),
    ]
    padded_1x1 = _v(source, (1, 1, 5, 5), "int32", B, (1, 1, 3, 3),
                    (0, 24, 21, 81, 42, 37, 57, 58, 32), "i32",
                    (0, 2, 8, 10, 17, 13, 21, 22, 19), [2, 2], [1, 1], [1, 1], [1, 1], [3, 3],
                    next(r))
    padded_end = _v(source, (1, 1, 5, 5), "int32", B, (1, 1, 3, 2),
                    (81, 37, 81, 58, 58, 58), "i32", (10, 13, 10, 22, 22, 22), [2, 2], [1, 1],
                    [], [2, 1], [3, 3], next(r))
    if source == "v8":
        vectors += [padded_1x1, padded_end]
    else:  # V14 lists pads_end 2x1 first, then pads 1x1 (there with rounding ceil)
        vectors += [padded_end, padded_1x1]
    vectors += [
        _v(source, (1, 2, 3, 3), "int64", B[:18], (1, 2, 2, 2), (13, 24, 13, 21, 81, 81, 41, 42),
           "i64", (3, 2, 3, 8, 1, 1, 6, 8), [1, 1], [1, 1], [], [], [2, 2], next(r),
           "explicit", 2),
        _v(source, (1, 1, 2, 2), "int32", (1, 2, 3, 4), (1, 1, 2, 2), (1, 2, 3, 4), "i32",
           (0, 1, 2, 3), [1, 1], [1, 1], [], [], [1, 1], next(r)),
        # ----- 3-D
        _v(source, (1, 1, 3, 3, 3), "int32", C, (1, 1, 2, 2, 2),
           (40, 60, 80, 80, 50, 60, 80, 81), "i32", (12, 14, 16, 16, 18, 14, 16, 26),
           [1, 1, 1], [1, 1, 1], [], [], [2, 2, 2], next(r)),
        _v(source, (1, 1, 3, 3, 3), "int32", C, (1, 1, 2, 2, 2), (-20,) * 8, "i32", (13,) * 8,
           [2, 2, 2], [2, 2, 2], [1, 1, 1], [1, 1, 1], [2, 2, 2], next(r)),
        _v(source, (1, 1, 3, 3, 3), "int32", C, (1, 1, 3, 1, 1), (8, 80, 81), "i32",
           (8, 16, 26), [1, 1, 1], [1, 1, 1], [], [], [1, 3, 3], next(r)),
        _v(source, (1, 1, 3, 3, 3), "int32", C, (1, 1, 3, 2, 2),
           (4, 5, 7, 8, 40, 60, 80, 80, 50, 2, 50, 81), "i32",
           (4, 5, 7, 8, 3, 5, 7, 7, 0, 2, 6, 8), [1, 1, 1], [1, 1, 1], [], [], [1, 2, 2],
           next(r), "explicit", 3),
    ]
    assert next(r, None) is None
    return vectors


# rounding types in the order the vectors appear in max_pool.cpp (the two padded 5x5 vectors
# as _suite builds them: V8 order "pads 1x1, pads_end 2x1"; V14 "pads_end 2x1, pads 1x1")
_V8_ROUNDING = ["floor"] * 24
_V14_ROUNDING = (["floor"] * 4 + ["ceil", "ceil", "ceil_torch", "ceil_torch"] + ["floor"] * 8
                 # the padded pair, consumed as (pads 1x1, pads_end 2x1) by _suite:
                 + ["ceil", "floor"]
                 + ["ceil_torch", "ceil_torch", "floor", "floor", "ceil", "ceil_torch"])

OP_REFERENCE: list[Vector] = _suite("v8", _V8_ROUNDING) + _suite("v14", _V14_ROUNDING)

_IN = (-1, 2, 3, 4, 5, -6, -7, 8, 9)
_NINE2 = NINE + tuple(range(10, 19))

SPEC_EXAMPLES: list[Vector] = [
    # 1. explicit pads 1, 2x2 kernel. ERRATUM: the page shows -6 (index 5) at [0, 0, 1, 3];
    # that window holds 3 (row 0) and -6 (row 1), so its maximum is 3, index 2 -- which is
    # what Node.evaluate returns. Corrected here.
    _v("spec", (1, 1, 3, 3), "int32", _IN, (1, 1, 4, 4),
       (-1, 2, 3, 3, 4, 5, 5, 3, 4, 8, 9, 9, -7, 8, 9, 9), "i64",
       (0, 1, 2, 2, 3, 4, 4, 2, 3, 7, 8, 8, 6, 7, 8, 8), [1, 1], [1, 1], [1, 1], [1, 1], [2, 2]),
    # 2. valid, 1-D
    _v("spec", (1, 1, 7), "int32", (-1, 2, 3, 5, -7, 9, 1), (1, 1, 5), (3, 5, 5, 9, 9), "i64",
       (2, 3, 3, 5, 5), [1], [1], [], [], [3], "floor", "valid"),
    # 3. same_lower
    _v("spec", (1, 1, 3, 3), "int32", _IN, (1, 1, 3, 3), (-1, 2, 3, 4, 5, 5, 4, 8, 9), "i64",
       (0, 1, 2, 3, 4, 4, 3, 7, 8), [1, 1], [1, 1], [], [], [2, 2], "floor", "same_lower"),
    # 4. same_upper, two channels (indices over the whole tensor: axis 0)
    _v("spec", (1, 2, 3, 3), "int32", _IN + (2, -1, 5, 6, -7, 1, 8, 2, -3), (1, 2, 3, 3),
       (5, 5, 3, 8, 9, 9, 8, 9, 9, 6, 5, 5, 8, 2, 1, 8, 2, -3), "i64",
       (4, 4, 2, 7, 8, 8, 7, 8, 8, 12, 11, 11, 15, 16, 14, 15, 16, 17), [1, 1], [1, 1], [], [],
       [2, 2], "floor", "same_upper"),
    # 5. ceil_torch, pads 1, stride 2
    _v("spec", (1, 1, 3, 3), "int32", NINE, (1, 1, 2, 2), (1, 3, 7, 9), "i64", (0, 2, 6, 8),
       [2, 2], [1, 1], [1, 1], [1, 1], [2, 2], "ceil_torch"),
    # 6. valid with rounding ceil
    _v("spec", (1, 1, 3, 3), "int32", _IN, (1, 1, 2, 2), (5, 3, 8, 9), "i64", (4, 2, 7, 8),
       [2, 2], [1, 1], [], [], [2, 2], "ceil", "valid"),
    # 7. dilations 2, pads 1
    _v("spec", (1, 1, 3, 3), "int32", NINE, (1, 1, 3, 3), (5, 6, 5, 8, 9, 8, 5, 6, 5), "i64",
       (4, 5, 4, 7, 8, 7, 4, 5, 4), [1, 1], [2, 2], [1, 1], [1, 1], [2, 2]),
    # 8. axis 2
    _v("spec", (1, 2, 3, 3), "int32", _NINE2, (1, 2, 2, 2), (5, 6, 8, 9, 14, 15, 17, 18), "i64",
       (4, 5, 7, 8, 4, 5, 7, 8), [1, 1], [1, 1], [], [], [2, 2], "floor", "explicit", 2),
]
