"""Pooled values: the first maximal tap of each window, under a values rule.

Stage three of the pooling pipeline (:mod:`~jaxmax._src.lowering.pooling.max_pool`). The value
is a scan of the ``k1 * k2 * ...`` taps (:mod:`~jaxmax._src.lowering.pooling.taps`) in row-major
window order that keeps the first maximum (``pool_scan.first_max``: a compare and select per
tap, the runtimes' loop, signed zeros included). The rule `nan` (docs/semantics.md §5):

* ``"skip"``: the scan starts from lowest(T), padding reads lowest(T), and NaN is never greater:
  each value is ``max(lowest(T), non-NaN window elements)`` with no check of the data;
* ``"propagate"``: padding reads the identity (``-inf``, ``iinfo.min``) and a window holding a
  NaN gives NaN; a window with no input element gives the identity.

Padded taps cost a bounds check per element and tap, and the scan reads each tap twice (a
padded tap read twice is written to memory), so the outputs whose window lies inside the input
are computed from plain slices and the few border boxes (``Geometry.boxes``) apart, written
into the result in place. 3-D strided windows on large inputs take their value from two stages
over cache-sized chunks (:mod:`~jaxmax._src.lowering.pooling.stages`: W first, then D and H, the
same bits).

The values only: their derivative is :mod:`~jaxmax._src.lowering.pooling.tangents`'.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmax._src import dtypes
from jaxmax._src.lowering import order
from jaxmax._src.lowering.pooling import scan as pool_scan
from jaxmax._src.lowering.pooling import stages as pool_stages
from jaxmax._src.lowering.pooling import taps as pool_taps
from jaxmax._src.lowering.pooling.geometry import Geometry

__all__ = ["fill", "pooled"]


def fill(dtype, nan: str) -> np.ndarray:
    """What padding reads as under the rule `nan`: lowest(T) (``"skip"``) or the identity."""
    return dtypes.lowest(dtype) if nan == "skip" else dtypes.max_identity(dtype)


def pooled(x: jax.Array, g: Geometry, nan: str) -> jax.Array:
    """The first maximal tap of each window of `x` under the rule `nan` (see the module)."""
    pad = np.asarray(fill(x.dtype, nan), x.dtype)
    if 0 in g.out_shape:
        return jnp.full(g.out_shape, pad)
    if pool_stages.applies(g, x.dtype.itemsize):  # 3-D strided windows: two stages, chunked
        return pool_stages.pooled(x, g, pad, nan)
    return _scanned(x, g, pad, nan)


def _scanned(x: jax.Array, g: Geometry, pad: np.ndarray, nan: str) -> jax.Array:
    """`pooled` as one scan of every tap (interior and border boxes apart)."""
    if x.dtype == jnp.bfloat16:
        # XLA's CPU compiler widens bfloat16 compares to float32 around the taps' pads and
        # slices, and its algebraic simplifier then cycles (an error-level log line); widening
        # here first is exact both ways (float32 holds every bfloat16 value, zero signs and NaN)
        wide = _scanned(x.astype(np.float32), g, pad.astype(np.float32), nan)
        return wide.astype(x.dtype)
    view, read = x, None
    if g.sharded and dtypes.is_floating(x.dtype):
        # the taps are sliced from the bits and read as floats (pool_geometry.geometry: a
        # border box's rows may reach the other devices through an adding all-reduce)
        view = order.bits(x)
        def read(v):
            return order.from_bits(v, x.dtype)
    return pool_taps.by_boxes(
        g, lambda box, at: pool_scan.first_max(pool_taps.taps(view, box, pad, read), pad, nan),
        pad)
