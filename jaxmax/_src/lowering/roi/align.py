"""RoiAlign / ROIAlign: the samples of every bin pooled by avg or max (docs/semantics.md §12).

One spec-agnostic lowering serves both faces; the face decides the geometry's arithmetic order
(:mod:`.samples`) and the pooling:

* ``avg``: the samples summed in row-major ``(iy, ix)`` order from ``+0.0``, then divided by
  the sample count (ONNX), or ``acc + v / count`` per sample (OpenVINO);
* ONNX ``max``: NaN if any sample is NaN, else the IEEE maximum (``+0`` over ``-0``);
  ``weighted_corners`` first reduces each sample to its largest weighted corner;
* OpenVINO ``max``: the fold ``acc = lowest(T); acc = v > acc ? v : acc`` (NaN never wins,
  ties keep the first sample).

A bin without samples gives ``+0.0``; an out-of-image sample has the value ``+0.0``.

The samples are visited by a ``lax.scan`` over a window of ``K_y x K_x`` sample indices per
bin (each step gathers the four corners of one sample of every bin of every ROI), masked past
each ROI's own grid. With a static ``sampling_ratio`` the window is the grid. With
``sampling_ratio = 0`` the grid depends on the (possibly traced) ROI sizes: a ``lax.switch``
picks, at run time, the smallest static bound ``1, 2, 4, ..., ceil(max(H, W)/min(P_h, P_w))``
that holds the largest grid any ROI needs; a ROI larger than the map takes the windowed branch,
which evaluates only the ``2*L + 6`` sample indices per axis that can fall inside the map and
adds the ``+0.0`` of the samples it skips. No grid is ever too small.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes, explicit_axes
from jaxmax._src.lowering.roi import rois as roi_rows
from jaxmax._src.lowering.roi import samples
from jaxmax._src.lowering.roi.samples import rounded


def compute_dtype(dtype) -> np.dtype:
    """The arithmetic type: float32 for 16-bit floats, the data type otherwise."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


