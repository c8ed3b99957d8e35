"""The fast-compile options of small eager calls (lowering/compile_options.py): probed on the
installed XLA (jaxlib 0.12 rejects an option jaxlib 0.10 knows), the fallback with no option
gives the same bits, and `compile_options.jit` (every operator's entry point) sends exactly the
small concrete calls to them: traced and large calls compile as plain ``jax.jit``."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import assert_same

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering import compile_options
from jaxmax._src.lowering.roi import align


def test_the_probe_keeps_only_options_xla_accepts():
    got = compile_options.fast_compile()
    assert all(option in compile_options.WANTED for option in ({k: v} for k, v in got.items()))
    assert compile_options.accepted(got)
    assert not compile_options.accepted({"xla_no_such_option_at_all": True})


def _args():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 12, 10)).astype(np.float32)
    rois = np.array([[0.5, 1.0, 7.5, 9.0], [-3.0, 2.0, 20.0, 6.5]], np.float32)
    return x, rois, np.array([0, 0], np.int32)


def _call(x, rois, batch):
    return onnx.roi_align(x, rois, batch, mode="max", output_height=3, output_width=3,
                          sampling_ratio=0, spatial_scale=1.0)


@pytest.mark.parametrize("fallback", [False, True])
def test_small_eager_call_same_bits_with_and_without_options(monkeypatch, fallback):
    jitted = jax.jit(_call)(*_args())  # traced: never the small eager path
    if fallback:  # an XLA that knows none of the options
        monkeypatch.setattr(compile_options, "accepted", lambda options: False)
        compile_options.fast_compile.cache_clear()
        align.align.fast.cache_clear()
        assert compile_options.fast_compile() == {}
    try:
        assert_same(np.asarray(_call(*_args())), np.asarray(jitted))
    finally:
        compile_options.fast_compile.cache_clear()
        align.align.fast.cache_clear()


def _counted():
    """A fresh `compile_options.jit` function, and its two jits' compile counts."""
    f = compile_options.jit(lambda x, *, k: x * k, static_argnames=("k",))
    return f, lambda: (f.plain._cache_size(), f.fast()._cache_size())


def test_a_small_concrete_call_compiles_with_the_fast_options():
    f, counts = _counted()
    small = np.arange(compile_options.SMALL_BYTES // 4, dtype=np.float32)  # exactly the limit
    np.testing.assert_array_equal(f(small, k=2), small * 2)
    np.testing.assert_array_equal(f(jax.numpy.asarray(small[:7]), k=2), small[:7] * 2)
    assert counts() == (0, 2)


def test_large_and_traced_calls_compile_as_plain_jit():
    f, counts = _counted()
    large = np.zeros(compile_options.SMALL_BYTES // 4 + 1, np.float32)  # one element past it
    f(large, k=2)
    assert counts() == (1, 0)
    small = np.ones(8, np.float32)
    np.testing.assert_array_equal(jax.jit(lambda v: f(v, k=3))(small), small * 3)  # inlined
    np.testing.assert_array_equal(jax.vmap(lambda v: f(v, k=3))(small[None]), small[None] * 3)
    np.testing.assert_array_equal(jax.grad(lambda v: f(v, k=3).sum())(small), small * 3)
    assert counts()[1] == 0


def test_operator_entry_points_take_the_fast_options_when_small():
    """A public call on small data compiles only through the fast jit of its entry point."""
    from jaxmax._src.lowering import reduce
    x = np.arange(165, dtype=np.float32).reshape(5, 3, 11) - 70.5  # a shape no other test uses
    fast = reduce._reduce_max_jit.fast()
    plain = reduce._reduce_max_jit.plain
    before = (plain._cache_size(), fast._cache_size())
    np.testing.assert_array_equal(ov.reduce_max(x, [0, 2]), x.max(axis=(0, 2)))
    assert (plain._cache_size(), fast._cache_size()) == (before[0], before[1] + 1)


def test_a_signature_called_in_a_loop_switches_to_the_plain_program():
    f, counts = _counted()
    small = np.arange(16, dtype=np.float32)
    for _ in range(compile_options.FAST_CALLS):
        np.testing.assert_array_equal(f(small, k=2), small * 2)
    assert counts() == (0, 1)  # one fast compile served every call so far
    for _ in range(3):
        np.testing.assert_array_equal(f(small, k=2), small * 2)
    assert counts() == (1, 1)  # the next call compiled the plain program, and it stays
    np.testing.assert_array_equal(f(small, k=5), small * 5)  # another signature: fast again
    np.testing.assert_array_equal(f(small[:3], k=2), small[:3] * 2)
    assert counts() == (1, 3)


def test_without_fast_options_a_small_call_compiles_one_program(monkeypatch):
    """An XLA that knows none of the options: the fast jit is the plain one, so a signature
    that switches after `FAST_CALLS` calls does not compile the same program twice."""
    monkeypatch.setattr(compile_options, "accepted", lambda options: False)
    compile_options.fast_compile.cache_clear()
    try:
        f, counts = _counted()
        small = np.arange(16, dtype=np.float32)
        for _ in range(compile_options.FAST_CALLS + 2):
            np.testing.assert_array_equal(f(small, k=2), small * 2)
        assert f.fast() is f.plain and counts() == (1, 1)  # one cache, one compile
    finally:
        compile_options.fast_compile.cache_clear()
