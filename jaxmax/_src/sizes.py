"""Array sizes decided by static arguments: impossible ones raise, large eager ones are awaited.

A pad, a ``num_segments`` or a segment id can ask for an output far larger than the input. Two
things must not happen then (both seen with jax 0.10 on CPU): XLA aborting the process while
compiling a shape whose extent product overflows int64, and an allocation failure that is only
recorded in the lazily computed result, which aborts the process when the result is read.
"""

from __future__ import annotations

import math

import jax

INT64_MAX = 2**63 - 1

# Eager results of at least this many bytes are awaited before they are returned (a few
# microseconds against the milliseconds such an array takes to write).
_AWAIT_BYTES = 2**28


def checked_bytes(op: str, what: str, shape: tuple[int, ...], itemsize: int) -> int:
    """The bytes of an array of `shape`; `ValueError` when no array of that shape can exist.

    Every partial product of the extents must fit int64 too (XLA multiplies them), so zero
    extents count as one there.
    """
    extents = math.prod(max(d, 1) for d in shape)
    if extents * itemsize > INT64_MAX:
        raise ValueError(
            f"{op}: {what} would have shape {tuple(shape)}, more than 2**63 - 1 bytes: no array "
            f"can be that large")
    return math.prod(shape) * itemsize


def settled(out: jax.Array, nbytes: int) -> jax.Array:
    """`out`, awaited when it is a concrete result of at least 256 MiB.

    An allocation that fails is then reported here as a Python exception
    (``jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED``) instead of when the result is read.
    Traced results are returned as they are.
    """
    if nbytes >= _AWAIT_BYTES and not isinstance(out, jax.core.Tracer):
        out.block_until_ready()
    return out
