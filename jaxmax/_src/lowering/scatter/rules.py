"""The values and gradients of a max-scatter, per rule, as closed forms built from XLA scatters.

For a target t the sequence is ``e0, e1, ..., en``: ``e0`` is the operand's value (or lowest(T)
for a touched target when the initial value is not used), then the updates routed to t in
row-major order over the updates. Position ``p`` numbers them (``e0`` at 0, the updates from 1).
Targets no update reaches keep the operand bit for bit. The rules:

* ``"maximum"``: the IEEE-754-2019 ``maximum`` of the sequence (any NaN gives NaN; ``+0``
  beats ``-0`` in every order): one XLA scatter-max, which is that operation on CPU.
* ``"acc_gt"``: the fold ``acc = acc > u ? acc : u``. A NaN element makes every later compare
  false, so the result is NaN when the last element is NaN, else the maximum of the elements
  after the last NaN, with the last of equal elements winning (the sign of a zero result is that
  of the tail's last zero).
* ``"acc_lt"``: the fold ``acc = acc < u ? u : acc``. A NaN ``e0`` sticks, NaN updates are
  skipped, and the earliest of equal elements wins (``e0`` first).

Integers and bool have no NaN and no signed zero, so every rule is one scatter-max (on bool that
is logical OR). float32 and float64 off a mesh take `scatter_combiner`'s scatters, whose
combiner reads the bits (`_combined`): one pass over the unmodified updates is the exact IEEE
``maximum`` (and, for ``acc_lt``, the max with NaN updates skipped), so ``"maximum"`` is that
scatter alone; a fold differs from it only where a NaN reached a target (``acc_gt``: the closed
form below, on the tail after the last NaN) or where a ``+0`` result had a ``-0`` among its
elements (``acc_lt``: one scatter of the bits' minimum finds them; ``acc_gt``: a float sum says
whether any ``-0`` is there; one scatter of zero positions gives the fold's sign). With one
index per update element the combiner has nothing to vectorise over, so that form runs XLA's
float scatter-max first and keeps it when its result shows it exact. ``acc_gt``'s stages branch
on float flags (`geometry.when`), so that all its conditionals share one predicate kernel: XLA
compiles each distinct kernel of a program apart, about 10 ms apiece. Other floats (and a JAX
without the private primitive) start with XLA's float scatter-max: it is the IEEE ``maximum``
except that it flushes a subnormal result to zero, and on sequences without NaN it is every fold
but for the sign of a zero tie. So when its result holds no zero and no NaN it is exact for
every rule (two float sums decide, ``lax.cond``). Otherwise: ``"maximum"`` redoes the scatter on
ordered integer keys when a subnormal is present, and a fold keeps the fast result when no NaN
reached a target (read from the result), no subnormal was flushed and no ``-0`` can make a zero
tie differ; else a few extra scatters, each only where needed: the masked scatter on keys after
the last NaN when a NaN reached a target or a subnormal is present (else the fast result stands
for the plain max), the sign of the last (first) zero when a result is zero. The subnormal and
zero tests are a float sum first (vectorised, as fast as a read) and a bit test (about seven
reads) only when the sum cannot rule them out. On a mesh every float max runs on the keys (XLA's
cross-device max is not exact). Zero and sign tests and selects next to them read the bits,
because XLA's CPU float compare flushes subnormals to zero.

Gradients (`custom_vjp`; the index has none): ``"maximum"`` shares a target's cotangent evenly
among the sequence's elements equal to the result (``-0 == +0``; the NaN elements when it is
NaN); the folds send it whole to the element they selected (``acc_gt``: the last equal element
after the last NaN, ``en`` when the result is NaN; ``acc_lt``: the earliest equal non-NaN update
or ``e0``, ``e0`` when it is NaN). With the initial value unused, ``e0`` of a touched target
receives nothing. Dropped updates receive 0.
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import order
from jaxmax._src.lowering.order import select_bits as _select
from jaxmax._src.lowering.scatter import combiner as scatter_combiner
from jaxmax._src.lowering.scatter.geometry import (
    Geometry,
    any_true,
    either,
    signed_index_dtype,
    when,
)

RULES = ("maximum", "acc_gt", "acc_lt")


def apply(rule: str, geom: Geometry, use_init: bool, data: jax.Array, index: jax.Array,
          updates: jax.Array) -> jax.Array:
    """The scatter of `updates` onto `data` at `index` by `rule`; differentiable for floats."""
    if not dtypes.is_floating(data.dtype):
        init = _start(geom, use_init, data, index)
        return geom.scatter_fast("max", init, index, updates)
    return _float_scatter(rule, geom, use_init, data, index, updates)


def _maybe_tiny(x):
    """Whether `x` may hold a zero or a subnormal (never false when it does): one float sum,
    which XLA's CPU runs as a vectorised pass at the speed of a read, where a bit test in front
    of a reduction is not fused into it and costs about seven reads. A subnormal, read as zero
    by a flushing compare or as itself, scales below 1; NaN and overflow only say "maybe"."""
    scale = np.array(1 / float(jnp.finfo(x.dtype).tiny), x.dtype)  # a power of two: exact
    below_one = 1 - jnp.minimum(jnp.abs(x) * scale, np.array(1, x.dtype))
    return ~(jnp.sum(below_one, dtype=x.dtype) == 0)


def _bits_subnormal(x):
    """Whether `x` holds a subnormal number, read from the bits (a float compare flushes them):
    the magnitude bits converted to a float, whose min over the nonzero ones is a float
    reduction (fast to compile); the conversion is exact below the smallest normal's bits."""
    wide = np.float64 if np.dtype(x.dtype).itemsize == 8 else np.float32
    smallest_normal = order.smallest_normal_bits(x.dtype).astype(wide)
    magnitude = order.magnitude_bits(x).astype(wide)
    return jnp.min(jnp.where(magnitude > 0, magnitude, wide(np.inf)),
                   initial=wide(np.inf)) < smallest_normal


