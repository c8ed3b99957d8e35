"""Array sizes decided by static arguments: impossible ones raise, large eager ones are awaited.

A pad, a ``num_segments`` or a segment id can ask for an output far larger than the input. Two
things must not happen then (both seen with jax 0.10.2 on CPU):

* XLA aborts the process (``overflow in static extent product``) when it builds a shape whose
  size in bytes exceeds ``2**63 - 1``; the product is taken extent by extent, so a later zero
  extent does not save it (``(2**40, 2**40, 0)`` aborts, ``(0, 2**40, 2**40)`` does not). At
  ``2**63 - 1`` bytes and below, an allocation that fails is a clean ``RESOURCE_EXHAUSTED``.
* A result computed under control flow (``lax.cond``, as every operator here uses) is allocated
  lazily: a failed allocation is then recorded in the result, ``block_until_ready`` raises it
  as ``jax.errors.JaxRuntimeError``, but reading the result (``np.asarray``, ``print``) aborts
  the process (``Check failed: buffer_.IsConcrete()``).

So every array an operator builds (output and intermediates: MaxPool's padded extent, the
SegmentMax count vector) must have fewer than ``MAX_ELEMENTS`` = 2**60 elements, checked in
Python before anything is built: at most 8 bytes an element (the widest dtype jaxmax computes
in, and its int32 index and count arrays), that keeps every array at or below 2**63 - 1 bytes
whatever its dtype. And an eager result of 256 MiB or more is awaited before it is returned, so
that an allocation failure surfaces as a Python exception from the call.
"""

from __future__ import annotations

import math

import jax

MAX_ELEMENTS = 2**60

# Eager results of at least this many bytes are awaited before they are returned (a few
# microseconds against the milliseconds such an array takes to write). Smaller allocations fail
# only on a machine that is out of memory anyway.
_AWAIT_BYTES = 2**28


def checked_elements(op: str, what: str, shape: tuple[int, ...]) -> int:
    """The number of elements of an array of `shape`; `ValueError` when it is too large to exist.

    XLA multiplies the extents one by one, so zero extents count as one here.
    """
    extents = math.prod(max(d, 1) for d in shape)
    if extents >= MAX_ELEMENTS:
        raise ValueError(
            f"{op}: {what} would have shape {tuple(shape)}, 2**60 elements or more (up to "
            f"2**63 bytes): no array can be that large")
    return math.prod(shape)


def settled(out, nbytes: int):
    """`out` (an array or a tuple of arrays), awaited when it is a concrete result and `nbytes`
    (the largest array the call builds) is at least 256 MiB.

    An allocation that fails is then reported here as a Python exception
    (``jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED``) instead of aborting the process when
    the result is read. Traced results are returned as they are.
    """
    leaves = jax.tree.leaves(out)
    if nbytes >= _AWAIT_BYTES and not any(isinstance(a, jax.core.Tracer) for a in leaves):
        jax.block_until_ready(out)
    return out
