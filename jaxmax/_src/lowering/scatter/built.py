"""Row-constant scatter indices recognised from how the current trace built them.

A graph network builds its along-axis index as ``broadcast_to(ids[:, None], updates.shape)``
inside the same `jit`. The run-time row check (`scatter._row_bounds`) is one read of the index,
but it keeps the general form alive in a ``lax.cond``, whose operand then forces XLA to write
the broadcast out in full (several times the cost of the row scatter). When the tracer shows it was
made by ``broadcast_in_dim`` along every axis but the scatter axis (through element-wise type
conversions), the row form is chosen at trace time instead, as for concrete indices.

This reads the tracer's recorded producer (``tracer.parent``, an equation with ``primitive``,
``params`` and ``in_tracers``), which JAX does not document. `available` is the one place that
decides, once per process, whether that record reads here as it is read below: it traces a
broadcast column, a converted one, a broadcast row and a computed index, and checks each
answer. Where it does not, or the record of one trace is absent or shaped differently, the
answer is "not known" and the run-time check decides: the public fallback, with the same
result (both forms are exact); only the speed differs. Tests set `USE` to False to run it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

# element-wise one-operand primitives: a row-constant input gives a row-constant output
_ELEMENTWISE = ("convert_element_type",)
_UNKNOWN_RECORD = (AttributeError, IndexError, KeyError, TypeError, ValueError)

#: None: `available` probes; False answers "not known" always (tests set it, then clear JAX's
#: caches, since the form is chosen while tracing); True skips the probe.
USE: bool | None = None


def available() -> bool:
    """Whether this JAX records a tracer's producer as `constant_off_axis` reads it (decided
    once, by `_works`, unless `USE` says)."""
    return _works() if USE is None else USE


@functools.cache
def _works() -> bool:
    """The probe: in one trace, a column broadcast along axis 1 (constant off axis 0), the same
    converted to int16, a row broadcast along axis 0 (not constant off it) and a computed
    index; the record works when each answer is the known one."""
    seen = []

    def trace(ids, row):
        column = jnp.broadcast_to(ids[:, None], (4, 3))
        for x, axis in ((column, 0), (column.astype(jnp.int16), 0),
                        (jnp.broadcast_to(row[None, :], (4, 3)), 0), (column + 1, 0),
                        (column, 1)):
            seen.append(_known_constant(x, axis, depth=4))
        return ids

    try:
        jax.make_jaxpr(trace)(jax.ShapeDtypeStruct((4,), jnp.int32),
                              jax.ShapeDtypeStruct((3,), jnp.int32))
    except _UNKNOWN_RECORD:
        return False
    return seen == [True, True, False, False, False]


def constant_off_axis(indices, axis: int) -> bool:
    """Whether traced `indices` is known, from its producer in the trace, to be constant along
    every axis but `axis` (False when not known)."""
    if not isinstance(indices, jax.core.Tracer) or not available():
        return False
    try:
        return _known_constant(indices, axis, depth=4)
    except _UNKNOWN_RECORD:
        return False


def _known_constant(x, axis: int, depth: int) -> bool:
    eqn = getattr(x, "parent", None)
    if eqn is None or depth == 0:
        return False
    name = getattr(eqn.primitive, "name", None)
    if name in _ELEMENTWISE:
        return _known_constant(eqn.in_tracers[0], axis, depth - 1)
    if name != "broadcast_in_dim":
        return False
    shape = tuple(eqn.params["shape"])
    dims = tuple(eqn.params["broadcast_dimensions"])
    source = tuple(eqn.in_tracers[0].shape)
    if shape != tuple(x.shape) or len(dims) != len(source):
        return False
    for d, n in enumerate(shape):
        if d == axis or n == 1 or d not in dims:
            continue
        if source[dims.index(d)] != 1:  # an axis of the source carried over: not constant
            return False
    return True
