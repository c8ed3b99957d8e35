"""Seeded inputs for the elementwise maxima tests: dtypes, broadcasting shapes and values with
NaN, +-inf and +-0 (and ties) in every position.

``tests/`` is on ``sys.path`` under pytest, so test files import this as ``max_cases``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from helpers import is_float

FLOATS = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)]
INTEGERS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                  np.uint8, np.uint16, np.uint32, np.uint64)]
BF16 = np.dtype(ml_dtypes.bfloat16)
ALL = FLOATS + INTEGERS + [BF16]

# shape pairs that broadcast NumPy-style (size-0 and rank-0 included)
BROADCAST_PAIRS = [((), ()), ((5,), (5,)), ((4,), ()), ((), (3,)), ((2, 3), (3,)),
                   ((3, 1), (1, 4)), ((2, 1, 4), (3, 1)), ((1,), (6,)), ((0,), (1,)),
                   ((2, 0), (2, 1)), ((2, 3, 4), (2, 3, 4)), ((1, 3, 1), (2, 1, 5)),
                   ((17,), (17,)), ((33,), (1,))]
# (a, b) shapes PaddlePaddle broadcasting (axis -1) accepts: b over a's trailing axes
PDPD_PAIRS = [((2, 3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (3, 1)), ((2, 3, 4), (1, 4)),
              ((2, 3, 4), (2, 1, 1)), ((2, 3, 4), ()), ((2, 3, 4), (1,)), ((3, 4), (3, 1)),
              ((2, 3, 4), (2, 3, 4)), ((2, 3, 0), (0,)), ((2, 3, 4), (1, 3, 1))]
# (a, b) shapes it rejects (each also rejected by OpenVINO's shape inference, probed)
PDPD_BAD = [((2, 3, 4), (3,)), ((3, 4), (2, 3, 4)), ((2, 1, 4), (3, 4)), ((2, 3, 4), (4, 1)),
            ((2, 3), (3, 1)), ((2, 3, 1), (2, 3, 4)), ((1,), (1, 1)), ((2, 3, 4), (5,))]


def float_pool(dtype) -> np.ndarray:
    """NaN, +-inf, +-0 and a few small values (so ties happen often)."""
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -3.0], np.float64)


def values(rng, dtype, shape, *, special: bool = True) -> np.ndarray:
    """Random values of `dtype`: floats from the special pool and normals; integers from the
    extremes, 0 and small values (ties), and the whole range."""
    dtype = np.dtype(dtype)
    if is_float(dtype):
        x = rng.standard_normal(shape) * 4
        if special:
            pool = float_pool(dtype)
            pick = rng.random(shape) < 0.6
            x = np.where(pick, pool[rng.integers(0, len(pool), shape)], x)
        return x.astype(dtype)
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.max, 0, 1, 2, info.min + 1, info.max - 1], dtype=object)
    pick = rng.integers(0, len(pool), shape)
    spread = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    out = np.where(rng.random(shape) < 0.6, pool[pick], spread.astype(object))
    return np.asarray(out.astype(dtype), dtype)


def every_zero_and_nan_position(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of the special values as two 1-D arrays (81 elements, seeded order)."""
    pool = float_pool(dtype)
    a, b = np.meshgrid(pool, pool, indexing="ij")
    order = np.random.default_rng(81).permutation(a.size)  # short prefixes mix the kinds too
    return a.reshape(-1)[order].astype(dtype), b.reshape(-1)[order].astype(dtype)
