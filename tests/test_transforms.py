"""The JAX transformation contract of every public operator.

For ``jaxmax.openvino.{reduce_max, reduce_logical_or, max_pool, segment_max}`` and
``jaxmax.onnx.reduce_max``:

* ``jax.jit`` gives exactly the eager answer (and the NumPy oracle's), NaN / -inf included;
* ``jax.vmap`` over a leading and over a middle batch axis equals a Python loop of eager calls;
* ``jax.test_util.check_grads`` passes on inputs with unique values;
* the gradient tie rules of docs/semantics.md hold, checked against cotangents computed by hand
  (NumPy loops in this file);
* a second call with the same static arguments and shapes traces nothing;
* the jaxpr holds the intended primitive (``reduce_max``/``reduce_or``, ``reduce_window_max``,
  ``scatter-max``), nested sub-jaxprs included.

The oracles below are written from the specification and docs/semantics.md only; they never call
jaxmax.
"""

from __future__ import annotations

import itertools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_same, lowest
from helpers import is_float as _is_float
from jax import lax, monitoring
from jax.test_util import check_grads

from jaxmax import onnx
from jaxmax import openvino as ov

NAN = np.nan
INF = np.inf


# --------------------------------------------------------------------------------------------
# NumPy oracles (independent of jaxmax)
# --------------------------------------------------------------------------------------------

def _norm_axes(axes, ndim):
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    return tuple(sorted(int(a) % ndim for a in axes))


def oracle_ov_reduce_max(x, axes, keep_dims=False):
    """ReduceMax-1: max(lowest(T), non-NaN elements of the slice); empty axes is the identity."""
    x = np.asarray(x)
    axes = _norm_axes(axes, x.ndim)
    if not axes:
        return x.copy()
    if _is_float(x.dtype):
        wide = np.where(np.isnan(x.astype(np.float64)), -INF, x.astype(np.float64))
        out = np.max(wide, axis=axes, initial=-INF, keepdims=keep_dims)
        return np.maximum(out, float(lowest(x.dtype))).astype(x.dtype)
    out = np.max(x, axis=axes, initial=int(lowest(x.dtype)), keepdims=keep_dims)
    return out.astype(x.dtype)


def oracle_ov_reduce_or(x, axes, keep_dims=False):
    x = np.asarray(x)
    axes = _norm_axes(axes, x.ndim)
    if not axes:
        return x.copy()
    return np.any(x, axis=axes, keepdims=keep_dims)


def oracle_onnx_reduce_max(x, axes, keepdims=1):
    """ONNX ReduceMax: numpy max (NaN propagates), empty set -> -inf / iinfo.min."""
    x = np.asarray(x)
    axes = tuple(range(x.ndim)) if axes is None or len(np.atleast_1d(axes)) == 0 \
        else _norm_axes(axes, x.ndim)
    if _is_float(x.dtype):
        out = np.max(x.astype(np.float64), axis=axes, initial=-INF, keepdims=bool(keepdims))
        return out.astype(x.dtype)
    out = np.max(x, axis=axes, initial=int(np.iinfo(x.dtype).min), keepdims=bool(keepdims))
    return out.astype(x.dtype)