def _any_subnormal(x):
    """Whether `x` holds a subnormal: the bit test only when the fast sum cannot rule one out."""
    return lax.cond(_maybe_tiny(x), _bits_subnormal, lambda x: jnp.array(False), x)


def _start(geom: Geometry, use_init: bool, data, index):
    """``e0`` of every target: `data`, or lowest(T) where an update lands when it is unused."""
    if use_init:
        return data
    touched = geom.scatter_fast("max", jnp.zeros(data.shape, bool), index,
                                jnp.ones(geom.updates_shape, bool))
    low = np.array(False) if dtypes.is_bool(data.dtype) else dtypes.lowest(data.dtype)
    return jnp.where(touched, low, data)


def _is_zero(x):
    """``x == ±0`` read from the bits (a flushed subnormal is not zero here)."""
    return order.magnitude_bits(x) == 0


def _sign(x):
    """The sign bit, as a bool (NaN and zeros included)."""
    signed = np.dtype(f"int{8 * np.dtype(x.dtype).itemsize}")
    return lax.lt(lax.bitcast_convert_type(x, signed), signed.type(0))


def _is_neg_zero(x):
    return _is_zero(x) & _sign(x)


def _positions(geom: Geometry, dtype):
    n = math.prod(geom.updates_shape)
    return (lax.iota(dtype, n) + dtype.type(1)).reshape(geom.updates_shape)


def _key_dtype(geom: Geometry) -> np.dtype:
    # keys are 2 * p + sign, p <= the number of updates
    return signed_index_dtype(2 * math.prod(geom.updates_shape) + 2)


def _signed_zero(sign_bit, dtype):
    return order.select(sign_bit, np.array(-0.0, dtype), np.array(0.0, dtype))


