"""Identities and lowest values as NumPy scalars of the exact dtype.

`lax` recognises a concrete identity init value (``-inf`` for ``max`` on floats, ``iinfo.min`` on
integers, ``False`` for ``or``) and then emits the dedicated, differentiable ``reduce_max`` /
``reduce_window_max`` primitives. Everything here is therefore a NumPy value, never a traced one.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def is_floating(dtype) -> bool:
    return bool(jnp.issubdtype(dtype, jnp.floating))


def is_integer(dtype) -> bool:
    return bool(jnp.issubdtype(dtype, jnp.integer))


def is_bool(dtype) -> bool:
    return np.dtype(dtype) == np.bool_


def is_real_or_integer(dtype) -> bool:
    """The "any supported numeric type" of the OpenVINO max operators: no bool, no complex."""
    return is_floating(dtype) or is_integer(dtype)


def lowest(dtype) -> np.ndarray:
    """lowest(T): the most negative finite value (``0`` for unsigned), as a 0-d array of `dtype`."""
    dtype = np.dtype(dtype)
    if is_floating(dtype):
        return np.array(jnp.finfo(dtype).min, dtype)
    if is_integer(dtype):
        return np.array(jnp.iinfo(dtype).min, dtype)
    raise TypeError(f"lowest(T) is not defined for {dtype}")


def max_identity(dtype) -> np.ndarray:
    """The identity of ``max`` for `dtype`: ``-inf``, ``iinfo.min`` or ``False``.

    Floating types without an infinity (some float8 formats) use ``finfo.min``.
    """
    dtype = np.dtype(dtype)
    if is_bool(dtype):
        return np.array(False)
    if is_floating(dtype):
        minus_inf = np.array(-np.inf, dtype)
        return minus_inf if np.isinf(minus_inf) else lowest(dtype)
    return lowest(dtype)


def zero(dtype) -> np.ndarray:
    return np.zeros((), np.dtype(dtype))
