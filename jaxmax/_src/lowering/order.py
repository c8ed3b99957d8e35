"""Ordering keys: where the maximum is, for ArgMax and TopK on both faces (the NaN rule lives here).

An ordering key maps each element to a signed integer so that "selected earlier" is "larger key",
with ties broken by the lower index (``lax.top_k`` is index-stable, and the arg-max lowerings pick
the first maximal key). One key serves the indices, the values (gathered at those indices) and the
gradient (scattered at those indices), so all three follow the same rule.

For floating data the key is built from the bits, never from XLA's ``max`` (which drops NaN on
CPU): the IEEE bits read as a signed integer of the same width are monotone in the value for
non-negative numbers, and reversed for negative ones, so

    magnitude = bits & INT_MAX;  key = -magnitude if the sign bit is set else magnitude

orders every number exactly, with ``-0.0`` and ``+0.0`` both at key 0 (a tie), and keeps the key
inside ``[-inf_bits, inf_bits]``. NaN (``magnitude > inf_bits``, either sign) then gets ``INT_MAX``
(selected first) or ``INT_MIN`` (selected last), outside the range of every number. For the
ascending modes (ONNX ``largest=0``, OpenVINO ``mode="min"``) the numeric key is complemented
(``~key = -key - 1``, an exact reversal with no overflow) before NaN is placed.

The faces (docs/semantics.md §6.2-§6.4):

* ONNX (ArgMax, TopK): NaN is the maximum: first in descending order, last in ascending order.
* OpenVINO (TopK-1/-3/-11): NaN ranks after every number in both modes.

Integers are their own numeric key (complemented for ascending order; that reverses unsigned
types too).

``lax.top_k`` is fast on CPU only for float32 (a dedicated kernel; other types XLA sorts,
fifty to a hundred times slower). Its float order is the IEEE
total order (``-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN``). So :func:`top_k_key` gives a
float32 key wherever that is exact (float16, bfloat16, float32, integers of at most 16 bits):
the value (negated for ascending order), zeros made ``+0``, NaN made ``+NaN`` (first) or ``-NaN``
(last), all done on the bits (XLA's CPU float compare and negate flush subnormals to zero).
Wider types use the integer key.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes

_SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def signed_bits_dtype(dtype) -> np.dtype:
    """The signed integer type as wide as `dtype`."""
    return np.dtype(_SIGNED[np.dtype(dtype).itemsize])


def unsigned_bits_dtype(dtype) -> np.dtype:
    """The unsigned integer type as wide as `dtype` (exact gathers of floating data)."""
    return np.dtype(_UNSIGNED[np.dtype(dtype).itemsize])


def nan_first(face: str, descending: bool) -> bool:
    """Whether NaN is selected before every number: ONNX's "NaN is the maximum" in descending
    order; never on the OpenVINO face ("NaN ranks after every number in both modes")."""
    if face == "onnx":
        return descending
    if face == "openvino":
        return False
    raise ValueError(f"unknown face {face!r}")


def key(x: jax.Array, *, descending: bool, nan_is_first: bool) -> jax.Array:
    """The ordering key of `x`: a signed (or, for unsigned data, unsigned) integer array of `x`'s
    shape; a larger key is selected earlier, equal keys go by index.

    `descending` orders numbers from the largest; `nan_is_first` puts every NaN (either sign)
    before every number, otherwise after. ``-0.0`` and ``+0.0`` get the same key.
    """
    if dtypes.is_floating(x.dtype):
        int_type = signed_bits_dtype(x.dtype)
        info = np.iinfo(int_type)
        bits = lax.bitcast_convert_type(x, int_type)
        magnitude = bits & np.array(info.max, int_type)
        numeric = jnp.where(bits < 0, -magnitude, magnitude)
        if not descending:
            numeric = ~numeric
        inf_bits = np.array(np.array(np.inf, x.dtype).view(int_type), int_type)
        nan_key = np.array(info.max if nan_is_first else info.min, int_type)
        return jnp.where(magnitude > inf_bits, nan_key, numeric)
    if dtypes.is_integer(x.dtype):
        return x if descending else ~x
    raise TypeError(f"no ordering key for dtype {x.dtype}")


_F32_NAN = {True: np.uint32(0x7FC00000).view(np.float32),
             False: np.uint32(0xFFC00000).view(np.float32)}  # +NaN (first), -NaN (last)


def top_k_key(x: jax.Array, *, descending: bool, nan_is_first: bool) -> jax.Array:
    """The key for ``lax.top_k``: as :func:`key`, but a float32 array ordered by IEEE total
    order wherever float32 holds every value of `x` exactly (float16, bfloat16, float32,
    integers of at most 16 bits); :func:`key` otherwise."""
    exact = (x.dtype.itemsize <= 2 or x.dtype == np.float32) and (
        dtypes.is_floating(x.dtype) or dtypes.is_integer(x.dtype))
    if not exact:
        return key(x, descending=descending, nan_is_first=nan_is_first)
    value = x.astype(np.float32)
    if not dtypes.is_floating(x.dtype):
        return value if descending else -value
    # On the bits: XLA's CPU float compare and negate treat subnormals as zero.
    b = lax.bitcast_convert_type(value, np.int32)
    magnitude = b & np.int32(0x7FFFFFFF)
    if not descending:
        b = b ^ np.int32(-(2**31))  # the sign bit: exact negation of every value
    b = jnp.where(magnitude == 0, np.int32(0), b)  # -0 -> +0: a tie
    b = jnp.where(magnitude > np.int32(0x7F800000), _F32_NAN[nan_is_first].view(np.int32), b)
    return lax.bitcast_convert_type(b, np.float32)


def bits(x: jax.Array) -> jax.Array:
    """`x` as unsigned integers of its width (floating data), or `x` itself: the form gathers
    and scatters keep every bit of (zero signs, NaN payloads) on any sharding."""
    if dtypes.is_floating(x.dtype):
        return lax.bitcast_convert_type(x, unsigned_bits_dtype(x.dtype))
    return x


def from_bits(b: jax.Array, dtype) -> jax.Array:
    """The inverse of :func:`bits`."""
    if dtypes.is_floating(dtype):
        return lax.bitcast_convert_type(b, dtype)
    return b
