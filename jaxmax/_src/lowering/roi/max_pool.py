"""MaxRoiPool (ONNX) and ROIPooling-1 method max (OpenVINO): values and gradient of every bin.

The bins come from :mod:`.bins`; each is a rectangle of one image, answered by the 2-D sparse
table of :mod:`.range_max` built per block of `BLOCK` channels (four lookups per bin,
``jnp.take(..., mode="clip")``: indices are valid by construction). The values fill one table,
carried through the blocks by ``lax.fori_loop``, with as many levels as the largest bin needs
(traced counts: one program, compiled once, for every size of bin); the gradient builds the
full table per block under ``lax.map``. XLA:CPU compiles every kernel of the program
separately (about 25 ms of CPU each on the anchor's machine), so the values are written for
few kernels: one fill loop, one row gather per block, the NaN bins found by ``lax.top_k``
(a custom call: no kernel to compile).

* ``rule="onnx"``: NaN if the bin holds a NaN, else its maximum (``+0`` over ``-0``). The table
  combines integer keys (IEEE total order, every NaN mapped to the top key) by ``max``, so the
  result does not depend on XLA's float ``max``.
* ``rule="openvino"``: the reference fold ``acc = lowest(T); acc = (x < acc) ? acc : x`` in
  row-major order, from one table of integer keys (:func:`_fold_keys`) that put the last of
  tied zeros and the last NaN on top, so any data takes the same path (a NaN or ``-0.0``
  anywhere no longer sends the whole call to the (key, position) tables: 7x slower). A bin
  whose last NaN is not its last element takes the largest key after it (two more
  rectangles, six lookups), for the bins holding a NaN only, taken in chunks by
  ``lax.top_k``.

Gradients (``jax.custom_vjp``): ONNX sends each bin's cotangent to its first maximal element
(first NaN; ``-0 == +0``), OpenVINO to the fold's winner (none when ``lowest(T)`` won); both
from a table of (key, position) pairs. Empty bins and invalid ROIs give ``+0.0`` and pass none.
"""

from __future__ import annotations

import functools
import operator
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, dtypes, explicit_axes
from jaxmax._src.lowering import compile_options, order, roi_sharded, rules
from jaxmax._src.lowering.roi import bins as bins_lowering
from jaxmax._src.lowering.roi import range_max
from jaxmax._src.lowering.roi import rois as rois_lowering

#: Channels per table: a block of the anchor's (1, 256, 50, 50) table is 2.9 MB.
BLOCK = 8
RULES = ("onnx", "openvino")


