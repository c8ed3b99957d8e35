"""Row-constant scatter indices recognised from how the current trace built them.

A graph network builds its along-axis index as ``broadcast_to(ids[:, None], updates.shape)``
inside the same `jit`. The run-time row check (`scatter._row_bounds`) is one read of the index,
but it keeps the general form alive in a ``lax.cond``, whose operand then forces XLA to write
the broadcast out in full (several times the cost of the row scatter). When the tracer shows it was
made by ``broadcast_in_dim`` along every axis but the scatter axis (through element-wise type
conversions), the row form is chosen at trace time instead, as for concrete indices.

This reads the tracer's recorded producer, which JAX does not document: when that record is
absent or shaped differently, the answer is "not known" and the run-time check decides. The
result is the same either way (both forms are exact); only the speed differs.
"""

from __future__ import annotations

import jax

# element-wise one-operand primitives: a row-constant input gives a row-constant output
_ELEMENTWISE = ("convert_element_type",)
_UNKNOWN_RECORD = (AttributeError, IndexError, KeyError, TypeError, ValueError)


def constant_off_axis(indices, axis: int) -> bool:
    """Whether traced `indices` is known, from its producer in the trace, to be constant along
    every axis but `axis` (False when not known)."""
    if not isinstance(indices, jax.core.Tracer):
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
