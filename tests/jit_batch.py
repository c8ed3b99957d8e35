"""One jitted program for a batch of calls (tests/ helper for cutting the suite's compiles).

A test that checks many configurations of one operator through separate eager calls compiles
one XLA program per configuration; the per-compile overhead then dominates its time. `jit_each`
traces every call of a batch into one ``jax.jit`` program returning their results as a list, so
the batch costs one compile. Each call keeps its own shapes, dtypes and static arguments (bound
in the callable), so the operator's lowering is exactly the one a separate ``jax.jit`` of that
call would build; only the eager (concrete-input) path is not taken, which callers say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import numpy as np


def jit_each(calls: Sequence[tuple[Callable, Sequence]]) -> list:
    """The results of ``fn(*args)`` for each ``(fn, args)`` of `calls`, computed by one jitted
    program (NumPy arrays, or tuples of them for a call that returns several)."""
    fns = [fn for fn, _ in calls]
    args = [tuple(a) for _, a in calls]
    if not calls:
        return []

    def program(all_args):
        return [fn(*a) for fn, a in zip(fns, all_args, strict=True)]

    out = jax.jit(program)(args)
    return [jax.tree.map(np.asarray, r) for r in out]