def _forward(rule, geom, use_init, data, index, u):
    init = _start(geom, use_init, data, index)
    if geom.keys:
        return _exact(rule, geom, index, init, u)
    if scatter_combiner.supports(data.dtype):
        return _combined(rule, geom, index, init, u)
    # without the combiner scatter, XLA's float scatter-max first: it is the IEEE maximum,
    # except that it flushes a subnormal result to zero, and it is every fold on NaN-free
    # sequences but for the sign of a zero tie; so a result without a zero (and, for the
    # folds, without a NaN) is exact as it stands
    fast = geom.scatter_fast("max", init, index, u)
    # float sums, which XLA's CPU runs vectorised (a compare in front of a reduction costs
    # several times more, and a vectorised min or max may drop a NaN): the sum of `fast` is NaN
    # when it holds a NaN (or both infinities), `_maybe_tiny` finds a zero (a flushed
    # subnormal is one) when it holds no NaN; with a NaN the IEEE rule asks the compare
    nan_or_infinities = jnp.isnan(jnp.sum(fast))
    if rule == "maximum":
        suspect = lax.cond(nan_or_infinities, lambda fast: any_true(fast == 0), _maybe_tiny,
                           fast)
    else:
        suspect = nan_or_infinities | _maybe_tiny(fast)
    keyed = dataclasses.replace(geom, keys=True)

    def recheck(init, u):
        if rule == "maximum":  # the bits of each only when its own float sum asks
            subnormal = _any_subnormal(init) | _any_subnormal(u)
            return lax.cond(subnormal, partial(_exact, rule, keyed, index),
                            lambda init, u: fast, init, u)
        # a fold is `fast` unless a NaN reached a target, a subnormal was flushed, or a zero
        # tie has both signs; the bits are read only when the fast sums find a zero or a
        # subnormal (-0 in `init` matters only beside a zero update, but costs no extra pass)
        neg_zero, subnormal = lax.cond(_maybe_tiny(init) | _maybe_tiny(u), _odd_bits,
                                       lambda init, u: (jnp.array(False),) * 2, init, u)
        nan = any_true(jnp.isnan(fast))
        fold = nan | neg_zero
        return lax.cond(fold | subnormal,
                        partial(_exact, rule, keyed, index, fold=fold, nan=nan,
                                fast=(fast, subnormal)),
                        lambda init, u: fast, init, u)

    return lax.cond(suspect, recheck, lambda init, u: fast, init, u)


def _combined(rule, geom, index, init, u):
    """The rule off a mesh from scatters whose combiner reads the bits (`scatter_combiner`):
    one pass over the unmodified updates is exact for the IEEE maximum on every input, so no
    data shape costs more. A fold is that maximum (NaN updates skipped for ``acc_lt``, whose
    NaN ``e0`` sticks) except where a NaN reaches a target (``acc_gt``: the closed form) or
    where a ``+0`` result had a ``-0`` among its elements (the sign of the fold's zero: for
    ``acc_lt`` one scatter of the bits' minimum finds those targets; then one scatter of zero
    positions). ``acc_gt`` is `_combined_acc_gt`."""
    if rule == "maximum":
        return geom.scatter_fast("ieee_max", init, index, u, elements=_checked_ieee)
    if rule == "acc_gt":
        return _combined_acc_gt(geom, index, init, u)
    top = _select(jnp.isnan(init), init, geom.scatter_fast("max_skip_nan", init, index, u,
                                                             elements=_checked_skip_nan))

    def zero_ties(top):
        low = geom.scatter_fast("bits_min", init, index, u)
        tie = any_true(_is_zero(top) & ~_sign(top) & _is_neg_zero(low))
        return lax.cond(tie, partial(_zero_signs, rule, geom, index, init, u),
                        lambda top: top, top)

    # a float sum rules out a zero result at the speed of a read
    return lax.cond(_maybe_tiny(top), zero_ties, lambda top: top, top)


