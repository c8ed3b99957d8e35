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
the grid depends on the (possibly traced) ROI sizes: the ROIs are sorted into blocks of
`BLOCK` by the window they need, and :mod:`.adaptive` runs one loop over every block's window
(the largest a ROI of the block needs, computed at run time, of at most the ``2*L + 6`` sample
indices per bin and axis that can fall inside the map), adding the ``+0.0`` of the samples it
skips. No grid is ever too small, and the program does not depend on the ROIs.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero

from jaxmax._src import auto_partition, dtypes, explicit_axes, linear_calls
from jaxmax._src.lowering import compile_options, order, roi_sharded, rules
from jaxmax._src.lowering.roi import adaptive, samples
from jaxmax._src.lowering.roi import rois as roi_rows
from jaxmax._src.lowering.roi.samples import ieee_take, rounded


def compute_dtype(dtype) -> np.dtype:
    """The arithmetic type: float32 for 16-bit floats, the data type otherwise."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


def _corner_products(flat: jax.Array, base: jax.Array, ay: samples.Axes, ax: samples.Axes,
                     width: int, pooled: tuple[int, int], take):
    """The four weighted corners ``w_i * X_i`` of one sample of every bin (its height axis
    from `ay`, its width axis from `ax`): (R, P_h, P_w, C) each, with the out-of-image flag
    (R, P_h, P_w)."""
    ph, pw = pooled

    def y(table):
        return table[:, :ph, samples.Y, None]

    def x(table):
        return table[:, None, :pw, samples.X]

    y0, y1, x0, x1 = y(ay.low), y(ay.high), x(ax.low), x(ax.high)
    ly, hy, lx, hx = y(ay.frac), y(ay.rest), x(ax.frac), x(ax.rest)
    outside = y(ay.outside) | x(ax.outside)
    b = base[:, None, None]
    shape = outside.shape

    def corner(yy, xx):
        return jnp.broadcast_to(b + yy * width + xx, shape).reshape(-1)

    idx = jnp.stack([corner(y0, x0), corner(y0, x1), corner(y1, x0), corner(y1, x1)])
    values = tuple(v.reshape(shape + (flat.shape[1],)) for v in _four_corners(flat, idx, take))
    weights = (hy * hx, hy * lx, ly * hx, ly * lx)
    products = tuple(rounded(w[..., None] * v) for w, v in zip(weights, values, strict=True))
    return products, outside


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _four_corners(flat: jax.Array, idx: jax.Array, take) -> tuple[jax.Array, ...]:
    """``take(flat, idx[k])`` for the four corners ``k`` of every sample (`idx` (4, n)): four
    gathers, whose tangent is one gather of the four, so that the transpose is one scatter of
    the corners in this order. Four gathers' cotangents were summed in an order XLA chose per
    program, and a device holding an image alone gave its gradient a few ulps off the one
    device's (up to 99 of 8,192 elements)."""
    return tuple(take(flat, idx[k]) for k in range(4))


@_four_corners.defjvp
def _four_corners_jvp(take, primals, tangents):
    flat, idx = primals
    rows = _plain_rows(tangents[0], idx.reshape(-1))
    return _four_corners(flat, idx, take), tuple(rows.reshape(idx.shape + rows.shape[1:]))


def _plain_rows(flat: jax.Array, idx: jax.Array) -> jax.Array:
    """``flat[idx]`` (rows, clipped)."""
    return jnp.take(flat, idx, axis=0, mode="clip")


@jax.custom_jvp
def _take_rows(flat: jax.Array, idx: jax.Array) -> jax.Array:
    """``flat[idx]`` (rows, clipped), read as the rows' bits: where the images are sharded and
    XLA's partitioner assembles the gathered rows with an all-reduce that adds, integers keep a
    ``-0.0`` that ``-0.0 + 0.0`` would turn to ``+0.0`` (Auto meshes; on Explicit axes
    ``roi_sharded`` answers each ROI where its image lies). The tangent is the plain gather."""
    rows = jnp.take(order.bits(flat), idx, axis=0, mode="clip")
    return order.from_bits(rows, flat.dtype)