def grid_bounds(size: tuple[int, int], pooled: tuple[int, int]) -> tuple[int, ...]:
    """The static grid bounds of the ``sampling_ratio = 0`` switch: powers of two below
    ``ceil(max(H, W) / min(P_h, P_w))``, then that bound (enough for ROIs inside the map)."""
    top = max(1, -(-max(size) // max(min(pooled), 1)))
    bounds = [1]
    while bounds[-1] * 2 < top:
        bounds.append(bounds[-1] * 2)
    if bounds[-1] < top:
        bounds.append(top)
    return tuple(bounds)


def window_size(length: int) -> int:
    """Sample indices per bin and axis that can fall inside a map of `length` pixels when the
    grid holds more than one sample (spacing > 1/2), with a margin for the estimate."""
    return 2 * length + 6


def ieee_take(acc: jax.Array, v: jax.Array) -> jax.Array:
    """Where the NaN-propagating IEEE maximum (``+0`` over ``-0``) of ``(acc, v)`` is `v` and
    not the earlier `acc`: a larger `v`, the first NaN, ``+0`` after ``-0``."""
    return ((v > acc) | (jnp.isnan(v) & ~jnp.isnan(acc))
            | ((v == acc) & jnp.signbit(acc) & ~jnp.signbit(v)))


def ieee_max(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.where(ieee_take(a, b), b, a)


def _slice(table: jax.Array, k) -> jax.Array:
    return lax.dynamic_index_in_dim(table, k, 0, keepdims=False)


def _corner_products(flat: jax.Array, base: jax.Array, ay: samples.Axis, ax: samples.Axis,
                     ky, kx, width: int):
    """The four weighted corners ``w_i * X_i`` of sample ``(ky, kx)`` of every bin:
    (R, P_h, P_w, C) each, with the out-of-image flag (R, P_h, P_w)."""
    y0, y1 = _slice(ay.low, ky)[:, :, None], _slice(ay.high, ky)[:, :, None]
    x0, x1 = _slice(ax.low, kx)[:, None, :], _slice(ax.high, kx)[:, None, :]
    ly, hy = _slice(ay.frac, ky)[:, :, None], _slice(ay.rest, ky)[:, :, None]
    lx, hx = _slice(ax.frac, kx)[:, None, :], _slice(ax.rest, kx)[:, None, :]
    outside = _slice(ay.outside, ky)[:, :, None] | _slice(ax.outside, kx)[:, None, :]
    b = base[:, None, None]
    shape = outside.shape

    def corner(y, x):
        idx = jnp.broadcast_to(b + y * width + x, shape).reshape(-1)
        return jnp.take(flat, idx, axis=0, mode="clip").reshape(shape + (flat.shape[1],))

    weights = (hy * hx, hy * lx, ly * hx, ly * lx)
    values = (corner(y0, x0), corner(y0, x1), corner(y1, x0), corner(y1, x1))
    products = tuple(rounded(w[..., None] * v) for w, v in zip(weights, values, strict=True))
    return products, outside


def _pool(flat, base, ay, ax, count, *, face, mode, corners, lowest, pooled, width,
          skipped=None):
    """Scan over the ``K_y x K_x`` window of sample indices: (R, P_h, P_w, C) of CT."""
    ky_n, kx_n = ay.index.shape[0], ax.index.shape[0]
    r, c = base.shape[0], flat.shape[1]
    ct = flat.dtype
    shape = (r,) + pooled + (c,)
    seed = lowest if (mode == "max" and face == "openvino") else np.array(
        -np.inf if mode == "max" else 0, ct)
    acc0 = jnp.full(shape, seed, ct)
    zero = jnp.zeros((), ct)
    pending0 = None if skipped is None else skipped[0]
    per_sample = jnp.maximum(count, 1)[:, None, None, None]  # 0 only where nothing is summed

    def body(carry, k):
        acc, pending = carry
        ky, kx = k // kx_n, k % kx_n
        (t1, t2, t3, t4), outside = _corner_products(flat, base, ay, ax, ky, kx, width)
        if corners:
            v = ieee_max(ieee_max(ieee_max(t1, t2), t3), t4)
        else:
            v = ((t1 + t2) + t3) + t4
        v = jnp.where(outside[..., None], zero, v)
        iy = _slice(ay.index, ky)[:, :, None]
        ix = _slice(ax.index, kx)[:, None, :]
        mask = ((iy < ay.grid[:, None, None]) & (ix < ax.grid[:, None, None]))[..., None]
        if mode == "avg":
            if face == "onnx":
                acc = jnp.where(mask, acc + v, acc)
            else:
                acc = jnp.where(mask, acc + samples.divide(v, per_sample), acc)
        elif face == "onnx":
            acc = jnp.where(mask & ieee_take(acc, v), v, acc)
        else:
            if pending is not None:  # the skipped +0 samples come before this one
                oy, ox = skipped[1], skipped[2]
                after = (iy > oy) | ((iy == oy) & (ix > ox))
                fire = (pending & after)[..., None] & mask
                acc = jnp.where(fire & (zero > acc), zero, acc)
                pending = pending & ~(after & mask[..., 0])
            acc = jnp.where(mask & (v > acc), v, acc)
        return (acc, pending), None

    (acc, pending), _ = lax.scan(body, (acc0, pending0), jnp.arange(ky_n * kx_n))
    if skipped is not None and mode == "max":
        if face == "onnx":
            acc = jnp.where(skipped[0][..., None] & ieee_take(acc, zero), zero, acc)
        else:
            acc = jnp.where(pending[..., None] & (zero > acc), zero, acc)
    return acc


def _skipped(ay: samples.Axis, ax: samples.Axis, lo_y, lo_x):
    """Bins whose grid holds samples outside the window (all out of the image, value +0), and
    the first of them in row-major order: ``(any, iy, ix)``, each (R, P_h, P_w)."""
    ky_n, kx_n = ay.index.shape[0], ax.index.shape[0]
    gh, gw = ay.grid[:, None, None], ax.grid[:, None, None]
    ly, lx = lo_y[:, :, None], lo_x[:, None, :]
    some = (gh > 0) & (gw > 0)
    front = (ly > 0) | (lx > 0)
    right = gw > lx + kx_n
    below = gh > ly + ky_n
    zero = jnp.zeros_like(ly + lx)
    oy = jnp.where(front | right, zero, ly + ky_n)
    ox = jnp.where(front | ~right, zero, lx + kx_n)
    return some & (front | right | below), oy, ox


def roi_align(x: jax.Array, boxes: jax.Array, batch: jax.Array, **static) -> jax.Array:
    """:func:`align` with ``Explicit`` mesh axes made ``Auto`` inside it: the output keeps the
    sharding of the ROI axis (from `boxes`) and of the channel axis (from `x`) where they
    divide evenly, the rest replicated."""
    def out_spec(mesh):
        spec = (explicit_axes.spec_of(boxes)[0], explicit_axes.spec_of(x)[1], None, None)
        shape = (boxes.shape[0], x.shape[1]) + tuple(static["pooled"])
        return explicit_axes.divisible(mesh, spec, shape)
    return explicit_axes.run(functools.partial(align, **static), (x, boxes, batch), out_spec)


@functools.partial(jax.jit, static_argnames=(
    "face", "mode", "corners", "pooled", "sampling_ratio", "scale", "geometry"))
def align(x: jax.Array, boxes: jax.Array, batch: jax.Array, *, face: str, mode: str,
          corners: bool, pooled: tuple[int, int], sampling_ratio: int, scale: float,
          geometry: tuple) -> jax.Array:
    """RoiAlign of `x` (N, C, H, W) over `boxes` (R, 4) ``[x1, y1, x2, y2]`` of images `batch`
    (R,): (R, C, P_h, P_w) of ``x.dtype``.

    `face` is ``"onnx"`` (`geometry` ``(off, clamp)``) or ``"openvino"`` (`geometry`
    ``(aligned_mode,)``); `mode` ``"avg"`` or ``"max"``; `corners` the ONNX weighted-corner max;
    `scale` the spatial scale already rounded to float32. Invalid ROIs (non-finite, batch index
    outside ``[0, N)``) give ``+0.0``.
    """
    n_img, channels, height, width = x.shape
    r = boxes.shape[0]
    ct = compute_dtype(x.dtype)
    if r == 0 or channels == 0 or 0 in pooled or height == 0 or width == 0:
        return jnp.zeros((r, channels) + pooled, x.dtype)
    valid = roi_rows.valid_mask(boxes, batch, n_img)
    safe = jnp.where(valid[:, None], boxes, jnp.zeros_like(boxes)).astype(ct)
    image = jnp.where(valid, batch, 0).astype(jnp.int32)
    s = np.asarray(scale, ct)
    if face == "onnx":
        off, clamp = geometry
        ys, lh = samples.onnx_extent(safe[:, 1], safe[:, 3], s, off, clamp)
        xs, lw = samples.onnx_extent(safe[:, 0], safe[:, 2], s, off, clamp)
    else:
        ys, lh = samples.openvino_extent(safe[:, 1], safe[:, 3], s, geometry[0])
        xs, lw = samples.openvino_extent(safe[:, 0], safe[:, 2], s, geometry[0])
    bh = samples.divide(lh, pooled[0])
    bw = samples.divide(lw, pooled[1])
    gh = jnp.where(valid, samples.grid_count(bh, sampling_ratio), 0)
    gw = jnp.where(valid, samples.grid_count(bw, sampling_ratio), 0)
    count = (gh * gw).astype(ct)  # exact: OpenVINO's num_samples and ONNX's divisor

    flat = jnp.moveaxis(x, 1, -1).reshape(n_img * height * width, channels).astype(ct)
    base = image * (height * width)
    lowest = dtypes.lowest(x.dtype).astype(ct)
    pool = functools.partial(_pool, flat, base, face=face, mode=mode, corners=corners,
                             lowest=lowest, pooled=pooled, width=width)

    def regular(k):
        def run():
            ay = samples.axis_samples(face, ys, bh, gh, pooled[0], height, k, None)
            ax = samples.axis_samples(face, xs, bw, gw, pooled[1], width, k, None)
            return pool(ay, ax, count)
        return run

    def windowed():
        ky_n, kx_n = window_size(height), window_size(width)
        lo_y = samples.window_start(face, samples.bin_base(ys, bh, pooled[0]), bh, gh)
        lo_x = samples.window_start(face, samples.bin_base(xs, bw, pooled[1]), bw, gw)
        ay = samples.axis_samples(face, ys, bh, gh, pooled[0], height, ky_n, lo_y)
        ax = samples.axis_samples(face, xs, bw, gw, pooled[1], width, kx_n, lo_x)
        return pool(ay, ax, count, skipped=_skipped(ay, ax, lo_y, lo_x))

    if sampling_ratio > 0:
        acc = regular(sampling_ratio)()
    else:
        bounds = grid_bounds((height, width), pooled)
        need = jnp.maximum(jnp.max(gh), jnp.max(gw))
        branch = jnp.searchsorted(jnp.asarray(bounds, jnp.int32), need)
        acc = lax.switch(branch, [regular(k) for k in bounds] + [windowed])

    has = ((gh > 0) & (gw > 0))[:, None, None, None]
    if mode == "avg":
        acc = jnp.where(acc == 0, jnp.zeros_like(acc), acc)  # the sum starts from +0.0
        if face == "onnx":
            acc = samples.divide(acc, jnp.maximum(count, 1)[:, None, None, None])
    acc = jnp.where(has & valid[:, None, None, None], acc, jnp.zeros_like(acc))
    return jnp.moveaxis(acc, -1, 1).astype(x.dtype)