def _combined_acc_gt(geom, index, init, u):
    """``acc_gt`` off a mesh: the IEEE maximum of every sequence, then each exact form only
    where the data needs it, every stage a `when` on a flag (one predicate kernel for all).

    The per-element scatter is XLA's float max (the combiner has nothing to vectorise over
    there): a zero result meeting a subnormal among the elements takes the closed form, which
    is exact on any input (one copy for the NaN and the flush). Clean data (no zero, subnormal
    or NaN result) costs one float sum after the scatter."""
    top = geom.scatter_fast("ieee_max", init, index, u, elements=_float_max)
    per_element = _per_element(geom, index)

    def closed_form(top):
        # the maximum of the elements after the last NaN, NaN below every number: a target
        # whose last NaN is an update starts at NaN and its earlier updates are masked to NaN,
        # so its result is NaN exactly when the last element is (no element after it); a NaN
        # `e0` starts as itself, so an untouched target keeps its bits. Exact on any input.
        each, at = geom.per_element(index)
        kd = _key_dtype(geom)
        p = _positions(each, kd)
        lastnan = each.scatter("max", order.select(jnp.isnan(init), kd.type(0), kd.type(-1)), at,
                               order.select(jnp.isnan(u), p, kd.type(-1)))
        tail = p > each.gather(lastnan, at, kd.type(0))
        nan = jnp.array(np.nan, u.dtype)
        out = each.scatter("max_skip_nan", _select(lastnan > 0, nan, init), at,
                           _select(tail, u, nan))
        return out, _tiny_flag(out)

    def flushed():
        # XLA's float max may have flushed a subnormal result to zero: a subnormal among the
        # elements (the bits read only when a float sum cannot rule one out)
        return either(_subnormal_flag(init), _subnormal_flag, u)

    def zero_ties(top):
        # where the result is a zero and a -0 is among the elements, the fold's sign: that of
        # the last zero of the tail after the last NaN, which is the last of the whole sequence
        # (where the tail's maximum is a zero the tail holds a zero; a NaN result is no zero,
        # and an untouched target's zero is its own)
        tie = either(_neg_zero_flag(init), _neg_zero_flag, u)
        return when(tie, partial(_zero_signs, "acc_gt", geom, index, init, u), _same, top)

    def suspect(top, odd):
        # the closed form where a NaN reached a target (the float sum is NaN; both infinities
        # also make it so, where the closed form is exact too, only slower) or a flush is
        # possible; else the result holds no NaN, so `odd` says that it may hold a zero
        redo = _nan_flag(top)
        if per_element is not None:
            redo = either(redo, lambda: when(per_element, flushed, _no_flag))
        top, tiny = when(redo, closed_form, lambda top: (top, odd), top)
        return when(tiny, zero_ties, _same, top)

    # clean data (no NaN, zero or subnormal result) costs this one float sum
    odd = _odd_flag(top)
    return when(odd, suspect, lambda top, odd: top, top, odd)


def _same(x):
    return x


def _no_flag(*_):
    return jnp.zeros((), np.float32)


def _odd_flag(x):
    """A `when` flag, NaN when `x` holds a NaN or may hold a zero or a subnormal: one float sum,
    which XLA's CPU runs as a vectorised pass at the speed of a read. Its terms ``sqrt(|x| /
    tiny - 1)`` are NaN below the smallest normal (a subnormal read as zero by a flushing
    operation, or as itself, scales below 1) and at a NaN, and not NaN elsewhere (an infinity
    and an overflow give ``+inf``, never ``-inf``)."""
    return _sum(lax.sqrt(lax.sub(lax.mul(lax.abs(x), _inverse_tiny(x)), np.array(1, x.dtype))))


def _tiny_flag(x):
    """A `when` flag, NaN when `x` may hold a zero or a subnormal; at a NaN of `x` it may be or
    not (the vectorised min drops a NaN, `_odd_flag`'s sum is cheaper where it is wanted):
    terms ``sqrt(min(|x| / tiny, 1) - 1)``."""
    one = np.array(1, x.dtype)
    return _sum(lax.sqrt(lax.sub(lax.min(lax.mul(lax.abs(x), _inverse_tiny(x)), one), one)))


def _inverse_tiny(x):
    return np.array(1 / float(jnp.finfo(x.dtype).tiny), x.dtype)  # a power of two: exact


def _nan_flag(x):
    """A `when` flag, raised when `x` holds a NaN: the float sum of ``|x|`` (NaN there, never
    ``-inf``)."""
    return _sum(lax.abs(x))


