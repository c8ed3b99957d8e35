"""Argument checks the RoiAlign adapters of both faces share: the float32 attribute
`spatial_scale`, the ROI table, the batch indices and the 4-D data (docs/semantics.md §12.1).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxmax._src import validation
from jaxmax._src.lowering.roi import rois as roi_rows


def static_float32(op: str, name: str, value) -> float:
    """A static real attribute stored as float32 (both specs' type): finite, rounded to f32
    (`validation.static_float` checks the type and that it is static)."""
    with np.errstate(over="ignore"):
        f = float(np.float32(validation.static_float(op, name, value)))
    if not math.isfinite(f):
        raise ValueError(f"{op}: `{name}` must be finite (as a float32), got {value!r}")
    return f


def static_count(op: str, name: str, value, minimum: int) -> int:
    """A static int attribute >= `minimum`."""
    v = validation.static_int(op, name, value)
    if v < minimum:
        raise ValueError(f"{op}: `{name}` must be >= {minimum}, got {v}")
    return v


def data(op: str, x, name: str) -> jax.Array:
    """The 4-D feature map (N, C, H, W)."""
    x = validation.as_data(op, x, name)
    if x.ndim != 4:
        raise ValueError(f"{op}: `{name}` must be 4-D (N, C, H, W), got shape {x.shape}")
    return x


def boxes_and_batch(op: str, rois, batch_indices, x: jax.Array, *, batch_kinds: str
                    ) -> tuple[jax.Array, jax.Array]:
    """`rois` (R, 4) of the data dtype and `batch_indices` (R,) of an integer type whose kind
    is in `batch_kinds` (ONNX: int64/int32); concrete values checked (finite coordinates,
    indices in ``[0, N)``)."""
    boxes = validation.host_data(op, rois, "rois", empty_dtype=x.dtype)
    batch = validation.host_data(op, batch_indices, "batch_indices", empty_dtype=np.int64)
    if boxes.dtype != x.dtype:
        raise TypeError(f"{op}: `rois` must have the data's dtype {x.dtype} (one T), got "
                        f"{boxes.dtype}")
    if batch_kinds == "onnx":
        if batch.dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
            raise TypeError(f"{op}: `batch_indices` must be int64 (int32 accepted), got "
                            f"{batch.dtype}")
    elif not jnp.issubdtype(batch.dtype, jnp.integer):
        raise TypeError(f"{op}: `batch_indices` must have an integer dtype, got {batch.dtype}")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"{op}: `rois` must have shape (num_rois, 4), got {boxes.shape}")
    if batch.shape != (boxes.shape[0],):
        raise ValueError(f"{op}: `batch_indices` must have shape ({boxes.shape[0]},) (one per "
                         f"ROI), got {batch.shape}")
    roi_rows.check_known(op, boxes, batch, x.shape[0])
    return validation.on_device(boxes), validation.on_device(batch)
