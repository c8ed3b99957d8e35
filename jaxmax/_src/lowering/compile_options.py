"""XLA:CPU compile options for a small eager call, probed once on the installed jaxlib.

A program whose run time is microseconds is dominated by its compile: the elemental IR emitter
(``xla_cpu_use_fusion_emitters=False``) and LLVM's -O0 (``xla_backend_optimization_level=0``)
compile RoiAlign's and the ROI poolings' small programs in a quarter to a third of the time,
with the same bits (benchmarks/RESULTS.md: roi_align, and "ROI pooling compile"). Option names
come and go with XLA: jaxlib 0.10 knows both, jaxlib 0.12 rejects the first (``No such compile
option``). `fast_compile()` keeps, of `WANTED`, the options the installed XLA compiles a
trivial program with, and nothing when none works: a missing option only costs compile time.
`small_eager` says which calls are small.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

#: in order of preference; each is tried alone
WANTED = ({"xla_cpu_use_fusion_emitters": False}, {"xla_backend_optimization_level": 0})

#: A call whose arguments hold at most this many bytes in all is small (`small_eager`).
SMALL_BYTES = 1 << 16


def small_eager(*args: jax.Array) -> bool:
    """Concrete arguments of at most `SMALL_BYTES` in all, on CPU devices only: a call whose
    compile dominates its run time, which `fast_compile()` options suit."""
    if any(isinstance(a, jax.core.Tracer) for a in args):
        return False
    if sum(a.size * a.dtype.itemsize for a in args) > SMALL_BYTES:
        return False
    return all(d.platform == "cpu" for a in args for d in a.devices())


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
