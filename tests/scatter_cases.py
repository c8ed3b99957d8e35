"""The hard value cases of ``docs/semantics.md §8.8`` (S, O and P) as data, and the calls of the
four faces, shared by the scatter test files.

Each expected value is the contract's; the tests also fold every case through
``scatter_oracle`` (the specs' sequential loops), so a wrong table entry fails too.
"""

from __future__ import annotations

import numpy as np

from jaxmax import onnx
from jaxmax import openvino as ov

NAN, INF = np.nan, np.inf
F32 = np.float32
I32 = np.iinfo(np.int32)


def call(face: str, data, indices, updates, **kw):
    """One face with ``reduction="max"`` (`kw`: axis, use_init_val)."""
    if face == "se":
        return onnx.scatter_elements(data, indices, updates, reduction="max", **kw)
    if face == "snd":
        return onnx.scatter_nd(data, indices, updates, reduction="max", **kw)
    if face == "seu":
        axis = kw.pop("axis", 0)
        return ov.scatter_elements_update(data, indices, updates, axis, reduction="max", **kw)
    return ov.scatter_nd_update(data, indices, updates, reduction="max", **kw)


#: face -> (oracle function name, step)
ORACLE = {"se": ("elements", "ieee"), "snd": ("nd", "ieee"), "seu": ("elements", "acc_gt"),
          "sndu": ("nd", "acc_lt")}


def _f(*v):
    return np.array(v, F32)


def _i(*v):
    return np.array(v, np.int64)


