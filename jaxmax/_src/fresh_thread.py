"""Run a probe of a JAX internal where no caller's context applies.

JAX keeps its trace state and its mesh contexts (``jax.set_mesh``, ``shard_map``'s manual
axes) per thread. A probe that evaluates a small program to decide, once per process, whether
an internal works must not inherit its first caller's: inside an eager gradient of a
``shard_map`` on an ``Explicit`` mesh, a probe's program failed to compile (its axes manual)
and the process then took the fallback forms for good. `run` evaluates the probe in a thread
of its own.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def run(probe: Callable[[], T]) -> T:
    """``probe()``, evaluated in a fresh thread (its exceptions raised here)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(probe).result()