def pool_pads(spatial, kernel, strides, pads_begin, pads_end, auto_pad):
    """(begin, end) pads per spatial axis as MaxPool-1 defines them."""
    if auto_pad in ("same_upper", "same_lower"):
        pads = []
        for size, k, s in zip(spatial, kernel, strides, strict=True):
            total = max(0, (-(-size // s) - 1) * s + k - size)
            small, big = total // 2, total - total // 2
            pads.append((small, big) if auto_pad == "same_upper" else (big, small))
        return pads
    if auto_pad == "valid":
        return [(0, 0)] * len(spatial)
    return list(zip(pads_begin, pads_end, strict=True))


def _pool_windows(shape, kernel, strides, pads_begin, pads_end, rounding_type, auto_pad):
    """Output spatial shape and, per output index, the clipped input ranges of its window."""
    spatial = shape[2:]
    nsp = len(spatial)
    kernel = (kernel,) * nsp if np.isscalar(kernel) else tuple(kernel)
    strides = (strides,) * nsp if np.isscalar(strides) else tuple(strides)
    pb = (pads_begin,) * nsp if np.isscalar(pads_begin) else tuple(pads_begin)
    pe = (pads_end,) * nsp if np.isscalar(pads_end) else tuple(pads_end)
    pads = pool_pads(spatial, kernel, strides, pb, pe, auto_pad)
    out_shape = []
    for size, k, s, (lo, hi) in zip(spatial, kernel, strides, pads, strict=True):
        span = size + lo + hi - k
        out_shape.append((-(-span // s) if rounding_type == "ceil" else span // s) + 1)
    windows = {}
    for idx in np.ndindex(*out_shape):
        ranges = []
        for i, size, k, s, (lo, _) in zip(idx, spatial, kernel, strides, pads, strict=True):
            start = i * s - lo
            ranges.append(range(max(start, 0), min(start + k, size)))
        windows[idx] = ranges
    return tuple(out_shape), windows


def oracle_ov_max_pool(x, kernel, strides, pads_begin=0, pads_end=0, rounding_type="floor",
                       auto_pad="explicit"):
    """MaxPool-1 by a loop over windows: max(lowest(T), non-NaN input elements of the window)."""
    x = np.asarray(x)
    out_shape, windows = _pool_windows(x.shape, kernel, strides, pads_begin, pads_end,
                                       rounding_type, auto_pad)
    n, c = x.shape[:2]
    out = np.empty((n, c) + out_shape, x.dtype)
    low = lowest(x.dtype)
    for idx, ranges in windows.items():
        win = x[(slice(None), slice(None)) + tuple(slice(r.start, r.stop) if len(r) else
                                                   slice(0, 0) for r in ranges)]
        win = win.reshape(n, c, -1)
        if _is_float(x.dtype):
            w = win.astype(np.float64)
            m = np.max(np.where(np.isnan(w), -INF, w), axis=-1, initial=-INF)
            out[(slice(None), slice(None)) + idx] = np.maximum(m, float(low)).astype(x.dtype)
        else:
            m = np.max(win, axis=-1, initial=int(low))
            out[(slice(None), slice(None)) + idx] = m
    return out


def oracle_ov_max_pool_grad(x, ct, **attrs):
    """Hand-computed MaxPool-1 input cotangent: each window's cotangent goes to its FIRST
    maximal (non-NaN) input element in row-major window order; a window without an input
    element, or whose output was raised to lowest(T) (only -inf/NaN inside), passes none."""
    x = np.asarray(x, np.float64)
    _, windows = _pool_windows(x.shape, attrs["kernel"], attrs["strides"],
                               attrs.get("pads_begin", 0), attrs.get("pads_end", 0),
                               attrs.get("rounding_type", "floor"),
                               attrs.get("auto_pad", "explicit"))
    grad = np.zeros(x.shape, np.float64)
    n, c = x.shape[:2]
    for idx, ranges in windows.items():
        for b, ch in itertools.product(range(n), range(c)):
            best, where = -INF, None
            for coord in itertools.product(*ranges):  # row-major window order
                value = x[(b, ch) + coord]
                if not np.isnan(value) and value > best:
                    best, where = value, coord
            if where is not None:  # best > -inf: a real maximum
                grad[(b, ch) + where] += ct[(b, ch) + idx]
    return grad


def oracle_ov_segment_max(data, ids, num_segments=None, fill_mode="ZERO"):
    """SegmentMax-16 by a loop over segments."""
    data = np.asarray(data)
    ids = np.asarray(ids)
    if num_segments is None:
        num_segments = int(ids.max()) + 1 if ids.size else 0
    out = np.empty((num_segments,) + data.shape[1:], data.dtype)
    low = lowest(data.dtype)
    for j in range(num_segments):
        rows = data[ids == j]
        if rows.shape[0] == 0:
            out[j] = 0 if fill_mode.upper() == "ZERO" else low
        elif _is_float(data.dtype):
            r = rows.astype(np.float64)
            m = np.max(np.where(np.isnan(r), -INF, r), axis=0)
            out[j] = np.maximum(m, float(low)).astype(data.dtype)
        else:
            out[j] = rows.max(axis=0)
    return out


def oracle_share_grad(x, axes, ct, skip_nan):
    """Hand-computed cotangent of a max reduction (keep_dims=False): the slice's cotangent is
    shared evenly by the elements equal to the maximum. With `skip_nan` (OpenVINO) NaN never
    wins and a slice whose non-NaN maximum is -inf (empty, all -inf, all NaN) passes none."""
    x = np.asarray(x, np.float64)
    axes = _norm_axes(axes, x.ndim)
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + list(axes))
    flat = moved.reshape(int(np.prod([x.shape[a] for a in kept])), -1)
    g = np.zeros_like(flat)
    ctf = np.asarray(ct, np.float64).reshape(-1)
    for row in range(flat.shape[0]):
        vals = flat[row]
        if skip_nan:
            finite = vals[~np.isnan(vals)]
            m = finite.max() if finite.size else -INF
            if m == -INF:
                continue
        else:
            m = vals.max()
        hits = vals == m
        g[row, hits] = ctf[row] / hits.sum()
    g = g.reshape(moved.shape)
    return np.transpose(g, np.argsort(kept + list(axes)))


def oracle_segment_grad(data, ids, num_segments, ct):
    """Hand-computed SegmentMax-16 cotangent: per segment and feature, the tied maximal members
    share the cotangent evenly (checked below to be jax.ops.segment_max's rule); empty
    segments and segments raised to lowest(T) pass none; NaN members get none."""
    data = np.asarray(data, np.float64)
    ids = np.asarray(ids)
    g = np.zeros_like(data)
    flat = data.reshape(data.shape[0], -1)
    gflat = g.reshape(data.shape[0], -1)
    ctf = np.asarray(ct, np.float64).reshape(num_segments, -1)
    for j in range(num_segments):
        members = np.nonzero(ids == j)[0]
        for f in range(flat.shape[1]):
            vals = flat[members, f]
            finite = vals[~np.isnan(vals)]
            if finite.size == 0 or finite.max() == -INF:
                continue
            hits = members[vals == finite.max()]
            gflat[hits, f] = ctf[j, f] / hits.size
    return g


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

def special_floats(rng, shape, dtype=np.float32, p_nan=0.12, p_ninf=0.12, p_inf=0.04):
    """Random floats with NaN, -inf and +inf sprinkled in."""
    x = rng.standard_normal(shape) * 10
    u = rng.random(shape)
    x[u < p_nan] = NAN
    x[(u >= p_nan) & (u < p_nan + p_ninf)] = -INF
    x[(u >= p_nan + p_ninf) & (u < p_nan + p_ninf + p_inf)] = INF
    return x.astype(dtype)


def unique_values(rng, shape, scale=0.1):
    """Distinct, well separated values (gaps of `scale`, >> the finite-difference step)."""
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2) * scale).reshape(shape)


def primitive_names(closed_jaxpr):
    """Every primitive name in a jaxpr, recursing into sub-jaxprs held in equation params
    (pjit/jit bodies, cond branches, scatter update jaxprs, custom_jvp/vjp bodies, ...)."""
    names = []

    def subjaxprs(param):
        if hasattr(param, "eqns"):  # Jaxpr
            yield param
        elif hasattr(param, "jaxpr") and hasattr(param.jaxpr, "eqns"):  # ClosedJaxpr
            yield param.jaxpr
        elif isinstance(param, (tuple, list)):
            for item in param:
                yield from subjaxprs(item)
        elif isinstance(param, dict):
            for item in param.values():
                yield from subjaxprs(item)

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            names.append(eqn.primitive.name)
            for param in eqn.params.values():
                for sub in subjaxprs(param):
                    walk(sub)

    walk(closed_jaxpr.jaxpr)
    return names


class TraceCounter:
    """Counts JAX traces (the '/jax/core/compile/jaxpr_trace_duration' monitoring event, one per
    jaxpr trace of a jitted function) while active."""

    def __init__(self):
        self.count = 0
        self.active = False
        monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event, duration, **kwargs):
        if self.active and event == "/jax/core/compile/jaxpr_trace_duration":
            self.count += 1

    def __enter__(self):
        self.count = 0
        self.active = True
        return self

    def __exit__(self, *exc):
        self.active = False


TRACES = TraceCounter()


# --------------------------------------------------------------------------------------------
# Operator configurations shared by the tests
# --------------------------------------------------------------------------------------------

REDUCE_CASES = [
    ((3, 4, 5), (1,), False),
    ((3, 4, 5), (0, 2), True),
    ((3, 4, 5), -1, False),
    ((3, 4, 5), (2, 0, 1), False),
    ((2, 0, 3), (1,), True),  # empty reduction
    ((3, 4, 5), (), False),  # identity
]

POOL_CASES = [
    dict(kernel=3, strides=2, pads_begin=1, pads_end=1),
    dict(kernel=2, strides=2, pads_begin=0, pads_end=1, rounding_type="ceil"),  # window in pads
    dict(kernel=(2, 3), strides=(1, 2), auto_pad="same_lower"),  # odd total pad at the start
    dict(kernel=3, strides=2, auto_pad="same_upper", rounding_type="ceil"),
    dict(kernel=2, strides=1, pads_begin=(2, 0), pads_end=(0, 3)),  # pads >= kernel
    dict(kernel=(3, 2), strides=(3, 1), auto_pad="valid"),
]


def _reduce_data(rng, shape, dtype):
    if _is_float(dtype):
        x = special_floats(rng, shape, np.float32)
        if x.ndim == 3 and x.size:
            x[0, :, 0] = NAN  # an all-NaN slice for axis 1
            x[1, :, 1] = -INF  # an all -inf slice for axis 1
            x[:, 0, :] = np.where(np.arange(x.shape[2]) % 2, NAN, -INF)  # for axes (0, 2)
        return x.astype(dtype)
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True)
    x = x.astype(dtype)
    if x.size:
        x.flat[0] = info.min
    return x


# --------------------------------------------------------------------------------------------
# jit equals eager
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axes,keep,dtype",
                         [case + (np.float32,) for case in REDUCE_CASES]
                         + [REDUCE_CASES[1] + (np.int8,), REDUCE_CASES[4] + (np.int8,),
                            REDUCE_CASES[0] + (jnp.bfloat16,), REDUCE_CASES[3] + (np.float16,)])