def _neg_zero_flag(x):
    """A `when` flag, raised when `x` may hold a ``-0``: the float sum of ``1 / x``, ``-inf``
    at a ``-0`` (and at a negative subnormal, which a flushing division reads as one), so the
    sum is ``-inf`` or NaN there (a NaN or tiny negative numbers may raise it too)."""
    return _sum(lax.div(np.array(1, x.dtype), x))


def _sum(x):
    """The float32 sum of every element of floating `x` (built from lax: a `when` flag)."""
    x = x.astype(np.float32)
    return lax.reduce(x, np.float32(0), lax.add, tuple(range(x.ndim)))


def _subnormal_flag(x):
    """A `when` flag, NaN when `x` holds a subnormal number: the bit test (a float compare
    flushes them) only when the float sum `_odd_flag` cannot rule one out. The magnitude bits,
    converted to a float (exact below the smallest normal's bits), give terms ``sqrt((m - s) *
    m)``, NaN exactly when ``0 < m < s``, the smallest normal's bits."""
    def bits(x):
        wide = np.float64 if np.dtype(x.dtype).itemsize == 8 else np.float32
        smallest_normal = order.smallest_normal_bits(x.dtype).astype(wide)
        magnitude = order.magnitude_bits(x).astype(wide)
        return _sum(lax.sqrt(lax.mul(lax.sub(magnitude, smallest_normal), magnitude)))

    return when(_odd_flag(x), bits, _no_flag, x)


def _float_max(geom, operand, index, values):
    """XLA's float scatter-max (it flushes a subnormal result to zero)."""
    return geom.scatter("max", operand, index, values)


def _per_element(geom: Geometry, index):
    """A `when` flag, NaN when the scatter runs per element (None where it never does): a
    `detect` index whose rows are not constant, or an `elements` geometry."""
    if geom.kind == "detect":
        return index[0]
    return jnp.array(np.nan, np.float32) if geom.kind == "elements" else None


def _after_last_nan(geom, index, init, u, kd, float_max):
    """The position of each target's last NaN (0 for a NaN ``e0``, -1 for none) and the
    maximum of the elements after it (``e0`` counted when it is not NaN)."""
    p = _positions(geom, kd)
    minus_inf = dtypes.max_identity(u.dtype)
    lastnan = geom.scatter("max", jnp.where(jnp.isnan(init), kd.type(0), kd.type(-1)), index,
                           jnp.where(jnp.isnan(u), p, kd.type(-1)))
    tail = p > geom.gather(lastnan, index, kd.type(0))
    top = geom.scatter(float_max, _select(lastnan < 0, init, minus_inf), index,
                       _select(tail, u, minus_inf))
    return lastnan, top


# One index per update element leaves the combiner nothing to vectorise over: there it costs
# 1.6x XLA's float scatter-max, so the per-element form runs that first and keeps it when its
# result shows it exact (no zero, which a flushed subnormal would be; for the NaN-skipping
# order, no NaN either), the combiner otherwise.
def _checked_ieee(geom, operand, index, values):
    fast = geom.scatter("max", operand, index, values)
    suspect = lax.cond(jnp.isnan(jnp.sum(fast)), lambda fast: any_true(fast == 0), _maybe_tiny,
                       fast)

    def recheck(operand, values):
        subnormal = _any_subnormal(operand) | _any_subnormal(values)
        return lax.cond(subnormal, lambda o, v: geom.scatter("ieee_max", o, index, v),
                        lambda o, v: fast, operand, values)

    return lax.cond(suspect, recheck, lambda operand, values: fast, operand, values)


def _checked_skip_nan(geom, operand, index, values):
    fast = geom.scatter("max", operand, index, values)
    nan = jnp.isnan(jnp.sum(fast))

    def recheck(operand, values):
        redo = nan | _any_subnormal(operand) | _any_subnormal(values)
        return lax.cond(redo, lambda o, v: geom.scatter("max_skip_nan", o, index, v),
                        lambda o, v: fast, operand, values)

    return lax.cond(nan | _maybe_tiny(fast), recheck, lambda operand, values: fast, operand,
                    values)


