"""OpenVINO SegmentMax-16: spec attribute names -> validation -> lowering."""

from __future__ import annotations

import jax
import numpy as np

from jaxmax._src import sizes, validation
from jaxmax._src.lowering import segment
from jaxmax._src.types import Data, Int, Ints

_SEGMENT_MAX = "SegmentMax-16"
_FILL_MODES = ("zero", "lowest")


def _num_segments(op: str, num_segments, ids: np.ndarray | None) -> int:
    if num_segments is None:
        if ids is None:
            raise TypeError(
                f"{op}: `num_segments` is None and `segment_ids` is traced (or a global array "
                f"sharded over other processes' devices), so the number of segments (the output "
                f"shape) is unknown; pass a static `num_segments` (a Python int) when calling "
                f"under jit or vmap over the ids, or with ids spread over processes")
        return int(ids.max()) + 1 if ids.size else 0
    count = int(validation.static_int_array(
        op, "num_segments", num_segments, max_ndim=0,
        how="pass a static `num_segments` (a Python int, or mark it with jax.jit static_argnames)"))
    if count < 0:
        raise ValueError(f"{op}: `num_segments` must be >= 0, got {count}")
    return count


_SEGMENT_ID_TYPES = (np.dtype(np.int32), np.dtype(np.int64))


def segment_max(data: Data, segment_ids: Ints, num_segments: Int | None = None, *,
                fill_mode: str) -> jax.Array:
    """OpenVINO ``SegmentMax-16``: the maximum of the rows of `data` in each segment.

    ``out[j] = max(lowest(T), non-NaN rows i with segment_ids[i] == j)`` for a non-empty
    segment, whatever `fill_mode`; an empty segment gets ``0`` (``"ZERO"``) or ``lowest(T)``
    (``"LOWEST"``: ``finfo.min``, ``iinfo.min``, ``0`` for unsigned). Emptiness is decided by
    counting members, so a real maximum of ``-inf``, lowest(T) or ``0`` is kept as it is
    (``-inf`` becomes lowest(T) by the max rule).

    Args:
      data: array of rank >= 1 and any real or integer dtype.
      segment_ids: 1-D integer array (int32/int64) of length ``data.shape[0]``, sorted and
        non-negative.
      num_segments: the number of output segments, a non-negative int or concrete integer
        scalar; ``None`` means ``max(segment_ids) + 1`` (0 for no ids). Ids ``>= num_segments``
        are dropped; a larger value pads with empty segments. Static.
      fill_mode: ``"ZERO"`` or ``"LOWEST"`` (any case). Required. Static.

    Returns:
      A ``jax.Array`` ``(num_segments, *data.shape[1:])`` of the data dtype.

    Raises:
      TypeError: bool or complex data, ids other than int32/int64, a non-integer or traced
        `num_segments`, ``num_segments=None`` with traced ids, a non-string `fill_mode`.
      ValueError: data of rank 0, ids not 1-D or of the wrong length, concrete ids negative or
        unsorted, a negative `num_segments`, an unknown `fill_mode`, an output of 2**60
        elements or more, a ragged list, concrete 64-bit data or ids whose values 32 bits
        cannot hold while ``jax_enable_x64`` is off, an integer outside int64.
      jax.errors.JaxRuntimeError: an output too large to allocate (eager calls report it here).

    jit contract: `num_segments` and `fill_mode` must be static; `data` and `segment_ids` may be
    traced (then pass `num_segments`). Traced ids cannot be checked: ids outside
    ``[0, num_segments)`` are dropped, and unsorted ids still give the per-id maximum. Under
    ``jax.grad`` tied maxima share the cotangent (as ``jax.ops.segment_max``); empty segments
    pass none.

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> ov.segment_max(np.array([1, 2, 3, 4, 5], np.float32), np.array([0, 0, 2, 3, 3]),
    ...                fill_mode="ZERO")
    Array([2., 0., 3., 5.], dtype=float32)
    """
    op = _SEGMENT_MAX
    data = validation.numeric_data(op, data)
    if data.ndim < 1:
        raise ValueError(f"{op}: `data` must have rank >= 1, got a scalar")
    # The checks below need concrete ids as NumPy values: under a trace, jnp.asarray would turn
    # even a NumPy constant into a tracer.
    host_ids = validation.host_data(op, segment_ids, "segment_ids", empty_dtype=np.int64)
    concrete_ids = validation.known_value(host_ids)
    if np.dtype(host_ids.dtype) not in _SEGMENT_ID_TYPES:
        raise TypeError(f"{op}: `segment_ids` must be int32 or int64, got {host_ids.dtype}")
    ids = validation.on_device(host_ids)
    if ids.ndim != 1:
        raise ValueError(f"{op}: `segment_ids` must be 1-D, got shape {ids.shape}")
    if ids.shape[0] != data.shape[0]:
        raise ValueError(f"{op}: `segment_ids` length {ids.shape[0]} must equal "
                         f"data.shape[0] = {data.shape[0]}")
    fill = validation.choice(op, "fill_mode", fill_mode, _FILL_MODES)
    if concrete_ids is not None and concrete_ids.size:
        if concrete_ids.min() < 0:
            raise ValueError(
                f"{op}: `segment_ids` must be non-negative, got {int(concrete_ids.min())}")
        if np.any(concrete_ids[1:] < concrete_ids[:-1]):
            raise ValueError(f"{op}: `segment_ids` must be sorted in non-decreasing order")
    count = _num_segments(op, num_segments, concrete_ids)
    # The bound on the output covers the int32 member count of ZERO (count elements) too.
    # An absurd size names the argument that made it: `num_segments`, or the ids it came from.
    source = "`num_segments`" if num_segments is not None else "max(`segment_ids`) + 1"
    elements = sizes.checked_elements(op, f"{source} = {count} segments: the output",
                                      (count,) + tuple(data.shape[1:]))
    out = segment.segment_max(data, ids, count, fill)
    return sizes.settled(out, max(elements * data.dtype.itemsize, count * 4))