def test_ov_reduce_max_jit_equals_eager(shape, axes, keep, dtype):
    rng = np.random.default_rng(3)
    x = _reduce_data(rng, shape, np.dtype(dtype))
    eager = ov.reduce_max(x, axes, keep_dims=keep)
    if isinstance(axes, tuple) and len(axes) > 1:  # static arguments through static_argnames
        jitted = jax.jit(ov.reduce_max, static_argnames=("axes", "keep_dims"))(
            x, axes=axes, keep_dims=keep)
    else:  # static arguments closed over
        jitted = jax.jit(lambda d: ov.reduce_max(d, axes, keep_dims=keep))(x)
    expected = oracle_ov_reduce_max(x, axes, keep)
    assert_same(eager, expected)
    assert_same(jitted, expected)


@pytest.mark.parametrize("shape,axes,keep", REDUCE_CASES)
def test_ov_reduce_logical_or_jit_equals_eager(shape, axes, keep):
    rng = np.random.default_rng(7)
    x = rng.random(shape) < 0.15
    if x.ndim == 3 and x.size:
        x[0] = False  # slices of all False exist for every axes choice
    eager = ov.reduce_logical_or(x, axes, keep_dims=keep)
    if keep:
        jitted = jax.jit(ov.reduce_logical_or, static_argnames=("axes", "keep_dims"))(
            x, axes=axes, keep_dims=keep)
    else:
        jitted = jax.jit(lambda d: ov.reduce_logical_or(d, axes, keep_dims=keep))(x)
    expected = oracle_ov_reduce_or(x, axes, keep)
    assert_same(eager, expected)
    assert_same(jitted, expected)


ONNX_CASES = [
    ((3, 4, 5), [1], 1, 0),
    ((3, 4, 5), (0, 2), 0, 0),
    ((3, 4, 5), None, 1, 0),
    ((3, 4, 5), None, 0, 1),  # noop
    ((2, 0, 3), [1], 0, 0),  # empty set -> -inf
]


@pytest.mark.parametrize("shape,axes,keepdims,noop,dtype",
                         [case + (np.float32,) for case in ONNX_CASES]
                         + [ONNX_CASES[1] + (np.int32,), ONNX_CASES[4] + (np.int32,)])
def test_onnx_reduce_max_jit_equals_eager(shape, axes, keepdims, noop, dtype):
    rng = np.random.default_rng(11)
    x = _reduce_data(rng, shape, np.dtype(dtype))
    axes_static = None if axes is None else tuple(axes)
    eager = onnx.reduce_max(x, axes, keepdims=keepdims, noop_with_empty_axes=noop)
    if keepdims:
        jitted = jax.jit(lambda d: onnx.reduce_max(d, axes, keepdims=keepdims,
                                                   noop_with_empty_axes=noop))(x)
    else:
        jitted = jax.jit(onnx.reduce_max,
                         static_argnames=("axes", "keepdims", "noop_with_empty_axes", "opset"))(
            x, axes=axes_static, keepdims=keepdims, noop_with_empty_axes=noop, opset=18)
    expected = x if noop else oracle_onnx_reduce_max(x, axes, keepdims)
    assert_same(eager, expected)
    assert_same(jitted, expected)


def test_onnx_reduce_max_bool_jit_equals_eager():
    x = np.random.default_rng(3).random((4, 6)) < 0.2
    x[1] = False
    eager = onnx.reduce_max(x, [1], keepdims=0)
    jitted = jax.jit(lambda d: onnx.reduce_max(d, [1], keepdims=0))(x)
    assert_same(eager, np.any(x, axis=1))
    assert_same(jitted, np.any(x, axis=1))


@pytest.mark.parametrize("attrs,dtype", [(a, np.float32) for a in POOL_CASES]
                         + [(POOL_CASES[1], np.uint8), (POOL_CASES[4], np.int8)])
def test_ov_max_pool_jit_equals_eager(attrs, dtype):
    rng = np.random.default_rng(5)
    if dtype == np.float32:
        x = special_floats(rng, (2, 3, 7, 8))
        x[0, 0] = -INF  # a channel of only -inf: every window raised to lowest(T)
        x[0, 1, :3, :3] = NAN
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (2, 3, 7, 8), endpoint=True).astype(dtype)
    eager = ov.max_pool(x, **attrs)
    if "auto_pad" in attrs:  # attributes through static_argnames
        jitted = jax.jit(ov.max_pool, static_argnames=(
            "kernel", "strides", "pads_begin", "pads_end", "rounding_type", "auto_pad"))(
            x, **attrs)
    else:  # attributes closed over
        jitted = jax.jit(lambda d: ov.max_pool(d, **attrs))(x)
    expected = oracle_ov_max_pool(x, **attrs)
    assert_same(eager, expected)
    assert_same(jitted, expected)


@pytest.mark.parametrize("shape,attrs", [
    ((2, 3, 9), dict(kernel=3, strides=2, pads_begin=1, pads_end=2, rounding_type="ceil")),
    ((1, 2, 5, 4, 6), dict(kernel=(2, 3, 2), strides=(2, 1, 3), auto_pad="same_lower")),
])
def test_ov_max_pool_rank3_rank5_jit_equals_eager(shape, attrs):
    x = special_floats(np.random.default_rng(9), shape)
    expected = oracle_ov_max_pool(x, **attrs)
    assert_same(ov.max_pool(x, **attrs), expected)
    assert_same(jax.jit(lambda d: ov.max_pool(d, **attrs))(x), expected)


SEGMENT_IDS = np.array([0, 0, 0, 2, 2, 3, 5, 5, 5, 5])  # empty segments 1 and 4


# num_segments 4 drops the rows of id 5, 8 pads with empty segments
@pytest.mark.parametrize("num_segments,fill_mode,dtype", [
    (4, "ZERO", np.float32), (8, "LOWEST", np.float32), (6, "LOWEST", np.float32),
    (8, "ZERO", np.int32)])
