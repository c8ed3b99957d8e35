"""A linear function with a transpose of its own (``jax.custom_derivatives.linear_call``), under
``jax.vmap`` too.

`linear_call` is public, but its primitive has no batching rule in JAX 0.10-0.12 (``vmap`` of a
function that calls it, or of a jitted gradient that kept it, raises ``NotImplementedError``).
This module registers one where JAX has none: under ``vmap`` the call's function (the linear
function, or once transposed its transpose) runs as it is on the batched operands. A forward
call batched before it is differentiated is then differentiated by JAX's own rules; one
transposed before it is batched keeps its own transpose. (Callers use it for functions that
:mod:`jaxmax._src.auto_partition` lays out per device, which run unwrapped under ``vmap``.)

`available` is the one place that decides, once per process, whether this works here: it
registers the rule and checks ``jit``, ``grad``, ``vmap`` and their compositions, and ``grad``
of ``grad``, of a linear function whose transpose is recognisably its own, against values
worked out by hand.
Callers keep their plain derivative for a JAX where it says no.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import numpy as np

from jaxmax._src import fresh_thread

try:  # the primitive behind linear_call and JAX's table of batching rules
    from jax._src import custom_derivatives as _jax_custom_derivatives
    from jax._src.interpreters import batching as _jax_batching

    _PRIVATE = True
except ImportError:  # pragma: no cover - a JAX without these internals: plain derivatives
    _PRIVATE = False

#: None: `available` probes; False makes every caller take its plain derivative (tests set it,
#: then clear JAX's caches, since the choice is made while tracing); True skips the probe.
USE: bool | None = None


def call(fun: Callable, transpose: Callable, residuals: tuple, linear: tuple):
    """``fun(residuals, linear)``, linear in `linear`, transposed by ``transpose(residuals,
    cotangents)``; only where `available` says so. Each is one jitted computation: the
    primitive evaluates its function equation by equation, which in an eager gradient (the
    backward pass runs outside any ``jit``) compiled every operation of the transpose apart."""
    return jax.custom_derivatives.linear_call(_jitted(fun), _jitted(transpose), residuals,
                                              linear)


def _jitted(f: Callable) -> Callable:
    return lambda residuals, linear: jax.jit(f)(residuals, linear)


def available() -> bool:
    """Whether `call` works under ``jit``, ``grad``, ``vmap`` and their compositions on this
    JAX (decided once, by `_works`, unless `USE` says)."""
    return _works() if USE is None else USE


def _batched(args, dims, **params):
    """The linear call under ``vmap``: its function evaluated on the batched operands (the
    primitive's own evaluation, traced by ``vmap``)."""
    primitive = _jax_custom_derivatives.linear_call_p
    out = jax.vmap(lambda *a: primitive.impl(*a, **params), in_axes=tuple(dims))(*args)
    return out, [0] * len(out)


def _scaled(x: jax.Array, r: jax.Array) -> jax.Array:
    """``r * x``, transposed as ``3 * r * ct`` (not its true transpose: the probe sees which
    one ran)."""
    return call(lambda res, lin: res[0] * lin[0], lambda res, ct: (3 * res[0] * ct,), (r,), (x,))


@functools.cache
def _works() -> bool:
    """The probe: the batching rule registered (unless JAX has one), then a linear function
    evaluated, transposed (by its own transpose), batched, and differentiated twice, each
    compared with the answer worked out by hand. Any failure, or another result, is False.
    (Its residuals must carry no tangent, as `linear_call` requires: callers stop them.)"""
    if not _PRIVATE:
        return False
    try:
        primitive = _jax_custom_derivatives.linear_call_p
        if primitive not in _jax_batching.fancy_primitive_batchers:
            _jax_batching.primitive_batchers[primitive] = _batched
        return fresh_thread.run(_checked)  # not in the caller's trace or mesh context
    except Exception:  # noqa: BLE001 - an internal that moved or misbehaves: plain derivatives
        return False


def _checked() -> bool:
    """`_works`' checks (the rule registered), in one jitted program: every transformation is
    applied while it is traced."""
    r = np.array([1.0, -2.0], np.float32)
    x = np.array([[0.5, 4.0], [-1.0, 2.0]], np.float32)

    def grad(f):
        return jax.grad(lambda v: f(v).sum())

    def values(r, x):
        return [
            _scaled(x[0], r),
            grad(lambda v: _scaled(v, r))(x[0]),  # its own transpose
            jax.vmap(_scaled, in_axes=(0, None))(x, r),
            # the transposed call batched: its own transpose, batched
            jax.vmap(grad(lambda v: _scaled(v, r)))(x),
            jax.vmap(jax.jit(grad(lambda v: _scaled(v, r))))(x),
            # the forward call batched: it runs as it is, and JAX transposes it (r)
            grad(lambda v: jax.vmap(_scaled, in_axes=(0, None))(v, r))(x),
            # sum((r v)^2): its gradient L^T(2 r v) = 6 r^2 v, and that gradient's sum's
            # gradient 6 r^2 (the transpose of the transpose is the function)
            grad(lambda u: _scaled(u, r) ** 2)(x[0]),
            grad(grad(lambda u: _scaled(u, r) ** 2))(x[0]),
        ]

    want = [r * x[0], 3 * r, r * x, np.stack([3 * r] * 2), np.stack([3 * r] * 2),
            np.stack([r, r]), 6 * r * r * x[0], 6 * r * r]
    got = jax.jit(values)(r, x)
    return all(np.array_equal(np.asarray(g), np.asarray(w, np.float32))
               for g, w in zip(got, want, strict=True))


__all__ = ["available", "call"]
