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

from jaxmax._src.lowering import compile_options, rules


def jit_each(calls: Sequence[tuple[Callable, Sequence]], as_eager: bool = False) -> list:
    """The results of ``fn(*args)`` for each ``(fn, args)`` of `calls`, computed by one jitted
    program (NumPy arrays, or tuples of them for a call that returns several).

    With `as_eager`, compiled as the calls' eager calls compile: the calls whose arguments are
    small (`compile_options.small_eager`) with the fast options they would take
    (`compile_options.options_for`), one program per set of options, the others plainly. A
    batch of small calls in one plain program can cost more compile than the eager calls it
    stands for (35 MaxPool-8 calls: 2.2 s of CPU eagerly, 4.1 s as one plain program, 1.0 s
    with the fast options). Only values of eager calls are batched so: a traced call (jit,
    vmap, grad) always compiles plainly, and tests of those keep plain ``jax.jit``."""
    if as_eager:
        groups: dict[tuple, list[int]] = {}
        for i, (_, args) in enumerate(calls):
            small = compile_options.small_eager(*args)
            options = compile_options.options_for(tuple(args)) if small else {}
            groups.setdefault(tuple(sorted(options.items())), []).append(i)
        out: list = [None] * len(calls)
        for options, chosen in groups.items():
            got = _one_program([calls[i] for i in chosen], dict(options) or None)
            for i, g in zip(chosen, got, strict=True):
                out[i] = g
        return out
    return _one_program(calls, None)


def _one_program(calls: Sequence[tuple[Callable, Sequence]], compiler_options: dict | None
                 ) -> list:
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

    out = jax.jit(program, compiler_options=compiler_options)(args)
    return [jax.tree.map(np.asarray, r) for r in out]
