"""NumPy loops for ONNX Hardmax, written from docs/semantics.md §11.2 (never from the lowering):
each row's 1 at its first NaN, else at its first maximum (``-0.0 == +0.0``); before opset 13 the
rows of the coerced 2-D matrix."""

from __future__ import annotations

import math

import numpy as np


def _row(values) -> np.ndarray:
    out = np.zeros(len(values))
    v = [float(a) for a in values]
    if not v:
        return out
    nan = [i for i, a in enumerate(v) if math.isnan(a)]
    if nan:
        out[nan[0]] = 1
        return out
    m = max(v)
    out[next(i for i, a in enumerate(v) if a == m)] = 1
    return out


def hardmax(x: np.ndarray, axis: int, opset: int) -> np.ndarray:
    axis %= x.ndim
    if opset < 13:
        rows = x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
        return np.stack([_row(r) for r in rows]).reshape(x.shape).astype(x.dtype) \
            if rows.shape[0] else np.zeros(x.shape, x.dtype)
    moved = np.moveaxis(x, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    out = np.array([_row(r) for r in flat]).reshape(moved.shape) if flat.shape[0] else \
        np.zeros(moved.shape)
    return np.moveaxis(out, -1, axis).astype(x.dtype)
