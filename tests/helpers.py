"""Helpers the test files share: lowest(T), the float test and the exact comparison.

``tests/`` is on ``sys.path`` under pytest, so test files import this as ``helpers``.
"""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np


def is_float(dtype) -> bool:
    """Floating dtypes, the ml_dtypes ones (bfloat16) included."""
    return bool(jnp.issubdtype(np.dtype(dtype), jnp.floating))


def lowest(dtype) -> np.ndarray:
    """lowest(T) as a 0-d array of `dtype`: the most negative finite value of a floating type,
    ``iinfo.min`` of an integer type (0 when unsigned)."""
    dtype = np.dtype(dtype)
    info = ml_dtypes.finfo(dtype) if is_float(dtype) else np.iinfo(dtype)
    return np.array(info.min, dtype)


def assert_same(actual, expected, context: str = "") -> None:
    """Exact equality of dtype, shape and values; NaN equals NaN (16-bit floats are compared
    in float64, which holds each of their values exactly)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{context}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{context}: shape {actual.shape} != {expected.shape}"
    if is_float(expected.dtype):
        actual, expected = actual.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_array_equal(actual, expected, err_msg=context)
