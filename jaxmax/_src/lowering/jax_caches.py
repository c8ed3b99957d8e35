"""JAX's trace context and cache registry, for programs compiled ahead of time and kept by
`compile_options.jit` (its small eager calls).

A ``jax.jit`` keeps, per function, every traced jaxpr, and with it the lowering (a whole MLIR
context and module) and the executable, as long as the function lives; an operator's entry
point lives forever, so every new small shape called eagerly kept about 3 MB. A program compiled
ahead of time through a fresh callable (``jax.jit(partial(fun)).lower(...).compile()``) keeps
only the executable once the callable is dropped. Keeping such programs ourselves needs two
things a ``jax.jit`` has inside:

* the trace context (`trace_key`): the configuration a trace depends on (x64, the default
  device, a mesh in context, the promotion rules, ...), which ``jax.jit`` adds to its cache key;
  a program is reused only under the context it was traced in;
* JAX's cache registry (`register`): ``jax.clear_caches()`` calls ``cache_clear()`` on every
  registered cache, so a registered store of programs empties with JAX's own caches (tests and
  benchmarks rely on a clear dropping every program).

Both are JAX internals (``jax._src.config.trace_context``, ``jax._src.util.register_cache``).
`available` decides once per process whether they work as used here; when they do not, callers
keep their programs in ``jax.jit`` caches (more memory per shape, the same programs and bits).
"""

from __future__ import annotations

import functools
from typing import Any

import jax

try:
    from jax._src import config as _jax_config
    from jax._src import util as _jax_util

    _PRIVATE = True
except ImportError:  # pragma: no cover - a JAX without these internals keeps jax.jit caches
    _PRIVATE = False

#: None: `available` probes; False forces the callers' ``jax.jit`` form (tests set it); True
#: skips the probe.
USE: bool | None = None


def available() -> bool:
    """Whether `trace_key` and `register` work on this JAX (decided once by `_works`, unless
    `USE` says)."""
    return _works() if USE is None else USE


def trace_key() -> Any:
    """A hashable value that differs whenever the configuration a trace depends on differs."""
    return _jax_config.trace_context()


def register(cache: Any, what: str) -> None:
    """Have ``jax.clear_caches()`` call ``cache.cache_clear()`` (held weakly by JAX)."""
    _jax_util.register_cache(cache, what)


class Store:
    """Programs by key (`by_key`), in the form JAX's cache registry takes: ``cache_clear``
    (what ``jax.clear_caches()`` calls) and ``cache_info``."""

    def __init__(self) -> None:
        self.by_key: dict[Any, Any] = {}

    def cache_clear(self) -> None:
        self.by_key.clear()

    def cache_info(self) -> int:
        return len(self.by_key)


@functools.cache
def _works() -> bool:
    """The probe: the trace context is hashable and changes with a configuration a trace
    depends on (the rank promotion rule, set through its public context manager), and a
    registered cache sits in the registry ``jax.clear_caches()`` empties."""
    if not _PRIVATE:
        return False
    try:
        base = trace_key()
        with jax.numpy_rank_promotion("raise"):
            raised = trace_key()
        with jax.numpy_rank_promotion("allow"):
            allowed = trace_key()
        probe = Store()
        register(probe, "jaxmax probe")
        registered = probe in _jax_util._caches
        return hash(base) == hash(trace_key()) and raised != allowed and registered
    except Exception:  # noqa: BLE001 (any failure of an internal: the public form)
        return False
