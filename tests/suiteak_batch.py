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
import jit_batch

from jaxmax._src.lowering import compile_options


class _JaxWithOptions:
    """``jax`` as `jit_batch` sees it, whose ``jit`` compiles with XLA `options` (jit_each
    takes no options of its own)."""

    def __init__(self, options: dict):
        self._options = options

    def __getattr__(self, name: str):
        return getattr(jax, name)

    def jit(self, fun: Callable, **kwargs):
        return jax.jit(fun, compiler_options=self._options, **kwargs)


def eager_each(calls: Sequence[tuple[Callable, Sequence]], fast: bool = True) -> list:
    """The results of ``fn(*args)`` for each ``(fn, args)`` of `calls` (NumPy arrays, or tuples
    of them), in at most two `jit_batch.jit_each` programs: the calls whose arguments are small
    compiled with the fast options their eager calls take, the others plainly (all plainly
    without `fast`)."""
    options = compile_options.fast_compile() if fast else {}
    small = [bool(options) and compile_options.small_eager(*args) for _, args in calls]
    out: list = [None] * len(calls)
    for with_options in (True, False):
        chosen = [i for i, s in enumerate(small) if s == with_options]
        if not chosen:
            continue
        batch = [calls[i] for i in chosen]
        if with_options:
            with mock.patch.object(jit_batch, "jax", _JaxWithOptions(options)):
                got = jit_batch.jit_each(batch)
        else:
            got = jit_batch.jit_each(batch)
        for i, g in zip(chosen, got, strict=True):
            out[i] = g
    return out
