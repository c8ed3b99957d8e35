"""NumPy/Python loop oracles for ONNX ArgMax, ONNX TopK and OpenVINO TopK (docs/semantics.md §6).

Written from the contract, independent of jaxmax: every 1-D slice along the axis is handled by a
Python loop over its elements, numbers compared as Python ``float``/``int`` (so ``-0.0 == 0.0``
and integers of every width are exact), NaN tested with ``math.isnan``.

* ONNX ArgMax: a scan that replaces the running best only when an element beats it ("NaN is the
  maximum"; with ``last``, also when it equals it).
* TopK: the ``k`` first of the sorted ``(rank, index)`` pairs (``heapq.nsmallest``), the rank
  saying where NaN goes (ONNX: NaN above every number; OpenVINO: NaN after every number in both
  modes).
"""

from __future__ import annotations

import heapq
import math

import numpy as np


def _py_row(row: np.ndarray) -> list:
    """A 1-D slice as Python numbers: integers as ``int``, floats of every width widened exactly
    to float64 and then ``float`` (one conversion per slice: converting element by element cost
    more than the sort)."""
    if np.issubdtype(row.dtype, np.integer):
        return row.tolist()
    with np.errstate(invalid="ignore"):  # NaN payloads widen to NaN, which is all that counts
        return row.astype(np.float64).tolist()


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _rows(x: np.ndarray, axis: int):
    moved = np.moveaxis(x, axis, -1)
    return moved, moved.reshape(-1, moved.shape[-1])


def _beats(a, b) -> bool:
    """ONNX's order: NaN is greater than every number; NaN does not beat NaN."""
    if _is_nan(a):
        return not _is_nan(b)
    if _is_nan(b):
        return False
    return a > b


def _equal(a, b) -> bool:
    return (_is_nan(a) and _is_nan(b)) or (not _is_nan(a) and not _is_nan(b) and a == b)


def onnx_arg_max(x: np.ndarray, axis: int, keepdims: bool = True,
                 last: bool = False) -> np.ndarray:
    """ONNX ArgMax as int64 indices."""
    axis = axis % x.ndim
    moved, rows = _rows(x, axis)
    out = np.empty(rows.shape[0], np.int64)
    for r, row in enumerate(rows):
        values = _py_row(row)
        best = 0
        for j in range(1, len(values)):
            if _beats(values[j], values[best]) or (last and _equal(values[j], values[best])):
                best = j
        out[r] = best
    out = out.reshape(moved.shape[:-1])
    return np.expand_dims(out, axis) if keepdims else out


def _rank(v, face: str, descending: bool):
    """Sort key of one element (smaller sorts first), before the index."""
    if _is_nan(v):
        if face == "onnx" and descending:
            return (0, 0)
        return (2, 0)
    return (1, -v if descending else v)


def top_k(x: np.ndarray, k: int, axis: int, *, face: str, descending: bool,
          by_index: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(values, int64 indices)`` of the top `k` along `axis` under `face`'s order; `by_index`
    re-orders the selected elements by index (OpenVINO ``sort="index"``)."""
    axis = axis % x.ndim
    moved, rows = _rows(x, axis)
    values = np.empty((rows.shape[0], k), x.dtype)
    indices = np.empty((rows.shape[0], k), np.int64)
    for r, row in enumerate(rows):
        ranked = zip([_rank(v, face, descending) for v in _py_row(row)], range(len(row)),
                     strict=True)
        chosen = [j for _, j in heapq.nsmallest(k, ranked)]  # the k first of sorted (rank, j)
        if by_index:
            chosen = sorted(chosen)
        indices[r] = chosen
        values[r] = row[chosen]  # the input elements themselves: every bit kept
    shape = moved.shape[:-1] + (k,)
    return (np.moveaxis(values.reshape(shape), -1, axis),
            np.moveaxis(indices.reshape(shape), -1, axis))