def test_ov_segment_max_jit_equals_eager(num_segments, fill_mode, dtype):
    rng = np.random.default_rng(13)
    if dtype == np.float32:
        data = special_floats(rng, (10, 3))
        data[0:3, 0] = NAN  # segment 0, feature 0: all NaN -> lowest(T)
        data[3:5, 1] = -INF  # segment 2, feature 1: all -inf -> lowest(T)
    else:
        data = rng.integers(-50, 50, (10, 3)).astype(dtype)
        data[5] = -7  # a negative real maximum survives fill ZERO
    expected = oracle_ov_segment_max(data, SEGMENT_IDS, num_segments, fill_mode)
    eager = ov.segment_max(data, SEGMENT_IDS, num_segments, fill_mode=fill_mode)
    assert_same(eager, expected)
    if fill_mode == "ZERO":  # ids closed over
        jitted = jax.jit(lambda d: ov.segment_max(d, SEGMENT_IDS, num_segments,
                                                  fill_mode=fill_mode))(data)
    else:  # ids traced, num_segments and fill_mode through static_argnames
        jitted = jax.jit(ov.segment_max, static_argnames=("num_segments", "fill_mode"))(
            data, SEGMENT_IDS, num_segments=num_segments, fill_mode=fill_mode)
    assert_same(jitted, expected)


def test_ov_segment_max_jit_closed_over_numpy_ids():
    """Concrete NumPy ids closed over by a jitted function are concrete, not traced
    (docs/semantics.md: static means "Python values or concrete NumPy/JAX arrays"):
    num_segments=None is inferred from them and unsorted ones are rejected, exactly as in an
    eager call."""
    data = special_floats(np.random.default_rng(14), (10, 3))
    expected = oracle_ov_segment_max(data, SEGMENT_IDS, None, "ZERO")
    assert_same(ov.segment_max(data, SEGMENT_IDS, fill_mode="ZERO"), expected)
    assert_same(jax.jit(lambda d: ov.segment_max(d, SEGMENT_IDS, fill_mode="ZERO"))(data),
                expected)
    unsorted = SEGMENT_IDS[::-1].copy()
    with pytest.raises(ValueError, match="sorted"):
        ov.segment_max(data, unsorted, 6, fill_mode="ZERO")
    with pytest.raises(ValueError, match="sorted"):
        jax.jit(lambda d: ov.segment_max(d, unsorted, 6, fill_mode="ZERO"))(data)


# --------------------------------------------------------------------------------------------
# vmap equals a Python loop of eager calls
# --------------------------------------------------------------------------------------------

def _loop(fn, xs, axis):
    return np.stack([np.asarray(fn(np.take(xs, i, axis=axis))) for i in range(xs.shape[axis])])


@pytest.mark.parametrize("in_axis,axes,keep", [(0, (1,), False), (1, (0, 2), True),
                                               (2, -1, False), (3, (1,), True)])
def test_ov_reduce_max_vmap(in_axis, axes, keep):
    rng = np.random.default_rng(17)
    xs = special_floats(rng, (4, 5, 3, 6))
    xs[(slice(None),) * in_axis + (0,)] = 1.0  # one batch member without NaN
    fn = partial(ov.reduce_max, axes=axes, keep_dims=keep)
    batched = jax.vmap(fn, in_axes=in_axis)(xs)
    looped = _loop(fn, xs, in_axis)
    assert_same(batched, looped)
    assert_same(looped[1], oracle_ov_reduce_max(np.take(xs, 1, axis=in_axis), axes, keep))
    assert_same(jax.jit(jax.vmap(fn, in_axes=in_axis))(xs), looped)


@pytest.mark.parametrize("in_axis", [0, 2])
def test_ov_reduce_logical_or_vmap(in_axis):
    xs = np.random.default_rng(19).random((4, 5, 3, 6)) < 0.1
    fn = partial(ov.reduce_logical_or, axes=(0, 2), keep_dims=False)
    looped = _loop(fn, xs, in_axis)
    assert_same(jax.vmap(fn, in_axes=in_axis)(xs), looped)
    assert_same(looped[2], oracle_ov_reduce_or(np.take(xs, 2, axis=in_axis), (0, 2)))


@pytest.mark.parametrize("in_axis", [0, 2])
def test_onnx_reduce_max_vmap(in_axis):
    rng = np.random.default_rng(23)
    xs = special_floats(rng, (4, 5, 3, 6))
    for axes, keepdims in [([1], 1), (None, 0)]:
        fn = partial(onnx.reduce_max, axes=axes, keepdims=keepdims)
        looped = _loop(fn, xs, in_axis)
        assert_same(jax.vmap(fn, in_axes=in_axis)(xs), looped)
        assert_same(looped[0], oracle_onnx_reduce_max(np.take(xs, 0, axis=in_axis), axes,
                                                      keepdims))


@pytest.mark.parametrize("in_axis,attrs", [(0, POOL_CASES[1]), (2, POOL_CASES[2]),
                                           (4, POOL_CASES[4])],
                         ids=["ceil-0", "same_lower-2", "big_pads-4"])
def test_ov_max_pool_vmap(in_axis, attrs):
    rng = np.random.default_rng(29)
    xs = special_floats(rng, (3, 2, 3, 6, 7))  # the batch axis is inserted somewhere
    xs = np.moveaxis(xs, 0, in_axis)
    fn = partial(ov.max_pool, **attrs)
    looped = _loop(fn, xs, in_axis)
    assert_same(jax.vmap(fn, in_axes=in_axis)(xs), looped)
    assert_same(looped[1], oracle_ov_max_pool(np.take(xs, 1, axis=in_axis), **attrs))


def _batched_ids():
    # per batch member: sorted ids with empty segments and ids past num_segments (dropped)
    return np.array([
        [0, 0, 1, 1, 1, 3, 3, 4],
        [0, 2, 2, 2, 2, 2, 5, 6],  # 5 and 6 >= num_segments: dropped
        [1, 1, 1, 1, 2, 2, 3, 3],  # segment 0 empty
    ])


def test_ov_segment_max_vmap_data_and_ids():
    fill_mode = "LOWEST"
    rng = np.random.default_rng(31)
    ids = _batched_ids()
    data = special_floats(rng, (3, 8, 2))
    fn = partial(ov.segment_max, num_segments=5, fill_mode=fill_mode)
    batched = jax.vmap(fn)(data, ids)
    looped = np.stack([np.asarray(fn(data[b], ids[b])) for b in range(3)])
    assert_same(batched, looped)
    for b in range(3):
        assert_same(looped[b], oracle_ov_segment_max(data[b], ids[b], 5, fill_mode))
    # batch axis in the middle of data (rows, batch, features) and last in ids
    data_mid = np.moveaxis(data, 0, 1)
    ids_last = np.ascontiguousarray(ids.T)
    assert_same(jax.vmap(fn, in_axes=(1, 1))(data_mid, ids_last), looped)
    assert_same(jax.jit(jax.vmap(fn, in_axes=(1, 1)))(data_mid, ids_last), looped)


