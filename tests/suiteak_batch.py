"""Batched calls compiled as their eager calls compile (tests/ helper of the arg-max/top-k files).

`tests/jit_batch.py`'s `jit_each` traces a batch of calls into one plain ``jax.jit`` program.
An eager call of an operator whose concrete arguments are small
(`compile_options.small_eager`: at most 64 KiB, on CPU) compiles with XLA's fast options
(`compile_options.fast_compile()`: the same program and bits, compiled in a third to a half of
the time), so a plain batch of such calls costs more compile than the calls it stands for.
`eager_each` compiles the batch of the small calls with those options and the rest plainly,
each call traced as `jit_each` traces it (the program its eager call compiles; only the
eager path's concrete checks of the input values are not taken).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from unittest import mock

import jax
import numpy as np

from jaxmax._src.lowering import compile_options, rules


def _one_program(calls: Sequence[tuple[Callable, tuple]], options: dict) -> list:
    """The calls' results from one ``jax.jit`` program compiled with `options`, each call traced
    with `rules.cross_device_possible` answered as its eager call answers it (`jit_each`)."""
    fns = [fn for fn, _ in calls]
    args = [tuple(a) for _, a in calls]
    eager = [rules.cross_device_possible(*a) for a in args]

    def program(all_args):
        out = []
        for fn, a, cross in zip(fns, all_args, eager, strict=True):
            with mock.patch.object(rules, "cross_device_possible", lambda *_, c=cross: c):
                out.append(fn(*a))
        return out

    compiled = jax.jit(program).lower(args).compile(compiler_options=options or None)
    return [jax.tree.map(np.asarray, r) for r in compiled(args)]


def eager_each(calls: Sequence[tuple[Callable, Sequence]], fast: bool = True) -> list:
    """The results of ``fn(*args)`` for each ``(fn, args)`` of `calls` (NumPy arrays, or tuples
    of them), in at most two programs: the calls whose arguments are small compiled with the
    fast options their eager calls take, the others plainly (all plainly without `fast`)."""
    small = [fast and compile_options.small_eager(*args) for _, args in calls]
    out: list = [None] * len(calls)
    for options in (True, False):
        chosen = [i for i, s in enumerate(small) if s == options]
        if chosen:
            got = _one_program([(calls[i][0], tuple(calls[i][1])) for i in chosen],
                               compile_options.fast_compile() if options else {})
            for i, g in zip(chosen, got, strict=True):
                out[i] = g
    return out
