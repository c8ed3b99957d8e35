"""Adaptive max pooling (OpenVINO AdaptiveMaxPool-8): the seeded fold over static windows.

Each spatial axis of length ``L`` pooled to ``O`` outputs has the windows
``[floor(i*L/O), ceil((i+1)*L/O))``: static, possibly of different sizes, overlapping when ``O``
does not divide ``L`` and repeating elements when ``O > L``. Window ``i`` is read as ``kmax``
*taps* (``kmax`` the largest window on the axis): tap ``t`` reads position
``min(start_i + t, end_i - 1)``, so a short window repeats its last element. Every tap array is
made of static slices of the input (one strided slice per run of outputs whose positions step
evenly: a single one when ``O`` divides ``L``), never a gather, so sharded inputs stay exact.

The fold visits the taps of all axes in row-major order and keeps ``acc`` (and its flat index)
unless ``acc < x``: the window's first element seeds it, ties and ``±0`` keep the earlier one,
and NaN wins only as the first element (``acc < NaN`` and ``NaN < x`` are false). A repeated
element changes nothing: it was already folded, so ``acc`` is not below it. The whole fold is
one XLA fusion; its derivative sends each window's cotangent to the winning element (the slices'
transposes add up the contributions of overlapping windows).

Where the windows tile an input of 2 MiB or more (``O`` divides ``L`` on every axis: a ResNet
head's (14, 14) to (7, 7)), the fold runs one axis at a time instead (`_tiled`: 2x faster): up
to `_UNROLLED_TAPS` taps the seeded fold unless the data holds a NaN, then the unrolled fold
(`_tiled_or_fold`); beyond, the stages skip NaN themselves (a global pooling's (16, 16) to
(1, 1)). Their derivative is the unrolled fold's autodiff up to `AUTODIFF_TAPS` taps, the tangent
gathered at the indices beyond (`_routed`; the windows do not overlap).

Otherwise the fold over every tap where each tap is one strided slice per axis (`_regular`
windows, at most 64 taps; differentiated through the indices beyond `AUTODIFF_TAPS` taps where
the windows tile the input); else each window folded on its own (`_per_window`: one strided
slice per tap for the windows of one length stepping evenly) up to `WINDOW_READS` element reads
per plane; beyond, the tap fold up to `RUNS_FOLD_TAPS` taps, and the
compact form above it: the per-window form is the fastest but its compile grows with the reads.

Inputs of at most ``pool_compact.SMALL_BYTES``, and windows whose largest lengths sum over the
axes to more than `MAX_UNROLLED_AXIS_TAPS`, take the compact form (`_compact`: one gather of
every window's taps and one variadic reduce, or one of each per axis), whose compiled code does
not grow with the windows. A plane past int32 (x64 on) takes the per-axis gathers with int64
positions (every other form unrolls its taps, which never finishes tracing there).

A spatial axis sharded over ``Explicit`` mesh axes takes
:mod:`jaxmax._src.lowering.adaptive_sharded` (two output-sized all-reduces); on ``Auto`` axes
the same per-device form is chosen once XLA knows the sharding (`_on_auto_axes`,
:mod:`jaxmax._src.auto_partition`).
"""

from __future__ import annotations

import itertools
import math
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, dtypes, explicit_axes
from jaxmax._src.lowering import adaptive_sharded, compile_options, order, plane_take, rules
from jaxmax._src.lowering.pooling import compact as pool_compact


def windows(length: int, outputs: int) -> tuple[tuple[int, int], ...]:
    """The ``(start, end)`` of each of `outputs` windows over `length`, exact integers."""
    return tuple(((i * length) // outputs, -((-(i + 1) * length) // outputs))
                 for i in range(outputs))


def _runs(positions: list[int]) -> list[tuple[int, int, int]]:
    """`positions` cut into maximal runs of one step: ``(first, count, step)``."""
    runs: list[tuple[int, int, int]] = []
    i = 0
    while i < len(positions):
        if i + 1 == len(positions):
            runs.append((positions[i], 1, 1))
            break
        step = positions[i + 1] - positions[i]
        j = i + 1
        while j + 1 < len(positions) and positions[j + 1] - positions[j] == step:
            j += 1
        runs.append((positions[i], j - i + 1, step))
        i = j + 1
    return runs


def _take_static(x: jax.Array, axis: int, positions: list[int]) -> jax.Array:
    """``x`` at the static `positions` along `axis`, built from slices (no gather)."""
    pieces = []
    for first, count, step in _runs(positions):
        if step > 0:
            pieces.append(lax.slice_in_dim(x, first, first + (count - 1) * step + 1, step, axis))
        else:  # a repeated position (step 0) or a step back: one slice, broadcast
            piece = lax.slice_in_dim(x, first, first + 1, 1, axis)
            if step == 0:
                pieces.append(jnp.repeat(piece, count, axis=axis) if count > 1 else piece)
            else:
                pieces.extend(lax.slice_in_dim(x, p, p + 1, 1, axis)
                              for p in (first + k * step for k in range(count)))
    return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)