@pytest.mark.parametrize("in_axis,num_segments", [(0, None), (1, 4), (2, None)])
def test_ov_segment_max_vmap_data_only(in_axis, num_segments):
    rng = np.random.default_rng(37)
    # ids are closed over (concrete), so num_segments may be inferred under vmap
    data = np.moveaxis(special_floats(rng, (5, 10, 3)), 0, in_axis)  # batch of (10, 3)
    fn = partial(ov.segment_max, segment_ids=SEGMENT_IDS, num_segments=num_segments,
                 fill_mode="LOWEST")
    looped = _loop(lambda d: fn(d), data, in_axis)
    assert_same(jax.vmap(lambda d: fn(d), in_axes=in_axis)(data), looped)
    assert_same(looped[3], oracle_ov_segment_max(np.take(data, 3, axis=in_axis), SEGMENT_IDS,
                                                 num_segments, "LOWEST"))


# --------------------------------------------------------------------------------------------
# check_grads on inputs with unique values
# --------------------------------------------------------------------------------------------

GRAD_MODES = ("fwd", "rev")


def test_ov_reduce_max_check_grads():
    with jax.enable_x64(True):
        x = unique_values(np.random.default_rng(41), (3, 4, 5))
        several = jax.jit(lambda d: (ov.reduce_max(d, (1,)),
                                     ov.reduce_max(d, (0, 2), keep_dims=True),
                                     ov.reduce_max(d, (0, 1, 2))))
        check_grads(several, (x,), order=1, modes=GRAD_MODES)
        check_grads(jax.jit(lambda d: ov.reduce_max(d, -1)), (x,), order=2, modes=GRAD_MODES)


def test_onnx_reduce_max_check_grads():
    with jax.enable_x64(True):
        x = unique_values(np.random.default_rng(43), (3, 4, 5))
        several = jax.jit(lambda d: (onnx.reduce_max(d, [1]), onnx.reduce_max(d, keepdims=0),
                                     onnx.reduce_max(d, (0, 2), keepdims=0)))
        check_grads(several, (x,), order=2, modes=GRAD_MODES)


@pytest.mark.parametrize("shape,attrs", [
    ((2, 2, 7, 7), POOL_CASES[0]),
    ((2, 2, 7, 7), POOL_CASES[1]),  # ceil: a row and column of windows only in padding
    ((2, 2, 7, 8), POOL_CASES[2]),  # same_lower, odd total padding at the start
    ((2, 2, 6, 6), POOL_CASES[4]),  # windows only in padding (pads >= kernel)
])
def test_ov_max_pool_check_grads(shape, attrs):
    with jax.enable_x64(True):
        x = unique_values(np.random.default_rng(47), shape)
        check_grads(jax.jit(lambda d: ov.max_pool(d, **attrs)), (x,), order=1,
                    modes=GRAD_MODES)


def test_ov_max_pool_check_grads_rank3_rank5_and_second_order():
    with jax.enable_x64(True):
        rng = np.random.default_rng(48)
        x3, x4, x5 = (unique_values(rng, s) for s in [(2, 3, 9), (1, 2, 7, 8), (1, 2, 4, 5, 5)])

        def several(a, b, c):
            return (ov.max_pool(a, kernel=3, strides=2, pads_begin=1, pads_end=2,
                                rounding_type="ceil"),
                    ov.max_pool(b, **POOL_CASES[3]),  # same_upper + ceil
                    ov.max_pool(c, kernel=2, strides=(1, 2, 2), auto_pad="same_lower"))

        check_grads(jax.jit(several), (x3, x4, x5), order=1, modes=GRAD_MODES)
        check_grads(jax.jit(lambda d: ov.max_pool(d, **POOL_CASES[1])), (x4[:, :1, :5, :5],),
                    order=2, modes=GRAD_MODES)


def test_ov_segment_max_check_grads():
    with jax.enable_x64(True):
        data = unique_values(np.random.default_rng(53), (10, 3))

        def several(d):  # exact count, ids dropped (4), empty segments padded (8)
            return tuple(ov.segment_max(d, SEGMENT_IDS, n, fill_mode=f)
                         for n, f in [(6, "LOWEST"), (4, "ZERO"), (8, "ZERO")])

        check_grads(jax.jit(several), (data,), order=1, modes=GRAD_MODES)


# --------------------------------------------------------------------------------------------
# Gradient tie rules against hand-computed cotangents
# --------------------------------------------------------------------------------------------

def _vjp(fn, x, ct):
    out, pullback = jax.vjp(fn, x)
    assert out.shape == ct.shape
    return np.asarray(pullback(jnp.asarray(ct, out.dtype))[0])


def _check_reduce_grad(x, ct, expected):
    """Eager and jitted cotangents along axis 1, and along axis 0 with keep_dims on x.T."""
    np.testing.assert_allclose(oracle_share_grad(x, 1, ct, skip_nan=True), expected)
    def fn(d):
        return ov.reduce_max(d, 1)

    np.testing.assert_allclose(_vjp(fn, x, ct), expected, rtol=1e-6)
    np.testing.assert_allclose(_vjp(jax.jit(fn), x, ct), expected, rtol=1e-6)
    fn0 = jax.jit(lambda d: ov.reduce_max(d, 0, keep_dims=True))
    np.testing.assert_allclose(_vjp(fn0, x.T, ct[None, :]), expected.T, rtol=1e-6)


def test_ov_reduce_max_gradient_ties_and_raised_outputs():
    low = float(lowest(np.float32))
    x = np.array([
        [1.0, 3.0, 3.0, 2.0],       # two-way tie: 1/2 each
        [5.0, 5.0, 0.0, 5.0],       # three-way tie: 1/3 each
        [-INF, -INF, -INF, -INF],   # raised to lowest(T): none
        [-INF, low, -INF, low],     # a real maximum equal to lowest(T): shared, not raised
        [INF, 1.0, INF, -INF],      # +inf wins, shared
        [-2.0, -INF, -7.0, -2.0],   # negative tie
    ], np.float32)
    ct = np.array([2.0, 3.0, 5.0, 13.0, 17.0, 19.0], np.float32)
    expected = np.array([
        [0, 1, 1, 0],
        [1, 1, 0, 1],
        [0, 0, 0, 0],
        [0, 6.5, 0, 6.5],
        [8.5, 0, 8.5, 0],
        [9.5, 0, 0, 9.5],
    ], np.float64)
    _check_reduce_grad(x, ct, expected)