@_take_rows.defjvp
def _take_rows_jvp(primals, tangents):
    flat, idx = primals
    return _take_rows(flat, idx), _plain_rows(tangents[0], idx)


def _combine(products, outside, corners: bool, ct) -> jax.Array:
    """One sample's value from its weighted corners: their sum left to right (or, for the
    weighted-corner max, their IEEE maximum); ``+0.0`` out of the image."""
    t1, t2, t3, t4 = products
    v = samples.corner_max(t1, t2, t3, t4) if corners else ((t1 + t2) + t3) + t4
    return jnp.where(outside[..., None], jnp.zeros((), ct), v)


def _step(flat, geometry, rows, k, *, face, corners, pooled, size, take, unpack):
    """Sample ``lo + k`` (``k`` = ``[kx, ky]``) of every bin of a block of ROIs (`geometry` and
    `rows` its floating and integer rows, packed, or dicts when there is one block; `unpack`
    makes them one dict): ``(v, mask, iy, ix)``, each (B, P_h, P_w)
    (`v` with channels last); its geometry is computed here, inside the run-time loop over the
    samples."""
    per = unpack({True: geometry, False: rows})
    index = per["lo"] + k.astype(jnp.int32)  # X then Y
    axes = samples.axis_samples(face, per["start"], per["bin"], per["grid"], max(pooled),
                                (size[1], size[0]), index)
    return _sample(flat, per["base"], axes, axes, corners, pooled, size[1], take)


def _sample(flat, base, ay, ax, corners, pooled, width, take):
    """One sample of every bin (height axis from `ay`, width axis from `ax`):
    ``(v, mask, iy, ix)``, each (R, P_h, P_w) (`v` with channels last)."""
    products, outside = _corner_products(flat, base, ay, ax, width, pooled, take)
    v = _combine(products, outside, corners, flat.dtype)
    iy = ay.index[:, :pooled[0], samples.Y, None]
    ix = ax.index[:, None, :pooled[1], samples.X]
    mask = ((iy < ay.grid[:, samples.Y, None, None])
            & (ix < ax.grid[:, samples.X, None, None]))
    return v, mask, iy, ix