def tap_positions(length: int, outputs: int) -> list[list[int]]:
    """Per tap ``t`` the position each output's window reads: ``min(start + t, end - 1)``."""
    wins = windows(length, outputs)
    kmax = max(end - start for start, end in wins)
    return [[min(start + t, end - 1) for start, end in wins] for t in range(kmax)]


#: From this many input bytes on, windows that tile the input are folded axis by axis
#: (`_tiled`). Measured against the unrolled fold (in process): (32, 512, 14, 14) to (7, 7)
#: 0.49x and to (2, 2) 0.69x, (8, 2048, 7, 7) to (1, 1) 0.95x; below it (2, 64, 56, 56) to
#: (7, 7) 1.61x and (2, 16, 8, 14, 14) to (4, 7, 7) 1.55x (the NaN check and the stages'
#: second pass cost more than they save on a small input).
TILED_MIN_BYTES = 2 << 20
#: Up to this many taps the unrolled fold's derivative is its own autodiff (the selects' JVP),
#: beyond it the tangent gathered at the indices (`_routed`). The gradient of (32, 512, 14, 14)
#: to (7, 7) (4 taps): autodiff 5.5 against 8.3 ms CPU; (15, 15) to (5, 5) (9 taps) 21.4
#: against 7.4 ms, (16, 16) to (4, 4) 39.0 against 7.9 ms, (14, 14) to (2, 2) (49 taps) 101
#: against 4.8 ms and 2.76 against 0.20 s to compile (benchmarks/forms_ab.py).
AUTODIFF_TAPS = 4
# Up to this many taps (the product over the axes of the largest window) the fold is unrolled
# over every tap combination in one fusion where each tap is one strided slice per axis
# (`_regular`); beyond it, one axis at a time (`_tiled`), or by the forms below.
_UNROLLED_TAPS = 64
#: Up to this many element reads per (n, c) plane, windows that are not regular are each folded
#: from single-element slices (`_per_window`: the fastest form, whose compile grows with the
#: reads, 2-3 ms of CPU per read on a loaded machine: 0.33 s at 144 reads, 0.66-0.82 s at
#: 288-324, 2.0 s at 676, before windows of one length stepping evenly shared their slices:
#: the (14, 14) -> (5, 3) head's 288 reads are 77 taps since, 0.34 against 0.88 s CPU). 300
#: keeps that head (1.9 ms against 8-26 ms for the forms below) and sends every larger count
#: to them.
WINDOW_READS = 300
#: Beyond `WINDOW_READS`, up to this many taps the tap fold (`_fold`, taps of concatenated
#: runs: compile about 0.3 s CPU at 16 taps, 0.6 s at 64) and beyond it the compact form
#: (0.06-0.13 s whatever the windows). Measured in benchmarks/RESULTS.md, "AdaptiveMaxPool
#: compile time by window reads".
RUNS_FOLD_TAPS = 32


def _regular(spatial: tuple[int, ...], output_shape: tuple[int, ...]) -> bool:
    """Whether every tap of every axis reads one strided slice: the windows are a regular pool's
    (start ``s * i - p``, kernel ``k``) clamped to the input, as (21, 21) -> (5, 4) are."""
    return all(len(runs) == 1 and runs[0][2] > 0
               for n, o in zip(spatial, output_shape, strict=True)
               for runs in (_runs(positions) for positions in tap_positions(n, o)))


def _window_reads(spatial: tuple[int, ...], output_shape: tuple[int, ...]) -> int:
    """Elements the per-window form reads per plane: the product over the axes of the summed
    window lengths."""
    return math.prod(sum(e - s for s, e in windows(n, o))
                     for n, o in zip(spatial, output_shape, strict=True))


def adaptive_max_pool(x: jax.Array, output_shape: tuple[int, ...], index_dtype: np.dtype):
    """``(values, indices)`` of AdaptiveMaxPool-8 over ``(N, C, *spatial)`` `x`; every spatial
    length is > 0 where its output length is > 0 (the adapter checks it)."""
    return _adaptive_jit(x, output_shape, np.dtype(index_dtype), rules.several_devices())