def test_ov_reduce_max_gradient_with_nan():
    """NaN never wins and gets no cotangent; the other slices are unaffected by it."""
    x = np.array([
        [1.0, 3.0, 3.0, 2.0],       # no NaN in this slice: 1/2 each
        [5.0, 5.0, NAN, 5.0],       # NaN ignored, three-way tie: 1/3 each
        [NAN, NAN, NAN, NAN],       # all NaN -> lowest(T): none
        [-INF, NAN, -INF, NAN],     # only NaN and -inf -> lowest(T): none
        [NAN, -1.0, NAN, -4.0],     # -1 wins
    ], np.float32)
    ct = np.array([2.0, 3.0, 7.0, 11.0, 13.0], np.float32)
    expected = np.array([
        [0, 1, 1, 0],
        [1, 1, 0, 1],
        [0, 0, 0, 0],
        [0, 0, 0, 0],
        [0, 13, 0, 0],
    ], np.float64)
    _check_reduce_grad(x, ct, expected)


@pytest.mark.parametrize("with_nan", [False, True])
def test_ov_reduce_max_gradient_random_ties(with_nan):
    rng = np.random.default_rng(59)
    x = rng.integers(-2, 3, (5, 6, 7)).astype(np.float32)
    u = rng.random(x.shape)
    if with_nan:
        x[u < 0.1] = NAN
    x[u > 0.9] = -INF
    x[1, :, 3] = -INF
    ct = rng.integers(1, 9, (5, 7)).astype(np.float32)
    got = _vjp(jax.jit(lambda d: ov.reduce_max(d, 1)), x, ct)
    np.testing.assert_allclose(got, oracle_share_grad(x, 1, ct, skip_nan=True), rtol=1e-6)
    ct2 = rng.integers(1, 9, (6,)).astype(np.float32)
    got2 = _vjp(jax.jit(lambda d: ov.reduce_max(d, (0, 2))), x, ct2)
    np.testing.assert_allclose(got2, oracle_share_grad(x, (0, 2), ct2, skip_nan=True),
                               rtol=1e-6)


def test_ov_reduce_max_gradient_empty_slice():
    x = np.zeros((3, 0, 2), np.float32)
    out = ov.reduce_max(x, 1)
    assert_same(out, np.full((3, 2), lowest(np.float32)))
    g = jax.grad(lambda d: ov.reduce_max(d, 1).sum())(x)
    assert g.shape == (3, 0, 2)
    # a reduction mixing an empty axis with a non-empty one: still no gradient anywhere
    y = np.ones((0, 4), np.float32)
    gy = jax.grad(lambda d: ov.reduce_max(d, 0).sum())(y)
    assert gy.shape == (0, 4)


def test_onnx_reduce_max_gradient_ties():
    x = np.array([
        [1.0, 3.0, 3.0, 2.0],
        [5.0, 5.0, 5.0, -1.0],
        [-INF, -INF, 0.5, -INF],
        [-INF, -INF, -INF, -INF],  # -inf stays -inf and is a real four-way tie (as jnp.max)
    ], np.float32)
    ct = np.array([2.0, 3.0, 5.0, 8.0], np.float32)
    expected = np.array([[0, 1, 1, 0], [1, 1, 1, 0], [0, 0, 5, 0], [2, 2, 2, 2]], np.float64)
    np.testing.assert_allclose(oracle_share_grad(x, 1, ct, skip_nan=False), expected)
    for fn in (lambda d: onnx.reduce_max(d, [1], keepdims=0),
               jax.jit(lambda d: onnx.reduce_max(d, [-1], keepdims=0))):
        np.testing.assert_allclose(_vjp(fn, x, ct), expected, rtol=1e-6)
    # all axes: the single cotangent is shared by every global maximum
    y = np.array([[4.0, 1.0], [4.0, 4.0]], np.float32)
    g = jax.grad(lambda d: onnx.reduce_max(d, keepdims=0))(y)
    np.testing.assert_allclose(g, [[1 / 3, 0], [1 / 3, 1 / 3]], rtol=1e-6)


def test_ov_max_pool_gradient_hand_example():
    # 1x1x3x4, kernel 2, stride 1, explicit pads (1, 0) / (0, 1): 3x4 windows
    x = np.array([[[
        [7.0, 7.0, 1.0, NAN],
        [7.0, 2.0, 2.0, 2.0],
        [-INF, -INF, 2.0, -INF],
    ]]], np.float32)
    attrs = dict(kernel=2, strides=1, pads_begin=(1, 0), pads_end=(0, 1))
    ct = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4)
    # windows (row r covers input rows r-1..r, column c covers columns c..c+1):
    # r0: [7,7]->(0,0); [7,1]->(0,1); [1,NaN]->(0,2); [NaN,pad]->none (raised)
    # r1: [7,7;7,2]->(0,0); [7,1;2,2]->(0,1); [1,NaN;2,2]->(1,2); [NaN;2]->(1,3)
    # r2: [7,2;-inf,-inf]->(1,0); [2,2;-inf,2]->(1,1); [2,2;2,-inf]->(1,2); [2;-inf]->(1,3)
    expected = np.zeros((1, 1, 3, 4))
    for (r, c), (i, j) in {(0, 0): (0, 0), (0, 1): (0, 1), (0, 2): (0, 2),
                           (1, 0): (0, 0), (1, 1): (0, 1), (1, 2): (1, 2), (1, 3): (1, 3),
                           (2, 0): (1, 0), (2, 1): (1, 1), (2, 2): (1, 2),
                           (2, 3): (1, 3)}.items():
        expected[0, 0, i, j] += ct[0, 0, r, c]
    np.testing.assert_array_equal(oracle_ov_max_pool_grad(x, ct, **attrs), expected)
    def fn(d):
        return ov.max_pool(d, **attrs)

    np.testing.assert_array_equal(_vjp(fn, x, ct), expected)
    np.testing.assert_array_equal(_vjp(jax.jit(fn), x, ct), expected)


TIE_POOL_CASES = [
    ((2, 2, 6, 7), dict(kernel=3, strides=1, pads_begin=1, pads_end=1)),
    ((2, 2, 6, 7), dict(kernel=2, strides=2, pads_begin=0, pads_end=1, rounding_type="ceil")),
    ((2, 2, 5, 6), dict(kernel=(3, 2), strides=(2, 1), auto_pad="same_lower")),
    ((1, 2, 5, 5), dict(kernel=2, strides=1, pads_begin=3, pads_end=2)),  # padding-only windows
    ((2, 3, 11), dict(kernel=4, strides=1, pads_begin=2, pads_end=2, rounding_type="ceil")),
    ((1, 2, 4, 5, 4), dict(kernel=(2, 3, 2), strides=1, pads_begin=1, pads_end=(0, 1, 1))),
]


