"""Helpers of the JAX-transformation tests (``tests/test_transforms_*.py``): the jaxpr primitive
collector, the trace counter and the no-retrace check, the vmap loop, the vjp helper and the
exact comparison with the sign of zero.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax import monitoring

GRAD_MODES = ("fwd", "rev")


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


def prims(fn, *args):
    """The primitives of `fn` on `args`, under an outer jit (which nests the operator one level
    deeper, in a jit/pjit equation)."""
    return primitive_names(jax.make_jaxpr(jax.jit(fn))(*args))


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


def retrace_check(first, again, changed):
    """`first()` warms up; `again()` (same static args and shapes) must trace nothing;
    `changed()` (new shape or static arg) must trace, which shows the counter works."""
    first()
    with TRACES:
        again()
    assert TRACES.count == 0, f"{TRACES.count} retrace(s) on a second identical call"
    with TRACES:
        changed()
    assert TRACES.count >= 1


def loop(fn, xs, axis):
    """`fn` on each slice of `xs` along `axis`, eagerly, stacked: what vmap must equal."""
    return np.stack([np.asarray(fn(np.take(xs, i, axis=axis))) for i in range(xs.shape[axis])])


def vjp(fn, x, ct):
    """The input cotangent of `fn` at `x` for the output cotangent `ct` (shape-checked)."""
    out, pullback = jax.vjp(fn, x)
    chex.assert_equal_shape([out, ct])
    return np.asarray(pullback(jnp.asarray(ct, out.dtype))[0])


def assert_exact(actual, expected, context=""):
    """Equal dtype, shape and values (NaN equal to NaN) and, for floats, the sign of every zero."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, context
    np.testing.assert_array_equal(actual, expected, err_msg=context)
    if actual.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected), err_msg=context)
