"""Max pooling as the elementwise max of phase-sliced taps (a CPU-friendly ``reduce_window``).

``max_pool(x, window, strides, padding)`` returns exactly
``lax.reduce_window(x, identity, lax.max, window, strides, padding)`` (``identity`` = ``-inf``
for floats, ``iinfo.min`` for integers, ``False`` for bool), computed differently:

1. each strided axis of length ``D`` (a multiple of its stride ``s``) is viewed as ``(D / s, s)``
   phases, a free reshape; kernel tap ``j`` of that axis reads input ``o * s + j - lo`` for
   output ``o``, i.e. phase ``(j - lo) % s`` from row ``(j - lo) // s``: a contiguous slice.
   An axis whose length is not a multiple of its stride uses a strided slice instead;
2. the rows of a tap that fall in the padding are supplied by a ``lax.pad`` of the *tap* with
   the identity (not of the input), so XLA fuses reshape, slices, pads and the maxima into a
   single loop fusion and never materialises a padded copy of the input (padding the input
   first, then slicing, costs a full extra write and read of the input: measured ~4x slower);
3. the output is the elementwise ``lax.max`` of the ``k1 * k2 * ...`` taps.

Differentiation follows ``reduce_window``'s own reverse-mode rule (XLA ``select_and_scatter``
with ``select = ge``): each window, padding included (padding holds the identity), is scanned
in row-major window order and an element replaces the current selection unless
``selected >= element``. On NaN-free data this is "each window's whole cotangent goes to its
first maximal element" (PyTorch's rule); when that element is padding (the window's maximum
is the identity and padding comes first) nothing is passed on. `max_pool` is a
``jax.custom_jvp`` whose tangent is linear in the input tangent (each output gathers the
tangent of its selected tap, zero for padding; the selection is stored as one int8 array, int32
above 127 taps), so forward mode, reverse mode (JAX transposes the tangent rule), ``vmap`` and
``jit`` all work. The selection is found in one pass, as the first tap equal to the output,
when the window holds no NaN; the scan runs only otherwise. The tangent reads the phase pieces
of the input tangent through ``lax.split``, so its transpose interleaves them back in one pass.
``jax.jvp`` of ``lax.reduce_window`` itself does *not* always follow that tie rule (its forward
mode can pick another maximal element of a padded, strided window, so its ``jacfwd`` and
``jacrev`` differ on ties); this module's forward and reverse modes agree with each other and
with ``reduce_window``'s reverse mode.

A ``custom_vjp`` with the transposed tangent rule as its backward compiled to the same program
(measured; benchmarks/RESULTS.md) and would lose forward mode, so there is none.

``max_pool_at_least_lowest`` is OpenVINO's MaxPool rule on the same machinery: padding at
lowest(T), NaN and ``-inf`` read as lowest(T). Its forward keeps the plain pooling whenever the
output's sum is finite and only otherwise clamps the input and pools again; its derivative is
that of pooling the clamped input. A window of more than 16 taps (3-D k3: 27) is pooled in two
stages, the inner axes first, each stage with that rule; the stage-1 result lives in memory, and
each stage takes few taps per output, which XLA compiles into much faster loops than one fusion
of all the taps.
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

__all__ = ["max_pool", "max_pool_at_least_lowest"]


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


class _Geometry(NamedTuple):
    axes: tuple[_Axis, ...]
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    phase_shape: tuple[int, ...]  # in_shape with every phased axis split into (D / s, s)
    taps: tuple[_Tap, ...]        # kernel taps in row-major window order
    fill: float | int | None      # the padding value; None: the max identity of the dtype


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


def _geometry(shape, window, strides, padding, fill=None, dilation=None) -> _Geometry:
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
    return _Geometry(tuple(axes), tuple(shape), tuple(a.out for a in axes), tuple(phase_shape),
                     tuple(taps), fill)


def _read_slice(g: _Geometry, tap: _Tap):
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


def _tap(phases: jax.Array, g: _Geometry, tap: _Tap, fill, read=None) -> jax.Array:
    """The values read by `tap` for every output; `fill` where it reads padding.

    `read` (elementwise, keeping the dtype) is applied to the inside values before the padding
    is added, so a padded tap stays single-use even when `read` uses its argument twice.
    """
    fill = jnp.asarray(fill, phases.dtype)
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


def _taps(v: jax.Array, g: _Geometry, fill, read=None) -> list[jax.Array]:
    phases = v.reshape(g.phase_shape)
    return [_tap(phases, g, tap, fill, read) for tap in g.taps]


def _max_of(taps: list[jax.Array]) -> jax.Array:
    out = taps[0]
    for tap in taps[1:]:
        out = lax.max(out, tap)
    return out


def _index_dtype(count: int) -> type:
    """Tap indices (and -1) as int8 when they fit: a quarter of int32's memory and page faults,
    at the same speed (measured); int32 otherwise."""
    return np.int8 if count <= 127 else np.int32


def _scan_winner(taps: list[jax.Array]) -> jax.Array:
    """Per output, the index of the tap ``select_and_scatter(select=ge)`` chooses.

    XLA's rule, padding included (it holds the fill): scan the window in row-major order and
    replace the selection by the next element unless ``selected >= element``. On NaN-free
    data that is the first maximal element; if that is padding, nothing is passed on.
    """
    dtype = _index_dtype(len(taps))
    selected, index = taps[0], jnp.zeros(taps[0].shape, dtype)
    for j, tap in enumerate(taps[1:], start=1):
        take = ~(selected >= tap)
        selected = jnp.where(take, tap, selected)
        index = jnp.where(take, dtype(j), index)
    return index


def _first_maximal(x: jax.Array, g: _Geometry, out: jax.Array, fill) -> jax.Array:
    """Per output, the first tap equal to the window maximum `out`: the scan's choice when the
    window holds no NaN.

    The taps must not be the very expressions `out` was computed from: XLA would see each tap
    used twice, write the padded ones to memory and run ~4x slower. Callers re-read them in a
    separate computation (a ``lax.cond`` branch); then they fuse into one pass over `x` and
    `out`.
    """
    taps = _taps(x, g, fill)
    dtype = _index_dtype(len(taps))
    index = jnp.full(out.shape, len(taps) - 1, dtype)
    for j in range(len(taps) - 2, -1, -1):
        index = jnp.where(taps[j] == out, dtype(j), index)
    return index


def _winner(x: jax.Array, g: _Geometry, out: jax.Array, fill) -> jax.Array:
    """The scan's choice per output (`out`: the pooled maximum), computed into a buffer.

    A NaN-free output (a NaN-propagating sum is not NaN) takes the first maximal tap, one pass
    over the input; otherwise the scan runs. The ``lax.cond`` also makes XLA compute the
    winners once: as cheap elementwise code they would otherwise be fused (recomputed) into
    every tap of the tangent / cotangent code that reads them (measured ~5x slower gradients).
    """
    return lax.cond(jnp.isnan(jnp.sum(out)), lambda: _scan_winner(_taps(x, g, fill)),
                    lambda: _first_maximal(x, g, out, fill))


def _phase_pieces(v: jax.Array, g: _Geometry) -> dict[tuple[int, ...], jax.Array]:
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


def _gather_tangent(t: jax.Array, winner: jax.Array, g: _Geometry) -> jax.Array:
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


def _fill(x: jax.Array, g: _Geometry) -> np.ndarray:
    return dtypes.max_identity(x.dtype) if g.fill is None else np.array(g.fill, x.dtype)


def _forward(x: jax.Array, g: _Geometry) -> jax.Array:
    if 0 in g.out_shape:
        return jnp.full(g.out_shape, _fill(x, g), x.dtype)
    return _max_of(_taps(x, g, _fill(x, g)))


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def _pool_jvp(x, g):
    return _forward(x, g)


@_pool_jvp.defjvp
def _pool_jvp_rule(g, primals, tangents):
    (x,), (t,) = primals, tangents
    if 0 in g.out_shape:
        return _forward(x, g), jnp.zeros(g.out_shape, t.dtype)
    fill = _fill(x, g)
    out = _forward(x, g)
    winner = lax.stop_gradient(_winner(x, g, out, fill))
    return out, _gather_tangent(t, winner, g)


def _prepare(x, window, strides, padding, fill=None, dilation=None):
    x = jnp.asarray(x)
    window, strides, padding, dilation = _canonical(x.ndim, window, strides, padding, dilation)
    return x, _geometry(x.shape, window, strides, padding, fill, dilation)


def max_pool(x: jax.Array, window, strides, padding, fill=None, dilation=None) -> jax.Array:
    """``lax.reduce_window(x, identity, lax.max, window, strides, padding)``, phase-sliced.

    Args:
      x: array of any rank and any real, integer or bool dtype.
      window: window size per axis of `x` (ints >= 1). Static.
      strides: stride per axis (ints >= 1). Static.
      padding: ``(lo, hi)`` per axis, as for ``reduce_window`` (padding holds the identity, so
        a window that sees padding only gives ``-inf`` / ``iinfo.min``). Static.
      fill: the padding value (a Python scalar) in place of the identity, as ``reduce_window``
        with that init value would use it; ``None`` for the identity. Static.

    Returns:
      The pooled array, equal to ``reduce_window``'s (NaN propagates as in ``lax.max``).

    Differentiable (floating dtypes) in forward and reverse mode with ``reduce_window``'s
    reverse-mode rule: each window's cotangent goes to its first maximal element in row-major
    window order, padding counted as identity elements; when that element is padding (the
    window's maximum is the identity) nothing is passed on. NaN follows XLA's
    ``select_and_scatter`` scan (see the module docstring).
    """
    x, g = _prepare(x, window, strides, padding, fill, dilation)
    if jnp.issubdtype(x.dtype, jnp.floating):
        return _pool_jvp(x, g)
    return _forward(x, g)


# The OpenVINO pooling rule ---------------------------------------------------------------------

def _clamp_to_lowest(v: jax.Array) -> jax.Array:
    """`v` with NaN and values below lowest(T) (``-inf``) read as lowest(T)."""
    low = dtypes.lowest(v.dtype)
    return jnp.where(v >= low, v, low)


def _is_finite_sum(v: jax.Array) -> jax.Array:
    """Whether ``sum(v)`` is finite: then `v` holds no NaN and no infinity (a false "no" only
    costs time). 16-bit floats are summed in float32, where their sum cannot overflow."""
    wide = jnp.float32 if v.dtype.itemsize < 4 else v.dtype
    return jnp.isfinite(jnp.sum(v, dtype=wide))


def _lowest_rule_forward(x: jax.Array, g: _Geometry, check_data: bool) -> jax.Array:
    """The pooled value under the OpenVINO rule, with the fast path taken whenever it is exact.

    With the padding at lowest(T), the plain pooling (NaN propagating) already is the rule's
    value unless an output is NaN or ``-inf``, which a finite sum of the output rules out; only
    then is the input clamped (one more pass) and pooled again. The recomputation runs in a
    ``while_loop`` of zero or one trip, whose carry XLA updates in place: a ``lax.cond``
    returning the fast result copies the whole output (~2 ms on the ResNet stem).
    """
    out = _forward(x, g)
    redo = ~_is_finite_sum(out)
    if check_data:  # a cross-device max may drop NaN before the output shows it
        redo = redo | ~_is_finite_sum(x)
    return lax.while_loop(lambda c: c[1],
                          lambda c: (_forward(_clamp_to_lowest(x), g), jnp.zeros((), bool)),
                          (out, redo))[0]


@partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _lowest_rule(x, g, check_data):
    return _lowest_rule_forward(x, g, check_data)


def _first_passing(x: jax.Array, g: _Geometry, out: jax.Array) -> jax.Array:
    """Per output, the index of the first tap whose clamped value equals `out`, or -1 when that
    tap passes no tangent (a NaN or ``-inf`` input read as lowest(T), or padding)."""
    low = dtypes.lowest(x.dtype)
    minus_inf = np.array(-np.inf, x.dtype)
    # NaN and -inf read as -inf and padding is -inf: clamped, each equals lowest(T).
    taps = _taps(x, g, minus_inf, read=lambda v: jnp.where(v >= low, v, minus_inf))
    dtype = _index_dtype(len(taps))
    index = jnp.full(out.shape, -1, dtype)
    for j in range(len(taps) - 1, -1, -1):
        passes = jnp.where(taps[j] >= low, dtype(j), dtype(-1))
        index = jnp.where(lax.max(taps[j], low) == out, passes, index)
    return index


def _lowest_rule_winner(x: jax.Array, g: _Geometry, out: jax.Array) -> jax.Array:
    """Per output of the OpenVINO rule, the tap that receives its tangent, or -1 for none.

    The rule's derivative is that of pooling the clamped input: the first tap whose clamped
    value equals the output, passing nothing when it is a NaN or ``-inf`` input or padding.
    When no output was raised to lowest(T) (the usual case), that tap is simply the first one
    equal to the output, and it always passes; otherwise the clamped values are compared. The
    ``lax.cond`` also makes XLA compute the winners once: as cheap elementwise code they would
    otherwise be fused (recomputed) into every tap of the tangent / cotangent code that reads
    them (measured ~2x slower gradients), and being separate computations, its taps are not
    merged with the taps `out` was computed from (which XLA would then write to memory).
    """
    low = dtypes.lowest(x.dtype)
    return lax.cond(jnp.min(out) > low, lambda: _first_maximal(x, g, out, low),
                    lambda: _first_passing(x, g, out))


@_lowest_rule.defjvp
def _lowest_rule_jvp(g, check_data, primals, tangents):
    (x,), (t,) = primals, tangents
    # The value is the custom_jvp function itself (its while_loop is never differentiated).
    out = _lowest_rule(x, g, check_data)
    if 0 in g.out_shape:
        return out, jnp.zeros(g.out_shape, t.dtype)
    winner = _lowest_rule_winner(lax.stop_gradient(x), g, lax.stop_gradient(out))
    return out, _gather_tangent(t, winner, g)


# A window with more taps than this is pooled in two stages (see `_stages`). Measured on the
# 2-core CPU, one fusion of 25 or 27 taps ran 2-4x slower than the two stages (3-D k3 s2 p1 on
# 8x32x32x64x64: 33 against 11 ms with memory reused, 35 against 24 ms by default; 2-D k5:
# 37-85 against 12-40 ms), 16 taps were level, and 8 or 9 taps were faster in one fusion (3-D
# k2 s2: 11 against 21 ms) since the stage-1 result is a fresh array (page faults).
_ONE_STAGE_MAX_TAPS = 16


def _stages(g: _Geometry) -> tuple[_Geometry, _Geometry] | None:
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

    def geometry(shape, axes):
        window, strides, padding, dilation = part(axes)
        return _geometry(shape, window, strides, padding, g.fill, dilation)

    first = geometry(g.in_shape, inner)
    second = geometry(first.out_shape, set(range(len(g.axes))) - inner)
    return first, second


def max_pool_at_least_lowest(x: jax.Array, window, strides, padding,
                             check_data: bool = False, dilation=None) -> jax.Array:
    """OpenVINO's MaxPool rule, phase-sliced: each output is ``max(lowest(T), non-NaN window
    elements)``, padding included as lowest(T).

    Equal to ``max_pool(where(x >= lowest, x, lowest), ..., fill=lowest)`` for floating `x`
    (NaN and ``-inf`` read as lowest(T)), and to ``max_pool(x, ...)`` for integers, whose
    identity is lowest(T) already. `check_data` also checks the input for NaN (for sharded
    inputs, where a cross-device max may drop a NaN). The derivative is that of the
    clamped expression: each window's tangent comes from its first maximal clamped element,
    padding counted; a NaN or ``-inf`` input, and padding, pass none. Floating windows of more
    than 16 taps are pooled in two stages (`_stages`), with the same values and derivative.
    """
    x, g = _prepare(x, window, strides, padding, dilation=dilation)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return _forward(x, g)
    g = g._replace(fill=dtypes.lowest(x.dtype).item())
    stages = _stages(g)
    if stages is None:
        return _lowest_rule(x, g, check_data)
    # Stage 1's result is the carry of its redo loop, hence an array in memory: stage 2 reads
    # it (three taps read per output in 3-D) instead of recomputing it per tap. It holds no
    # NaN and no -inf (its sum was finite, or it was pooled from the clamped input), so stage 2
    # needs no data check.
    first, second = stages
    return _lowest_rule(_lowest_rule(x, first, check_data), second, False)
