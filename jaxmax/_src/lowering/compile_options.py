"""XLA:CPU compile options for a small eager call, probed once on the installed jaxlib.

A program whose run time is microseconds is dominated by its compile: the elemental IR emitter
(``xla_cpu_use_fusion_emitters=False``) and LLVM's -O0 (``xla_backend_optimization_level=0``)
compile RoiAlign's small programs in about a quarter of the time, with the same bits
(benchmarks/RESULTS.md, roi_align). Option names come and go with XLA: jaxlib 0.10 knows both,
jaxlib 0.12 rejects the first (``No such compile option``). `fast_compile()` keeps, of
`WANTED`, the options the installed XLA compiles a trivial program with, and nothing when
none works: a missing option only costs compile time.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

#: in order of preference; each is tried alone
WANTED = ({"xla_cpu_use_fusion_emitters": False}, {"xla_backend_optimization_level": 0})


def accepted(options: dict) -> bool:
    """Whether XLA compiles (and runs) a trivial program with `options`."""
    try:
        jax.jit(lambda v: v + 1, compiler_options=options)(jnp.zeros((), jnp.float32))
    except Exception:  # noqa: BLE001 (XLA raises its own runtime error type)
        return False
    return True


@functools.cache
def fast_compile() -> dict:
    """The options of `WANTED` the installed XLA accepts, merged (cached per process)."""
    merged: dict = {}
    for options in WANTED:
        if accepted(options):
            merged.update(options)
    return merged
