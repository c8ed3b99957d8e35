"""Max pooling as a scan of phase-sliced taps, and the tap each window selects.

The pooling machinery of both faces (OpenVINO MaxPool, ONNX MaxPool), a CPU-friendly
``reduce_window``:

1. each strided axis of length ``D`` (a multiple of its stride ``s``) is viewed as ``(D / s, s)``
   phases, a free reshape; kernel tap ``j`` of that axis reads input ``o * s + j * d - lo`` for
   output ``o``, i.e. one phase from a run of rows: a contiguous slice. An axis whose length is
   not a multiple of its stride uses a strided slice instead;
2. the rows of a tap that fall in the padding are supplied by a ``lax.pad`` of the *tap* (not
   of the input), so XLA fuses reshape, slices, pads and maxima into one loop fusion and never
   writes a padded copy of the input. Padded taps cost a bounds check per element and tap, and
   the scan reads each tap twice (a padded tap read twice is written to memory), so the outputs
   whose window lies inside the input are computed from plain slices and the few border rows
   separately, written into the result in place (`pooled`);
3. the value is a scan of the ``k1 * k2 * ...`` taps in row-major window order that keeps the
   first maximum (`pool_scan.first_max`: a compare and select per tap, the runtimes' loop,
   signed zeros included); the OpenVINO scan starts from lowest(T) and skips NaN by itself,
   the ONNX one lets NaN through.

The *winner* of a window is the kernel tap it selects: its input element is the window's index
(MaxPool-8/-14 Indices, ONNX Indices; :mod:`jaxmax._src.lowering.pool_indices`) and receives the
window's whole tangent (`gather_tangent`). One mechanism finds it for both rules
(`first_equal`): the first tap, in row-major window order, whose element equals the window's
value, in one fusion that re-reads the input and the value (a padded tap that XLA sees used
twice is written to memory, ~4x slower, so every tap is read once per fusion, and a tap of the
winner search is never the very expression of the value's: its padding holds another value).

* OpenVINO rule (`max_pool_at_least_lowest`, `openvino_winner`): the value is
  ``max(lowest(T), non-NaN window elements)``, padding at lowest(T); the winner is the first
  element equal to the value when it is above lowest(T). A window whose value is lowest(T) is
  differentiated as the pooling of the clamped input ``where(x >= lowest, x, lowest)``: every
  clamped tap equals lowest(T), so its first tap wins, and passes the tangent only if it is an
  input element that is not NaN or ``-inf``.
* ONNX rule (`onnx_rule`, `onnx_first`): NaN propagates; the winner is the first NaN of a NaN
  window, else the first element equal to the value; a window without input elements gives the
  identity (``-inf``, ``iinfo.min``) and no winner.

Both values are ``jax.custom_jvp`` functions whose tangent is linear in the input tangent (each
output gathers the tangent of its winner, zero without one), so forward mode, reverse mode
(JAX transposes the tangent rule), ``vmap`` and ``jit`` all work, dilated and 3-D windows
included, where ``lax.reduce_window`` has no derivative. The tangent reads the phase pieces of
the input tangent through ``lax.split``, so its transpose interleaves them back in one pass.

Windows of more than 16 taps over three strided axes or more (3-D k3 s2: 27) take their value
from two stages over cache-sized chunks of planes (:mod:`jaxmax._src.lowering.pool_stages`,
where it is faster; the one-stage scan when a window's maximal elements are zeros of both
signs), and their OpenVINO-rule derivative from two stages, the inner axes first (`_stages`);
the first maximal element composes, so the two-stage derivative is the one-stage one.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import pool_scan, pool_stages, rules

__all__ = ["Geometry", "first_equal", "gather_tangent", "geometry", "index_dtype",
           "max_pool_at_least_lowest", "onnx_first", "onnx_rule", "openvino_winner", "pooled"]


class _Axis(NamedTuple):
    size: int     # input length D
    k: int        # window (number of taps)
    s: int        # stride
    lo: int       # begin pad (negative crops, as in reduce_window)
    hi: int       # end pad
    out: int      # output length
    phased: bool  # viewed as (D / s, s) phases; otherwise sliced with stride s
    d: int = 1    # dilation: tap j reads o * s + j * d - lo


class _Tap(NamedTuple):
    """Where one kernel tap reads: outputs ``first_out .. first_out + counts - 1`` read inputs
    ``first_in, first_in + s, ...``; the other outputs read padding."""
    first_out: tuple[int, ...]
    counts: tuple[int, ...]
    first_in: tuple[int, ...]


class Geometry(NamedTuple):
    axes: tuple[_Axis, ...]
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    phase_shape: tuple[int, ...]  # in_shape with every phased axis split into (D / s, s)
    taps: tuple[_Tap, ...]        # kernel taps in row-major window order


def _canonical(x_ndim, window, strides, padding, dilation=None):
    window = tuple(int(k) for k in window)
    strides = tuple(int(s) for s in strides)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    dilation = (1,) * x_ndim if dilation is None else tuple(int(d) for d in dilation)
    if not len(window) == len(strides) == len(padding) == len(dilation) == x_ndim:
        raise ValueError(
            f"max_pool: window {window}, strides {strides}, padding {padding} and dilation "
            f"{dilation} must each have one entry per axis of the rank-{x_ndim} input")
    if min(window + strides + dilation, default=1) < 1:
        raise ValueError(f"max_pool: window {window}, strides {strides} and dilation "
                         f"{dilation} must be >= 1")
    return window, strides, padding, dilation


def _geometry(shape, window, strides, padding, dilation=None) -> Geometry:
    axes = []
    phase_shape: list[int] = []
    dilation = (1,) * len(shape) if dilation is None else dilation
    for size, k, s, (lo, hi), d in zip(shape, window, strides, padding, dilation, strict=True):
        out = max(0, (size + lo + hi - (k - 1) * d - 1) // s + 1)
        phased = s > 1 and size % s == 0
        axes.append(_Axis(size, k, s, lo, hi, out, phased, d))
        phase_shape.extend((size // s, s) if phased else (size,))
    taps = []
    for offsets in itertools.product(*(range(a.k) for a in axes)):
        first_out, count, first_in = [], [], []
        for a, j in zip(axes, offsets, strict=True):
            shift = j * a.d - a.lo  # output o reads input o * s + shift
            o_first = max(0, -(shift // a.s))  # smallest o with o * s + shift >= 0
            o_last = min(a.out - 1, (a.size - 1 - shift) // a.s)
            n = max(0, o_last - o_first + 1)
            first_out.append(o_first if n else 0)
            count.append(n)
            first_in.append(o_first * a.s + shift if n else 0)
        taps.append(_Tap(tuple(first_out), tuple(count), tuple(first_in)))
    return Geometry(tuple(axes), tuple(shape), tuple(a.out for a in axes), tuple(phase_shape),
                    tuple(taps))


def geometry(shape, window, strides, padding, dilation=None) -> Geometry:
    """The checked geometry of pooling an array of `shape` (one entry per axis in each of
    `window`, `strides`, ``(lo, hi)`` `padding` and `dilation`)."""
    shape = tuple(shape)
    window, strides, padding, dilation = _canonical(len(shape), window, strides, padding,
                                                    dilation)
    return _geometry(shape, window, strides, padding, dilation)


def _read_slice(g: Geometry, tap: _Tap):
    """``lax.slice`` start/limit/strides on the phase view for the inside part of `tap`."""
    start, limit, strides = [], [], []
    for a, n, first in zip(g.axes, tap.counts, tap.first_in, strict=True):
        if a.phased:
            row, phase = divmod(first, a.s)
            start += [row, phase]
            limit += [row + n, phase + 1]
            strides += [1, 1]
        else:
            start.append(first)
            limit.append(first + (n - 1) * a.s + 1 if n else first)
            strides.append(a.s)
    return start, limit, strides


def _tap(phases: jax.Array, g: Geometry, tap: _Tap, fill, read=None) -> jax.Array:
    """The values read by `tap` for every output; `fill` where it reads padding.

    `read` (elementwise) is applied to the inside values before the padding is added, so a
    padded tap stays single-use even when `read` uses its argument twice; `fill` is of
    `read`'s result dtype.
    """
    dtype = phases.dtype if read is None else jax.eval_shape(
        read, jax.ShapeDtypeStruct((), phases.dtype)).dtype
    fill = jnp.asarray(fill, dtype)
    if 0 in tap.counts:
        return jnp.full(g.out_shape, fill)
    inside = lax.slice(phases, *_read_slice(g, tap)).reshape(tap.counts)
    if read is not None:
        inside = read(inside)
    pads = [(o, a.out - o - n, 0)
            for a, o, n in zip(g.axes, tap.first_out, tap.counts, strict=True)]
    if any(lo or hi for lo, hi, _ in pads):
        inside = lax.pad(inside, fill, pads)
    return inside


def _taps(v: jax.Array, g: Geometry, fill, read=None) -> list[jax.Array]:
    phases = v.reshape(g.phase_shape)
    return [_tap(phases, g, tap, fill, read) for tap in g.taps]


def index_dtype(count: int) -> type:
    """Tap indices (and -1) as int8 when they fit: a quarter of int32's memory and page faults,
    at the same speed (measured); int32 otherwise."""
    return np.int8 if count <= 127 else np.int32


# ----------------------------------------------------------------------------- values

def _interior(a: _Axis) -> tuple[int, int]:
    """The outputs ``[first, end)`` of axis `a` whose every tap reads inside the input."""
    first = max(0, -(-a.lo // a.s))
    end = min(a.out, (a.size - 1 + a.lo - (a.k - 1) * a.d) // a.s + 1)
    return first, max(first, end)


def _restricted(g: Geometry, ranges) -> Geometry:
    """The geometry of the outputs ``ranges[i] = (first, end)`` of every axis (same input)."""
    window, strides, padding, dilation = [], [], [], []
    for a, (first, end) in zip(g.axes, ranges, strict=True):
        lo = a.lo - first * a.s
        hi = (end - first - 1) * a.s + (a.k - 1) * a.d + 1 - a.size - lo
        window.append(a.k)
        strides.append(a.s)
        padding.append((lo, hi))
        dilation.append(a.d)
    return _geometry(g.in_shape, window, strides, padding, dilation)


# Up to this many padded output rows on one side of an axis, each row is a box of its own (its
# taps are then inside or wholly padding: plain slices or constants); more are one slab.
_BORDER_ROWS = 3


def _boxes(g: Geometry):
    """The output split into boxes whose taps need no ``lax.pad``: per axis, the interior outputs
    (every tap inside) and each padded output row on its own (up to `_BORDER_ROWS` per side,
    else one slab, padded). Returns (interior ranges, other boxes' ranges), or None when some
    axis has no interior output or no axis has padded outputs."""
    inner = [_interior(a) for a in g.axes]
    if any(first >= end for first, end in inner):
        return None
    if all((first, end) == (0, a.out) for a, (first, end) in zip(g.axes, inner, strict=True)):
        return None
    segments = []
    for a, (first, end) in zip(g.axes, inner, strict=True):
        segs = [(first, end)]
        for lo, hi in ((0, first), (end, a.out)):
            if 0 < hi - lo <= _BORDER_ROWS:
                segs += [(r, r + 1) for r in range(lo, hi)]
            elif hi > lo:
                segs.append((lo, hi))
        segments.append(segs)
    boxes = [list(box) for box in itertools.product(*segments)]
    return inner, boxes[1:]  # the first box is the interior


def pooled(x: jax.Array, g: Geometry, fill, skip_nan: bool = False) -> jax.Array:
    """The first maximal tap of each window of `x` (`pool_scan.first_max`), padding read as
    `fill`.

    When an axis has padded outputs, the interior outputs (every tap a plain slice) are pooled
    and padded to the full output, and each border box (`_boxes`) is pooled apart and written
    into that result in place: a padded tap costs a bounds check per element, and is written
    to memory when the scan reads it twice (measured: the fusion of nine padded taps ~1.7x the
    interior and borders, k3 d2 s1 p1 on 32x64x112x112; border slabs of padded taps read twice
    page-faulted ~20 MB per call in 3-D k3 s2 p1, single-row boxes none).
    """
    fill = np.asarray(fill, x.dtype)
    if 0 in g.out_shape:
        return jnp.full(g.out_shape, fill)
    if pool_stages.applies(g, x.dtype.itemsize):  # 3-D strided windows: two stages, chunked
        staged, tie = pool_stages.pooled(x, g, fill, skip_nan)
        if not dtypes.is_floating(x.dtype):  # equal integers are equal bits: no tie to redo
            return staged
        return rules.redo_if(tie, staged, lambda: _scanned(x, g, fill, skip_nan))
    return _scanned(x, g, fill, skip_nan)


def _scanned(x: jax.Array, g: Geometry, fill: np.ndarray, skip_nan: bool) -> jax.Array:
    """`pooled` as one scan of every tap (interior and border boxes apart)."""
    if x.dtype == jnp.bfloat16:
        # XLA's CPU compiler widens bfloat16 compares to float32 around the taps' pads and
        # slices, and its algebraic simplifier then cycles (an error-level log line); widening
        # here first is exact both ways (float32 holds every bfloat16 value, zero signs and NaN)
        wide = _scanned(x.astype(np.float32), g, fill.astype(np.float32), skip_nan)
        return wide.astype(x.dtype)
    split = _boxes(g)
    if split is None:
        return pool_scan.first_max(_taps(x, g, fill), fill, skip_nan)[0]
    inner, boxes = split
    out = pool_scan.first_max(_taps(x, _restricted(g, inner), fill), fill, skip_nan)[0]
    out = lax.pad(out, fill, [(first, a.out - end, 0)
                              for a, (first, end) in zip(g.axes, inner, strict=True)])
    for box in boxes:
        part = pool_scan.first_max(_taps(x, _restricted(g, box), fill), fill, skip_nan)[0]
        out = lax.dynamic_update_slice(out, part, [lo for lo, _ in box])
    return out


# ----------------------------------------------------------------------------- winners

def first_equal(x: jax.Array, g: Geometry, out: jax.Array, fill, *, read=None,
                inside: bool = False, label=None, none=-1, dtype=None) -> jax.Array:
    """Per output, ``label(j)`` of the first tap ``j`` whose element equals `out` (both through
    `read`, when given), padding read as `fill`; `none` where no tap does (None: the caller
    knows that one always does). With `inside`, padding never matches. `label` defaults to the
    tap number, in `dtype` (default `index_dtype`).

    One pass over the input and `out`, each tap read once. The result is fused into its
    consumers: a caller that uses it more than once computes it apart (`_apart`).
    """
    taps = _taps(x, g, fill, read)
    masks = _taps(jnp.ones(x.shape, bool), g, False) if inside else None
    target = out if read is None else read(out)
    dtype = index_dtype(len(taps)) if dtype is None else dtype
    label = (lambda j: dtype(j)) if label is None else label
    last = len(taps)
    if none is None:  # some tap always matches: the last one needs no comparison
        last -= 1
        none = label(last)
    index = jnp.broadcast_to(jnp.asarray(none, dtype), out.shape)
    for j in range(last - 1, -1, -1):
        hit = taps[j] == target
        if masks is not None:
            hit = hit & masks[j]
        index = jnp.where(hit, label(j), index)
    return index


def _apart(pred: jax.Array, if_true, if_false) -> jax.Array:
    """``lax.cond(pred, if_true, if_false)``: the result computed in a computation of its own,
    hence into a buffer, and from taps XLA does not merge with the value's. Elementwise code is
    otherwise fused (recomputed) into each of its consumers: a winner read by every tap of a
    tangent made gradients ~5x slower."""
    return lax.cond(pred, if_true, if_false)


def openvino_winner(x: jax.Array, g: Geometry, out: jax.Array) -> jax.Array:
    """Per output of the OpenVINO rule (`out`), the tap that receives its tangent, or -1.

    Above lowest(T), the first element equal to `out` (padding, at ``-inf``, never is). At
    lowest(T) (no element above it), every clamped tap equals the value, so the first tap wins,
    and passes the tangent only if it is an input element that is not NaN or ``-inf``.
    """
    low = dtypes.lowest(x.dtype)
    pad = dtypes.max_identity(x.dtype)

    def raised():
        index = first_equal(x, g, out, pad, none=None)  # used above lowest(T) only
        # whether tap 0 reads an input element >= lowest(T) (False in the padding)
        tap0 = _tap(x.reshape(g.phase_shape), g, g.taps[0], False, read=lambda v: v >= low)
        fallback = jnp.where(tap0, index.dtype.type(0), index.dtype.type(-1))
        return jnp.where(out > low, index, fallback)

    return _apart(jnp.min(out) > low, lambda: first_equal(x, g, out, pad, none=None), raised)


def _float_key(v: jax.Array) -> jax.Array:
    """The bits of `v` as an integer, every NaN one pattern and ``-0`` as ``0``: equal keys are
    equal values or both NaN."""
    itype = {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}[v.dtype.itemsize]
    bits = lax.bitcast_convert_type(jnp.where(v == 0, jnp.zeros((), v.dtype), v), itype)
    nan = lax.bitcast_convert_type(jnp.asarray(np.nan, v.dtype), itype)
    return jnp.where(jnp.isnan(v), nan, bits)


def onnx_first(x: jax.Array, g: Geometry, out: jax.Array, **labels) -> jax.Array:
    """Per output of the ONNX rule (`out`), `first_equal` for the first input element that is
    NaN when `out` is, else equal to it; `none` for a window with no input element.

    When every output is finite, padding (read as NaN) equals none, and plain equality finds
    the element; otherwise the search runs again (a ``while_loop`` of zero or one trip, as for
    the values) on `_float_key`s, NaN equal to NaN, padding at a key no element has. A
    ``lax.cond`` would run its branch on one thread (measured ~1.5x slower).
    """
    if not dtypes.is_floating(x.dtype):
        return first_equal(x, g, out, dtypes.max_identity(x.dtype), inside=True, **labels)
    # padding key: a NaN bit pattern that `_float_key` never gives (all ones but the sign)
    pad_key = (1 << (8 * x.dtype.itemsize - 1)) - 1
    fast = first_equal(x, g, out, np.nan, **labels)
    return rules.redo_if(~rules.finite_sum(out), fast,
                         lambda: first_equal(x, g, out, pad_key, read=_float_key, **labels))


# ----------------------------------------------------------------------------- tangents

def _phase_pieces(v: jax.Array, g: Geometry) -> dict[tuple[int, ...], jax.Array]:
    """`v` split by phase: ``{(phase per strided axis): v[..., phase::s, ...]}``.

    Each piece has ``ceil(D / s)`` rows on a strided axis (zero-padded at the end when ``s``
    does not divide ``D``). Built from pad, reshape and ``lax.split`` along the phase axes of
    the ``(D / s, s)`` view, whose transposes are slice, reshape and ``concatenate``: the
    transposed (cotangent) code interleaves the pieces in one pass that writes every input
    element once, from the few taps of its phase only. (Moving the phase axes to the front
    with a transpose before splitting gave the same values ~2x slower.)
    """
    strided = [i for i, a in enumerate(g.axes) if a.s > 1]
    if not strided:
        return {(): v}
    rows = [-(-a.size // a.s) if a.s > 1 else a.size for a in g.axes]
    ends = [r * a.s - a.size if a.s > 1 else 0 for r, a in zip(rows, g.axes, strict=True)]
    if any(ends):
        v = lax.pad(v, np.zeros((), v.dtype), [(0, e, 0) for e in ends])
    split_shape, phase_dims = [], []
    for a, r in zip(g.axes, rows, strict=True):
        split_shape.append(r)
        if a.s > 1:
            phase_dims.append(len(split_shape))
            split_shape.append(a.s)
    pieces: dict[tuple[int, ...], jax.Array] = {(): v.reshape(split_shape)}
    for dim, i in zip(phase_dims, strided, strict=True):
        pieces = {combo + (phase,): part for combo, piece in pieces.items()
                  for phase, part in enumerate(lax.split(piece, [1] * g.axes[i].s, axis=dim))}
    return {combo: piece.reshape(rows) for combo, piece in pieces.items()}


# Up to this many taps the tangent is a chain of selects; beyond, a sum of masked taps, whose
# transpose is faster (3x3x3: ~34 against ~43 ms on an 8x32x32x64x64 cotangent) while the
# chain is faster in forward mode for small windows (3x3: ~6 against ~15 ms).
_CHAIN_MAX_TAPS = 9


def gather_tangent(t: jax.Array, winner: jax.Array, g: Geometry) -> jax.Array:
    """The tangent of each window's selected tap (zero when it is padding or `winner` is not a
    tap index): linear in `t`."""
    pieces = _phase_pieces(t, g)
    zero = np.zeros((), t.dtype)
    chain = len(g.taps) <= _CHAIN_MAX_TAPS
    out = jnp.zeros(g.out_shape, t.dtype)
    for j, tap in enumerate(g.taps):
        if 0 in tap.counts:
            continue
        phase = tuple(first % a.s for a, first in zip(g.axes, tap.first_in, strict=True) if a.s > 1)
        start = [first // a.s for a, first in zip(g.axes, tap.first_in, strict=True)]
        limit = [r + n for r, n in zip(start, tap.counts, strict=True)]
        inside = lax.slice(pieces[phase], start, limit)
        pads = [(o, a.out - o - n, 0)
                for a, o, n in zip(g.axes, tap.first_out, tap.counts, strict=True)]
        value = lax.pad(inside, zero, pads)
        if chain:
            out = jnp.where(winner == j, value, out)
        else:
            out = out + jnp.where(winner == j, value, zero)
    return out


# ----------------------------------------------------------------------------- the ONNX rule

@partial(jax.custom_jvp, nondiff_argnums=(1,))
def _onnx_rule(x, g):
    return pooled(x, g, dtypes.max_identity(x.dtype))


@_onnx_rule.defjvp
def _onnx_rule_jvp(g, primals, tangents):
    (x,), (t,) = primals, tangents
    out = _onnx_rule(x, g)
    if 0 in g.out_shape:
        return out, jnp.zeros(g.out_shape, t.dtype)
    winner = onnx_first(lax.stop_gradient(x), g, lax.stop_gradient(out))
    return out, gather_tangent(t, winner, g)


def onnx_rule(x: jax.Array, g: Geometry) -> jax.Array:
    """ONNX MaxPool's values: NaN propagates, a window with no input element gives the identity
    (``-inf``, ``iinfo.min``, ``False``); floats are differentiable, each window's tangent
    coming from `onnx_first`."""
    if dtypes.is_floating(x.dtype):
        return _onnx_rule(x, g)
    return pooled(x, g, dtypes.max_identity(x.dtype))


# ----------------------------------------------------------------------------- the OpenVINO rule

def _lowest_rule_forward(x: jax.Array, g: Geometry) -> jax.Array:
    """The pooled value under the OpenVINO rule: the scan of `pool_scan.first_max` from
    lowest(T) skips NaN and ``-inf`` by itself, so no check of the data or the output is
    needed (nor across devices: no reduction is involved)."""
    return pooled(x, g, dtypes.lowest(x.dtype), skip_nan=True)


def _in_memory(v: jax.Array, recompute) -> jax.Array:
    """`v`, as the carry of a ``while_loop`` of zero trips (its predicate reads one element of
    `v`, NaN in no OpenVINO-rule value, which XLA cannot know; the body would `recompute` it):
    an array XLA keeps in memory, where a plain value would be fused into, and recomputed by,
    each of its readers (``optimization_barrier`` is removed on CPU; a loop whose body returns
    its carry is simplified away)."""
    return rules.redo_if(jnp.isnan(v.reshape(-1)[0]), v, recompute)


@partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _lowest_rule(x, g, keep):
    """The OpenVINO-rule pooling; with `keep`, its value is an array in memory (`_in_memory`)."""
    out = _lowest_rule_forward(x, g)
    if keep and out.size:
        out = _in_memory(out, lambda: _lowest_rule_forward(x, g))
    return out


@_lowest_rule.defjvp
def _lowest_rule_jvp(g, keep, primals, tangents):
    (x,), (t,) = primals, tangents
    # The value is the custom_jvp function itself (its while_loop is never differentiated).
    out = _lowest_rule(x, g, keep)
    if 0 in g.out_shape:
        return out, jnp.zeros(g.out_shape, t.dtype)
    winner = openvino_winner(lax.stop_gradient(x), g, lax.stop_gradient(out))
    return out, gather_tangent(t, winner, g)


# A window with more taps than this is differentiated in two stages (see `_stages`), its value
# computed in one. Measured on the 2-core CPU (3-D k3 s2 p1 on 8x32x32x64x64, process CPU time
# on a loaded machine): the value in one scan of 27 taps 36-43 ms against 47-50 ms for the two
# stages, whose 32 MiB intermediate is page-faulted on every call; the gradient in two stages
# 244 against 310 ms in one (27 winner taps and a 27-term tangent).
_ONE_STAGE_MAX_TAPS = 16


def _stages(g: Geometry) -> tuple[Geometry, Geometry] | None:
    """The window split into stage 1 (the inner half of its non-trivial axes, pooled from the
    input) and stage 2 (the outer ones, pooled from stage 1's result), or None for one stage.

    Max pooling is separable: the window maximum is the maximum over the outer taps of the
    inner windows' maxima, NaN and padding included (every stage pads with the same fill). The
    first maximal element in row-major window order is found the same way, stage 2 picking the
    first outer tap whose inner maximum is the window's, stage 1 the first inner tap in it, so
    the derivative of the two stages is the one-stage derivative, ties included.
    """
    wide = [i for i, a in enumerate(g.axes) if a.k > 1]
    if len(g.taps) <= _ONE_STAGE_MAX_TAPS or len(wide) < 2:
        return None
    inner = set(wide[len(wide) // 2:])

    def part(axes):
        window, strides, padding, dilation = zip(*[
            (a.k, a.s, (a.lo, a.hi), a.d) if i in axes else (1, 1, (0, 0), 1)
            for i, a in enumerate(g.axes)], strict=True)
        return window, strides, padding, dilation

    def sub(shape, axes):
        window, strides, padding, dilation = part(axes)
        return _geometry(shape, window, strides, padding, dilation)

    first = sub(g.in_shape, inner)
    second = sub(first.out_shape, set(range(len(g.axes))) - inner)
    return first, second


def max_pool_at_least_lowest(x: jax.Array, window, strides, padding,
                             dilation=None) -> jax.Array:
    """OpenVINO's MaxPool rule, phase-sliced: each output is ``max(lowest(T), non-NaN window
    elements)``, padding included as lowest(T).

    `x` has any rank; `window`, `strides`, ``(lo, hi)`` `padding` (negative crops) and
    `dilation` give one entry per axis. Integers, whose identity is lowest(T) already, get the
    plain pooling. The value involves no reduction, so no NaN check, even for sharded inputs
    (where a cross-device max may drop a NaN). The derivative is that of pooling the clamped input
    ``where(x >= lowest, x, lowest)``: each window's tangent comes from its first maximal
    clamped element, padding counted; a NaN or ``-inf`` input, and padding, pass none. Floating
    windows of more than 16 taps are differentiated in two stages (`_stages`), with the same
    derivative.
    """
    x = jnp.asarray(x)
    g = geometry(x.shape, window, strides, padding, dilation)
    if not dtypes.is_floating(x.dtype):
        return pooled(x, g, dtypes.lowest(x.dtype), skip_nan=True)
    stages = _stages(g)
    if stages is None:
        return _lowest_rule(x, g, False)
    return _staged_rule(x, g, stages)


@partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _staged_rule(x, g, stages):
    """The OpenVINO-rule pooling of a large window: the value in one scan, the derivative that
    of the two `_stages` (the same function; each stage's derivative has few taps)."""
    del stages
    return _lowest_rule_forward(x, g)


@_staged_rule.defjvp
def _staged_rule_jvp(g, stages, primals, tangents):
    first, second = stages

    def two_stages(v):
        # stage 1's result in memory: stage 2's taps and winners read it, not recompute it
        return _lowest_rule(_lowest_rule(v, first, True), second, False)

    return jax.jvp(two_stages, primals, tangents)