@compile_options.jit(static_argnames=("output_shape", "index_dtype", "auto"))
def _adaptive_jit(x: jax.Array, output_shape: tuple[int, ...], index_dtype: np.dtype,
                  auto: bool = False):
    """The pool; a spatial axis sharded over ``Explicit`` mesh axes takes
    `adaptive_sharded.adaptive_max_pool`. On ``Auto`` axes (`auto`: several devices in the
    process, no sharding in `x`'s type) the same per-device form is chosen once XLA knows the
    sharding (`_on_auto_axes`)."""
    out_shape = tuple(x.shape[:2]) + output_shape
    if math.prod(out_shape) == 0:
        return jnp.zeros(out_shape, x.dtype), jnp.zeros(out_shape, index_dtype)
    if adaptive_sharded.applies(x, output_shape, index_dtype):  # a pooled axis sharded
        return adaptive_sharded.adaptive_max_pool(x, output_shape, index_dtype, windows=windows)

    def compute(x):
        spatial = tuple(x.shape[2:])
        if math.prod(spatial) >= pool_compact.NONE:  # int64 positions (x64 on: the adapter checks)
            return _routed(partial(_gathered_by_axis, output_shape=output_shape,
                                   index_dtype=index_dtype), x)
        if compact_applies(spatial, output_shape, x.size * x.dtype.itemsize):
            return _routed(partial(_compact, output_shape=output_shape,
                                   index_dtype=index_dtype), x)
        divisible = all(n % o == 0 for n, o in zip(spatial, output_shape, strict=True))
        taps = tap_count(spatial, output_shape)
        if divisible and x.size * x.dtype.itemsize >= TILED_MIN_BYTES:
            if not dtypes.is_floating(x.dtype):
                return _tiled(x, output_shape, index_dtype)
            if taps <= AUTODIFF_TAPS:
                return _tiled_or_fold(x, output_shape, index_dtype)
            tiled = _checked_tiled if taps <= _UNROLLED_TAPS else _tiled_routed
            return _routed(partial(tiled, output_shape=output_shape, index_dtype=index_dtype), x)
        if taps <= _UNROLLED_TAPS and (divisible or _regular(spatial, output_shape)):
            if taps <= AUTODIFF_TAPS or not divisible:  # overlapping windows: autodiff
                return _fold(x, output_shape, index_dtype)
            return _routed(partial(_runs_fold, output_shape=output_shape,
                                   index_dtype=index_dtype), x)
        if _window_reads(spatial, output_shape) <= WINDOW_READS:
            form: Any = _per_window
        else:
            form = _runs_fold if taps <= RUNS_FOLD_TAPS else _compact
        return _routed(partial(form, output_shape=output_shape, index_dtype=index_dtype), x)

    def out_spec(mesh):
        return explicit_axes.divisible(mesh, explicit_axes.spec_of(x), out_shape)

    if auto and not explicit_axes.names_of(x):  # no sharding in the type: XLA's to choose
        return _on_auto_axes(x, compute, output_shape, index_dtype)
    return explicit_axes.run(compute, (x,), out_spec, outputs=2)


def _on_auto_axes(x: jax.Array, compute, output_shape: tuple[int, ...], index_dtype: np.dtype):
    """`compute(x)` where XLA chooses the sharding (:mod:`jaxmax._src.auto_partition`): each
    device pools its own planes when only the batch and channels are sharded; a spatial axis
    sharded, `adaptive_sharded.body` (two output-sized all-reduces), its output's spatial axes
    replicated as the sharding rule keeps them (a spatial output axis has a length of its own);
    the input is gathered only when neither applies (blocks of unequal size, data the
    per-device form does not take). The derivative is the one-device form's."""
    def planner(mesh, specs):
        spec = specs[0]
        if not auto_partition.even(mesh, spec, x.shape):
            return None
        out_spec = tuple(spec[:2]) + (None,) * len(output_shape)
        if all(e is None for e in spec[2:]):
            return auto_partition.Plan(compute, (spec,), (out_spec,) * 2)
        if not adaptive_sharded.fits(x.dtype, tuple(x.shape), index_dtype):
            return None
        per_device = adaptive_sharded.body(tuple(x.shape), spec, out_spec, mesh, output_shape,
                                           index_dtype, windows)
        return auto_partition.Plan(per_device, (spec,), (out_spec,) * 2)

    def jvp(primals, tangents, out):
        # the tangent at each index, taken where its element lies (plane_take)
        (x,), (t,) = primals, tangents
        indices = out[1]
        return (plane_take.take(t, indices, like=x,
                                plain=lambda v, _, u: jax.jvp(compute, (v,), (u,))[1][0]),
                np.zeros(indices.shape, jax.dtypes.float0))

    kept = ((0, 0), (0, 1)) + (None,) * len(output_shape)
    return auto_partition.call(compute, planner, (x,), kept=(kept, kept), jvp=jvp)


