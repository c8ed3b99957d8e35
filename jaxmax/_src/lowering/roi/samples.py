"""RoiAlign's sample positions and bilinear weights, in each face's arithmetic order.

Everything here is computed per spatial axis (the sampling grid is separable) on small tables:
per ROI ``r``, bin ``p`` and sample ``k`` of the axis, the position, whether it is out of the
image, its two pixel indices and its two linear weights (docs/semantics.md §12.2). The two axes
are stacked on a last axis of 2 (``X`` then ``Y``, the ROI row's order) and computed at once.

ONNX (``onnx/reference/ops/op_roi_align.py``'s order, shared by onnxruntime)::

    start = c1*s - off;  length = (c2*s - off) - start   (max(length, 1) when off == 0)
    bin = length / P;    grid = sampling_ratio or ceil(bin)
    pos = (start + p*bin) + ((k + 0.5)*bin) / grid

OpenVINO (``reference/roi_align.hpp``'s order)::

    start = c1*s | c1*s - 0.5 | (c1 + 0.5)*s - 0.5   (asymmetric | half_pixel_for_nn | half_pixel)
    bin = length / P;    grid = sampling_ratio or ceil(bin);    step = bin / grid
    pos = (start + p*bin) + step*(k + 0.5)

Every product and quotient is rounded once, in that order. XLA:CPU would break this in two
ways, and each has a guard here (``GUARDS``; a test switches each off and sees wrong bits):

* ``"division"``: a division by a broadcast divisor is rewritten into a multiplication by the
  reciprocal (not correctly rounded), and ``(a / b) / c`` into ``a / (b * c)``. The divisor is
  given the full shape of the quotient behind ``lax.optimization_barrier`` and made to depend
  on the dividend (`bins.opaque_divisor`: under ``jax.vmap`` a divisor batched apart reached
  the division through a broadcast again).
* ``"fma"``: ``a*b + c`` is contracted into a fused multiply-add inside fusions, and
  ``optimization_barrier`` does not stop it. The product is passed through
  ``where(t == t, t, nan)``, an identity for every value that XLA cannot see through.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src.lowering import order
from jaxmax._src.lowering.roi.bins import opaque_divisor

#: The two XLA:CPU guards, on by default; the tests switch each off (then clear JAX's caches)
#: to show that the bits change without it.
GUARDS = {"division": True, "fma": True}

#: The largest grid count kept as is; larger ones (a ROI millions of bins wide) are clamped;
#: their samples beyond the map are never evaluated (the window of :mod:`.adaptive`).
MAX_GRID = 2**30


def rounded(t: jax.Array) -> jax.Array:
    """`t` (a product or a quotient) kept as one rounded value: XLA may not fuse it into a
    multiply-add with what follows, nor re-associate a second division into it."""
    if not GUARDS["fma"]:
        return t
    return lax.select(t == t, t, lax.full_like(t, np.nan))  # jnp.where: a nested jit to trace


def divide(a: jax.Array, b) -> jax.Array:
    """``a / b``, correctly rounded, for a divisor that broadcasts against `a`."""
    shape = jnp.broadcast_shapes(jnp.shape(a), jnp.shape(b))
    b = jnp.broadcast_to(jnp.asarray(b, a.dtype), shape)
    if GUARDS["division"]:
        b = opaque_divisor(jnp.broadcast_to(a, shape), b)
    return a / b


def grid_count(bin_: jax.Array, sampling_ratio: int) -> jax.Array:
    """The samples per bin along one axis: `sampling_ratio`, or ``ceil(bin)`` when it is 0
    (<= 0 means no sample; clamped to ``MAX_GRID``), as int32."""
    if sampling_ratio > 0:
        return jnp.full(bin_.shape, sampling_ratio, jnp.int32)
    up = jnp.ceil(bin_)
    up = jnp.where(up > MAX_GRID, MAX_GRID, up)
    up = jnp.where(up > 0, up, 0)  # NaN and non-positive: no sample
    return up.astype(jnp.int32)


def onnx_extent(c1: jax.Array, c2: jax.Array, scale, off: float, clamp: bool):
    """ONNX: ``(start, length)`` of the ROI along one axis in feature-map coordinates."""
    start = rounded(c1 * scale) - off
    end = rounded(c2 * scale) - off
    length = end - start
    if clamp:
        length = jnp.where(length < 1, jnp.ones_like(length), length)
    return start, length


def openvino_extent(c1: jax.Array, c2: jax.Array, scale, aligned_mode: str):
    """OpenVINO: ``(start, length)`` along one axis for `aligned_mode`."""
    if aligned_mode == "asymmetric":
        start, end = rounded(c1 * scale), rounded(c2 * scale)
    elif aligned_mode == "half_pixel_for_nn":
        start, end = rounded(c1 * scale) - 0.5, rounded(c2 * scale) - 0.5
    else:  # half_pixel
        start = rounded((c1 + 0.5) * scale) - 0.5
        end = rounded((c2 + 0.5) * scale) - 0.5
    length = end - start
    if aligned_mode == "asymmetric":
        length = jnp.where(length < 1, jnp.ones_like(length), length)
    return start, length


#: The axes of the sampling grid are computed together, stacked on a last axis of 2 in the ROI
#: row's order: ``X`` (index 0, the width) then ``Y`` (index 1, the height). One set of kernels
#: serves both axes (XLA:CPU compiles each kernel separately: half the geometry's kernels).
X, Y = 0, 1


@dataclasses.dataclass(frozen=True)
class Axes:
    """Samples of every bin along both axes: grid counts ``(R, 2)`` and tables of shape
    ``(R, P, 2)`` for one sample (``(K, R, P, 2)`` for K; ``P`` the larger pooled size, an
    axis's bins past its own pooled size are never read)."""

    grid: jax.Array      # (R, 2) int32, samples per bin
    index: jax.Array     # (R, P, 2) int32, the sample's index within its bin
    outside: jax.Array   # (R, P, 2) bool, out of the image (value +0.0)
    low: jax.Array       # (R, P, 2) int32, the lower pixel (clipped into the map)
    high: jax.Array      # (R, P, 2) int32, the upper pixel
    frac: jax.Array      # (R, P, 2) CT, weight of the upper pixel (l)
    rest: jax.Array      # (R, P, 2) CT, weight of the lower pixel (h = 1 - l)


def bin_base(start: jax.Array, bin_: jax.Array, pooled: int) -> jax.Array:
    """``start + p*bin`` per ROI, bin and axis: (R, P, 2) from (R, 2)."""
    p = jnp.arange(pooled, dtype=bin_.dtype)[:, None]
    return start[:, None, :] + rounded(p * bin_[:, None, :])


def positions(face: str, base: jax.Array, bin_: jax.Array, grid: jax.Array,
              k: jax.Array) -> jax.Array:
    """Sample positions (R, P, 2) for sample indices `k` (R, P, 2) of CT."""
    half = k + jnp.array(0.5, k.dtype)
    # a grid of 0 (an invalid ROI, or an empty bin) sums nothing and its output is +0.0; 1 there
    # keeps 0/0 out of the positions, whose NaN the backward pass would multiply into the data's
    # gradient (0 * NaN) through the image the ROI is clamped to
    g = jnp.maximum(grid, 1).astype(bin_.dtype)[:, None, :]
    if face == "onnx":
        offset = divide(rounded(half * bin_[:, None, :]), g)
    else:
        step = divide(rounded(jnp.broadcast_to(bin_[:, None, :], half.shape)), g)
        offset = rounded(step * half)
    return base + offset


def window_start(face: str, base: jax.Array, bin_: jax.Array, grid: jax.Array) -> jax.Array:
    """(R, P, 2) int32: a sample index at or below the first sample that can fall inside the
    map (position >= -1), where :mod:`.adaptive`'s window starts; 0 when the grid has one
    sample or none."""
    step = bin_ / jnp.maximum(grid, 1).astype(bin_.dtype)
    first = jnp.floor((-1.0 - base) / step[:, None, :] - 0.5) - 2
    first = jnp.where(jnp.isfinite(first), first, 0)
    top = jnp.maximum(grid - 1, 0).astype(first.dtype)[:, None, :]
    return jnp.clip(first, 0, top).astype(jnp.int32)


def pair(x, y, dtype) -> jax.Array:
    """``[x, y]`` (2,) of `dtype`, built in the trace: a NumPy constant would be passed to a
    run-time loop as an operand of its own, which XLA:CPU fills with a kernel of its own."""
    return lax.concatenate([lax.full((1,), x, dtype), lax.full((1,), y, dtype)], 0)


def axis_samples(face: str, start: jax.Array, bin_: jax.Array, grid: jax.Array,
                 pooled: int, size: tuple[int, int], index: jax.Array) -> Axes:
    """The samples of index `index` (int32, broadcasting against (R, P, 2), e.g. (K, 1, 1, 1)
    for K samples) of every bin along both axes, of lengths `size` ``(W, H)``, pooled to
    `pooled` bins (the larger of the two)."""
    base = bin_base(start, bin_, pooled)
    index = jnp.broadcast_to(index, jnp.broadcast_shapes(index.shape, base.shape))
    pos = positions(face, base, bin_, grid, index.astype(bin_.dtype))
    last = pair(size[0] - 1, size[1] - 1, jnp.int32)
    outside = (pos < -1) | (pos > pair(size[0], size[1], pos.dtype))
    q = jnp.where(pos <= 0, jnp.zeros_like(pos), pos)
    q = jnp.where(outside, jnp.zeros_like(q), q)  # keep the casts below in range
    low = jnp.floor(q).astype(jnp.int32)
    top = low >= last
    low = jnp.where(top, last, low)
    high = jnp.where(top, last, low + 1)
    q = jnp.where(top, low.astype(q.dtype), q)
    frac = q - low.astype(q.dtype)
    rest = 1 - frac
    return Axes(grid, index, outside, low, high, frac, rest)


def ieee_take(acc: jax.Array, v: jax.Array) -> jax.Array:
    """Where the NaN-propagating IEEE maximum (``+0`` over ``-0``) of ``(acc, v)`` is `v` and
    not the earlier `acc`: a larger `v`, the first NaN, ``+0`` after ``-0``."""
    return ((v > acc) | (jnp.isnan(v) & ~jnp.isnan(acc))
            | ((v == acc) & jnp.signbit(acc) & ~jnp.signbit(v)))


def ieee_max(a: jax.Array, b: jax.Array) -> jax.Array:
    """The NaN-propagating IEEE maximum, the earlier of equal values (``+0`` over ``-0``)."""
    return jnp.where(ieee_take(a, b), b, a)


@jax.custom_jvp
def corner_max(t1: jax.Array, t2: jax.Array, t3: jax.Array, t4: jax.Array) -> jax.Array:
    """``ieee_max(ieee_max(ieee_max(t1, t2), t3), t4)`` of four weighted corners, the same
    element selected (the first NaN, else the first largest, ``+0`` over ``-0``: the same
    bits), in about 0.6x the time: each corner is keyed once (`order.nan_top_key`, whose order
    is `ieee_take`'s on values that are not subnormal, and a weighted corner never is: a product
    computed under XLA:CPU's flush to zero) and the pairs
    ``(t1, t2)`` and ``(t3, t4)`` are folded apart, then together. The chain of `ieee_max`
    tests each pair four ways (float compares, NaN tests, sign tests) and ran at 2.3x the
    interpolated sample on the anchor (benchmarks/roi_align_ab.py --corners).

    The derivative is the chain's (`_corner_chain`, the same corner selected): with the tree's
    own, the backward program changed, and with it where XLA:CPU contracts the backward's
    products and sums into fused multiply-adds: ``sampling_ratio=0``'s ROI gradient (its
    custom VJP pulls each sample back through ``jax.vjp`` of the step) moved by an ulp in a
    few elements. Under differentiation the forward pass computes the chain as before."""
    k1, k2, k3, k4 = (order.nan_top_key(t) for t in (t1, t2, t3, t4))
    first, second = k2 > k1, k4 > k3
    ka, va = lax.select(first, k2, k1), lax.select(first, t2, t1)
    kb, vb = lax.select(second, k4, k3), lax.select(second, t4, t3)
    return lax.select(kb > ka, vb, va)


def _corner_chain(t1, t2, t3, t4):
    """`corner_max` as the chain of `ieee_max` (its derivative)."""
    return ieee_max(ieee_max(ieee_max(t1, t2), t3), t4)


@corner_max.defjvp
def _corner_max_jvp(primals, tangents):
    return jax.jvp(_corner_chain, primals, tangents)