def test_ov_max_pool_gradient_ties_first_maximal():
    rng = np.random.default_rng(61)
    xs, cts = [], []
    for shape, attrs in TIE_POOL_CASES:
        x = rng.integers(0, 3, shape).astype(np.float32)  # many ties in every window
        u = rng.random(shape)
        x[u < 0.08] = NAN
        x[u > 0.9] = -INF
        x.reshape(-1, *shape[2:])[0] = -INF  # a whole channel raised to lowest(T)
        xs.append(x)
        cts.append(rng.integers(1, 5, oracle_ov_max_pool(x, **attrs).shape).astype(np.float32))

    @jax.jit
    def all_grads(xs, cts):  # one compilation for every case
        return [jax.vjp(lambda d, a=attrs: ov.max_pool(d, **a), x)[1](ct)[0]
                for (_, attrs), x, ct in zip(TIE_POOL_CASES, xs, cts, strict=True)]

    for (shape, attrs), x, ct, got in zip(TIE_POOL_CASES, xs, cts, all_grads(xs, cts), strict=True):
        np.testing.assert_array_equal(got, oracle_ov_max_pool_grad(x, ct, **attrs),
                                      err_msg=f"{shape} {attrs}")


def test_ov_max_pool_gradient_ties_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(67)
    x = rng.integers(0, 3, (2, 3, 9, 10)).astype(np.float32)
    ct = rng.integers(1, 5, (2, 3, 5, 5)).astype(np.float32)
    # kernel 3, stride 2, pad 1 each side (PyTorch pads with -inf): same windows as OpenVINO's
    attrs = dict(kernel=3, strides=2, pads_begin=1, pads_end=1)
    ours = _vjp(jax.jit(lambda d: ov.max_pool(d, **attrs)), x, ct)
    t = torch.tensor(x, requires_grad=True)
    out = torch.nn.functional.max_pool2d(t, kernel_size=3, stride=2, padding=1)
    assert tuple(out.shape) == ct.shape
    out.backward(torch.tensor(ct))
    np.testing.assert_array_equal(ours, t.grad.numpy())
    # ceil mode where PyTorch and OpenVINO emit the same windows
    attrs_ceil = dict(kernel=2, strides=2, rounding_type="ceil", pads_begin=0, pads_end=0)
    y = rng.integers(0, 3, (2, 3, 7, 7)).astype(np.float32)
    ct2 = rng.integers(1, 5, (2, 3, 4, 4)).astype(np.float32)
    ours2 = _vjp(jax.jit(lambda d: ov.max_pool(d, **attrs_ceil)), y, ct2)
    t2 = torch.tensor(y, requires_grad=True)
    torch.nn.functional.max_pool2d(t2, kernel_size=2, stride=2, ceil_mode=True).backward(
        torch.tensor(ct2))
    np.testing.assert_array_equal(ours2, t2.grad.numpy())


def test_jax_segment_max_tie_rule_is_even_sharing():
    # What jax.ops.segment_max does with ties, asserted concretely: tied maxima share evenly.
    data = jnp.array([1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 5.0])
    ids = jnp.array([0, 0, 0, 1, 3, 3, 3])
    ct = jnp.array([2.0, 4.0, 8.0, 6.0])
    g = jax.grad(lambda d: (jax.ops.segment_max(d, ids, 4) * ct).sum())(data)
    np.testing.assert_allclose(g, [0, 1, 1, 4, 2, 2, 2], rtol=1e-6)


def test_ov_segment_max_gradient_ties_hand_example():
    data = np.array([
        [1.0, -INF],    # segment 0
        [3.0, -INF],    # segment 0
        [3.0, NAN],     # segment 0
        [2.0, 4.0],     # segment 2
        [NAN, 4.0],     # segment 2
        [-INF, 4.0],    # segment 2
        [-1.0, NAN],    # segment 3
    ], np.float32)
    ids = np.array([0, 0, 0, 2, 2, 2, 3])
    ct = np.array([[2.0, 3.0], [5.0, 7.0], [11.0, 12.0], [13.0, 17.0], [19.0, 23.0]],
                  np.float32)
    expected = np.array([
        [0, 0],
        [1, 0],      # seg 0 feature 0: 3 and 3 share 2; feature 1 all -inf/NaN: raised, none
        [1, 0],
        [11, 4],     # seg 2 feature 0: 2 wins (NaN, -inf lose); feature 1: three-way tie
        [0, 4],
        [0, 4],
        [13, 0],     # seg 3: -1 wins; NaN gets none; segment 1 and 4 are empty: none
    ], np.float64)
    np.testing.assert_allclose(oracle_segment_grad(data, ids, 5, ct), expected)
    eager = _vjp(lambda d: ov.segment_max(d, ids, 5, fill_mode="ZERO"), data, ct)
    np.testing.assert_allclose(eager, expected, rtol=1e-6)
    jitted = _vjp(jax.jit(lambda d: ov.segment_max(d, ids, 5, fill_mode="LOWEST")), data, ct)
    np.testing.assert_allclose(jitted, expected, rtol=1e-6)


def test_ov_segment_max_gradient_random_ties():
    rng = np.random.default_rng(71)
    ids = np.sort(rng.integers(0, 9, 30))
    ids[ids == 4] = 5  # segment 4 empty
    data = rng.integers(-2, 2, (30, 4)).astype(np.float32)
    u = rng.random(data.shape)
    data[u < 0.1] = NAN
    data[u > 0.9] = -INF
    num_segments = 11  # segments 9, 10 empty; ids past it would be dropped
    ct = rng.integers(1, 6, (num_segments, 4)).astype(np.float32)
    got = _vjp(jax.jit(lambda d: ov.segment_max(d, ids, num_segments, fill_mode="ZERO")),
               data, ct)
    np.testing.assert_allclose(got, oracle_segment_grad(data, ids, num_segments, ct), rtol=1e-6)
    # dropped ids (>= num_segments) pass no gradient
    got_small = _vjp(lambda d: ov.segment_max(d, ids, 3, fill_mode="LOWEST"), data, ct[:3])
    np.testing.assert_allclose(got_small, oracle_segment_grad(data, ids, 3, ct[:3]), rtol=1e-6)
    assert not got_small[ids >= 3].any()


# --------------------------------------------------------------------------------------------
# No retrace on a second call
# --------------------------------------------------------------------------------------------

def _retrace_check(first, again, changed):
    """`first()` warms up; `again()` (same static args and shapes) must trace nothing;
    `changed()` (new shape or static arg) must trace, which shows the counter works."""
    first()
    with TRACES:
        again()
    assert TRACES.count == 0, f"{TRACES.count} retrace(s) on a second identical call"
    with TRACES:
        changed()
    assert TRACES.count >= 1