def _pool(flat, base, axes, count, *, face, mode, corners, lowest, pooled, width, take):
    """Scan over the static ``G x G`` grid of sample indices (`axes`: tables (G, R, P, 2)):
    (R, P_h, P_w, C) of CT."""
    k_n = axes.index.shape[0]
    r, c = base.shape[0], flat.shape[1]
    ct = flat.dtype
    shape = (r,) + pooled + (c,)
    seed = lowest if (mode == "max" and face == "openvino") else np.array(
        -np.inf if mode == "max" else 0, ct)
    acc0 = jnp.full(shape, seed, ct)
    per_sample = jnp.maximum(count, 1)[:, None, None, None]  # 0 only where nothing is summed

    def at(k):
        return dataclasses.replace(axes, **{
            f.name: lax.dynamic_index_in_dim(getattr(axes, f.name), k, 0, keepdims=False)
            for f in dataclasses.fields(axes) if f.name != "grid"})

    def body(acc, k):
        v, mask, _, _ = _sample(flat, base, at(k // k_n), at(k % k_n), corners, pooled, width,
                                take)
        mask = mask[..., None]
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

    acc, _ = lax.scan(body, acc0, jnp.arange(k_n * k_n))
    return acc


#: ROIs per block of the ``sampling_ratio = 0`` loop: the ROIs are sorted by the window they
#: need and each block runs as many samples as its largest ROI needs.
BLOCK = 32


def _adaptive(flat, base, geometry, grid, count, *, face, mode, corners, lowest, pooled,
              size, take):
    """``sampling_ratio = 0``: the run-time loop of :mod:`.adaptive` over each bin's window,
    per block of ROIs of similar grids (sorted by the samples they need)."""
    start, bin_ = geometry
    ph, pw = pooled
    ky_n, kx_n = adaptive.window_size(size[0]), adaptive.window_size(size[1])
    lo = samples.window_start(face, samples.bin_base(start, bin_, max(pooled)), bin_, grid)
    # the window each ROI needs per axis: the most samples any of its bins has from its start
    # (bins past an axis's own pooled size count 0), both axes in one reduction
    span = jnp.clip(grid[:, None, :] - lo, 0, samples.pair(kx_n, ky_n, jnp.int32))
    bins = jnp.arange(max(pooled))[:, None] < samples.pair(pw, ph, jnp.int32)
    need = jnp.max(jnp.where(bins, span, 0), axis=1)[:, ::-1]  # (R, 2): Y then X
    per = dict(start=start, bin=bin_, grid=grid, lo=lo, base=base, count=count, need=need)

    r = grid.shape[0]
    size_b = min(r, BLOCK)
    blocks = -(-r // size_b)
    if blocks == 1:  # the arrays as they are, floating and integer apart
        packed = {f: {k: a for k, a in per.items()
                      if jnp.issubdtype(a.dtype, jnp.floating) == f} for f in (True, False)}

        def unpack(parts):
            return {**parts[True], **parts[False]}
    else:
        packed, unpack = _packed(per)
        work = jnp.pad(need[:, 0] * need[:, 1], (0, blocks * size_b - r))
        order = jnp.argsort(-work, stable=True)
        # Two gathers sort every per-ROI array (XLA:CPU compiles a kernel per array otherwise):
        # the floating and the integer ones side by side, padding ROIs all zero (grid 0).
        packed = {f: jnp.take(jnp.pad(a, [(0, blocks * size_b - r), (0, 0)]), order, axis=0,
                              mode="clip") for f, a in packed.items()}
    rows = unpack(packed)
    g, lo_ = rows["grid"], rows["lo"]
    first = adaptive.skipped(g[:, samples.Y], g[:, samples.X], lo_[:, :ph, samples.Y],
                             lo_[:, :pw, samples.X], ky_n, kx_n) if mode == "max" else ()

    def blocked(tree):
        return jax.tree.map(lambda a: a.reshape((blocks, size_b) + a.shape[1:]), tree)

    ints = dict(need=jnp.max(blocked(rows["need"]), axis=1), rows=blocked(packed[False]),
                count=blocked(rows["count"]), skipped=tuple(blocked(a) for a in first))
    step = functools.partial(_step, face=face, corners=corners, pooled=pooled, size=size,
                             take=take, unpack=unpack)
    shape = (blocks, size_b) + pooled + (flat.shape[1],)
    acc, pending = adaptive.pool(step, flat, blocked(packed[True]), ints, face=face,
                                 mode=mode, lowest=lowest, shape=shape)
    acc = acc.reshape((blocks * size_b,) + acc.shape[2:])
    if mode == "max" and face == "openvino":  # the skipped +0 samples after every evaluated one
        zero = jnp.zeros((), flat.dtype)
        pending = pending.reshape(first[0].shape)
        acc = jnp.where(pending[..., None] & (zero > acc), zero, acc)
    if blocks == 1:
        return acc
    return jnp.take(acc, jnp.argsort(order), axis=0, mode="clip")[:r]


def _packed(per: dict):
    """`per`'s arrays (leading axis R) as two (R, K) arrays, the floating ones side by side
    (differentiable: the ROI coordinates' gradient flows through them) and the integer ones;
    and the function that takes a (B, K) block of rows of each back to such a dict."""
    leaves, tree = jax.tree.flatten(per)
    floats = [jnp.issubdtype(a.dtype, jnp.floating) for a in leaves]
    widths = [int(np.prod(a.shape[1:])) for a in leaves]
    starts = {True: 0, False: 0}
    where = []
    for w, f in zip(widths, floats, strict=True):
        where.append((f, starts[f], starts[f] + w))
        starts[f] += w

    def group(f):
        return jnp.concatenate([a.reshape(a.shape[0], -1) for a, g in zip(
            leaves, floats, strict=True) if g == f], axis=1)

    def unpack(blocks):
        out = [blocks[f][:, lo:hi].reshape((blocks[f].shape[0],) + a.shape[1:])
               for a, (f, lo, hi) in zip(leaves, where, strict=True)]
        return jax.tree.unflatten(tree, out)

    return {True: group(True), False: group(False)}, unpack


def roi_align(x: jax.Array, boxes: jax.Array, batch: jax.Array, **static) -> jax.Array:
    """:func:`align` with ``Explicit`` mesh axes made ``Auto`` inside it: the output keeps the
    sharding of the ROI axis (from `boxes`) and of the channel axis (from `x`) where they
    divide evenly, the rest replicated. A small eager call compiles with the fast options
    (`compile_options.jit`): about a quarter of the compile time, the same bits
    (benchmarks/RESULTS.md, roi_align). Where the images may lie on several devices,
    max reads the samples' corners through their bits (`_take_rows`)."""
    static = dict(static, bits_rows=static["mode"] == "max" and rules.cross_device_possible(x))

    def out_spec(mesh):
        spec = (explicit_axes.spec_of(boxes)[0], explicit_axes.spec_of(x)[1], None, None)
        shape = (boxes.shape[0], x.shape[1]) + tuple(static["pooled"])
        return explicit_axes.divisible(mesh, spec, shape)
    if rules.cross_device_possible(x, boxes, batch) and not any(
            explicit_axes.names_of(a) for a in (x, boxes, batch)):
        return _on_auto_axes(x, boxes, batch, static)
    sharded = roi_sharded.by_images(  # Explicit axes, the images sharded: output-sized moves
        x, batch, (boxes,), lambda x, b, r: align(x, r, b, **static), absent=0)
    if sharded is not None:
        return sharded
    return explicit_axes.run(functools.partial(align, **static), (x, boxes, batch), out_spec)


def _on_auto_axes(x, boxes, batch, static):
    """:func:`align` where XLA chooses the sharding (:mod:`jaxmax._src.auto_partition`): the
    images sharded along the batch (`roi_sharded.by_images`' form), the ROIs sharded, or the
    channels, each device computes its part, chosen once XLA knows the sharding; any other
    layout is gathered. Its derivative is :func:`align`'s own, planned in the same forms: a
    linear function of the tangents (:mod:`jaxmax._src.linear_calls`) whose forward is
    `roi_sharded.align_tangent_plan` and whose transpose `roi_sharded.align_backward_plan`, so
    that forward mode (``jax.jvp``) works as on one device. Reverse mode only where one
    device has no forward mode either (``sampling_ratio = 0``: its loop is a
    ``jax.custom_vjp``) and where the linear call does not work."""
    def run(*a):
        return align(*a, **static)

    def planner(mesh, specs):
        shapes = [x.shape, boxes.shape, batch.shape]
        got = (roi_sharded.images_plan(shapes, specs, mesh,
                                       lambda xb, local, b, _batch: run(xb, b, local), 2,
                                       absent=0)
               or roi_sharded.rois_plan(shapes, specs, mesh, run)
               or roi_sharded.channels_plan(shapes, specs, mesh, run))
        return roi_sharded.as_plan(got)

    def backward(mesh, specs):
        return roi_sharded.align_backward_plan(
            [x.shape, boxes.shape, batch.shape, (boxes.shape[0], x.shape[1]) + static["pooled"]],
            specs, mesh, run)

    def plain(*a):
        return (run(*a),)

    kept = ((1, 0), (0, 1), None, None)
    if static["sampling_ratio"] == 0 or not linear_calls.available():
        return auto_partition.call(plain, planner, (x, boxes, batch), kept=(kept,), vjp=True,
                                   backward=backward)[0]

    def jvp(primals, tangents, out):
        # linear in the tangents given: one not asked for (a symbolic zero) is left out of the
        # linear call (whose transpose needs every operand linear) and has no term, as in
        # ``jax.jvp`` on one device
        del out
        live = tuple(k for k in (0, 1) if not isinstance(tangents[k], SymbolicZero))
        shapes = [x.shape, boxes.shape, batch.shape] + [primals[k].shape for k in live]

        def tangent_planner(mesh, specs):
            return roi_sharded.as_plan(
                roi_sharded.align_tangent_plan(shapes, specs, mesh, run, live))

        tangent = roi_sharded.align_tangent(run, live)
        # the tangents laid out as their primals
        tied = tuple(((3 + j, a), (k, a)) for j, k in enumerate(live)
                     for a in range(primals[k].ndim))

        def forward(residuals, linear):
            return auto_partition.call(lambda *a: (tangent(*a),), tangent_planner,
                                       (*residuals, *linear), kept=(kept,), tied=tied)

        def transpose(residuals, cotangent):
            got = auto_partition.reverse(plain, backward, residuals, cotangent)
            return tuple(got[k] for k in live)

        v, b, i = primals
        return linear_calls.call(forward, transpose,
                                 (lax.stop_gradient(v), lax.stop_gradient(b), i),
                                 tuple(tangents[k] for k in live))

    return auto_partition.call(plain, planner, (x, boxes, batch), kept=(kept,), jvp=jvp,
                               symbolic_zeros=True)[0]


def _align(x: jax.Array, boxes: jax.Array, batch: jax.Array, *, face: str, mode: str,
          corners: bool, pooled: tuple[int, int], sampling_ratio: int, scale: float,
          geometry: tuple, bits_rows: bool = False) -> jax.Array:
    """RoiAlign of `x` (N, C, H, W) over `boxes` (R, 4) ``[x1, y1, x2, y2]`` of images `batch`
    (R,): (R, C, P_h, P_w) of ``x.dtype``.

    `face` is ``"onnx"`` (`geometry` ``(off, clamp)``) or ``"openvino"`` (`geometry`
    ``(aligned_mode,)``); `mode` ``"avg"`` or ``"max"``; `corners` the ONNX weighted-corner max;
    `scale` the spatial scale already rounded to float32. Invalid ROIs (non-finite, batch index
    outside ``[0, N)``) give ``+0.0``. `bits_rows`: gather the corners through their bits.
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
    ends = safe.reshape(r, 2, 2)  # [[x1, y1], [x2, y2]]: both axes at once, X then Y
    if face == "onnx":
        off, clamp = geometry
        start, length = samples.onnx_extent(ends[:, 0], ends[:, 1], s, off, clamp)
    else:
        start, length = samples.openvino_extent(ends[:, 0], ends[:, 1], s, geometry[0])
    bin_ = samples.divide(length, np.array((pooled[1], pooled[0]), ct))
    grid = jnp.where(valid[:, None], samples.grid_count(bin_, sampling_ratio), 0)
    gh, gw = grid[:, samples.Y], grid[:, samples.X]
    count = (gh * gw).astype(ct)  # exact: OpenVINO's num_samples and ONNX's divisor

    flat = jnp.moveaxis(x, 1, -1).reshape(n_img * height * width, channels).astype(ct)
    base = image * (height * width)
    lowest = dtypes.lowest(x.dtype).astype(ct)
    take = _take_rows if bits_rows else _plain_rows

    if sampling_ratio > 0:
        k = jnp.arange(sampling_ratio, dtype=jnp.int32)[:, None, None, None]
        axes = samples.axis_samples(face, start, bin_, grid, max(pooled), (width, height), k)
        acc = _pool(flat, base, axes, count, face=face, mode=mode, corners=corners,
                    lowest=lowest, pooled=pooled, width=width, take=take)
    else:
        acc = _adaptive(flat, base, (start, bin_), grid, count, face=face, mode=mode,
                        corners=corners, lowest=lowest, pooled=pooled,
                        size=(height, width), take=take)

    has = ((gh > 0) & (gw > 0))[:, None, None, None]
    if mode == "avg":
        acc = jnp.where(acc == 0, jnp.zeros_like(acc), acc)  # the sum starts from +0.0
        if face == "onnx":
            acc = samples.divide(acc, jnp.maximum(count, 1)[:, None, None, None])
    acc = jnp.where(has & valid[:, None, None, None], acc, jnp.zeros_like(acc))
    return jnp.moveaxis(acc, -1, 1).astype(x.dtype)


_STATIC = ("face", "mode", "corners", "pooled", "sampling_ratio", "scale", "geometry",
           "bits_rows")
align = compile_options.jit(_align, static_argnames=_STATIC, inline=False)
