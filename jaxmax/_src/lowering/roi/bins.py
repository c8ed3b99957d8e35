"""MaxRoiPool / ROIPooling-1 bin geometry (docs/semantics.md §11.3, steps 1-5).

A ROI row ``[b, x1, y1, x2, y2]`` is scaled by ``spatial_scale`` in the computation type
(float32; float64 for float64 data), its corners rounded half away from zero (C ``round``, never
``jnp.round``'s half-to-even), its extent ``max(end - start + 1, 1)``; bin ``p`` of ``P`` spans
``[floor(p * L/P) + start, ceil((p + 1) * L/P) + start)`` with ``L/P`` a correctly rounded
division in the computation type, clipped to the image.

XLA:CPU turns a division by a broadcast divisor into a multiplication by its reciprocal, which
is not correctly rounded and moves bin edges (``L = 57, P = 7``). :func:`exact_divide` divides
by a full-shape divisor behind ``lax.optimization_barrier`` that depends on the dividend
(:func:`opaque_divisor`), which the simplifier cannot see through, also under ``jax.vmap``.
"""

from __future__ import annotations

import functools
import operator
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

#: Scaled corners must be in [-INT32_BOUND, INT32_BOUND) (the C int they are cast to).
INT32_BOUND = 2.0**31


class Bins(NamedTuple):
    """Per ROI: its image and bin edges, clipped to the image; ``valid`` False for a ROI whose
    corner left the int32 range (its output is zero)."""

    image: jax.Array  # (R,) int32
    h_start: jax.Array  # (R, PH) int32 in [0, H]
    h_end: jax.Array
    w_start: jax.Array  # (R, PW) int32 in [0, W]
    w_end: jax.Array
    valid: jax.Array  # (R,) bool


def compute_dtype(dtype) -> np.dtype:
    """float64 for float64 data, float32 otherwise (float16 and bfloat16 too)."""
    return np.dtype(np.float64 if np.dtype(dtype) == np.float64 else np.float32)


def c_round(v):
    """Round half away from zero (C ``round``), exactly: ``v - trunc(v)`` is exact in floating
    point, so the comparison with one half is too. NumPy arrays give NumPy arrays."""
    xp = np if isinstance(v, np.ndarray) else jnp
    t = xp.trunc(v)
    return xp.where(xp.abs(v - t) >= 0.5, t + xp.sign(v), t)


def scaled_corners(rois, spatial_scale: float):
    """``rnd(rois[:, 1:] * s)``, (R, 4) ``[xs, ys, xe, ye]`` in the computation type; ``s`` is
    `spatial_scale` rounded to float32 (an attribute's type), then widened."""
    dtype = compute_dtype(rois.dtype)
    return c_round(rois[:, 1:].astype(dtype) * np.array(np.float32(spatial_scale), dtype))


def exact_divide(numerator: jax.Array, denominator) -> jax.Array:
    """``numerator / denominator`` correctly rounded on every backend: the divisor (an int,
    or a NumPy array broadcast along the last axis) is :func:`opaque_divisor`, so XLA cannot
    turn the division into a multiplication by a reciprocal."""
    divisor = jnp.broadcast_to(np.asarray(denominator, numerator.dtype), numerator.shape)
    return numerator / opaque_divisor(numerator, divisor)


def opaque_divisor(numerator: jax.Array, divisor: jax.Array) -> jax.Array:
    """`divisor` (of the quotient's shape) as XLA cannot see it broadcast: two copies of it
    behind one ``lax.optimization_barrier``, one chosen where `numerator` is NaN and the other
    elsewhere. Both are the divisor, so the value and the derivative are those of a plain
    division (the numerator is only the choice's predicate), but the divisor now depends on
    the numerator and ``jax.vmap`` batches it with it: a divisor batched apart reached the
    division through a broadcast of the batch axis, which XLA rewrites into a multiplication
    by the reciprocal (bin edges moved under ``vmap`` with batched ROIs)."""
    one, other = lax.optimization_barrier((divisor, divisor))
    return lax.select(numerator != numerator, one, other)


def computed_once(v: jax.Array) -> jax.Array:
    """`v`, computed by one kernel. XLA:CPU copies a cheap elementwise producer into the kernel
    of each consumer (the bins' float arithmetic was compiled into nine kernels), never a
    reduction: `v` is the maximum of two copies of itself, behind
    ``lax.optimization_barrier`` so that the simplifier cannot remove it. Exact for integers
    and for finite floats of either sign of zero."""
    return jnp.max(lax.optimization_barrier(jnp.stack([v, v])), axis=0)