def test_no_retrace_ov_reduce_max():
    rng = np.random.default_rng(73)
    x, y = special_floats(rng, (3, 5, 4)), special_floats(rng, (3, 5, 4))
    _retrace_check(lambda: ov.reduce_max(x, (1,), keep_dims=True),
                   lambda: [ov.reduce_max(y, a, keep_dims=k)
                            for a, k in [((1,), True), ([1], 1), (np.array([1]), True),
                                         (-2, True), (np.int64(1), np.bool_(True))]],
                   lambda: ov.reduce_max(y[:2], (1,), keep_dims=True))


def test_no_retrace_ov_reduce_logical_or():
    x = np.random.default_rng(79).random((4, 6)) < 0.3
    _retrace_check(lambda: ov.reduce_logical_or(x, 0),
                   lambda: [ov.reduce_logical_or(~x, a) for a in (0, [0], (-2,))],
                   lambda: ov.reduce_logical_or(x, 1))


def test_no_retrace_onnx_reduce_max():
    x, y = (special_floats(np.random.default_rng(s), (3, 5)) for s in (1, 2))
    _retrace_check(lambda: onnx.reduce_max(x, [1], keepdims=0),
                   lambda: [onnx.reduce_max(y, a, keepdims=k)
                            for a, k in [([1], 0), ((1,), False), (-1, 0), (np.array([1]), 0)]],
                   lambda: onnx.reduce_max(y, [1], keepdims=1))


def test_no_retrace_ov_max_pool():
    x, y = (special_floats(np.random.default_rng(s), (1, 2, 6, 7)) for s in (3, 4))
    attrs = dict(kernel=2, strides=2, pads_begin=0, pads_end=1, rounding_type="ceil")
    spellings = [attrs,
                 dict(kernel=(2, 2), strides=[2, 2], pads_begin=(0, 0), pads_end=np.array([1, 1]),
                      rounding_type="CEIL", auto_pad=None),
                 dict(kernel=np.int64(2), strides=2, pads_end=1, rounding_type="ceil",
                      auto_pad="explicit")]
    _retrace_check(lambda: ov.max_pool(x, **attrs),
                   lambda: [ov.max_pool(y, **a) for a in spellings],
                   lambda: ov.max_pool(y, **dict(attrs, rounding_type="floor")))


def test_no_retrace_ov_segment_max():
    rng = np.random.default_rng(83)
    x, y = special_floats(rng, (10, 3)), special_floats(rng, (10, 3))
    other_ids = np.array([0, 1, 1, 2, 2, 2, 2, 3, 5, 5])  # same length and max: same shapes
    _retrace_check(lambda: ov.segment_max(x, SEGMENT_IDS, fill_mode="ZERO"),
                   lambda: [ov.segment_max(y, i, n, fill_mode=f)
                            for i, n, f in [(SEGMENT_IDS, None, "ZERO"), (other_ids, 6, "zero"),
                                            (other_ids, np.int64(6), "ZERO"),
                                            (jnp.asarray(other_ids), np.array(6), "ZERO")]],
                   lambda: ov.segment_max(y, SEGMENT_IDS, 7, fill_mode="ZERO"))


def test_no_retrace_under_jit_wrapper():
    """A user's jitted wrapper with static_argnames traces once per static-argument set."""
    traces = []

    @partial(jax.jit, static_argnames=("axes", "kernel", "num_segments"))
    def wrapper(x, ids, axes, kernel, num_segments):
        traces.append(1)
        return (ov.reduce_max(x, axes), onnx.reduce_max(x, axes),
                ov.reduce_logical_or(x > 0, axes),
                ov.max_pool(x[None, None], kernel=kernel, strides=1),
                ov.segment_max(x, ids, num_segments, fill_mode="ZERO"))

    rng = np.random.default_rng(89)
    ids = np.array([0, 0, 1, 3])
    wrapper(special_floats(rng, (4, 5)), ids, (1,), (2, 2), 4)
    wrapper(special_floats(rng, (4, 5)), ids + 0, (1,), (2, 2), 4)
    assert len(traces) == 1
    wrapper(special_floats(rng, (4, 5)), ids, (0,), (2, 2), 4)
    assert len(traces) == 2


# --------------------------------------------------------------------------------------------
# The jaxpr holds the intended primitive
# --------------------------------------------------------------------------------------------

def _prims(fn, *args):
    # an outer jit nests the operator one level deeper (a jit/pjit equation)
    return primitive_names(jax.make_jaxpr(jax.jit(fn))(*args))


def test_primitive_collector_sees_nested_jaxprs():
    x = jnp.ones(3)
    names = _prims(lambda v: lax.cond(v[0] > 0, lambda: jnp.sin(v), lambda: jnp.cos(v)), x)
    assert {"sin", "cos", "cond"} <= set(names)
    assert "sin" not in primitive_names(jax.make_jaxpr(jnp.cos)(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16, np.int8, np.uint8,
                                   np.int32])
def test_jaxpr_reductions(dtype):
    x = np.zeros((3, 4, 5), dtype)
    for names in (_prims(lambda d: ov.reduce_max(d, (0, 2)), x),
                  _prims(lambda d: ov.reduce_max(d, 1, keep_dims=True), x)):
        assert "reduce_max" in names
        assert "reduce" not in names and "reduce_window" not in names
    names = _prims(lambda d: onnx.reduce_max(d, [1]), x)
    assert "reduce_max" in names and "reduce" not in names


def test_jaxpr_logical_or():
    x = np.zeros((3, 4), bool)
    for names in (_prims(lambda d: ov.reduce_logical_or(d, 1), x),
                  _prims(lambda d: onnx.reduce_max(d, [0], keepdims=0), x)):
        assert "reduce_or" in names
        assert "reduce" not in names and "reduce_max" not in names


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16, np.int8, np.uint8])
@pytest.mark.parametrize("shape,attrs", [((1, 2, 6, 7), POOL_CASES[1]),
                                         ((1, 2, 6, 7), POOL_CASES[2]),
                                         ((1, 2, 6, 7), POOL_CASES[4]),
                                         TIE_POOL_CASES[4], TIE_POOL_CASES[5]])
def test_jaxpr_max_pool(dtype, shape, attrs):
    names = _prims(lambda d: ov.max_pool(d, **attrs), np.zeros(shape, dtype))
    assert "reduce_window_max" in names
    assert "reduce_window" not in names and "reduce" not in names


def test_jaxpr_max_pool_gradient_keeps_windowed_primitive():
    attrs = POOL_CASES[1]
    names = _prims(jax.grad(lambda d: ov.max_pool(d, **attrs).sum()), np.zeros((1, 2, 6, 7)))
    assert "reduce_window" not in names


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_jaxpr_segment_max(dtype):
    data = np.zeros((10, 3), dtype)
    for names in (_prims(lambda d: ov.segment_max(d, SEGMENT_IDS, fill_mode="ZERO"), data),
                  _prims(lambda d, i: ov.segment_max(d, i, 6, fill_mode="LOWEST"), data,
                         SEGMENT_IDS)):
        assert "scatter-max" in names