def _fold(x: jax.Array, output_shape: tuple[int, ...], index_dtype: np.dtype):
    spatial = tuple(x.shape[2:])
    plane_strides = [math.prod(spatial[d + 1:]) for d in range(len(spatial))]
    per_axis = [tap_positions(n, o) for n, o in zip(spatial, output_shape, strict=True)]

    def taps(v, d):
        """Every combination of the taps of axes d.. of `v`, in row-major order, with the
        flat-index contribution of those axes (a NumPy array over the output axes)."""
        if d == len(spatial):
            yield v, np.zeros((1,) * len(spatial), np.int64)
            return
        for positions in per_axis[d]:
            along = _take_static(v, 2 + d, positions)
            shape = [1] * len(spatial)
            shape[d] = len(positions)
            offset = np.asarray(positions, np.int64).reshape(shape) * plane_strides[d]
            for tap, rest in taps(along, d + 1):
                yield tap, offset + rest

    # The index is kept relative to the first tap's: where windows tile the input, a tap's
    # offset from the first is the same for every output, a scalar (a constant array per tap
    # doubled the fold's time on (32, 512, 14, 14) -> (7, 7)); the first tap's index array is
    # added once at the end.
    acc: Any = None
    index: Any = None
    first: np.ndarray = np.zeros(output_shape, np.int64)
    for tap, flat in taps(x, 0):
        flat = np.broadcast_to(flat, output_shape)
        if acc is None:
            acc, index, first = tap, jnp.zeros((), index_dtype), flat
            continue
        delta = flat - first
        step = (index_dtype.type(delta.flat[0]) if np.all(delta == delta.flat[0])
                else jnp.asarray(delta.astype(index_dtype)))
        take = acc < tap
        acc = jnp.where(take, tap, acc)
        index = jnp.where(take, step, index)
    return acc, jnp.broadcast_to(index + jnp.asarray(first.astype(index_dtype)), acc.shape)


def _runs_fold(x: jax.Array, *, output_shape: tuple[int, ...], index_dtype: np.dtype):
    """`_fold` with `_routed`'s keywords, differentiated through the indices (whose compile does
    not grow with the taps): its taps of concatenated runs, and windows that tile the input
    with more than `AUTODIFF_TAPS` taps."""
    return _fold(x, output_shape, index_dtype)


def _tiled(x: jax.Array, output_shape: tuple[int, ...], index_dtype: np.dtype,
           skip_nan: bool = False):
    """The fold of windows that tile the input (``O`` divides ``L`` on every axis: windows of
    ``L / O``, stride ``L / O``), one axis at a time, the last first: each stage's taps are one
    strided slice each, and the index is kept as an offset from the window's first element (a
    scalar per tap), the windows' first elements' flat indices added once at the end.

    Without NaN in `x` the seeded fold is the first, in row-major order, of the window's largest
    elements (``acc < x`` keeps the earlier of equal ones, ``-0.0``/``+0.0`` too), a maximum over
    a total order, which any grouping of the taps gives. With NaN it is not (a NaN after a
    window's first element hides later elements from one stage only), unless `skip_nan`: then a
    later tap also replaces the accumulator where ``acc`` is NaN and the tap is not (NaN lowest
    in that order), and the window's first element (every stage's first tap) overrides the
    result where it is NaN, which is the seeded fold on any data (``acc < x`` never takes a NaN,
    and a NaN first element is never replaced). Without `skip_nan` the caller checks the data
    (`_tiled_or_fold`).
    """
    spatial = tuple(x.shape[2:])
    plane_strides = [math.prod(spatial[d + 1:]) for d in range(len(spatial))]
    floating = skip_nan and dtypes.is_floating(x.dtype)
    itype = index_dtype.type
    val: Any = x
    idx: Any = itype(0)  # a scalar until some stage has more than one tap
    first: Any = x
    for d in reversed(range(len(spatial))):
        k, axis = spatial[d] // output_shape[d], 2 + d
        acc: Any = None
        acc_idx: Any = None
        for j in range(k):
            cand = lax.slice_in_dim(val, j, j + (output_shape[d] - 1) * k + 1, k, axis)
            offset = itype(j * plane_strides[d])
            cand_idx = idx + offset if np.ndim(idx) == 0 else lax.slice_in_dim(
                idx, j, j + (output_shape[d] - 1) * k + 1, k, axis) + offset
            if acc is None:
                acc, acc_idx = cand, cand_idx
                if floating:
                    first = lax.slice_in_dim(first, 0, (output_shape[d] - 1) * k + 1, k, axis)
                continue
            take = acc < cand
            if floating:
                take = take | (jnp.isnan(acc) & ~jnp.isnan(cand))
            acc = jnp.where(take, cand, acc)
            acc_idx = jnp.where(take, cand_idx, acc_idx)
        val, idx = acc, acc_idx
    origin = jnp.zeros(output_shape, index_dtype)
    for d in range(len(spatial)):
        k = spatial[d] // output_shape[d]
        origin = origin + lax.broadcasted_iota(index_dtype, output_shape, d) * itype(
            k * plane_strides[d])
    if floating:
        nan_first = jnp.isnan(first)
        val = jnp.where(nan_first, first, val)
        idx = jnp.where(nan_first, itype(0), jnp.broadcast_to(idx, val.shape))
    return val, jnp.broadcast_to(idx + origin, val.shape)


