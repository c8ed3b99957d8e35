"""XLA:CPU compile options for a small eager call, probed once on the installed jaxlib.

A program whose run time is microseconds is dominated by its compile: the elemental IR emitter
(``xla_cpu_use_fusion_emitters=False``) and LLVM's -O0 (``xla_backend_optimization_level=0``)
compile RoiAlign's and the ROI poolings' small programs in a quarter to a third of the time,
with the same bits (benchmarks/RESULTS.md, "Detection"), except for
bfloat16: the elemental emitter computes it in float32 and rounds a NaN back to the canonical
one (TopK returned ``0x7FC0`` for an input ``0x7FC1``), so a call with a bfloat16 argument
compiles without it (`NOT_FOR_BFLOAT16`). One LLVM module per program
(``xla_cpu_parallel_codegen_split_count=1``; XLA:CPU splits a program's code into several for
parallel compile threads) takes a further 0.69-0.94x of the CPU and 0.1-1.7 MB less resident
memory per new small shape (ROI poolings, RoiAlign, TopK, Hardmax, ReduceMax), same bits
(``benchmarks/fast_options_ab.py``; benchmarks/RESULTS.md, "Detection"). Option names
come and go with XLA: jaxlib 0.10 knows both, jaxlib 0.12 rejects the first (``No such compile
option``). `fast_compile()` keeps, of `WANTED`, the options the installed XLA compiles a
trivial program with, and nothing when none works: a missing option only costs compile time.
`small_eager` says which calls are small, and `jit` is ``jax.jit`` whose small eager calls
compile with those options: every operator's entry point is one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

#: in order of preference; each is tried alone
WANTED = ({"xla_cpu_use_fusion_emitters": False}, {"xla_backend_optimization_level": 0},
          {"xla_cpu_parallel_codegen_split_count": 1})

#: Options that change bfloat16 bits (NaN payloads), dropped for calls with a bfloat16 argument.
NOT_FOR_BFLOAT16 = frozenset({"xla_cpu_use_fusion_emitters"})

#: A call whose arguments hold at most this many bytes in all is small (`small_eager`).
SMALL_BYTES = 1 << 16


def small_eager(*args: Any) -> bool:
    """Concrete arguments of at most `SMALL_BYTES` in all, on CPU devices only: a call whose
    compile dominates its run time, which `fast_compile()` options suit. Arguments that are not
    arrays (static values) are ignored; a NumPy array goes to the default device."""
    arrays = [a for a in args if isinstance(a, (jax.Array, np.ndarray, np.generic))]
    if any(isinstance(a, jax.core.Tracer) for a in arrays):
        return False
    if sum(a.size * a.dtype.itemsize for a in arrays) > SMALL_BYTES:
        return False
    return all(d.platform == "cpu" for a in arrays
               for d in (a.devices() if isinstance(a, jax.Array) else jax.devices()[:1]))


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


#: A small eager call takes the fast options the first `FAST_CALLS` times its signature (shapes,
#: dtypes, shardings, static arguments) comes; later calls of that signature run the plain
#: program, compiled then. Near 64 KiB the fast program's code runs up to 3x slower (the ROI
#: poolings' 20x: 57 ms a call more), so a signature called in a loop switches once those
#: calls may have cost about what the plain compile saves them (0.1-0.6 s): the ski-rental
#: rule, never worse than twice the best choice in hindsight (benchmarks/small_eager.py).
FAST_CALLS = 8

#: Signatures counted per function before the counts start again (a bound on their memory).
MAX_SIGNATURES = 4096


def _signature(args: tuple, kwargs: dict) -> tuple:
    """What selects a compiled program of a call: arrays by shape, dtype and placement, the
    rest (static arguments) by value."""
    def of(a):
        if isinstance(a, jax.Array):
            return (a.shape, a.dtype, a.weak_type, a.sharding)
        if isinstance(a, (np.ndarray, np.generic)):
            return (a.shape, a.dtype)
        return a
    return tuple(of(a) for a in args), tuple(sorted((k, of(v)) for k, v in kwargs.items()))


def options_for(args: tuple) -> dict:
    """`fast_compile()` for a call with these positional arguments: without the options of
    `NOT_FOR_BFLOAT16` when one of them is bfloat16."""
    options = fast_compile()
    if any(getattr(a, "dtype", None) == jnp.bfloat16 for a in args):
        return {k: v for k, v in options.items() if k not in NOT_FOR_BFLOAT16}
    return options


def jit(fun: Callable | None = None, *, static_argnames: Sequence[str] = (),
        inline: bool = True) -> Any:
    """``jax.jit(fun, static_argnames=..., inline=...)``, tiered for small eager calls: the
    first `FAST_CALLS` calls of a signature whose arguments are small (`small_eager` of the
    positional arguments) run the same function jitted with the fast options
    (`options_for`: the same program and bits, compiled in a third to a half of the time);
    from the next call of that signature on, the plain program runs, compiled then (its code
    is faster: a shape called in a loop pays one more compile, then runs at full speed).
    Traced arguments (under ``jit``, ``vmap``, ``grad``) always take the plain ``jax.jit``,
    inlined into the caller's program. Every program lives in a ``jax.jit`` cache, so
    ``jax.clear_caches()`` drops them all. Usable as a decorator, with or without arguments;
    ``__wrapped__`` is `fun`, ``.plain`` the plain jit and ``.fast`` the fast jits by their
    options (a sorted tuple of items)."""
    if fun is None:
        return functools.partial(jit, static_argnames=static_argnames, inline=inline)
    plain = jax.jit(fun, static_argnames=static_argnames, inline=inline)
    fast: dict[tuple, Callable] = {}  # one jit per set of options
    calls: dict[tuple, int] = {}

    @functools.wraps(fun)
    def call(*args, **kwargs):
        options = options_for(args) if small_eager(*args) else None
        if options:  # an XLA that knows none of them: the plain jit, compiled once
            try:
                key = _signature(args, kwargs)
                seen = calls.get(key, 0)
            except TypeError:  # an unhashable argument: jax.jit will say so
                return plain(*args, **kwargs)
            if seen < FAST_CALLS:
                if len(calls) >= MAX_SIGNATURES:
                    calls.clear()
                calls[key] = seen + 1
                frozen = tuple(sorted(options.items()))
                if frozen not in fast:
                    fast[frozen] = jax.jit(fun, static_argnames=static_argnames,
                                           compiler_options=options)
                return fast[frozen](*args, **kwargs)
        return plain(*args, **kwargs)

    call.plain, call.fast = plain, fast  # type: ignore[attr-defined]
    return call
