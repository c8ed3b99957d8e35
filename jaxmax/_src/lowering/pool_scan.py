"""The runtimes' pooling loop: the first maximal tap of each window, both pooling lowerings'.

:mod:`jaxmax._src.lowering.pool_phase` scans every tap of a window with it, and
:mod:`jaxmax._src.lowering.pool_stages` each of its two stages.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import order

__all__ = ["first_max"]


def first_max(taps: list[jax.Array], fill, skip_nan: bool, *,
              ties: bool = False) -> tuple[jax.Array, jax.Array | None]:
    """The first maximal tap of each window, scanned in row-major window order from `fill`
    (the runtimes' loop: a later tap replaces the value only when it is greater, so of two equal
    values (``-0`` and ``+0`` too) the first is kept); with `ties`, also where some tap tied
    the running value with other bits (``-0.0`` against ``+0.0``; XLA's CPU compare also ties
    subnormals with zero), None for integers, whose equal values are equal bits.

    `skip_nan` (OpenVINO, `fill` = lowest(T)): NaN is never greater, so NaN and ``-inf`` are
    skipped and the result is ``max(lowest(T), non-NaN taps)`` with no check. Otherwise (ONNX)
    a window with a NaN gives NaN (the taps' NaN flags or-ed along the scan).

    A compare and select per tap: ``lax.max`` compiles on CPU to LLVM's ``maximum`` (NaN and
    signed-zero aware, ~1.4x the instructions of the whole 3x3 fusion measured) and returns
    ``+0`` for ``max(-0, +0)``, where OpenVINO, onnxruntime and PyTorch keep the first zero.
    Each tap is read twice, so a padded tap would be written to memory (`pool_phase.pooled`
    splits the borders off so that interior taps are plain slices).
    """
    floating = dtypes.is_floating(taps[0].dtype)
    bits = order.signed_bits_dtype(taps[0].dtype) if ties and floating else None
    acc = jnp.asarray(fill)
    nan = tie = None
    for j, tap in enumerate(taps):
        if bits is not None and j:  # tap 0 meets `fill`, a normal number or -inf: no such tie
            other = (tap == acc) & (lax.bitcast_convert_type(tap, bits)
                                    != lax.bitcast_convert_type(acc, bits))
            tie = other if tie is None else tie | other
        acc = jnp.where(tap > acc, tap, acc)
        if not skip_nan and floating:
            nan = (tap != tap) if nan is None else nan | (tap != tap)
    if nan is not None:  # some tap is NaN: the value is NaN
        acc = jnp.where(nan, np.array(np.nan, acc.dtype), acc)
    return acc, tie
