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

Each step of the loop over samples gathers the four corners of one sample of every bin of every
ROI (channels last, ``jnp.take`` of rows) and folds it in, masked past each ROI's own grid. With
a static ``sampling_ratio`` the loop is a ``lax.scan`` over the grid. With ``sampling_ratio = 0``
the grid depends on the (possibly traced) ROI sizes: :mod:`.adaptive` runs a loop whose trip
count is the largest window any ROI needs, computed at run time, over at most the ``2*L + 6``
sample indices per bin and axis that can fall inside the map, adding the ``+0.0`` of the
samples it skips. No grid is ever too small, and the program does not depend on the ROIs.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes, explicit_axes
from jaxmax._src.lowering import roi_sharded
from jaxmax._src.lowering.roi import adaptive, samples
from jaxmax._src.lowering.roi import rois as roi_rows
from jaxmax._src.lowering.roi.samples import ieee_max, ieee_take, rounded


def compute_dtype(dtype) -> np.dtype:
    """The arithmetic type: float32 for 16-bit floats, the data type otherwise."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


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


def _combine(products, outside, corners: bool, ct) -> jax.Array:
    """One sample's value from its weighted corners: their sum left to right (or, for the
    weighted-corner max, their IEEE maximum); ``+0.0`` out of the image."""
    t1, t2, t3, t4 = products
    v = ieee_max(ieee_max(ieee_max(t1, t2), t3), t4) if corners else ((t1 + t2) + t3) + t4
    return jnp.where(outside[..., None], jnp.zeros((), ct), v)


def _step(flat, geometry, ints, ky, kx, *, face, corners, pooled, size):
    """Sample ``(lo_y + ky, lo_x + kx)`` of every bin of every ROI: ``(v, mask, iy, ix)``."""
    ys, xs, bh, bw = geometry
    ay = samples.axis_samples(face, ys, bh, ints["gh"], pooled[0], size[0], 1,
                              ints["lo_y"] + ky)
    ax = samples.axis_samples(face, xs, bw, ints["gw"], pooled[1], size[1], 1,
                              ints["lo_x"] + kx)
    products, outside = _corner_products(flat, ints["base"], ay, ax, 0, 0, size[1])
    v = _combine(products, outside, corners, flat.dtype)
    iy, ix = ay.index[0][:, :, None], ax.index[0][:, None, :]
    mask = (iy < ay.grid[:, None, None]) & (ix < ax.grid[:, None, None])
    return v, mask, iy, ix


def _pool(flat, base, ay, ax, count, *, face, mode, corners, lowest, pooled, width):
    """Scan over the static ``G x G`` grid of sample indices: (R, P_h, P_w, C) of CT."""
    ky_n, kx_n = ay.index.shape[0], ax.index.shape[0]
    r, c = base.shape[0], flat.shape[1]
    ct = flat.dtype
    shape = (r,) + pooled + (c,)
    seed = lowest if (mode == "max" and face == "openvino") else np.array(
        -np.inf if mode == "max" else 0, ct)
    acc0 = jnp.full(shape, seed, ct)
    per_sample = jnp.maximum(count, 1)[:, None, None, None]  # 0 only where nothing is summed

    def body(acc, k):
        ky, kx = k // kx_n, k % kx_n
        products, outside = _corner_products(flat, base, ay, ax, ky, kx, width)
        v = _combine(products, outside, corners, ct)
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
            acc = jnp.where(mask & (v > acc), v, acc)
        return acc, None

    acc, _ = lax.scan(body, acc0, jnp.arange(ky_n * kx_n))
    return acc


#: ROIs per block of the ``sampling_ratio = 0`` loop: the ROIs are sorted by the window they
#: need and each block runs as many samples as its largest ROI needs.
BLOCK = 32


def _adaptive(flat, base, geometry, gh, gw, count, *, face, mode, corners, lowest, pooled,
              size):
    """``sampling_ratio = 0``: the run-time loop of :mod:`.adaptive` over each bin's window,
    per block of ROIs of similar grids (sorted by the samples they need)."""
    ys, xs, bh, bw = geometry
    ky_n, kx_n = adaptive.window_size(size[0]), adaptive.window_size(size[1])
    lo_y = samples.window_start(face, samples.bin_base(ys, bh, pooled[0]), bh, gh)
    lo_x = samples.window_start(face, samples.bin_base(xs, bw, pooled[1]), bw, gw)
    per = dict(
        ys=ys, xs=xs, bh=bh, bw=bw, gh=gh, gw=gw, lo_y=lo_y, lo_x=lo_x, base=base, count=count,
        need_y=jnp.max(jnp.clip(gh[:, None] - lo_y, 0, ky_n), axis=1),
        need_x=jnp.max(jnp.clip(gw[:, None] - lo_x, 0, kx_n), axis=1))
    step = functools.partial(_step, face=face, corners=corners, pooled=pooled, size=size)

    def run(block):
        first = adaptive.skipped(block["gh"], block["gw"], block["lo_y"], block["lo_x"],
                                 ky_n, kx_n)
        ints = dict(gh=block["gh"], gw=block["gw"], lo_y=block["lo_y"], lo_x=block["lo_x"],
                    need_y=jnp.max(block["need_y"]), need_x=jnp.max(block["need_x"]),
                    base=block["base"], count=block["count"], skipped=first)
        shape = (block["gh"].shape[0],) + pooled + (flat.shape[1],)
        acc, pending = adaptive.pool(
            step, flat, tuple(block[k] for k in ("ys", "xs", "bh", "bw")), ints, face=face,
            mode=mode, lowest=lowest, shape=shape)
        if mode == "max":
            zero = jnp.zeros((), flat.dtype)
            if face == "onnx":  # the skipped +0 samples: order-free under the IEEE maximum
                acc = jnp.where(first[0][..., None] & ieee_take(acc, zero), zero, acc)
            else:  # those after every evaluated sample
                acc = jnp.where(pending[..., None] & (zero > acc), zero, acc)
        return acc

    r = gh.shape[0]
    if r <= BLOCK:
        return run(per)
    blocks = -(-r // BLOCK)
    padded = jax.tree.map(lambda a: jnp.pad(a, [(0, blocks * BLOCK - r)] + [(0, 0)] * (a.ndim - 1)),
                          per)  # padding ROIs have no sample (grid 0)
    work = padded["need_y"] * padded["need_x"]
    order = jnp.argsort(-work, stable=True)
    sorted_ = jax.tree.map(lambda a: jnp.take(a, order, axis=0).reshape(
        (blocks, BLOCK) + a.shape[1:]), padded)
    out = lax.map(run, sorted_)
    out = out.reshape((blocks * BLOCK,) + out.shape[2:])
    return jnp.take(out, jnp.argsort(order), axis=0)[:r]


def roi_align(x: jax.Array, boxes: jax.Array, batch: jax.Array, **static) -> jax.Array:
    """:func:`align` with ``Explicit`` mesh axes made ``Auto`` inside it: the output keeps the
    sharding of the ROI axis (from `boxes`) and of the channel axis (from `x`) where they
    divide evenly, the rest replicated."""
    def out_spec(mesh):
        spec = (explicit_axes.spec_of(boxes)[0], explicit_axes.spec_of(x)[1], None, None)
        shape = (boxes.shape[0], x.shape[1]) + tuple(static["pooled"])
        return explicit_axes.divisible(mesh, spec, shape)
    sharded = roi_sharded.by_images(  # Explicit axes, the images sharded: output-sized moves
        x, batch, (boxes,), lambda x, b, r: align(x, r, b, **static), absent=0)
    if sharded is not None:
        return sharded
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
    valid = roi_rows.valid(boxes, batch, n_img)
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

    if sampling_ratio > 0:
        ay = samples.axis_samples(face, ys, bh, gh, pooled[0], height, sampling_ratio, None)
        ax = samples.axis_samples(face, xs, bw, gw, pooled[1], width, sampling_ratio, None)
        acc = pool(ay, ax, count)
    else:
        acc = _adaptive(flat, base, (ys, xs, bh, bw), gh, gw, count, face=face, mode=mode,
                        corners=corners, lowest=lowest, pooled=pooled, size=(height, width))

    has = ((gh > 0) & (gw > 0))[:, None, None, None]
    if mode == "avg":
        acc = jnp.where(acc == 0, jnp.zeros_like(acc), acc)  # the sum starts from +0.0
        if face == "onnx":
            acc = samples.divide(acc, jnp.maximum(count, 1)[:, None, None, None])
    acc = jnp.where(has & valid[:, None, None, None], acc, jnp.zeros_like(acc))
    return jnp.moveaxis(acc, -1, 1).astype(x.dtype)