def _edges(start, end, place: np.ndarray, pooled: np.ndarray, size: np.ndarray):
    """Bin edges, (R, 2, K) int32: ``[:, 0]`` the starts, ``[:, 1]`` the ends; column ``k`` is
    bin ``place[k]`` of ``pooled[k]`` along an axis of ``size[k]`` pixels, the ROI from
    `start` to `end` ((R, K) each). Both axes in one array: one division, one kernel. Both
    edges on an axis of their own, each from its own quotient (the division done twice
    over): XLA:CPU fuses an expensive operation (a division) only into a kernel that reads
    each of its elements once, and one quotient read for both edges kept the division, and
    the corners, in two kernels of their own."""
    dtype = start.dtype
    extent = jnp.maximum(end - start + 1, np.array(1, dtype))
    shape = (start.shape[0], 2, start.shape[1])
    step = exact_divide(jnp.broadcast_to(extent[:, None], shape), pooled)
    p = place.astype(dtype)
    p = np.stack([p, p + np.array(1, dtype)])  # (2, K): p for the starts, p + 1 the ends
    raw = p * step
    first = np.arange(2).reshape(2, 1) == 0
    edge = jnp.where(first, jnp.floor(raw), jnp.ceil(raw)) + start[:, None]
    top = size.astype(dtype)
    zero = np.array(0, dtype)
    return jnp.clip(edge, zero, top).astype(np.int32)


def bins(rois: jax.Array, batch_valid: jax.Array, spatial_scale: float,
         pooled: tuple[int, int], height: int, width: int) -> Bins:
    """The bins of every ROI: `unpack` of :func:`packed_bins`."""
    return unpack(packed_bins(rois, batch_valid, spatial_scale, pooled, height, width), pooled)


def packed_bins(rois: jax.Array, batch_valid: jax.Array, spatial_scale: float,
                pooled: tuple[int, int], height: int, width: int,
                extents: bool = False) -> jax.Array:
    """The bins of every ROI (`rois` (R, 5) floating; `batch_valid` (R,) from
    :func:`jaxmax._src.lowering.roi.rois.valid`). Invalid ROIs get in-range garbage edges and
    ``valid`` False; the caller zeroes their output. `extents`: ``PH + PW`` more columns at
    the end, each bin's end minus its start (computed in the same kernel: a caller reduces
    them straight from this array, with no kernel of its own to compute them)."""
    corners = scaled_corners(rois, spatial_scale)
    in_range = functools.reduce(operator.and_, (
        (corners[:, i] >= -INT32_BOUND) & (corners[:, i] < INT32_BOUND) for i in range(4)))
    ok = batch_valid & in_range
    corners = jnp.where(ok[:, None], corners, jnp.zeros_like(corners))
    ph, pw = pooled

    def both(h, w):  # (R,) per axis -> (R, PH + PW), by a select on constant columns (a
        # concatenation was computed in a kernel of its own)
        return jnp.where(np.arange(ph + pw) < ph, h[:, None], w[:, None])

    def constants(h, w):
        return np.array([h] * ph + [w] * pw)

    edges = _edges(both(corners[:, 1], corners[:, 0]), both(corners[:, 3], corners[:, 2]),
                   np.concatenate([np.arange(ph), np.arange(pw)]), constants(ph, pw),
                   constants(height, width))
    lo, hi = edges[:, 0], edges[:, 1]
    first = jnp.where(ok, rois[:, 0], jnp.zeros_like(rois[:, 0]))
    image = jnp.trunc(first.astype(corners.dtype)).astype(np.int32)
    fields = [lo, hi, image[:, None], ok[:, None].astype(np.int32)] + ([hi - lo] if extents
                                                                        else [])
    return computed_once(jnp.concatenate(fields, 1))


def unpack(packed: jax.Array, pooled: tuple[int, int]) -> Bins:
    """The `Bins` held in one int32 array (R, 2*(PH + PW) + 2) of :func:`packed_bins`: starts,
    ends, image, valid (a caller can pass that one array into a loop and unpack it there);
    the extents' columns, if any, after them."""
    ph, pw = pooled
    k = ph + pw
    lo, hi = packed[:, :k], packed[:, k:2 * k]
    return Bins(packed[:, 2 * k], lo[:, :ph], hi[:, :ph], lo[:, ph:], hi[:, ph:],
                packed[:, 2 * k + 1] != 0)