def _zero_signs(rule, geom, index, init, u, top):
    """`top` with each zero result given the fold's sign: that of the sequence's last zero
    (``acc_gt``: `top` is the maximum of the elements after the last NaN, and where it is a
    zero they hold one, so the last zero of the whole sequence is theirs) or of its first
    (``acc_lt``, ``e0`` first); one scatter of zero positions, ``2 * p + sign``."""
    kd = _key_dtype(geom)
    p = _positions(geom, kd)
    zero_key = p * kd.type(2) + _sign(u).astype(kd)
    zero_top = _is_zero(top)
    if rule == "acc_gt":
        key = geom.scatter("max", order.select(_is_zero(init), _sign(init).astype(kd), kd.type(-1)),
                           index, order.select(_is_zero(u), zero_key, kd.type(-1)))
        return _select(zero_top, _signed_zero((key & 1) == 1, u.dtype), top)
    big = kd.type(np.iinfo(kd).max)
    first_zero = geom.scatter("min", jnp.full(init.shape, big, kd), index,
                              order.select(_is_zero(u), zero_key, big))
    out = _select(zero_top, _signed_zero((first_zero & 1) == 1, u.dtype), top)
    return _select(zero_top & _is_zero(init), init, out)


def _odd_bits(init, u):
    """Whether `init` or `u` holds a -0 (a fold may then differ from the plain max), and
    whether either holds a subnormal, from the bits."""
    neg_zero_u, subnormal_u = _marks(u)
    neg_zero_init, subnormal_init = _marks(init)
    return neg_zero_u | neg_zero_init, subnormal_u | subnormal_init


def _marks(x):
    """Whether `x` holds a -0 and whether it holds a subnormal: both tests in one pass (a
    variadic float max), since each bit test in front of a reduction costs several reads."""
    one, zero = np.float32(1), np.float32(0)
    neg_zero = jnp.where(_is_neg_zero(x), one, zero)
    subnormal = jnp.where(order.is_subnormal(x), one, zero)
    found = lax.reduce((neg_zero, subnormal), (zero, zero),
                       lambda a, b: (lax.max(a[0], b[0]), lax.max(a[1], b[1])),
                       tuple(range(x.ndim)))
    return found[0] > 0, found[1] > 0


def _exact(rule, geom, index, init, u, fold=None, nan=None, fast=None):
    """The rule's result on every input: one scatter-max when the sequences hold no NaN or -0
    that could make the fold differ from it, else the closed form of the fold. `fold` and
    `nan` (a NaN may reach a target) are found here when not given; `fast` is XLA's float
    scatter-max with whether a subnormal may have been flushed in it, when the caller has it
    (then it stands for the plain max, and a subnormal takes the masked scatter on keys: one
    scatter fewer to compile)."""
    def plain_max(init, u):
        return geom.scatter_fast("max", init, index, u)

    if rule == "maximum":
        return plain_max(init, u)
    minus_inf = dtypes.max_identity(u.dtype)
    kd = _key_dtype(geom)
    if fold is None:
        nan_u = any_true(jnp.isnan(u))
        nan = nan_u | any_true(jnp.isnan(init)) if rule == "acc_gt" else nan_u
        fold = nan | any_true(_is_neg_zero(u)) | any_true(_is_neg_zero(init))
    # the masked scatter is needed where a NaN may reach a target, or where the caller's fast
    # result may hold a flushed subnormal; otherwise the plain max stands (the caller's, if any)
    masked = nan if fast is None else nan | fast[1]
    plain = plain_max if fast is None else (lambda init, u: fast[0])
    float_max = "max"  # on keys: this path runs on a mesh or without the combiner scatter

    # each part runs only when the input needs it (a NaN, a zero result): each costs a full
    # pass over the updates, several times the plain max
    def acc_gt(init, u):
        # a `detect` index's per-element offsets, built once for every part below (each part
        # had rebuilt them from the raw index)
        each, at = geom.per_element(index)

        def with_nan(init, u):
            return _after_last_nan(each, at, init, u, kd, float_max)

        def without_nan(init, u):
            return jnp.full(init.shape, -1, kd), plain(init, u)

        lastnan, top = lax.cond(masked, with_nan, without_nan, init, u)

        # the sign of the last zero of the whole sequence: where the tail's maximum is a
        # zero, the tail holds a zero, so the last zero lies in it (no NaN mask needed)
        out = lax.cond(fold & any_true(_is_zero(top)),
                       partial(_zero_signs, "acc_gt", each, at, init, u), lambda top: top, top)
        last = each.last_positions(at, kd)
        out = _select(lastnan == last, jnp.array(np.nan, u.dtype), out)
        return _select(last == 0, init, out)

    def acc_lt(init, u):
        top = lax.cond(masked, lambda init, u: geom.scatter(
            float_max, init, index, _select(jnp.isnan(u), minus_inf, u)), plain, init, u)

        return lax.cond(fold & any_true(_is_zero(top)),
                        partial(_zero_signs, "acc_lt", geom, index, init, u), lambda top: top,
                        top)

    # one program for every case (the plain max is the NaN-free branch): fewer copies of the
    # scatters compile faster
    return (acc_gt if rule == "acc_gt" else acc_lt)(init, u)


