"""The two max rules every lowering shares, and the seams the tests use to reach each lowering.

Two max rules exist, chosen by the values rule ``nan`` that the adapters pass
(docs/semantics.md §3 and §4):

* ``nan="propagate"``: NaN propagates, an empty set gives the identity (``-inf``,
  ``iinfo.min``, ``False``).
* ``nan="skip"``: ``max(lowest(T), non-NaN elements)``: NaN counts as ``-inf`` (the identity),
  and the result is then raised to ``lowest(T)``.

The jitted lowerings take one more static argument that they decide themselves: whether partial
results may be combined across devices (`cross_device_possible`), since XLA's cross-device max
drops NaN.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import jax
import jax.numpy as jnp
from jax import lax

from jaxmax._src import dtypes
from jaxmax._src.lowering import reduce_cpu

T = TypeVar("T")

#: The values rules: NaN propagates, or NaN is skipped and the result raised to lowest(T).
NAN_RULES = ("propagate", "skip")


def check_nan_rule(nan: str) -> str:
    """`nan` if it names a values rule; a ValueError otherwise (an adapter's mistake)."""
    if nan not in NAN_RULES:
        raise ValueError(f"nan must be one of {NAN_RULES}, got {nan!r}")
    return nan


def cross_device_possible(*arrays) -> bool:
    """Whether partial results may be combined across devices: several devices exist and some
    input is traced (an outer ``jit`` may shard it) or is laid over more than one device.

    The lowering decides this itself (the adapters never pass it); it is a static argument of the
    jitted functions, so a test can change it and get a fresh trace.
    """
    if _device_count() == 1:
        return False
    return any(isinstance(a, jax.core.Tracer)
               or (isinstance(a, jax.Array) and len(a.sharding.device_set) > 1)
               for a in arrays)


def several_devices() -> bool:
    """Whether this process sees more than one device: only then can an outer ``jit`` lay an
    input over a mesh whose sharding XLA chooses (:mod:`jaxmax._src.auto_partition`). Decided
    per process, not per call, so that an eager call and a traced one of the same shapes share
    one program."""
    return _device_count() > 1


@functools.cache
def _device_count() -> int:
    return jax.device_count()


def by_platform(x: jax.Array, *, cpu: Callable[[jax.Array], jax.Array],
                 default: Callable[[jax.Array], jax.Array]) -> jax.Array:
    """``cpu(x)`` when compiled for CPU, ``default(x)`` elsewhere (chosen at lowering time).

    One seam for every platform choice, so the tests can run the non-CPU lowerings on CPU.
    """
    return lax.platform_dependent(x, cpu=cpu, default=default)


def finite_sum(v: jax.Array) -> jax.Array:
    """Whether ``sum(v)`` is finite: then `v` holds no NaN and no infinity (a false "no" only
    costs time). 16-bit floats are summed in float32, where their sum cannot overflow."""
    wide = jnp.float32 if v.dtype.itemsize < 4 else v.dtype
    return jnp.isfinite(jnp.sum(v, dtype=wide))


def sum_is_nan(x: jax.Array) -> jax.Array:
    """A scalar bool: whether the sum of `x` is NaN, which it is when `x` holds a NaN (exact in
    any summation order; an ``inf - inf`` or an overflow to both infinities is a false alarm,
    which only costs the caller its exact path). One fused pass over the data."""
    return jnp.isnan(jnp.sum(x))


def redo_if(redo: jax.Array, value: T, recompute: Callable[[], T]) -> T:
    """`value` (an array or a tuple of arrays), or ``recompute()`` where the scalar `redo` holds:
    a ``while_loop`` of zero or one trip, whose carry XLA updates in place and keeps in memory (a
    ``lax.cond`` returning `value` copies it, and runs its branch on one thread)."""
    return lax.while_loop(lambda c: c[1], lambda c: (recompute(), jnp.zeros((), bool)),
                          (value, redo))[0]


def _nan_found(x: jax.Array, plain: jax.Array, check_data: bool) -> jax.Array:
    """A scalar bool: True when `x` holds a NaN (false positives only cost time)."""
    found = jnp.isnan(plain).any()
    if check_data:
        found = found | sum_is_nan(x)
    return found


def skipping_nan(reducer: Callable[..., jax.Array], x: jax.Array, operands: tuple,
                  check_data: bool) -> jax.Array:
    """``reducer(x, *operands)`` computed as if every NaN in `x` were ``-inf``.

    The value takes the masked path only when a NaN is found. The derivative is always that of
    ``reducer`` at the masked input (a ``custom_jvp``), so a slice's NaN never leaks into its
    gradient and the primitive's own tie rule holds.
    """
    if not dtypes.is_floating(x.dtype):
        return reducer(x, *operands)

    @jax.custom_jvp
    def value(x, *operands):
        plain = reducer(x, *operands)
        return lax.cond(_nan_found(x, plain, check_data),
                        lambda: reducer(reduce_cpu.mask_nan(x), *operands), lambda: plain)

    @value.defjvp
    def value_jvp(primals, tangents):
        x, *rest = primals
        return jax.jvp(lambda clean: reducer(clean, *rest), (reduce_cpu.mask_nan(x),),
                       (tangents[0],))

    return value(x, *operands)


def at_least_lowest(x: jax.Array) -> jax.Array:
    """``max(lowest(T), x)`` for NaN-free `x`; a raised value passes no gradient."""
    if not dtypes.is_floating(x.dtype):
        return x  # the integer identity already is lowest(T)
    low = dtypes.lowest(x.dtype)
    return jnp.where(x < low, low, x)


def max_skipping_nan(reducer: Callable[..., jax.Array], x: jax.Array, *operands,
                     check_data: bool) -> jax.Array:
    """The rule ``nan="skip"``: ``max(lowest(T), non-NaN elements)`` of each reduced set."""
    return at_least_lowest(skipping_nan(reducer, x, operands, check_data))