def _checked_tiled(x: jax.Array, *, output_shape: tuple[int, ...], index_dtype: np.dtype):
    """`_tiled`, or `_fold` when the data may hold a NaN (see `_tiled_or_fold`), with
    `_routed`'s keywords."""
    return rules.redo_if(rules.sum_is_nan(x), _tiled(x, output_shape, index_dtype),
                         lambda: _fold(x, output_shape, index_dtype))


def _tiled_routed(x: jax.Array, *, output_shape: tuple[int, ...], index_dtype: np.dtype):
    """`_tiled` skipping NaN, with `_routed`'s keywords: the form of windows of more than
    `_UNROLLED_TAPS` taps that tile a large input (a global pooling's (16, 16) to (1, 1)), exact
    on any data without a check, and differentiated through the indices."""
    return _tiled(x, output_shape, index_dtype, skip_nan=True)


@partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _tiled_or_fold(x: jax.Array, output_shape: tuple[int, ...], index_dtype: np.dtype):
    """`_tiled`, or the unrolled fold (`_fold`, at most `_UNROLLED_TAPS` taps) when the data may
    hold a NaN (its sum is NaN; a false alarm only costs time). Differentiated as `_fold` (the
    autodiff of its selects: a zero-or-one-trip loop has no reverse mode, and routing the tangent
    through the indices, as `_routed` does, made the gradient of (32, 512, 14, 14) -> (7, 7)
    2.5 ms against 1.0 ms).

    Measured on (32, 512, 14, 14) float32 to (7, 7), in process: `_tiled` with the NaN check
    1.1-1.5 ms against 2.3-3.7 ms for `_fold`; `_tiled` skipping NaN without the check 1.5x
    the checked form on clean data.
    """
    return _checked_tiled(x, output_shape=output_shape, index_dtype=index_dtype)


@_tiled_or_fold.defjvp
def _tiled_or_fold_jvp(output_shape, index_dtype, primals, tangents):
    return jax.jvp(lambda v: _fold(v, output_shape, index_dtype), primals, tangents)


def tap_count(spatial: tuple[int, ...], output_shape: tuple[int, ...]) -> int:
    """How many taps the fold reads (the product of the largest windows)."""
    return math.prod(max(e - s for s, e in windows(n, o))
                     for n, o in zip(spatial, output_shape, strict=True))




def _window_groups(length: int, outputs: int) -> list[tuple[int, int, int, int, int, int]]:
    """The windows of one axis in groups that one strided slice per tap reads: windows of one
    length whose outputs and starts both step evenly, as ``(length, first output, output step,
    count, first start, start step)``, a single window (or one that repeats the window before
    it) a group of one. (14 -> 5: the windows of
    3 at outputs 0 and 4, starts 0 and 11; those of 4 at outputs 1-3, starts 2, 5, 8.)"""
    by_length: dict[int, list[tuple[int, int]]] = {}
    for i, (start, end) in enumerate(windows(length, outputs)):
        by_length.setdefault(end - start, []).append((i, start))
    groups = []
    for n, items in by_length.items():
        i = 0
        while i < len(items):
            j = i + 1
            if j < len(items) and items[j][1] > items[i][1]:  # a repeated window: a group alone
                step = (items[j][0] - items[i][0], items[j][1] - items[i][1])
                while (j + 1 < len(items) and (items[j + 1][0] - items[j][0],
                                               items[j + 1][1] - items[j][1]) == step):
                    j += 1
                j += 1
            out_step, start_step = ((items[i + 1][0] - items[i][0], items[i + 1][1] - items[i][1])
                                    if j - i > 1 else (1, 1))
            groups.append((n, items[i][0], out_step, j - i, items[i][1], start_step))
            i = j
    return groups


