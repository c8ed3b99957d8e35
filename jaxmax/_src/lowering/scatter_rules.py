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

Integers and bool have no NaN and no signed zero, so every rule is one scatter-max (on bool
that is logical OR). Floats off a mesh start with XLA's float scatter-max: it is the IEEE
``maximum`` except that it flushes a subnormal result to zero, and on sequences without NaN it
is every fold but for the sign of a zero tie. So when its result holds no zero and no NaN it
is exact for every rule (one float reduction decides, ``lax.cond``). Otherwise: ``"maximum"``
redoes the scatter on ordered integer keys when a subnormal is present, and the folds take the
integer-key scatter-max when a run-time check finds no NaN and no ``-0`` that could make them
differ, else a few extra scatters of positions select the fold's element. On a mesh every float
max runs on the keys (XLA's cross-device max is not exact). Zero and sign tests and selects
next to them read the bits, because XLA's CPU float compare flushes subnormals to zero.

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
from jaxmax._src.lowering.scatter_geometry import Geometry, any_true, signed_index_dtype

RULES = ("maximum", "acc_gt", "acc_lt")


def apply(rule: str, geom: Geometry, use_init: bool, data: jax.Array, index: jax.Array,
          updates: jax.Array) -> jax.Array:
    """The scatter of `updates` onto `data` at `index` by `rule`; differentiable for floats."""
    if not dtypes.is_floating(data.dtype):
        init = _start(geom, use_init, data, index)
        return geom.scatter("max", init, index, updates)
    return _float_scatter(rule, geom, use_init, data, index, updates)


def _any_subnormal(x):
    """Whether `x` holds a subnormal number, read from the bits (a float compare flushes them):
    the magnitude bits converted to a float, whose min over the nonzero ones is a float
    reduction (fast to compile); the conversion is exact below the smallest normal's bits."""
    wide = np.float64 if np.dtype(x.dtype).itemsize == 8 else np.float32
    smallest_normal = order.bits(jnp.array(jnp.finfo(x.dtype).tiny, x.dtype)).astype(wide)
    magnitude = _magnitude_bits(x).astype(wide)
    return jnp.min(jnp.where(magnitude > 0, magnitude, wide(np.inf)),
                   initial=wide(np.inf)) < smallest_normal


def _start(geom: Geometry, use_init: bool, data, index):
    """``e0`` of every target: `data`, or lowest(T) where an update lands when it is unused."""
    if use_init:
        return data
    touched = geom.scatter("max", jnp.zeros(data.shape, bool), index,
                           jnp.ones(geom.updates_shape, bool))
    low = np.array(False) if dtypes.is_bool(data.dtype) else dtypes.lowest(data.dtype)
    return jnp.where(touched, low, data)


def _magnitude_bits(x):
    b = order.bits(x)
    mask = (1 << (8 * np.dtype(x.dtype).itemsize - 1)) - 1  # every bit but the sign
    return lax.bitwise_and(b, np.array(mask, b.dtype))


def _is_zero(x):
    """``x == ±0`` read from the bits (a flushed subnormal is not zero here)."""
    return _magnitude_bits(x) == 0


def _sign(x):
    """The sign bit as 0/1 (NaN and zeros included)."""
    return jnp.signbit(x)


def _is_neg_zero(x):
    return _is_zero(x) & _sign(x)


def _equal(a, b):
    """``a == b`` with NaN equal to NaN and ``-0 == +0`` (the elements a result may come from)."""
    return (a == b) | (jnp.isnan(a) & jnp.isnan(b))


def _positions(geom: Geometry, dtype):
    n = math.prod(geom.updates_shape)
    return (lax.iota(dtype, n) + dtype.type(1)).reshape(geom.updates_shape)


def _key_dtype(geom: Geometry) -> np.dtype:
    # keys are 2 * p + sign, p <= the number of updates
    return signed_index_dtype(2 * math.prod(geom.updates_shape) + 2)


def _signed_zero(sign_bit, dtype):
    return jnp.where(sign_bit, jnp.array(-0.0, dtype), jnp.array(0.0, dtype))


def _select(pred, a, b):
    """``where(pred, a, b)`` on the bits: next to a bit test, a float select may be compiled into
    a float compare, which flushes subnormals to zero."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    return order.from_bits(jnp.where(pred, order.bits(a), order.bits(b)), a.dtype)


def _forward(rule, geom, use_init, data, index, u):
    init = _start(geom, use_init, data, index)
    if geom.keys:
        return _exact(rule, geom, index, init, u)
    # XLA's float scatter-max first: it is the IEEE maximum, except that it flushes a subnormal
    # result to zero, and it is every fold on NaN-free sequences but for the sign of a zero tie;
    # so a result without a zero (and, for the folds, without a NaN) is exact as it stands
    fast = geom.scatter("max", init, index, u)
    # the odd elements marked before the reduction: XLA's vectorised CPU min or max drops a NaN
    # it reduces, and a float sum is not vectorised (5x slower); a flushed subnormal is == 0
    odd = fast == 0 if rule == "maximum" else (fast == 0) | jnp.isnan(fast)
    suspect = any_true(odd)
    keyed = dataclasses.replace(geom, keys=True)

    def recheck(init, u):
        if rule != "maximum":  # one copy of the fold's closed form (on keys) keeps compiles short
            return _exact(rule, keyed, index, init, u)
        subnormal = _any_subnormal(data) | _any_subnormal(u)
        return lax.cond(subnormal, partial(_exact, rule, keyed, index),
                        lambda init, u: fast, init, u)

    return lax.cond(suspect, recheck, lambda init, u: fast, init, u)


def _exact(rule, geom, index, init, u):
    """The rule's result on every input: one scatter-max when the sequences hold no NaN or -0
    that could make the fold differ from it, else the closed form of the fold."""
    def plain_max(init, u):
        return geom.scatter("max", init, index, u)

    if rule == "maximum":
        return plain_max(init, u)
    minus_inf = dtypes.max_identity(u.dtype)
    kd = _key_dtype(geom)
    p = _positions(geom, kd)

    def acc_gt(init, u):
        lastnan = geom.scatter("max", jnp.where(jnp.isnan(init), kd.type(0), kd.type(-1)),
                               index, jnp.where(jnp.isnan(u), p, kd.type(-1)))
        last = geom.scatter("max", jnp.zeros(init.shape, kd), index, p)
        tail = p > geom.gather(lastnan, index, kd.type(0))
        before = lastnan < 0  # e0 belongs to the tail
        top = geom.scatter("max", _select(before, init, minus_inf), index,
                           _select(tail, u, minus_inf))
        zero_key = geom.scatter(
            "max", jnp.where(before & _is_zero(init), _sign(init).astype(kd), kd.type(-1)),
            index, jnp.where(tail & _is_zero(u), p * kd.type(2) + _sign(u).astype(kd),
                             kd.type(-1)))
        out = _select(_is_zero(top), _signed_zero(zero_key % 2 == 1, u.dtype), top)
        out = _select(lastnan == last, jnp.array(np.nan, u.dtype), out)
        return _select(last == 0, init, out)

    def acc_lt(init, u):
        top = geom.scatter("max", init, index, _select(jnp.isnan(u), minus_inf, u))
        big = kd.type(np.iinfo(kd).max)
        first_zero = geom.scatter("min", jnp.full(init.shape, big, kd), index,
                                  jnp.where(_is_zero(u), p * kd.type(2) + _sign(u).astype(kd),
                                            big))
        zero_top = _is_zero(top)
        out = _select(zero_top, _signed_zero(first_zero % 2 == 1, u.dtype), top)
        return _select(zero_top & _is_zero(init), init, out)

    slow = acc_gt if rule == "acc_gt" else acc_lt
    odd_u = any_true(jnp.isnan(u) | _is_neg_zero(u))
    odd_init = any_true(_is_neg_zero(init) | (jnp.isnan(init) if rule == "acc_gt" else False))
    return lax.cond(odd_u | odd_init, slow, plain_max, init, u)


def _backward(rule, geom, use_init, data, index, u, out, g):
    init = _start(geom, use_init, data, index)
    at = partial(geom.gather, index=index)
    valid = at(jnp.ones(data.shape, bool), fill=False)
    out_u = at(out, fill=0)
    g_u = at(g, fill=0)
    eq_init = _equal(init, out)
    eq_u = _equal(u, out_u) & valid
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
    g_data, g_upd = _backward(rule, geom, use_init, data, index, updates, out, g)
    return g_data, None, g_upd


_float_scatter.defvjp(_fwd, _bwd)
