"""NumPy oracles for the elementwise maxima (ONNX Max, OpenVINO Maximum-1), written from the
specs without the code under test: scalar Python loops over the broadcast elements.

``tests/`` is on ``sys.path`` under pytest, so test files import this as ``max_oracle``.
"""

from __future__ import annotations

import math

import numpy as np
from helpers import is_float


def _ieee_pair(p, q):
    """IEEE-754 maximum of two Python numbers: NaN propagates, +0 beats -0."""
    if isinstance(p, float) and (math.isnan(p) or math.isnan(q)):
        return math.nan
    if p == q:  # equal values; for zeros of either sign, +0 unless both are -0
        if p == 0 and isinstance(p, float):
            return -0.0 if (math.copysign(1, p) < 0 and math.copysign(1, q) < 0) else 0.0
        return p
    return p if p > q else q


def onnx_max(*inputs: np.ndarray) -> np.ndarray:
    """ONNX Max: the IEEE maximum of all inputs (NumPy broadcasting), in their dtype."""
    dtype = inputs[0].dtype
    cast = float if is_float(dtype) else int
    arrays = np.broadcast_arrays(*inputs)
    out = np.empty(arrays[0].shape, dtype)
    for index in np.ndindex(out.shape):
        value = cast(arrays[0][index])
        for x in arrays[1:]:
            value = _ieee_pair(value, cast(x[index]))
        out[index] = value
    return out


def select_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """OpenVINO Maximum-1's reference ``a < b ? b : a`` (NumPy broadcasting), in a's dtype."""
    cast = float if is_float(a.dtype) else int
    left, right = np.broadcast_arrays(a, b)
    out = np.empty(left.shape, a.dtype)
    for index in np.ndindex(out.shape):
        p, q = cast(left[index]), cast(right[index])
        out[index] = q if p < q else p
    return out