def _per_window(x: jax.Array, *, output_shape: tuple[int, ...], index_dtype: np.dtype):
    """The seeded fold of each window's values over its own elements in row-major order, and
    each index searched for: one fusion each, in which every output element reads only its
    window.

    The windows of equal lengths whose outputs and starts step evenly along an axis
    (`_window_groups`) share their code: per combination of the axes' groups, tap ``t`` (a
    position within the window, row-major) is one strided slice over all the group's windows,
    and the groups' results are placed by ``lax.pad`` (interior padding for the step) and a
    select on a constant mask, or concatenated along an axis whose groups are single windows
    in order. Each output element still computes only its own window (a pad reads its operand
    only inside it), so the run time is that of one fold per window, and the program holds the
    taps of each group combination once instead of every window's reads: (14, 14) -> (5, 3)
    folds 77 taps instead of 288 element reads, its compile 0.37x.

    Each index is then searched for, in a second fusion: the first element of the window equal
    (``==``) to its value, or the window's first element where none is. The fold takes an element
    only where it is above ``acc``, so its winner is the first element equal to the result (a
    later equal one, ``±0`` too, is never taken; an earlier one would have been); a NaN result
    is the window's first element, equal to nothing. The search's compare and select per element
    compile in about 0.7x the time of an index carried through the fold (which repeats the
    fold's compare and select in the index fusion), and a caller that uses the values only still
    runs the values fold alone.
    """
    spatial = tuple(x.shape[2:])
    rank = len(spatial)
    groups = [_window_groups(n, o) for n, o in zip(spatial, output_shape, strict=True)]
    strides = [math.prod(spatial[d + 1:]) for d in range(rank)]
    itype = np.dtype(index_dtype).type
    planes = tuple(x.shape[:2])

    def outputs(group) -> slice:
        _, first, step, count, _, _ = group
        return slice(first, first + (count - 1) * step + 1, step)

    def tap(v: jax.Array, combo, at: tuple[int, ...]) -> jax.Array:
        """Element `at` of every window of the group combination `combo`: one strided slice."""
        starts = tuple(g[4] + t for g, t in zip(combo, at, strict=True))
        limits = tuple(s + (g[3] - 1) * g[5] + 1 for s, g in zip(starts, combo, strict=True))
        return lax.slice(v, (0, 0) + starts, planes + limits, (1, 1) + tuple(g[5] for g in combo))

    def elements(combo) -> list[tuple[int, ...]]:
        return list(itertools.product(*(range(g[0]) for g in combo)))

    def fold(combo) -> jax.Array:
        acc: Any = None
        for at in elements(combo):
            element = tap(x, combo, at)
            acc = element if acc is None else lax.select(acc < element, element, acc)
        return acc

    def search(combo) -> jax.Array:
        where = tuple(outputs(g) for g in combo)
        value = lax.slice(values, (0, 0) + tuple(s.start for s in where),
                          planes + tuple(s.stop for s in where),
                          (1, 1) + tuple(s.step for s in where))
        taps = elements(combo)

        def offset(at: tuple[int, ...]) -> jax.Array:
            flat = sum(t * s for t, s in zip(at, strides, strict=True))
            return lax.full(value.shape, itype(flat), index_dtype)

        index = offset(taps[0])
        for at in reversed(taps):
            index = lax.select(tap(x, combo, at) == value, offset(at), index)
        first = np.zeros((), np.int64)  # each window's first element, flat in the plane
        for d, g in enumerate(combo):
            shape = [1] * rank
            shape[d] = g[3]
            first = first + (g[4] + np.arange(g[3]) * g[5]).reshape(shape) * strides[d]
        return index + jnp.asarray(np.broadcast_to(first, value.shape[2:]).astype(index_dtype))

    def build(d: int, combo: tuple, leaf) -> jax.Array:
        """The results of the windows of `combo`'s groups on axes < `d`, every window beyond."""
        if d == rank:
            return leaf(combo)
        parts = [build(d + 1, combo + (g,), leaf) for g in groups[d]]
        if all(g[3] == 1 for g in groups[d]):  # single windows: concatenated in output order
            order_ = sorted(range(len(parts)), key=lambda k: groups[d][k][1])
            return lax.concatenate([parts[k] for k in order_], 2 + d)
        placed: Any = None
        for g, part in zip(groups[d], parts, strict=True):
            where = outputs(g)
            config = [(0, 0, 0)] * part.ndim
            config[2 + d] = (where.start, output_shape[d] - where.stop, where.step - 1)
            padded = lax.pad(part, np.zeros((), part.dtype), config)
            if placed is None:
                placed = padded
                continue
            mask = np.zeros(output_shape[d], bool)
            mask[where] = True
            placed = lax.select(lax.broadcast_in_dim(jnp.asarray(mask), padded.shape, (2 + d,)),
                                padded, placed)
        return placed

    result = build(0, (), fold)
    # the search reads the values from memory: without the barrier XLA fuses the whole fold
    # into the search and compiles it a second time there
    values = lax.optimization_barrier(result)
    return result, build(0, (), search)


def _routed(forward, x: jax.Array):
    """``forward(x)`` -> ``(values, indices)``, differentiated through the indices: the tangent
    of the values is the input tangent at each index (a gather within each plane), so the
    cotangent of each window goes to the element its index names and overlapping windows add
    up there (the transposed gather). The per-window form's own derivative would be one padded
    full-size array per element slice (minutes to compile on a 14x14 map)."""
    @jax.custom_jvp
    def routed(x):
        return forward(x)

    @routed.defjvp
    def routed_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        values, indices = forward(x)
        zero_index = np.zeros(indices.shape, jax.dtypes.float0)
        return (values, indices), (adaptive_sharded.picked(t, indices), zero_index)

    return routed(x)


