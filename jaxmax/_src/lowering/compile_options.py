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
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmax._src.lowering import jax_caches

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
    rest (static arguments, Python scalars) by type and value (``2``, ``2.0`` and ``True``
    are equal, but trace to different types)."""
    def of(a):
        if isinstance(a, jax.Array):
            return (a.shape, a.dtype, a.weak_type, a.sharding)
        if isinstance(a, (np.ndarray, np.generic)):
            return (a.shape, a.dtype)
        return type(a), a
    return tuple(of(a) for a in args), tuple(sorted((k, of(v)) for k, v in kwargs.items()))


def options_for(args: tuple) -> dict:
    """`fast_compile()` for a call with these positional arguments: without the options of
    `NOT_FOR_BFLOAT16` when one of them is bfloat16."""
    options = fast_compile()
    if any(getattr(a, "dtype", None) == jnp.bfloat16 for a in args):
        return {k: v for k, v in options.items() if k not in NOT_FOR_BFLOAT16}
    return options


def _static_positions(fun: Callable, static_argnames: Sequence[str]) -> frozenset[int]:
    """The positions of `static_argnames` that may be passed positionally (as ``jax.jit``
    finds them: from `fun`'s signature)."""
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):  # no signature: static arguments by name only
        return frozenset()
    return frozenset(i for i, p in enumerate(parameters) if p.name in static_argnames
                     and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _compile_ahead(fun: Callable, static_argnames: Sequence[str], options: dict,
                   args: tuple, kwargs: dict) -> Any:
    """`fun` jitted with `options` and compiled for these arguments, through a fresh callable
    that dies here: JAX's trace caches hold a jaxpr (and its lowering: an MLIR context and
    module, about 2 MB for a small ROI program) as long as the jitted callable lives, so only
    the executable stays (the ``Compiled``; called without the static arguments)."""
    fresh = jax.jit(functools.partial(fun), static_argnames=static_argnames,
                    compiler_options=options)
    return fresh.lower(*args, **kwargs).compile()


def jit(fun: Callable | None = None, *, static_argnames: Sequence[str] = (),
        inline: bool = True) -> Any:
    """``jax.jit(fun, static_argnames=..., inline=...)``, tiered for small eager calls: the
    first `FAST_CALLS` calls of a signature whose arguments are small (`small_eager` of the
    positional arguments) run the same function compiled with the fast options
    (`options_for`: the same program and bits, compiled in a third to a half of the time);
    from the next call of that signature on, the plain program runs, compiled then (its code
    is faster: a shape called in a loop pays one more compile, then runs at full speed).
    Traced arguments (under ``jit``, ``vmap``, ``grad``) always take the plain ``jax.jit``,
    inlined into the caller's program.

    The fast programs are compiled ahead of time (`_compile_ahead`) and kept by signature,
    trace context (`jax_caches.trace_key`) and options in a `jax_caches.Store` registered with
    JAX's caches: a new small shape keeps its executable only, not its jaxpr and MLIR module; a
    signature's fast program is dropped at its switch to the plain one. ``jax.clear_caches()``
    drops every program, as for a ``jax.jit``. On a JAX whose internals `jax_caches` cannot
    reach, the fast programs live in ``jax.jit`` caches instead (the same programs and bits).

    Usable as a decorator, with or without arguments; ``__wrapped__`` is `fun`, ``.plain`` the
    plain jit, ``.fast`` the ``jax.jit`` caches by options (the fallback) and ``.programs`` the
    store of programs compiled ahead of time (``.programs.by_key``)."""
    if fun is None:
        return functools.partial(jit, static_argnames=static_argnames, inline=inline)
    plain = jax.jit(fun, static_argnames=static_argnames, inline=inline)
    fast: dict[tuple, Callable] = {}  # the fallback: one jit per set of options
    programs = jax_caches.Store()  # the fast programs compiled ahead of time
    registered: list[bool] = []  # whether `programs` is registered with JAX's caches (on first use)
    calls: dict[tuple, int] = {}
    static_names = frozenset(static_argnames)
    static_at = _static_positions(fun, static_argnames)

    def ahead(key, seen, options, args, kwargs):
        """A fast call through a program compiled ahead of time."""
        if not registered:
            jax_caches.register(programs, f"jaxmax fast programs of {fun!r}")
            registered.append(True)
        full = (key, jax_caches.trace_key(), tuple(sorted(options.items())))
        program = programs.by_key.get(full)
        if program is None:
            program = _compile_ahead(fun, static_argnames, options, args, kwargs)
            programs.by_key[full] = program
        if seen + 1 >= FAST_CALLS:  # its last fast call: the plain program from the next on
            programs.by_key.pop(full, None)
        if static_at:
            args = tuple(a for i, a in enumerate(args) if i not in static_at)
        if static_names:
            kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
        return program(*args, **kwargs)

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
                    programs.cache_clear()
                calls[key] = seen + 1
                if jax_caches.available() and not jax.config.jax_disable_jit:
                    return ahead(key, seen, options, args, kwargs)  # (no AOT under disable_jit)
                frozen = tuple(sorted(options.items()))
                if frozen not in fast:
                    fast[frozen] = jax.jit(fun, static_argnames=static_argnames,
                                           compiler_options=options)
                return fast[frozen](*args, **kwargs)
        return plain(*args, **kwargs)

    call.plain, call.fast, call.programs = plain, fast, programs  # type: ignore[attr-defined]
    return call