def roi_max_pool(x: jax.Array, rois: jax.Array, *, pooled: tuple[int, int],
                 spatial_scale: float, rule: str) -> jax.Array:
    """``(R, C, PH, PW)``: every bin's value by `rule` (``"onnx"`` or ``"openvino"``).

    `x` is (N, C, H, W) floating, `rois` (R, 5) of its dtype; static arguments are validated.
    Invalid ROIs (batch index outside ``[0, N)``, a non-finite value, a corner outside int32)
    give all ``+0.0``. A small eager call compiles with the fast options
    (`compile_options.jit`): the same bits in about a third of the compile time; and when
    every bin against every pixel of its channel is at most `DENSE_ELEMENTS`, its values take
    the dense program (:func:`_values_dense`: a few kernels, no tables or loops).
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    dense = (rois.shape[0] * pooled[0] * pooled[1] * int(np.prod(x.shape[1:])) <= DENSE_ELEMENTS
             and compile_options.small_eager(x, rois))
    return _roi_max_pool_jit(x, rois, pooled=pooled, spatial_scale=float(spatial_scale),
                             rule=rule, dense=dense, auto=rules.several_devices())


#: A small eager call whose bins times their channels' pixels are at most this many takes
#: the dense program (:func:`_values_dense`).
DENSE_ELEMENTS = 2**20

_STATIC = ("pooled", "spatial_scale", "rule", "dense", "auto")


def _roi_max_pool_body(x, rois, *, pooled, spatial_scale, rule, dense=False, auto=False):
    def compute(x, rois):
        return _pool(x, rois, pooled, spatial_scale, rule, dense)

    def out_spec(mesh):
        spec = (None, explicit_axes.spec_of(x)[1], None, None)
        return explicit_axes.divisible(mesh, spec, (rois.shape[0], x.shape[1]) + pooled)

    if auto and not (explicit_axes.names_of(x) or explicit_axes.names_of(rois)):
        # Auto axes (several devices, no sharding in the types): the same per-device forms,
        # chosen once XLA knows the sharding
        def planner(mesh, specs):
            return roi_sharded.as_plan(
                roi_sharded.max_pool_plan([x.shape, rois.shape], specs, mesh, compute))
        def backward(mesh, specs):
            return roi_sharded.max_pool_backward_plan(
                [x.shape, rois.shape, (rois.shape[0], x.shape[1]) + pooled], specs, mesh,
                compute)
        kept = ((1, 0), (0, 1), None, None)
        return auto_partition.call(lambda x, rois: (compute(x, rois),), planner, (x, rois),
                                   kept=(kept,), vjp=True, backward=backward)[0]
    sharded = roi_sharded.across_devices(x, rois, compute)  # Explicit axes: outputs move
    if sharded is not None:
        return sharded
    return explicit_axes.run(compute, (x, rois), out_spec)


_roi_max_pool_jit = compile_options.jit(_roi_max_pool_body, static_argnames=_STATIC)


def _pool_values(x, rois, pooled, spatial_scale, rule, dense):
    return (_values_dense if dense else _values)(x, rois, pooled, spatial_scale, rule)


_pool = partial(jax.custom_vjp, nondiff_argnums=(2, 3, 4, 5))(_pool_values)


def _pool_fwd(x, rois, pooled, spatial_scale, rule, dense):
    return _pool_values(x, rois, pooled, spatial_scale, rule, dense), (x, rois)


def _pool_bwd(pooled, spatial_scale, rule, dense, residuals, g):
    del dense
    x, rois = residuals
    return _cotangent(x, rois, g, pooled, spatial_scale, rule), jnp.zeros_like(rois)


_pool.defvjp(_pool_fwd, _pool_bwd)


# ---- geometry shared by values and gradient -------------------------------------------------

def _geometry(x, rois, pooled, spatial_scale):
    """Per bin (flattened to Q = R*PH*PW): image, edges, and whether it is read (non-empty,
    valid ROI); empty bins get the 1x1 rectangle at (0, 0). Also the largest bin height and
    width (at least 1, an upper bound for the bins read)."""
    packed, spans = _roi_bins(x, rois, pooled, spatial_scale)
    return _bin_geometry(packed, pooled), spans


def _roi_bins(x, rois, pooled, spatial_scale):
    """The bins of every ROI (`bins_lowering.packed_bins`, with the bins' extents) and an
    upper bound of the bin heights and widths, (3,) int32 (the largest, at least 1 and 2;
    the third entry unused): a scatter-max of every entry of the packed bins into three
    counters, the extents into the first two and the other fields into the third (the
    scatter reads the packed array as it is: no kernel to gather the extents first; XLA:CPU
    splits a max over the ROIs into a ``reduce_window`` and two more kernels)."""
    n, _, height, width = x.shape
    packed = bins_lowering.packed_bins(rois, rois_lowering.valid(rois, rois[:, 0], n),
                                       spatial_scale, pooled, height, width, extents=True)
    k = pooled[0] + pooled[1]
    axis = np.full((rois.shape[0], packed.shape[1]), 2, np.int32)
    axis[:, 2 * k + 2:2 * k + 2 + pooled[0]] = 0
    axis[:, 2 * k + 2 + pooled[0]:] = 1
    # from (1, 2), a literal: a uniform start became a kernel broadcasting it (and (0, 1) an
    # iota). A width bound of 2 for bins all one column wide fills one more level: the same
    # values (`range_max.fill` needs an upper bound)
    start = jnp.asarray(np.int32([1, 2, 0]))
    # by lax.scatter_max with windows of one entry, the updates (R*K, 1): a reshape of the
    # packed bins in their layout (``.at[].max`` has them (R*K,), and XLA:CPU then copied
    # them into the scatter's (R*K, 1) in a kernel of its own)
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(),
                                        scatter_dims_to_operand_dims=(0,))
    return packed, lax.scatter_max(start, axis.reshape(-1, 1), packed.reshape(-1, 1), dnums,
                                   mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _bin_geometry(packed, pooled, k=None):
    """The per-bin arrays of :func:`_geometry` from the ROIs' packed bins. Inside a loop over
    blocks, `k` (the block number, a traced non-negative int32): the bins then depend on it
    (`range_max.in_loop`), so that XLA computes these arrays inside the kernels that read them
    instead of hoisting each into a kernel of its own before the loop."""
    ph, pw = pooled
    if k is not None:
        packed = range_max.in_loop(packed, k)
    image, h_start, h_end, w_start, w_end, valid = bins_lowering.unpack(packed, pooled)
    shape = (image.shape[0], ph, pw)
    h0 = jnp.broadcast_to(h_start[:, :, None], shape)
    h1 = jnp.broadcast_to(h_end[:, :, None], shape)
    w0 = jnp.broadcast_to(w_start[:, None, :], shape)
    w1 = jnp.broadcast_to(w_end[:, None, :], shape)
    read = (h1 > h0) & (w1 > w0) & valid[:, None, None]
    zero, one = np.int32(0), np.int32(1)
    h0, w0 = (jnp.where(read, v, zero).reshape(-1) for v in (h0, w0))
    h1, w1 = (jnp.where(read, v, one).reshape(-1) for v in (h1, w1))
    image = jnp.broadcast_to(image[:, None, None], shape).reshape(-1)
    return image, h0, h1, w0, w1, read.reshape(-1)


def _rows(image, h, w, level, x_shape):
    """Row of the flattened table (levels, N, H, W) -> (rows, channels)."""
    n, _, height, width = x_shape
    return ((level * np.int32(n) + image) * np.int32(height) + h) * np.int32(width) + w


def _lookup(flat, image, h0, h1, w0, w1, x_shape, combine, stride, lanes=None, read=None):
    """Combine the four blocks of each rectangle: `flat` a pytree of (rows, Cb) tables in
    `range_max.build`'s layout, `stride` height levels (every level a rectangle needs
    filled); the rectangles int32 arrays of one shape,
    shared by every channel (`lanes` None: a lookup reads a row of Cb channels) or each of
    one channel (`lanes`, of their shape: a lookup reads one element, a 1-D gather).
    `read` (bool, of their shape), when given: the rectangles where it is False read the
    table's last level instead (:func:`_by_levels`' spare level, all zeros)."""
    rows = _corner_rows(image, h0, h1, w0, w1, x_shape, stride,
                        None if read is None else (read, _spare_level(flat, x_shape)))
    if lanes is None:
        got = jax.tree.map(lambda t: jnp.take(t, rows.reshape(-1), axis=0, mode="clip")
                           .reshape(rows.shape + t.shape[1:]), flat)
    else:
        got = jax.tree.map(lambda t: jnp.take(t.reshape(-1), rows * np.int32(t.shape[1])
                                              + lanes, mode="clip"), flat)
    part = [jax.tree.map(lambda v, i=i: v[i], got) for i in range(4)]
    return combine(combine(part[0], part[1]), combine(part[2], part[3]))


def _blocks(x):
    """(N, C, H, W) -> (C/BLOCK, N, H, W, BLOCK), channels padded with zeros."""
    n, c, height, width = x.shape
    count = -(-c // BLOCK)
    x = jnp.pad(x, ((0, 0), (0, count * BLOCK - c), (0, 0), (0, 0)))
    return x.reshape(n, count, BLOCK, height, width).transpose(1, 0, 3, 4, 2)


def _by_levels(spans, x, r, pooled, planes, combine, answer, spare=False):
    """``answer(xb, table, stride, k)`` (Q, BLOCK) of every block `k`, `xb`, of `BLOCK`
    channels of `x` (N, H, W, BLOCK; channels past C are zeros), its table of
    ``planes(xb, k)`` (combined by `combine`) filled with the fewest levels that hold every bin:
    the counts are traced (`range_max.fill`), so one program serves every call (a bin of an
    ROI inside the map has at most ``ceil(H/PH) + 1`` rows: the anchor's 50/7 needs 16 levels
    of 36; an ROI beyond the map takes more). One table, allocated once, and the output are
    carried through the blocks (``lax.fori_loop``), each block's answer written straight
    into the output's (R, C, PH*PW) layout (no stacked copy to transpose afterwards).
    `spans`: the largest bin height and width; `r` the number of ROIs; `spare`: the table
    gets one more level, all zeros, never filled. Returns (R, C, PH, PW) of `x`'s dtype."""
    height, width = x.shape[2], x.shape[3]
    full = (range_max.levels(height), range_max.levels(width))
    n, c = x.shape[0], x.shape[1]
    block_shape = (n, height, width, BLOCK)
    shapes = jax.eval_shape(planes, jax.ShapeDtypeStruct(block_shape, x.dtype),
                            jax.ShapeDtypeStruct((), np.int32))
    # one spare level past the filled ones, never written: zero keys, the lookup of the bins
    # not read (`spare`; the key 0 decodes to +0.0 under both key rules), in place of a
    # select of every bin's answer by a read mask (a kernel of its own, before the loop)
    levels = full[0] * full[1] + (1 if spare else 0)
    table = jax.tree.map(lambda t: jnp.zeros((levels,) + t.shape, t.dtype), shapes)
    blocks = -(-c // BLOCK)
    x = jnp.pad(x, ((0, 0), (0, blocks * BLOCK - c), (0, 0), (0, 0)))
    bins = pooled[0] * pooled[1]
    out = jnp.zeros((r, blocks * BLOCK, bins), x.dtype)

    def step(k, state):  # block k sliced and moved to (N, H, W, BLOCK) here: no copy of x.
        # The first channel unsigned: JAX then adds no wrap of negative indices (a select
        # computed once, in a kernel of its own, for both slices)
        table, out = state
        first = (k * np.int32(BLOCK)).astype(np.uint32)
        xb = lax.dynamic_slice_in_dim(x, first, BLOCK, 1).transpose(0, 2, 3, 1)
        table = range_max.fill(table, planes(xb, k), combine, full[0], spans,
                               spare=1 if spare else 0)
        flat = jax.tree.map(lambda t: t.reshape(-1, BLOCK), table)
        v = answer(xb, flat, full[0], k).reshape(r, bins, BLOCK).transpose(0, 2, 1)
        return table, lax.dynamic_update_slice_in_dim(out, v, first, 1)

    out = lax.fori_loop(np.int32(0), np.int32(blocks), step, (table, out))[1]
    return out[:, :c].reshape((r, c) + pooled)


# ---- values ----------------------------------------------------------------------------------

def _key_max(xb, flat, geometry, x_shape, stride, fields_at=None, element=None, k=None):
    """Per block, from the table `flat` of `order.nan_top_key`: the maximum key of every
    bin, decoded (NaN propagates, ``+0`` over ``-0``). (`fields_at`, `element`, `k`:
    unused.)"""
    image, h0, h1, w0, w1, read = geometry
    best = _lookup(flat, image, h0, h1, w0, w1, x_shape, lax.max, stride, read=read)
    return order.from_monotone_bits(best, xb.dtype)


def _fold_keys(xb, k=None):
    """The OpenVINO fold's keys of a block (N, H, W, Cb): integers (int32; int64 for float64
    data) whose maximum over a bin is the fold's answer when the bin holds no NaN, and
    otherwise the place of its last NaN. With ``m`` the monotone bits, ``p = h*W + w`` (the
    row-major order in an image) and ``S = 2*H*W``:

    * ``x < 0``: ``m`` (negative);
    * ``x == ±0``: ``2*p + signbit`` in ``[0, S)``, so the last of tied zeros wins;
    * ``x > 0``: ``m + S``;
    * NaN: ``m(+inf) + S + 1 + p``, above every number, so the last NaN wins.

    Returns ``(keys, nan_base)``, the NaN keys starting at ``nan_base``; :func:`_fold_fits`
    says when the keys fit their type. In a loop over blocks, `k` (the block number, traced,
    non-negative): the places then depend on it (a maximum with ``-1 - k``), so that XLA
    computes them in the keys' kernel instead of hoisting two kernels before the loop."""
    _, height, width, _ = xb.shape
    kt = _fold_key_type(xb.dtype)
    m = order.monotone_bits(xb).astype(kt)
    inf = _monotone(np.inf, xb.dtype)
    size = height * width
    row = lax.broadcasted_iota(kt, xb.shape, 1)
    if k is not None:  # on the row, before the product: the whole place then in the kernel
        row = jnp.maximum(row, (np.int32(-1) - k).astype(kt))
    pos = row * kt(width) + lax.broadcasted_iota(kt, xb.shape, 2)
    nan_base = _nan_base(xb.dtype, size)
    nan = (m > kt(inf)) | (m < kt(-inf - 1))
    zero = (m == kt(0)) | (m == kt(-1))
    key = lax.select(m > kt(0), m + kt(2 * size), m)
    key = lax.select(zero, pos * kt(2) + (m & kt(1)), key)
    return lax.select(nan, pos + kt(nan_base), key), nan_base


def _nan_base(dtype, size: int) -> int:
    """The :func:`_fold_keys` key of a NaN at place 0 of a map of `size` pixels."""
    return _monotone(np.inf, dtype) + 2 * size + 1


def _fold_key_type(dtype) -> type:
    return np.int64 if np.dtype(dtype).itemsize == 8 else np.int32


def _monotone(value, dtype) -> int:
    """``order.monotone_bits`` of a constant, in Python."""
    b = int(np.array(value, dtype).view(order.signed_bits_dtype(dtype)))
    return b ^ int(np.iinfo(order.signed_bits_dtype(dtype)).max) if b < 0 else b


def _fold_fits(dtype, height: int, width: int) -> bool:
    """Whether :func:`_fold_keys` fit their type: float32 maps of fewer than 2.8 million
    pixels, every 16-bit and 64-bit map."""
    return _monotone(np.inf, dtype) + 3 * height * width < np.iinfo(_fold_key_type(dtype)).max


def _fold_decode(key, dtype, size: int):
    """The number whose :func:`_fold_keys` key (a map of `size` pixels) is `key`."""
    kt = key.dtype.type
    zero = -(key & kt(1))  # the monotone bits of +0 and -0: 0 and -1
    m = jnp.where(key >= kt(2 * size), key - kt(2 * size), jnp.where(key >= 0, zero, key))
    return order.from_monotone_bits(m.astype(order.signed_bits_dtype(dtype)), dtype)


#: The bins holding a NaN are answered in chunks of at most this share of a block's bins (at
#: least 128; a loop of as many chunks as they need, none on data without NaN).
NAN_CHUNK_SHARE = 16

#: From this many bins (or map pixels) a float32 score or row estimate could be inexact:
#: :func:`_first_scores` and :func:`_row_column` then take the integer forms.
FLOAT32_EXACT = 2**24


def _row_column(p, width: int, height: int):
    """``(p // width, p % width)`` of int32 positions ``0 <= p < height * width`` without an
    integer division (XLA:CPU gives each division its own kernel; these multiplications and
    compares are copied into their consumers): a float32 estimate of the row, corrected by one
    either way, exactly; a map of `FLOAT32_EXACT` pixels or more takes the integer division
    (float64 would be float32 without ``jax_enable_x64``)."""
    if height * width >= FLOAT32_EXACT:
        return p // np.int32(width), p % np.int32(width)
    h = jnp.floor(p.astype(np.float32) * np.float32(1 / width)).astype(np.int32)
    w = p - h * np.int32(width)
    h = h + (w >= np.int32(width)).astype(np.int32) - (w < 0).astype(np.int32)
    return h, p - h * np.int32(width)


def _corner_rows(image, h0, h1, w0, w1, x_shape, stride, spare=None):
    """The table rows of the four blocks of each rectangle (`range_max.corners`' lookups),
    ``(4,) + shape``: arithmetic on a leading corner axis selected by constant masks (no
    stacked copies: XLA:CPU materialised each stack in a kernel of its own; this way the
    index computation stays in the gather's kernel). `spare`: ``(read, level)``, the
    rectangles not read looking up `level` instead."""
    a = range_max.floor_log2(h1 - h0)
    b = range_max.floor_log2(w1 - w0)
    corner = np.arange(4, dtype=np.int32).reshape((4,) + (1,) * np.ndim(a))
    h = jnp.where(corner >= 2, h1 - (np.int32(1) << a), h0)
    w = jnp.where(corner % 2 == 1, w1 - (np.int32(1) << b), w0)
    level = b * np.int32(stride) + a
    if spare is not None:
        level = jnp.where(spare[0], level, np.int32(spare[1]))
    return _rows(image, h, w, level, x_shape)


def _spare_level(flat, x_shape) -> int:
    """The last level of the table `flat` (rows of every level of (N, H, W) each)."""
    n, _, height, width = x_shape
    return jax.tree.leaves(flat)[0].shape[0] // (n * height * width) - 1


def _fold_max(xb, flat, geometry, x_shape, stride, fields_at=None, element=None, k=None):
    """Per block: the OpenVINO fold of every bin, from `flat`, the table of :func:`_fold_keys`
    (of `xb`). A bin without NaN gives its largest key, floored at ``lowest(T)``. A bin holding
    a NaN gives that NaN if its last NaN is its last element; otherwise the largest key after it
    (the rest of its row, then the rows below: two rectangles of one channel), without the
    floor. The bins holding a NaN in some channel are answered in chunks (all their channels),
    so the cost follows their number: a chunk is the first `chunk` such bins at or past
    ``lo``, found by ``lax.top_k`` of their scores (``Q - bin``; XLA:CPU's TopK is a custom
    call, no kernel to compile), and the loop runs while the chunk found holds a bin (data
    without NaN runs none). Ranks by prefix sums and a scatter of every bin's row took a dozen
    kernels more and ran 2.4x the clean time. A chunk's answers leave by one scatter, every
    entry of the chunk written (a bin found without NaN gets the value it has: no mask of
    the live entries, a kernel of its own). `k`, the block number (traced, >= 0) when in a
    loop over blocks: the first chunk's search then depends on it (its scores are computed in
    their kernel, not hoisted before the loop)."""
    image, h0, h1, w0, w1, read = geometry
    height, width = x_shape[2], x_shape[3]
    size, dtype, cb = height * width, xb.dtype, xb.shape[-1]
    nan_base = _nan_base(dtype, size)
    kt = flat.dtype.type
    best = _lookup(flat, image, h0, h1, w0, w1, x_shape, lax.max, stride, read=read)
    floor = kt(_monotone(dtypes.lowest(dtype), dtype))
    out = _fold_decode(jnp.maximum(best, floor), dtype, size)
    total = best.shape[0]
    chunk = min(total, max(128, total // NAN_CHUNK_SHARE))

    def flag(lo):  # a bin holds a NaN in some channel (`lo` >= 0, the search's start: the
        # same flags, but computed in the scores' kernel, not hoisted into one of their own):
        # an `or` of the channels' columns (elementwise; a reduction over the channels was a
        # kernel of its own)
        held = best >= kt(nan_base) + jnp.minimum(lo, np.int32(0)).astype(kt)
        return functools.reduce(operator.or_, [held[:, i] for i in range(cb)])

    def first(lo):  # the first `chunk` bins at or past `lo` holding a NaN, by ``lax.top_k``;
        # behind a barrier: a slice of one element (the chunk's last) taken straight from the
        # sort made XLA:CPU keep a full sort instead of its TopK call (14700 bins: 3 ms). With
        # `lo` in it: a barrier of exactly the TopK's pair became the TopK's own user, which
        # XLA's TopkDecomposer (sharded programs) cannot handle (a failed check, an abort)
        got, entry, _ = lax.optimization_barrier(
            (*lax.top_k(_first_scores(flag(lo), lo), chunk), lo))
        return got, entry

    def pending(state):  # the chunk holds a bin
        return state[1][0][0] > 0

    def fix(state):
        out, (got, entry) = state
        live = got > 0
        fields = (fields_at(entry) if fields_at is not None
                  else [jnp.take(f, entry, mode="clip") for f in geometry[:5]])
        img, top, bottom, left, right = (jnp.broadcast_to(f[:, None], (chunk, cb))
                                         for f in fields)
        lanes = lax.broadcasted_iota(np.int32, (chunk, cb), 1)
        key = jnp.take(best, entry, axis=0, mode="clip")  # (chunk, cb)
        nan = key >= kt(nan_base)
        p = jnp.where(nan, (key - kt(nan_base)).astype(np.int32), top * np.int32(width) + left)
        h, w = _row_column(p, width, height)
        row_rest, below = w + 1 < right, h + 1 < bottom
        after = _after_nan(flat, img, h, w, top, bottom, left, right, lanes, x_shape, stride,
                           row_rest, below)
        where = ((img * np.int32(height) + h) * np.int32(width) + w) * np.int32(cb) + lanes
        trailing = (jnp.take(xb.reshape(-1), where, mode="clip") if element is None
                    else element(img, h, w, lanes))
        # one decode of the key chosen (the largest after the NaN, or the floored one)
        value = _fold_decode(jnp.where(nan, after, jnp.maximum(key, floor)), dtype, size)
        value = jnp.where(nan & ~(row_rest | below), trailing, value)
        out = _set_rows(out, entry, value)
        # the chunk took the first flagged bins, in order: the next starts past its last
        return out, first(jnp.where(live[-1], entry[-1] + np.int32(1), np.int32(total)))

    start = np.int32(0) if k is None else jnp.minimum(k, np.int32(0))  # 0
    return lax.while_loop(pending, fix, (out, first(start)))[0]


def _set_rows(out, rows, values):
    """``out.at[rows].set(values)`` for distinct `rows` in range, by ``lax.scatter`` itself
    (``.at`` wraps negative indices first: a select, a kernel of its own)."""
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                        scatter_dims_to_operand_dims=(0,))
    return lax.scatter(out, rows[:, None], values, dnums, unique_indices=True,
                       mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _after_nan(flat, image, h, w, top, bottom, left, right, lanes, x_shape, stride,
                row_rest, below):
    """The largest key of each rectangle's elements after its NaN at ``(h, w)`` (int32
    arrays of one shape, each element of channel `lanes` of `flat`, the table of
    :func:`_fold_keys`): the rest of its row (``row_rest``; a rectangle of one row, level
    ``a = 0``: two lookups) and the rows below it (``below``; four lookups), one gather of six
    lookups per element on a leading axis selected by constant masks (no stacked copies).
    The lowest key where neither part exists; lookups of a part that does not exist read
    some clipped entry, unused."""
    kt = flat.dtype.type
    one = np.int32(1)
    b0 = range_max.floor_log2(right - w - one)  # the rest of the row: columns (w, right)
    a1 = range_max.floor_log2(bottom - h - one)  # the rows below: (h, bottom) x [left, right)
    b1 = range_max.floor_log2(right - left)
    t = np.arange(6, dtype=np.int32).reshape((6,) + (1,) * np.ndim(h))
    rows = jnp.where(t < 2, h, jnp.where(t < 4, h + one, bottom - (one << a1)))
    columns = jnp.where(t == 0, w + one, jnp.where(t == 1, right - (one << b0),
                                                   jnp.where(t % 2 == 0, left,
                                                             right - (one << b1))))
    level = jnp.where(t < 2, b0 * np.int32(stride), b1 * np.int32(stride) + a1)
    at = _rows(image, rows, columns, level, x_shape) * np.int32(flat.shape[1]) + lanes
    got = jnp.take(flat.reshape(-1), at, mode="clip")  # (6,) + shape
    low = kt(np.iinfo(kt).min)
    rest = jnp.where(row_rest, jnp.maximum(got[0], got[1]), low)
    under = jnp.where(below, jnp.maximum(jnp.maximum(got[2], got[3]),
                                         jnp.maximum(got[4], got[5])), low)
    return jnp.maximum(rest, under)


def _first_scores(flag, lo):
    """Scores whose ``lax.top_k`` are the first set flags at or past `lo`, in order: ``Q -
    bin`` there, else 0; float32 (XLA:CPU's TopK is a fast custom call for float32, a sort for
    integers) while exact, int32 beyond `FLOAT32_EXACT` bins. ``Q - max(bin, lo - 1)``: the
    same there, but it depends on `lo`, so XLA does not hoist it out of the loop into a
    kernel of its own (nor the bin numbers, an iota made here: not a loop operand)."""
    total = flag.shape[0]
    number = lax.iota(np.int32, total)
    score = np.int32(total) - jnp.maximum(number, lo - np.int32(1))
    if total < FLOAT32_EXACT:
        score = score.astype(np.float32)
    return jnp.where(flag & (number >= lo), score, jnp.zeros((), score.dtype))


def _values(x, rois, pooled, spatial_scale, rule):
    r, c = rois.shape[0], x.shape[1]
    if r == 0 or 0 in x.shape:
        return jnp.zeros((r, c) + pooled, x.dtype)
    packed, spans = _roi_bins(x, rois, pooled, spatial_scale)
    x_shape = x.shape
    zero = jnp.zeros((), x.dtype)

    # the key rules read the bins not read from the table's spare level of zero keys (+0.0)
    keys = rule == "onnx" or _fold_fits(x.dtype, x_shape[2], x_shape[3])
    if rule == "onnx":
        planes, combine = (lambda xb, k: order.nan_top_key(xb)), lax.max
        answer = _key_max
    elif _fold_fits(x.dtype, x_shape[2], x_shape[3]):
        planes, combine = (lambda xb, k: _fold_keys(xb, k)[0]), lax.max
        answer = _fold_max
    else:  # a float32 map too large for the fold keys: the (key, position) pairs
        lowest = dtypes.lowest(x.dtype)
        planes, combine = (lambda xb, k: _pairs(xb)), _pick(True)

        def answer(xb, flat, geometry, x_shape, stride, fields_at, element, k):
            del fields_at, element, k
            winner = _fold_winner(xb, flat, geometry, x_shape, stride)
            data = xb.reshape(-1, xb.shape[-1])
            got = jnp.take_along_axis(data, jnp.maximum(winner, 0), axis=0, mode="clip")
            return jnp.where(winner >= 0, got, lowest)

    # the main lookup's rows (the bins not read pointed at the spare level, under the key
    # rules) from bins the same in every block: XLA computes them once, before the loop, and
    # the gather copies rows in a kernel of its own (with them, or a read mask, computed in
    # the loop, the gather was fused into its consumer and read each element alone: 2-8x
    # slower). The NaN fix-up's rows from bins that depend on its chunk
    # number (_bin_geometry): computed in the kernel that reads them
    geometry = _bin_geometry(packed, pooled)

    def fields_at(entry):  # the rectangles of bins `entry` (int32 in [0, Q)), as
        # _bin_geometry's, read from the packed bins by one gather of their fields
        ph, pw = pooled
        bins, k2 = ph * pw, ph + pw
        roi, rest = _row_column(entry, bins, r)
        i, j = _row_column(rest, pw, ph)
        column = jnp.stack([i, k2 + i, ph + j, k2 + ph + j, jnp.full_like(i, 2 * k2),
                            jnp.full_like(i, 2 * k2 + 1)], 1)
        got = jnp.take(packed.reshape(-1), roi[:, None] * np.int32(packed.shape[1]) + column,
                       mode="clip")
        h0, h1, w0, w1, image, valid = (got[:, f] for f in range(6))
        read = (h1 > h0) & (w1 > w0) & (valid != 0)
        zero, one = np.int32(0), np.int32(1)
        return (image, jnp.where(read, h0, zero), jnp.where(read, h1, one),
                jnp.where(read, w0, zero), jnp.where(read, w1, one))

    def masked(xb, flat, stride, k):
        def element(image, h, w, lane):  # x[image, k*BLOCK + lane, h, w], read from x itself:
            # the block `xb` then feeds only the table, and XLA moves it there in the table's
            # kernel (two kernels fewer); channels past C (padding) read some element, unused
            # (k made to depend on h, `range_max.in_loop`: computed here, not hoisted out of
            # the NaN loop into a kernel of its own)
            plane = np.int32(x_shape[2] * x_shape[3])
            block = range_max.in_loop(k, h)
            at = (((image * np.int32(c) + lane) * np.int32(x_shape[2]) + h) * np.int32(x_shape[3])
                  + w + block * np.int32(BLOCK) * plane)
            return jnp.take(x.reshape(-1), at, mode="clip")

        got = answer(xb, flat, geometry, x_shape, stride, fields_at, element, k)
        return got if keys else jnp.where(geometry[-1][:, None], got, zero)

    return _by_levels(spans, x, r, pooled, planes, combine, masked, spare=keys)


def _values_dense(x, rois, pooled, spatial_scale, rule):
    """The values of :func:`_values`, bit for bit, by masked maxima of every bin over its
    ROI's image: the same keys (`order.nan_top_key`, :func:`_fold_keys`), whose integer
    maximum over the same elements is the same, in a few kernels (no table, no loop). The
    OpenVINO fold's NaN bins take the largest key after their last NaN by one more masked
    maximum over the places after it. Work grows with bins x channels x pixels: for small
    calls (`DENSE_ELEMENTS`), where the program's compile is the cost."""
    r, c = rois.shape[0], x.shape[1]
    if r == 0 or 0 in x.shape:
        return jnp.zeros((r, c) + pooled, x.dtype)
    n, _, height, width = x.shape
    packed = bins_lowering.packed_bins(rois, rois_lowering.valid(rois, rois[:, 0], n),
                                       spatial_scale, pooled, height, width)
    image, h0, h1, w0, w1, valid = bins_lowering.unpack(packed, pooled)
    rows, cols = np.arange(height, dtype=np.int32), np.arange(width, dtype=np.int32)
    in_h = (rows >= h0[:, :, None]) & (rows < h1[:, :, None])  # (R, PH, H)
    in_w = (cols >= w0[:, :, None]) & (cols < w1[:, :, None])  # (R, PW, W)
    # each ROI's image of keys, (R, H, W, C): integers taken, never floats (on images
    # sharded along the batch, XLA's partitioner assembles a take by an all-reduce that adds,
    # which turned -0.0 into +0.0)
    xt = x.transpose(0, 2, 3, 1)
    keys = jnp.take(order.nan_top_key(xt) if rule == "onnx" else _fold_keys(xt)[0], image, axis=0,
                    mode="clip")
    kt = keys.dtype.type
    low = kt(np.iinfo(kt).min)

    def masked_max(k, extra=None):  # (R, PH, PW, C): each bin's largest key of `k`
        # (R, H, W, C), over the columns, then the rows (`extra`: a further mask of
        # (R, PH, PW, H, W, C) applied to the whole bin at once)
        if extra is None:
            by_col = jnp.max(jnp.where(in_w[:, None, :, :, None], k[:, :, None], low), 3)
            return jnp.max(jnp.where(in_h[:, :, :, None, None], by_col[:, None], low), 2)
        inside = (in_h[:, :, None, :, None, None] & in_w[:, None, :, None, :, None]) & extra
        return jnp.max(jnp.where(inside, k[:, None, None], low), (3, 4))

    best = masked_max(keys)
    read = ((h1[:, :, None] > h0[:, :, None]) & (w1[:, None, :] > w0[:, None, :])
            & valid[:, None, None])[..., None]
    zero = jnp.zeros((), x.dtype)
    if rule == "onnx":
        return jnp.where(read, order.from_monotone_bits(best, x.dtype), zero
                         ).transpose(0, 3, 1, 2)
    dtype, size = x.dtype, height * width
    nan_base = _nan_base(dtype, size)
    floor = kt(_monotone(dtypes.lowest(dtype), dtype))
    nan = best >= kt(nan_base)
    p = jnp.where(nan, best - kt(nan_base), kt(0))  # the place of the bin's last NaN
    place = (rows[:, None] * np.int32(width) + cols).astype(kt)  # (H, W)
    after = masked_max(keys, place[:, :, None] > p[:, :, :, None, None, :])
    h = (p // kt(width)).astype(np.int32)
    w = (p % kt(width)).astype(np.int32)
    exists = (w + 1 < w1[:, None, :, None]) | (h + 1 < h1[:, :, None, None])
    bits = lax.bitcast_convert_type(xt, order.signed_bits_dtype(dtype))
    plane = jnp.take(bits, image, axis=0, mode="clip").reshape(r, size, c)
    trailing = lax.bitcast_convert_type(jnp.take_along_axis(
        plane, (h * np.int32(width) + w).reshape(r, -1, c), 1, mode="clip"), dtype
    ).reshape(best.shape)
    value = jnp.where(exists, _fold_decode(after, dtype, size), trailing)
    value = jnp.where(nan, value, _fold_decode(jnp.maximum(best, floor), dtype, size))
    return jnp.where(read, value, zero).transpose(0, 3, 1, 2)


# ---- winners (gradient; the OpenVINO fold) ---------------------------------------------------

def _pairs(xb):
    """(compare key: NaN the top, ``-0 == +0``; flat position in (N, H, W)) per element."""
    n, height, width, cb = xb.shape
    pos = lax.broadcasted_iota(np.int32, (n * height * width, cb), 0).reshape(xb.shape)
    return order.compare_key(xb, nan_order="first"), pos


def _pick(later: bool):
    """Lexicographic max of (key, position) pairs; equal keys keep the earlier (`later`: the
    later) position."""
    def combine(a, b):
        (ka, pa), (kb, pb) = a, b
        take_b = (kb > ka) | ((kb == ka) & ((pb > pa) if later else (pb < pa)))
        return jnp.where(take_b, kb, ka), jnp.where(take_b, pb, pa)
    return combine


def _pair_table(xb, later, counts):
    """The table of :func:`_pairs` with the full `counts` levels, flattened to (rows, Cb)."""
    table = range_max.build(_pairs(xb), _pick(later), 1, 2, counts)
    return jax.tree.map(lambda t: t.reshape(-1, xb.shape[-1]), table)


def _first_winner(xb, flat, geometry, x_shape, stride):
    """(Q, Cb): the flat position of each bin's first maximal element (NaN the maximum), from
    `flat`, the table of :func:`_pairs` combined by ``_pick(False)``."""
    image, h0, h1, w0, w1, read = geometry
    _, pos = _lookup(flat, image, h0, h1, w0, w1, x_shape, _pick(False), stride)
    return jnp.where(read[:, None], pos, np.int32(-1))


def _fold_winner(xb, flat, geometry, x_shape, stride):
    """(Q, Cb): the element the OpenVINO reference fold keeps, -1 when ``lowest(T)`` wins,
    from `flat`, the table of :func:`_pairs` combined by ``_pick(True)``."""
    image, h0, h1, w0, w1, read = geometry
    width = x_shape[3]
    combine = _pick(True)
    key, pos = _lookup(flat, image, h0, h1, w0, w1, x_shape, combine, stride)
    nan_key = np.iinfo(key.dtype).max
    h_nan, w_nan = (pos // np.int32(width)) % np.int32(x_shape[2]), pos % np.int32(width)
    cb = xb.shape[-1]
    wide = [jnp.broadcast_to(v[:, None], (v.shape[0], cb)) for v in (image, h0, h1, w0, w1)]
    image_, h0_, h1_, w0_, w1_ = wide
    lanes = lax.broadcasted_iota(np.int32, h0_.shape, 1)
    # after the last NaN: the rest of its row, then the rows below it (in that order)
    row_rest = w_nan + 1 < w1_
    below = h_nan + 1 < h1_
    k_row, p_row = _lookup(flat, image_, h_nan, h_nan + 1, jnp.where(row_rest, w_nan + 1, w0_),
                           jnp.where(row_rest, w1_, w0_ + 1), x_shape, combine, stride, lanes)
    k_below, p_below = _lookup(flat, image_, jnp.where(below, h_nan + 1, h0_),
                               jnp.where(below, h1_, h0_ + 1), w0_, w1_, x_shape, combine,
                               stride, lanes)
    low = np.iinfo(key.dtype).min
    k_row = jnp.where(row_rest, k_row, low)
    k_below = jnp.where(below, k_below, low)
    after_pos = jnp.where(k_below >= k_row, p_below, p_row)  # equal keys: the later (below)
    after_nan = jnp.where(row_rest | below, after_pos, pos)  # a trailing NaN wins
    winner = jnp.where(key == nan_key, after_nan, pos)
    minus_inf = order.compare_key(jnp.array(-jnp.inf, xb.dtype), nan_order="first")
    seeded = (key == minus_inf)  # every element -inf: lowest(T) wins (no NaN in the bin)
    winner = jnp.where(seeded, np.int32(-1), winner)
    return jnp.where(read[:, None], winner, np.int32(-1))


# ---- gradient --------------------------------------------------------------------------------

def _cotangent(x, rois, g, pooled, spatial_scale, rule):
    r, c = rois.shape[0], x.shape[1]
    if r == 0 or 0 in x.shape:
        return jnp.zeros_like(x)
    n, _, height, width = x.shape
    geometry, _ = _geometry(x, rois, pooled, spatial_scale)
    x_shape = x.shape
    count = -(-c // BLOCK)
    g = jnp.pad(g, ((0, 0), (0, count * BLOCK - c), (0, 0), (0, 0)))
    g = g.reshape((r, count, BLOCK, -1)).transpose(1, 0, 3, 2).reshape(count, -1, BLOCK)

    def block(args, counts):
        xb, gb = args
        flat = _pair_table(xb, rule != "onnx", counts)
        winner = (_first_winner if rule == "onnx" else _fold_winner)(xb, flat, geometry,
                                                                     x_shape, counts[0])
        size = n * height * width
        target = jnp.where(winner >= 0, winner, np.int32(size))
        lanes = lax.broadcasted_iota(np.int32, target.shape, 1)
        return jnp.zeros((size, BLOCK), x.dtype).at[target, lanes].add(gb, mode="drop")

    full = (range_max.levels(height), range_max.levels(width))  # one program: no level switch
    gx = lax.map(lambda args: block(args, full), (_blocks(x), g))  # (count, N*H*W, BLOCK)
    gx = gx.reshape(count, n, height, width, BLOCK).transpose(1, 0, 4, 2, 3)
    return gx.reshape(n, count * BLOCK, height, width)[:, :c]