#: Up to this many taps summed over the axes (the largest window of each) an input larger than
#: `pool_compact.SMALL_BYTES` takes the unrolled forms above, whose code grows with the taps;
#: beyond, and on small inputs, the compact form (`_compact`).
MAX_UNROLLED_AXIS_TAPS = 64


def compact_applies(spatial: tuple[int, ...], output_shape: tuple[int, ...],
                    nbytes: int) -> bool:
    """Whether `_compact` computes this pooling (see `MAX_UNROLLED_AXIS_TAPS`)."""
    if math.prod(spatial) >= pool_compact.NONE:
        return False
    if pool_compact.FORCE is not None:
        return pool_compact.FORCE
    axis_taps = sum(max(e - s for s, e in windows(n, o))
                    for n, o in zip(spatial, output_shape, strict=True))
    return nbytes <= pool_compact.SMALL_BYTES or axis_taps > MAX_UNROLLED_AXIS_TAPS


def _gather_along(v: jax.Array, positions: Any, axis: int) -> jax.Array:
    """``jnp.take(v, positions, axis)`` for in-bounds `positions`, as one gather (no
    bounds handling: a small input's module holds a fraction of the operations, which JAX keeps
    for every new shape)."""
    numbers = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(axis)) + tuple(range(axis + positions.ndim, v.ndim
                                                     + positions.ndim - 1)),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    sizes = tuple(1 if i == axis else n for i, n in enumerate(v.shape))
    return lax.gather(v, positions[..., None], numbers, sizes,
                      mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


#: On inputs of more than `pool_compact.SMALL_BYTES` the compact form gathers every window's taps
#: at once (`_gathered`) while they number at most this many times the plane, otherwise axis by
#: axis (`_gathered_by_axis`), whose reads add up over the axes instead of multiplying. In
#: process: (8, 64, 224, 224) -> (5, 3) (1.05 reads per element) 87 against 104 ms,
#: (1, 1, 100003) -> 7 0.18 against 0.20 ms; (8, 64, 224, 224) -> (223, 2) (2.0) 178 against
#: 104 ms, (2, 8, 30, 30, 30) -> (29, 29, 3) (3.7) 12 against 1.9 ms.
GATHER_ALL_MAX_READS = 1.5
#: True or False forces `_gathered` or `_gathered_by_axis` wherever the compact form applies
#: (tests of both set it, then clear JAX's caches); None chooses as above.
FORCE_GATHER_ALL: bool | None = None


def _compact(x: jax.Array, *, output_shape: tuple[int, ...], index_dtype: np.dtype):
    """The compact form: `_gathered` or `_gathered_by_axis` (see `GATHER_ALL_MAX_READS`)."""
    spatial = tuple(x.shape[2:])
    reads = math.prod(o * max(e - s for s, e in windows(n, o))
                      for n, o in zip(spatial, output_shape, strict=True))
    gather_all = (x.size * x.dtype.itemsize <= pool_compact.SMALL_BYTES
                  or reads <= GATHER_ALL_MAX_READS * math.prod(spatial))
    if FORCE_GATHER_ALL is not None:
        gather_all = FORCE_GATHER_ALL
    form = _gathered if gather_all else _gathered_by_axis
    return form(x, output_shape=output_shape, index_dtype=index_dtype)


#: Up to this many entries an axis' tap positions are a constant of the program; beyond (an
#: axis past int32, whose windows are as long), they are computed from iotas.
_CONSTANT_TAPS = 1 << 24


def _axis_taps(length: int, outputs: int, itype: type) -> Any:
    """``(outputs, kmax)`` positions along one axis: tap ``t`` of window ``i`` reads
    ``min(start_i + t, end_i - 1)`` (a short window repeats its last element)."""
    wins = windows(length, outputs)
    kmax = max(e - s for s, e in wins)
    if outputs * kmax <= _CONSTANT_TAPS:
        return np.array([[min(s + t, e - 1) for t in range(kmax)] for s, e in wins], itype)
    i = lax.broadcasted_iota(itype, (outputs, kmax), 0)
    t = lax.broadcasted_iota(itype, (outputs, kmax), 1)
    start = i * itype(length) // itype(outputs)
    end = -((-(i + 1) * itype(length)) // itype(outputs))
    return jnp.minimum(start + t, end - 1)


def _gathered(x: jax.Array, *, output_shape: tuple[int, ...], index_dtype: np.dtype):
    """The seeded fold as one gather of every window's taps (each axis' ``min(start + t, end -
    1)``, combined in row-major order: a short window repeats its last element) into a last axis
    of their own, and one variadic reduce over it with `pool_compact`'s select (greater key,
    then lower flat index). The key puts NaN below every number except at a window's first tap,
    where it is above every number: NaN wins only as the first element, and otherwise the first
    of the largest non-NaN elements wins, which is the seeded fold. The smallest program of the
    forms (a new small shape's compile and resident memory follow its size)."""
    spatial = tuple(x.shape[2:])
    flat = np.zeros((), np.int64)
    for d, (n, o) in enumerate(zip(spatial, output_shape, strict=True)):
        taps = tap_positions(n, o)  # (k, O): tap t of each window
        shape = [1] * (2 * len(spatial))
        shape[d], shape[len(spatial) + d] = o, len(taps)
        flat = flat + np.asarray(taps, np.int64).T.reshape(shape) * math.prod(spatial[d + 1:])
    positions = flat.reshape(output_shape + (-1,)).astype(np.int32)  # (O..., taps)
    planes = tuple(x.shape[:2])
    # the values as their bits: a gather across shards may be a masked sum (-0.0 to +0.0)
    plane_bits = lax.reshape(order.bits(x), planes + (math.prod(spatial),))
    numbers = lax.GatherDimensionNumbers(offset_dims=(0, 1), collapsed_slice_dims=(2,),
                                         start_index_map=(2,))
    bits = lax.gather(plane_bits, positions[..., None], numbers, planes + (1,),
                      mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)  # (N, C, O..., taps)
    values = order.from_bits(bits, x.dtype)
    key = order.key(values, descending=True, nan_order="last")
    info = np.iinfo(key.dtype)
    if dtypes.is_floating(x.dtype):
        first_nan = (lax.broadcasted_iota(np.int32, bits.shape, bits.ndim - 1) == 0) & (
            values != values)
        key = lax.select(first_nan, lax.full(key.shape, info.max, key.dtype), key)
    index = lax.broadcast_in_dim(positions, bits.shape, tuple(range(2, bits.ndim)))
    _, value, index = lax.reduce(
        (key, bits, index), (np.array(info.min, key.dtype), np.zeros((), bits.dtype),
                             np.int32(pool_compact.NONE)), pool_compact.select, (bits.ndim - 1,))
    return order.from_bits(value, x.dtype), index.astype(index_dtype)


def _gathered_by_axis(x: jax.Array, *, output_shape: tuple[int, ...], index_dtype: np.dtype):
    """The seeded fold with code that does not grow with the windows: per spatial axis (the
    last first), the taps of every window gathered into an axis of their own (``min(start + t,
    end - 1)``: a short window repeats its last element) and reduced over it with
    `pool_compact`'s select (greater key, then lower flat index).

    The key puts NaN below every number, so the stages give the first (in row-major order) of
    the largest non-NaN elements, a maximum over a total order that any grouping of the taps
    gives; the window's first element then overrides where it is NaN: that is the seeded fold
    (``acc < x`` never takes a NaN, and a NaN first element is never replaced).
    """
    spatial = tuple(x.shape[2:])
    # positions in int32, or in int64 on a plane past int32 (only with x64 on)
    itype = np.dtype(np.int32 if math.prod(spatial) < pool_compact.NONE else np.int64).type
    none = itype(np.iinfo(itype).max)
    key = order.key(x, descending=True, nan_order="last")
    index = lax.broadcasted_iota(itype, x.shape, x.ndim - 1)
    step = spatial[-1]
    for d in reversed(range(len(spatial) - 1)):
        index = index + lax.broadcasted_iota(itype, x.shape, 2 + d) * itype(step)
        step *= spatial[d]
    low_key = np.array(np.iinfo(key.dtype).min, key.dtype)
    # values as their bits: a gather across shards may be a masked sum, which turns -0.0 to +0.0
    first = order.bits(x)
    fill = np.asarray(dtypes.max_identity(x.dtype)).astype(x.dtype)
    if dtypes.is_floating(x.dtype):
        fill = fill.view(order.unsigned_bits_dtype(x.dtype))
    operands: tuple[jax.Array, ...] = (key, first, index)
    for d in reversed(range(len(spatial))):
        axis = 2 + d
        taps = _axis_taps(spatial[d], output_shape[d], itype)
        operands = tuple(_gather_along(v, taps, axis) for v in operands)  # (.., O, kmax, ..)
        operands = lax.reduce(operands, (low_key, fill, none), pool_compact.select, (axis + 1,))
        first = _gather_along(first, taps[:, 0], axis)
    _, value, index = operands
    value = order.from_bits(value, x.dtype)
    first = order.from_bits(first, x.dtype)
    if dtypes.is_floating(x.dtype):
        starts = np.zeros((1, 1) + output_shape, itype)
        step = 1
        for d in reversed(range(len(spatial))):
            begin = np.array([s for s, _ in windows(spatial[d], output_shape[d])], itype)
            shape = [1] * value.ndim
            shape[2 + d] = output_shape[d]
            starts = starts + begin.reshape(shape) * itype(step)
            step *= spatial[d]
        nan = first != first
        value = lax.select(nan, first, value)
        index = lax.select(nan, lax.broadcast_in_dim(starts, index.shape, tuple(range(index.ndim))),
                           index)
    return value, index.astype(index_dtype)