def gradients(rule, geom, use_init, data, index, u, out, g):
    """The cotangents of `data` and `updates` (`u`) for output `out` (the rule's result) and
    its cotangent `g`: `apply`'s gradient, and that of a caller that found `out` another way
    (`scatter.across`)."""
    init = _start(geom, use_init, data, index)
    at = partial(geom.gather, index=index)  # floats through their bits (zero signs kept)
    valid = at(jnp.ones(data.shape, bool), fill=False)
    out_u = at(out, fill=0)
    g_u = at(g, fill=0)
    eq_init = order.equal_values(init, out)
    eq_u = order.equal_values(u, out_u) & valid
    if rule == "maximum":
        count_dtype = np.float64 if np.dtype(g.dtype).itemsize == 8 else np.float32
        count = geom.scatter("add", eq_init.astype(count_dtype), index, eq_u.astype(count_dtype))
        share = (g.astype(count_dtype) / jnp.maximum(count, 1)).astype(g.dtype)
        zero = jnp.zeros((), g.dtype)
        return (jnp.where(eq_init, share, zero),
                jnp.where(eq_u, at(share, fill=0), zero))
    kd = _key_dtype(geom)
    p = _positions(geom, kd)
    if rule == "acc_gt":
        lastnan = geom.scatter("max", jnp.where(jnp.isnan(init), kd.type(0), kd.type(-1)),
                               index, jnp.where(jnp.isnan(u), p, kd.type(-1)))
        chosen = geom.scatter(
            "max", jnp.where(eq_init & (lastnan <= 0), kd.type(0), kd.type(-1)), index,
            jnp.where(eq_u & (p >= at(lastnan, fill=kd.type(0))), p, kd.type(-1)))
    else:
        big = kd.type(np.iinfo(kd).max)
        chosen = geom.scatter("min", jnp.where(eq_init, kd.type(0), big), index,
                              jnp.where(eq_u & ~jnp.isnan(u), p, big))
    zero = jnp.zeros((), g.dtype)
    to_init = chosen == 0
    if not use_init:  # e0 of a touched target is lowest(T), not data: nothing flows back
        touched = geom.scatter("max", jnp.zeros(data.shape, bool), index,
                               jnp.ones(geom.updates_shape, bool))
        to_init = to_init & ~touched
    g_data = jnp.where(to_init, g, zero)
    g_upd = jnp.where(valid & (p == at(chosen, fill=kd.type(-1))), g_u, zero)
    return g_data, g_upd


@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2))
def _float_scatter(rule, geom, use_init, data, index, updates):
    return _forward(rule, geom, use_init, data, index, updates)


def _fwd(rule, geom, use_init, data, index, updates):
    out = _forward(rule, geom, use_init, data, index, updates)
    return out, (data, index, updates, out)


def _bwd(rule, geom, use_init, residuals, g):
    data, index, updates, out = residuals
    g_data, g_upd = gradients(rule, geom, use_init, data, index, updates, out, g)
    return g_data, None, g_upd


_float_scatter.defvjp(_fwd, _bwd)
