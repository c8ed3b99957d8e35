"""One XLA compile per distinct program for the ``python -m jaxmax check`` tests.

``check`` jits each bound node afresh (a new ``NodeFunction`` each run), so a model checked
twice (seeded, then with NaN; ONNX, then its IR; a broken binding beside the real one) traces,
lowers and compiles the same program again. ``shared_compiles`` turns on JAX's own persistent
compilation cache (in a per-session temporary directory) for a test module: every node is still
traced and lowered by jaxmax in every test, and XLA still compiles every distinct program; only
an executable whose HLO, compile options and backend are byte-identical to one already compiled
in this session is loaded instead of compiled again. What a test checks (the values, the report)
is unchanged; the cache is switched off again when the module ends.

Use it with ``pytestmark = pytest.mark.usefixtures("shared_compiles")`` and import the fixture
into the test module.
"""

from __future__ import annotations

import jax
import pytest
from jax.experimental.compilation_cache import compilation_cache

_OPTIONS = {
    "jax_compilation_cache_dir": None,  # set per session below
    "jax_persistent_cache_min_compile_time_secs": 0.0,  # every program, however small
    "jax_persistent_cache_min_entry_size_bytes": -1,
}


@pytest.fixture(scope="module")
def shared_compiles(tmp_path_factory):
    """JAX's persistent compilation cache on for this module, off (as before) after it; one
    directory per session (per xdist worker), shared by the modules that use it."""
    directory = tmp_path_factory.getbasetemp() / "xla-compile-cache"
    directory.mkdir(exist_ok=True)
    saved = {name: getattr(jax.config, name) for name in _OPTIONS}
    compilation_cache.reset_cache()
    for name, value in _OPTIONS.items():
        jax.config.update(name, str(directory) if value is None else value)
    try:
        yield
    finally:
        for name, value in saved.items():
            jax.config.update(name, value)
        compilation_cache.reset_cache()
