"""The ROI checks both ROI poolings share: which image a ROI reads, and whether it is valid.

A ROI is invalid when its image index is outside ``[0, N)``, a value of its row (or its batch
index) is not finite, or, for MaxRoiPool/ROIPooling, a scaled corner is outside the int32 range
(docs/semantics.md §11.3). Concrete ROIs are checked in Python (`check`: a ValueError naming
the ROI and the value); traced ROIs cannot raise, so `valid` gives the mask with which the
lowerings make an invalid ROI's output all ``+0.0`` and read nothing for it.

The batch index is a separate array (RoiAlign's ``batch_indices``, any integer type) or the
first column of a floating ROI row (MaxRoiPool's ``[b, x1, y1, x2, y2]``, truncated toward
zero): both are passed here as one ``batch`` array of any type.
"""

from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np

from jaxmax._src import validation
from jaxmax._src.lowering.roi import bins


def image_index(batch):
    """The image each ROI reads: ``batch`` itself (integers) or truncated toward zero (floats:
    ``1.9`` is image 1, ``-0.5`` image 0). NumPy arrays give NumPy arrays."""
    xp = np if isinstance(batch, np.ndarray) else jnp
    if not xp.issubdtype(batch.dtype, xp.floating):
        return batch
    return xp.trunc(batch)


def check(op: str, rois: np.ndarray, batch: np.ndarray, images: int, *,
          rois_name: str = "rois", batch_name: str = "batch index",
          bounded: np.ndarray | None = None, bounded_name: str = "",
          bound: float = 2.0**31) -> None:
    """A ValueError for the first invalid ROI of concrete `rois` (R, k) and `batch` (R,).

    `bounded` (R, j), when given, holds values (scaled corners) that must lie in
    ``[-bound, bound)``, called `bounded_name` in the message."""
    bad_value = ~np.isfinite(rois)
    if bad_value.any():
        r, col = (int(v) for v in np.argwhere(bad_value)[0])
        raise ValueError(f"{op}: ROI {r} of `{rois_name}` holds the non-finite value "
                         f"{rois[r, col]} (column {col}); ROI values must be finite")
    index = image_index(batch)
    outside = ~((index >= 0) & (index < images))
    if outside.any():
        r = int(np.argwhere(outside)[0, 0])
        raise ValueError(f"{op}: ROI {r} has {batch_name} {batch[r]}, which names no image of "
                         f"the {images} in the batch (it must be in [0, {images}))")
    if bounded is not None:
        out = ~((bounded >= -bound) & (bounded < bound))
        if out.any():
            r, col = (int(v) for v in np.argwhere(out)[0])
            raise ValueError(f"{op}: ROI {r} has {bounded_name} {bounded[r, col]} (column "
                             f"{col}), outside the int32 range the bin arithmetic uses")


def valid(rois: jax.Array, batch: jax.Array, images: int) -> jax.Array:
    """(R,) bool: the ROIs `check` accepts (finite values, an image in ``[0, N)``), for traced
    arguments."""
    index = image_index(batch)
    finite = functools.reduce(operator.and_, (jnp.isfinite(rois[:, i])
                                              for i in range(rois.shape[1])),
                              jnp.ones(rois.shape[:1], bool))
    return finite & (index >= 0) & (index < images)  # columns by hand: no reduce kernel


def check_pool_rois(op: str, rois, images: int, spatial_scale: float) -> None:
    """`check` for concrete MaxRoiPool/ROIPooling `rois` (R, 5): the batch index in column 0,
    the scaled, rounded corners within int32. Traced `rois` (or a global array this process
    does not hold whole: `validation.known_value`) are left to `valid`."""
    host = validation.known_value(rois)
    if host is None:
        return
    wide = host.astype(bins.compute_dtype(host.dtype))
    with np.errstate(invalid="ignore", over="ignore"):
        corners = bins.scaled_corners(wide, spatial_scale) if np.isfinite(wide).all() else None
    check(op, wide, wide[:, 0], images, bounded=corners,
          bounded_name="the scaled, rounded corner", bound=bins.INT32_BOUND)


def pool_arguments(op: str, x, rois, spatial_scale) -> tuple[jax.Array, jax.Array, float]:
    """The checks both ROI poolings share once the dtype is allowed: `x` (N, C, H, W), `rois`
    (R, 5) of its dtype, `spatial_scale` finite and > 0, concrete ROIs valid."""
    if x.ndim != 4:
        raise ValueError(f"{op}: the data must be 4-D (N, C, H, W), got shape {x.shape}")
    rois = validation.as_data(op, rois, "rois")
    if rois.dtype != x.dtype:
        raise TypeError(f"{op}: `rois` dtype {rois.dtype} must be the data's dtype {x.dtype} "
                        f"(one type T)")
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise ValueError(f"{op}: `rois` must have shape (num_rois, 5) rows [batch, x1, y1, "
                         f"x2, y2], got {rois.shape}")
    scale = validation.static_float(op, "spatial_scale", spatial_scale)
    scale32 = float(np.float32(scale))
    if not (scale32 > 0 and scale32 != float("inf")):
        raise ValueError(f"{op}: `spatial_scale` must be finite and > 0 (as float32), got "
                         f"{scale}")
    check_pool_rois(op, rois, x.shape[0], scale32)
    return x, rois, scale32


def pooled_pair(op: str, name: str, value) -> tuple[int, int]:
    """`pooled_shape` as two ints >= 1."""
    arr = validation.static_int_array(op, name, value)
    if arr.shape != (2,):
        raise ValueError(f"{op}: `{name}` must hold 2 ints (height, width), got {arr.tolist()}")
    pair = (int(arr[0]), int(arr[1]))
    if min(pair) < 1:
        raise ValueError(f"{op}: `{name}` values must be >= 1, got {list(pair)}")
    return pair


def check_known(op: str, rois, batch, images: int) -> None:
    """`check` for RoiAlign's `rois` (R, 4) and `batch_indices` (R,), each checked only when
    its values are known here (`validation.known_value`; a traced one is left to `valid`)."""
    known_rois, known_batch = validation.known_value(rois), validation.known_value(batch)
    if known_rois is None and known_batch is None:
        return
    count = rois.shape[0]
    values = (np.zeros((count, 0)) if known_rois is None else known_rois.astype(np.float64))
    ids = np.zeros(count, np.int64) if known_batch is None else known_batch
    check(op, values, ids, max(images, 1) if known_batch is None else images,
          batch_name="`batch_indices`")
