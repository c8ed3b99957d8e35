"""The runtimes' pooling loop: the first maximal tap of each window.

A sub-step of the pooling values (:mod:`~jaxmax._src.lowering.pooling.values`): the one-stage scan
runs it over every tap of a window, the two stages (:mod:`~jaxmax._src.lowering.pooling.stages`)
over each stage's taps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmax._src import dtypes
from jaxmax._src.lowering.order import select

__all__ = ["first_max", "select"]


def first_max(taps: list[jax.Array], fill, nan: str) -> jax.Array:
    """The first maximal tap of each window, scanned in row-major window order from `fill`
    (the runtimes' loop: a later tap replaces the value only when it is greater, so of two equal
    values (``-0`` and ``+0`` too) the first is kept).

    ``nan="skip"`` (`fill` = lowest(T)): NaN is never greater, so NaN and ``-inf`` are skipped
    and the result is ``max(lowest(T), non-NaN taps)`` with no check. ``nan="propagate"``: a
    window with a NaN gives NaN (the taps' NaN flags or-ed along the scan).

    A compare and select per tap, not ``lax.max``: that compiles on CPU to LLVM's ``maximum``
    (NaN and signed-zero aware, more instructions) and returns ``+0`` for ``max(-0, +0)``,
    where OpenVINO, onnxruntime and PyTorch keep the first zero. Each tap is read twice, so a
    padded tap would be written to memory (the values split the borders off so that interior
    taps are plain slices).
    """
    floating = dtypes.is_floating(taps[0].dtype)
    acc = jnp.asarray(fill)
    flag = None
    for tap in taps:
        acc = select(tap > acc, tap, acc)
        if nan == "propagate" and floating:
            flag = (tap != tap) if flag is None else flag | (tap != tap)
    if flag is not None:  # some tap is NaN: the value is NaN
        acc = select(flag, np.array(np.nan, acc.dtype), acc)
    return acc
