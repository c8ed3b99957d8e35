"""XLA:CPU compile options for a small eager call, probed once on the installed jaxlib.

A program whose run time is microseconds is dominated by its compile: the elemental IR emitter
(``xla_cpu_use_fusion_emitters=False``) and LLVM's -O0 (``xla_backend_optimization_level=0``)
compile RoiAlign's and the ROI poolings' small programs in a quarter to a third of the time,
with the same bits (benchmarks/RESULTS.md: roi_align, and "ROI pooling compile"), except for
bfloat16: the elemental emitter computes it in float32 and rounds a NaN back to the canonical
one (TopK returned ``0x7FC0`` for an input ``0x7FC1``), so a call with a bfloat16 argument
compiles without it (`NOT_FOR_BFLOAT16`). Option names
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

#: in order of preference; each is tried alone
WANTED = ({"xla_cpu_use_fusion_emitters": False}, {"xla_backend_optimization_level": 0})

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

#: Signatures counted per function, each holding its fast executable until its switch, before
#: the counts start again (a bound on their memory).
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


def _static_positions(fun: Callable, static_argnames: Sequence[str]) -> frozenset[int]:
    """The positions of `fun`'s parameters named static (a static argument may come by
    position, as ``jax.jit`` allows)."""
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):  # no signature to read: statics come by name only
        return frozenset()
    return frozenset(i for i, p in enumerate(parameters) if p.name in static_argnames
                     and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def jit(fun: Callable | None = None, *, static_argnames: Sequence[str] = (),
        inline: bool = True) -> Any:
    """``jax.jit(fun, static_argnames=..., inline=...)``, tiered for small eager calls: the
    first `FAST_CALLS` calls of a signature whose arguments are small (`small_eager` of the
    positional arguments) run the program compiled with `fast_compile()` options (the same
    program and bits, compiled in a third to a half of the time); from the next call of that
    signature on, the plain program runs. The fast executable is compiled from the plain jit's
    own trace and lowering, so the switch compiles only: a shape called in a loop pays one more
    backend compile, then runs at full speed, and the fast executable is dropped. Traced
    arguments (under ``jit``, ``vmap``, ``grad``) always take the plain ``jax.jit``, inlined
    into the caller's program. Usable as a decorator, with or without arguments;
    ``__wrapped__`` is `fun`, ``.plain`` the plain jit and ``.fast_compiles()`` how many fast
    executables it has compiled."""
    if fun is None:
        return functools.partial(jit, static_argnames=static_argnames, inline=inline)
    plain = jax.jit(fun, static_argnames=static_argnames, inline=inline)
    static_positions = _static_positions(fun, static_argnames)
    # per signature: [calls so far, its fast executable until the switch]
    calls: dict[tuple, list] = {}
    compiled = [0]

    def fast(options: dict, args: tuple, kwargs: dict):
        compiled[0] += 1
        return plain.trace(*args, **kwargs).lower().compile(compiler_options=options)

    def dynamic(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The arguments an executable takes: the static ones are part of its program."""
        return (tuple(a for i, a in enumerate(args) if i not in static_positions),
                {k: v for k, v in kwargs.items() if k not in static_argnames})

    @functools.wraps(fun)
    def call(*args, **kwargs):
        options = options_for(args) if small_eager(*args) else None
        if options:  # an XLA that knows none of them: the plain jit, compiled once
            try:
                key = _signature(args, kwargs)
                entry = calls.get(key)
            except TypeError:  # an unhashable argument: jax.jit will say so
                return plain(*args, **kwargs)
            if entry is None:
                if len(calls) >= MAX_SIGNATURES:
                    calls.clear()
                entry = calls[key] = [0, fast(options, args, kwargs)]
            if entry[0] < FAST_CALLS:
                entry[0] += 1
                executable = entry[1]
                if entry[0] == FAST_CALLS:
                    entry[1] = None  # the next call compiles the plain program
                dynamic_args, dynamic_kwargs = dynamic(args, kwargs)
                return executable(*dynamic_args, **dynamic_kwargs)
        return plain(*args, **kwargs)

    call.plain = plain  # type: ignore[attr-defined]
    call.fast_compiles = lambda: compiled[0]  # type: ignore[attr-defined]
    return call
