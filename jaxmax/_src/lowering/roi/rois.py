"""ROI rows: concrete values checked in Python, traced ones reduced to a validity mask.

A ROI is invalid when its batch index lies outside ``[0, N)`` or one of its coordinates is not
finite (docs/semantics.md §12). Concrete ``rois``/``batch_indices`` then raise a ``ValueError``
naming the ROI and the value; traced ones give that ROI an output of ``+0.0`` and nothing else
(:func:`valid_mask`, used by the lowerings to zero the ROI and to compute it on harmless
stand-in coordinates, so that no NaN reaches a gradient).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def is_concrete(x) -> bool:
    """Whether `x` holds values Python can read (NumPy, or a JAX array outside a trace)."""
    return not isinstance(x, jax.core.Tracer)


def check_concrete(op: str, boxes, batch, num_images: int) -> None:
    """A ValueError for the first invalid ROI of concrete `boxes` (R, K) / `batch` (R,).

    Either argument may be traced (None or a tracer): only the concrete one is checked.
    """
    if boxes is not None and is_concrete(boxes):
        values = np.asarray(boxes)
        bad = ~np.isfinite(values.astype(np.float64))
        if bad.any():
            r, k = np.argwhere(bad)[0]
            raise ValueError(f"{op}: `rois` row {r} holds the non-finite value {values[r, k]} "
                             f"(column {k}); ROI coordinates must be finite")
    if batch is not None and is_concrete(batch):
        ids = np.asarray(batch)
        bad = (ids < 0) | (ids >= num_images)
        if bad.any():
            r = int(np.argwhere(bad)[0][0])
            raise ValueError(f"{op}: `batch_indices` of ROI {r} is {ids[r]}, outside "
                             f"[0, {num_images}) (the data holds {num_images} images)")


def valid_mask(boxes: jax.Array, batch: jax.Array, num_images: int) -> jax.Array:
    """(R,) bool: finite coordinates and a batch index in ``[0, num_images)``."""
    finite = jnp.all(jnp.isfinite(boxes), axis=1)
    return finite & (batch >= 0) & (batch < num_images)
