"""One jitted program for a batch of calls (tests/ helper for cutting the suite's compiles).

A test that checks many configurations of one operator through separate eager calls compiles
one XLA program per configuration; the per-compile overhead then dominates its time. `jit_each`
traces every call of a batch into one ``jax.jit`` program returning their results as a list, so
the batch costs one compile. Each call keeps its own shapes, dtypes and static arguments (bound
in the callable), and is traced with the lowerings' one choice that depends on how they are
called, `rules.cross_device_possible`, answered as an eager call of it would answer it: the
suite runs on 8 CPU devices, where a traced input may be sharded (the cross-device forms) but a
NumPy input eagerly may not (the one-device forms most users run). So each call's program is
the one its eager call compiles; only the eager path's concrete checks of the input values are
not taken, which callers say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from unittest import mock

import jax
import numpy as np

from jaxmax._src.lowering import rules


def jit_each(calls: Sequence[tuple[Callable, Sequence]]) -> list:
    """The results of ``fn(*args)`` for each ``(fn, args)`` of `calls`, computed by one jitted
    program (NumPy arrays, or tuples of them for a call that returns several)."""
    if not calls:
        return []
    fns = [fn for fn, _ in calls]
    args = [tuple(a) for _, a in calls]
    # what each call's lowerings decide when it runs eagerly on these very arguments
    eager = [rules.cross_device_possible(*a) for a in args]

    def program(all_args):
        out = []
        for fn, a, cross in zip(fns, all_args, eager, strict=True):
            with mock.patch.object(rules, "cross_device_possible", lambda *_, c=cross: c):
                out.append(fn(*a))
        return out

    out = jax.jit(program)(args)
    return [jax.tree.map(np.asarray, r) for r in out]