# (id, face, kwargs, data, indices, updates, expected)
VALUE_CASES = [
    ("S1", "se", {}, _f(0, 0, 0, 0), _i(1, 0, 0, 3), _f(5, -2, 7, -1), _f(7, 5, 0, 0)),
    ("S2", "se", {}, _f(10, 10, 10), _i(0, 0, 2), _f(5, 7, 11), _f(10, 10, 11)),
    ("S3", "se", {}, _f(0, 0), _i(0, 0), _f(NAN, 2), _f(NAN, 0)),
    ("S4", "se", {}, _f(0, 0), _i(0, 0), _f(2, NAN), _f(NAN, 0)),
    # a NaN with its sign bit set is a NaN too (np.nan has it clear)
    ("S3-negative-NaN", "se", {}, _f(0, 0), _i(0, 0), -_f(NAN, -2), _f(NAN, 0)),
    ("S5", "se", {}, _f(NAN, NAN), _i(0), _f(1), _f(NAN, NAN)),
    ("S6", "se", {}, _f(-0.0), _i(0), _f(0.0), _f(0.0)),
    ("S7", "se", {}, _f(0.0), _i(0), _f(-0.0), _f(0.0)),
    ("S8", "se", {}, _f(0, 0, 0, 0), _i(-1, -4), _f(3, 4), _f(4, 0, 0, 3)),
    ("S9", "se", {"axis": -1}, np.zeros((2, 3), F32), np.array([[2, 2], [0, 1]]),
     np.array([[1, 5], [2, 3]], F32), np.array([[0, 0, 5], [2, 3, 0]], F32)),
    ("S10", "se", {}, np.zeros((2, 2), F32), np.array([[0, 1], [1, 0], [0, 0]]),
     np.array([[1, 2], [3, 4], [5, 6]], F32), np.array([[5, 6], [3, 2]], F32)),
    ("S13", "se", {}, np.zeros(2, np.int32), np.array([0, 1, 1]),
     np.array([I32.min, I32.max, -5], np.int32), np.array([0, I32.max], np.int32)),
    ("S15", "se", {}, np.array([False, False]), _i(0), np.array([True]),
     np.array([True, False])),
    ("S16", "se", {}, np.zeros(2, np.float16), _i(0, 0, 1),
     np.array([65504, NAN, -65504], np.float16), np.array([NAN, 0], np.float16)),
    ("S17", "se", {}, _f(1, 2), np.zeros(0, np.int64), np.zeros(0, F32), _f(1, 2)),
    ("S25a", "se", {}, _f(-1), _i(0, 0), _f(-0.0, 0.0), _f(0.0)),
    ("S25b", "se", {}, _f(-1), _i(0, 0), _f(0.0, -0.0), _f(0.0)),
    ("S19", "snd", {}, np.zeros((2, 3), F32), np.array([[1], [1]]),
     np.array([[1, 5, 2], [4, 0, 3]], F32), np.array([[0, 0, 0], [4, 5, 3]], F32)),
    ("S20", "snd", {}, _f(1, 2), np.zeros((2, 0), np.int64), np.array([[0, 5], [3, 1]], F32),
     _f(3, 5)),
    # k = 0 into one element (XLA's own scatter keeps the last update there: 3, not 5)
    ("S20-one-element", "snd", {}, _f(0), np.zeros((4, 0), np.int64),
     np.array([[5], [1], [2], [3]], F32), _f(5)),
    ("S21", "snd", {}, _f(NAN, 0), np.array([[0]]), _f(1), _f(NAN, 0)),
    ("S23", "snd", {}, np.zeros((2, 3), F32), np.array([[-1, -3]]), _f(7),
     np.array([[0, 0, 0], [7, 0, 0]], F32)),
    ("S24", "snd", {}, _f(0, 0), np.array([[0], [0], [1], [1]]), _f(NAN, 2, 2, NAN),
     _f(NAN, NAN)),
    ("S31", "snd", {}, _f(0, 0, 0), np.array([[1]], np.int32), _f(4), _f(0, 4, 0)),
    ("O1", "seu", {"use_init_val": False}, _f(0, 0, 0, 0), _i(1, 0, 0, 3), _f(5, -2, 7, -1),
     _f(7, 5, 0, -1)),
    ("O2", "seu", {"use_init_val": False}, _f(0, 0), _i(0), _f(-INF),
     np.array([np.finfo(F32).min, 0], F32)),
    ("O3", "seu", {}, _f(5), _i(0, 0, 0), _f(1, NAN, 0), _f(0)),
    ("O4", "seu", {}, _f(5), _i(0, 0), _f(3, NAN), _f(NAN)),
    ("O5", "seu", {}, _f(5), _i(0, 0, 0, 0), _f(NAN, 0, 7, -3), _f(7)),
    ("O6", "seu", {}, _f(NAN, NAN), _i(0), _f(1), _f(1, NAN)),
    ("O7", "seu", {}, _f(-1), _i(0, 0, 0), _f(0.0, -0.0, -5), _f(-0.0)),
    ("O8", "seu", {}, np.array([3, 3], np.uint8), np.array([0, 1], np.uint8),
     np.array([255, 0], np.uint8), np.array([255, 3], np.uint8)),
    ("O9", "seu", {"use_init_val": False}, np.zeros(2, np.int32), _i(0),
     np.array([I32.min], np.int32), np.array([I32.min, 0], np.int32)),
    ("O13", "seu", {}, _f(0.0), _i(0), _f(-0.0), _f(-0.0)),
    ("O14", "seu", {"use_init_val": False}, _f(NAN, NAN), _i(0), _f(1), _f(1, NAN)),
    ("O15a", "seu", {}, np.array([False, True]), _i(0, 1), np.array([True, False]),
     np.array([True, True])),
    ("O15b", "seu", {"use_init_val": False}, np.array([True, True]), _i(0), np.array([False]),
     np.array([False, True])),
    ("P1", "sndu", {}, _f(NAN), np.array([[0], [0]]), _f(1, 2), _f(NAN)),
    ("P2a", "sndu", {}, _f(0), np.array([[0], [0]]), _f(2, NAN), _f(2)),
    ("P2b", "sndu", {}, _f(0), np.array([[0], [0]]), _f(NAN, 2), _f(2)),
    ("P2c", "sndu", {}, _f(0, 0), np.array([[0], [0], [1], [1]]), _f(NAN, 2, 2, NAN),
     _f(2, 2)),
    ("P3", "sndu", {}, _f(-0.0), np.array([[0]]), _f(0.0), _f(-0.0)),
    ("P4", "sndu", {}, _f(1, 2), np.zeros((2, 0), np.int64), np.array([[0, 5], [3, 1]], F32),
     _f(3, 5)),
    ("P4-one-element", "sndu", {}, np.zeros((1, 1), F32), np.zeros((3, 0), np.int64),
     np.array([[[2]], [[7]], [[-1]]], F32), np.array([[7]], F32)),
    ("P5", "sndu", {}, _f(0.0), np.array([[0]]), _f(-0.0), _f(0.0)),
    ("P6", "sndu", {}, np.array([False, True]), np.array([[0], [1]]), np.array([True, False]),
     np.array([True, True])),
]

#: the cases with 64-bit values (S14, O10), run with x64 on
X64_CASES = [
    ("S14", "se", {}, np.zeros(1, np.int64), _i(0, 0), np.array([2**53 + 1, 2**53], np.int64),
     np.array([2**53 + 1], np.int64)),
    ("O10", "seu", {}, np.zeros(1, np.int64), _i(0, 0), np.array([2**53 + 1, 2**53], np.int64),
     np.array([2**53 + 1], np.int64)),
]
