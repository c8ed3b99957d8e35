"""`jit_batch.jit_each` compiled with the library's fast-compile options.

Small eager calls of an operator compile with `compile_options.fast_compile()` (LLVM -O0 and
the elemental emitter: the same HLO and bits, compiled in a third to a half of the CPU time).
A batch of such calls traced into one plain ``jax.jit`` program compiles at full optimisation
and can cost more than the eager calls it replaces (35 MaxPool-8 calls of
tests/test_max_pool_forms.py: 2.2 s of CPU eagerly, 4.1 s as one plain program, 1.0 s as one
program with the fast options). `jit_each_fast` is `jit_each` (each call traced as its eager
call would be) whose one program compiles with those options, as the eager calls did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from unittest import mock

import jax
import jit_batch

from jaxmax._src.lowering import compile_options


class _FastJax:
    """The ``jax`` module as `jit_batch` sees it, but whose ``jit`` compiles with the fast
    options."""

    def __init__(self):
        self.jit = partial(jax.jit, compiler_options=compile_options.fast_compile())

    def __getattr__(self, name):
        return getattr(jax, name)


def jit_each_fast(calls: Sequence[tuple[Callable, Sequence]]) -> list:
    """`jit_batch.jit_each(calls)`, its program compiled with `compile_options.fast_compile()`."""
    with mock.patch.object(jit_batch, "jax", _FastJax()):
        return jit_batch.jit_each(calls)
