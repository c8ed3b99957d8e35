"""The fast-compile options of small eager calls (lowering/compile_options.py): probed on the
installed XLA (jaxlib 0.12 rejects an option jaxlib 0.10 knows), the fallback with no option
gives the same bits, and `compile_options.jit` (every operator's entry point) sends exactly the
small concrete calls to them: traced and large calls compile as plain ``jax.jit``."""

from __future__ import annotations

import gc

import jax
import numpy as np
import pytest
from helpers import assert_same

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering import compile_options, jax_caches


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
        assert compile_options.fast_compile() == {}
    try:
        assert_same(np.asarray(_call(*_args())), np.asarray(jitted))
    finally:
        compile_options.fast_compile.cache_clear()


@pytest.fixture
def compiled(monkeypatch):
    """The functions whose fast programs were compiled ahead of time, one entry a compile."""
    seen = []
    real = compile_options._compile_ahead

    def counting(fun, *args, **kwargs):
        seen.append(fun)
        return real(fun, *args, **kwargs)

    monkeypatch.setattr(compile_options, "_compile_ahead", counting)
    return seen


def _fast_compiles(f, compiled) -> int:
    """How many fast programs `compile_options.jit` function `f` compiled: ahead of time, and
    in its ``jax.jit`` caches (the fallback)."""
    ahead = sum(fun is f.__wrapped__ for fun in compiled)
    return ahead + sum(jitted._cache_size() for jitted in f.fast.values())


@pytest.fixture
def counted(compiled):
    """A fresh `compile_options.jit` function, and its compile counts: plain, fast."""
    f = compile_options.jit(lambda x, *, k: x * k, static_argnames=("k",))
    return f, lambda: (f.plain._cache_size(), _fast_compiles(f, compiled))


def test_a_small_concrete_call_compiles_with_the_fast_options(counted):
    f, counts = counted
    small = np.arange(compile_options.SMALL_BYTES // 4, dtype=np.float32)  # exactly the limit
    np.testing.assert_array_equal(f(small, k=2), small * 2)
    np.testing.assert_array_equal(f(jax.numpy.asarray(small[:7]), k=2), small[:7] * 2)
    assert counts() == (0, 2)


def test_large_and_traced_calls_compile_as_plain_jit(counted):
    f, counts = counted
    large = np.zeros(compile_options.SMALL_BYTES // 4 + 1, np.float32)  # one element past it
    f(large, k=2)
    assert counts() == (1, 0)
    small = np.ones(8, np.float32)
    np.testing.assert_array_equal(jax.jit(lambda v: f(v, k=3))(small), small * 3)  # inlined
    np.testing.assert_array_equal(jax.vmap(lambda v: f(v, k=3))(small[None]), small[None] * 3)
    np.testing.assert_array_equal(jax.grad(lambda v: f(v, k=3).sum())(small), small * 3)
    assert counts()[1] == 0


def test_operator_entry_points_take_the_fast_options_when_small(compiled):
    """A public call on small data compiles only through the fast jit of its entry point."""
    from jaxmax._src.lowering import reduce
    x = np.arange(165, dtype=np.float32).reshape(5, 3, 11) - 70.5  # a shape no other test uses
    entry = reduce._reduce_max_jit
    before = (entry.plain._cache_size(), _fast_compiles(entry, compiled))
    np.testing.assert_array_equal(ov.reduce_max(x, [0, 2]), x.max(axis=(0, 2)))
    assert (entry.plain._cache_size(), _fast_compiles(entry, compiled)) == (before[0],
                                                                             before[1] + 1)


def test_a_signature_called_in_a_loop_switches_to_the_plain_program(counted):
    f, counts = counted
    small = np.arange(16, dtype=np.float32)
    for _ in range(compile_options.FAST_CALLS):
        np.testing.assert_array_equal(f(small, k=2), small * 2)
    assert counts() == (0, 1)  # one fast compile served every call so far
    assert f.programs.by_key == {}  # and is dropped: the next call runs the plain program
    for _ in range(3):
        np.testing.assert_array_equal(f(small, k=2), small * 2)
    assert counts() == (1, 1)  # the next call compiled the plain program, and it stays
    np.testing.assert_array_equal(f(small, k=5), small * 5)  # another signature: fast again
    np.testing.assert_array_equal(f(small[:3], k=2), small[:3] * 2)
    assert counts() == (1, 3)


def test_without_fast_options_a_small_call_compiles_one_program(monkeypatch, counted):
    """An XLA that knows none of the options: a small call is a plain one, so a signature
    called more than `FAST_CALLS` times does not compile the same program twice."""
    monkeypatch.setattr(compile_options, "accepted", lambda options: False)
    compile_options.fast_compile.cache_clear()
    try:
        f, counts = counted
        small = np.arange(16, dtype=np.float32)
        for _ in range(compile_options.FAST_CALLS + 2):
            np.testing.assert_array_equal(f(small, k=2), small * 2)
        assert counts() == (1, 0)  # the plain program only, compiled once
    finally:
        compile_options.fast_compile.cache_clear()


@pytest.fixture(params=["ahead", "jit caches"])
def form(request, monkeypatch):
    """Where the fast programs live: compiled ahead of time, or (a JAX whose internals
    `jax_caches` cannot reach) in ``jax.jit`` caches."""
    if request.param == "jit caches":
        monkeypatch.setattr(jax_caches, "USE", False)
    return request.param


def _held(f) -> int:
    """The fast programs `f` holds now."""
    return len(f.programs.by_key) + sum(jitted._cache_size() for jitted in f.fast.values())


def test_clear_caches_drops_the_fast_programs(form, counted):
    """``jax.clear_caches()`` drops the fast programs too: a test that flips a lowering switch
    between two eager calls (RoiAlign's guards) compiles the second call anew."""
    f, counts = counted
    small = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(f(small, k=2), small * 2)
    assert counts() == (0, 1) and _held(f) == 1
    jax.clear_caches()
    assert _held(f) == 0 and f.plain._cache_size() == 0
    np.testing.assert_array_equal(f(small, k=2), small * 2)  # compiled anew
    assert counts() == ((0, 2) if form == "ahead" else (0, 1)) and _held(f) == 1


def test_clear_caches_retraces_a_patched_function(form):
    """What the value tests' ``program`` fixtures do: patch a function the program calls, clear
    JAX's caches, and the next call (same signature) traces with the patch."""
    scale = {"by": 2.0}
    f = compile_options.jit(lambda x: x * scale["by"])
    small = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(f(small), small * 2)
    scale["by"] = 3.0
    np.testing.assert_array_equal(f(small), small * 2)  # the program kept its constant
    jax.clear_caches()
    np.testing.assert_array_equal(f(small), small * 3)


def _alive(kind: str) -> int:
    gc.collect()
    return sum(type(o).__name__ == kind for o in gc.get_objects())


def test_a_new_small_shape_keeps_no_lowering_alive(form):
    """A fast call of a new shape keeps its executable only: no ``MeshComputation`` (which
    holds the MLIR context and module, about 2 MB for a small ROI program) stays alive once
    the call returns. The fallback in ``jax.jit`` caches keeps one a shape, as ``jax.jit``
    does: the count this test guards."""
    rois = np.array([[0, 1.0, 1.0, 6.0, 5.0], [0, 0.0, 2.0, 8.0, 7.0]], np.float32)
    shapes = [(1, 2, 9, 23 + i) for i in range(3)] if form == "ahead" else [
        (1, 2, 9, 29 + i) for i in range(3)]  # shapes no other test compiles
    before = _alive("MeshComputation")
    for shape in shapes:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        onnx.max_roi_pool(x, rois, pooled_shape=(3, 3))
    kept = _alive("MeshComputation") - before
    assert kept == 0 if form == "ahead" else kept >= len(shapes)


def test_static_arguments_by_position_and_name(counted):
    """Static arguments select the program and are not passed to it, by name or position."""
    f = compile_options.jit(lambda x, k, *, s: x * k + s, static_argnames=("k", "s"))
    small = np.arange(4, dtype=np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(f(small, 3, s=1), small * 3 + 1)
        np.testing.assert_array_equal(f(small, k=4, s=1), small * 4 + 1)
        np.testing.assert_array_equal(f(small, 3, s=2), small * 3 + 2)


def test_python_scalars_of_other_types_take_their_own_program():
    """``2``, ``2.0`` and ``True`` are equal keys in a dict but trace to int32, float32 and
    bool: each call gets the result ``jax.jit`` gives, never a program traced for another."""
    f = compile_options.jit(lambda x, y: x + y)
    small = np.arange(3, dtype=np.int32)
    for y in (2, 2.0, True, 2):
        got, want = f(small, y), jax.jit(lambda x, v: x + v)(small, y)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_a_program_is_reused_only_under_its_trace_context():
    """The configuration a trace reads (here the rank promotion rule) is part of a program's
    key, as in ``jax.jit``: under ``raise`` the same call raises as a ``jax.jit`` does."""
    f = compile_options.jit(lambda x, y: x + y)
    x, y = np.ones(3, np.float32), np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(f(x, y), x + y)
    with jax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="jax_numpy_rank_promotion"):
            f(x, y)
    np.testing.assert_array_equal(f(x, y), x + y)


def test_the_signatures_counted_are_bounded(monkeypatch, counted):
    """Past `MAX_SIGNATURES` signatures the counts start again, and the programs kept with
    them go too."""
    monkeypatch.setattr(compile_options, "MAX_SIGNATURES", 2)
    f, counts = counted
    for n in (3, 4, 5):
        np.testing.assert_array_equal(f(np.ones(n, np.float32), k=2), np.full(n, 2.0))
    assert len(f.programs.by_key) == 1 and counts() == (0, 3)


def test_other_options_take_their_own_program(monkeypatch, counted):
    """A program is kept by its options too: a call whose options differ (a benchmark that
    leaves one out) compiles its own, never runs one compiled with others."""
    f, counts = counted
    small = np.arange(5, dtype=np.float32)
    f(small, k=2)
    fewer = dict(list(compile_options.fast_compile().items())[1:])
    monkeypatch.setattr(compile_options, "fast_compile", lambda: fewer)
    np.testing.assert_array_equal(f(small, k=2), small * 2)
    assert counts() == (0, 2)


def test_under_disable_jit_a_small_call_runs_op_by_op():
    """``jax.disable_jit()`` runs the function on concrete values, as ``jax.jit`` does (a
    program compiled ahead of time cannot)."""
    seen = []

    def g(x):
        seen.append(isinstance(x, jax.core.Tracer))
        return x * 2

    f = compile_options.jit(g)
    small = np.arange(3, dtype=np.float32)
    with jax.disable_jit():
        np.testing.assert_array_equal(f(small), small * 2)
    assert seen == [False]


def test_wrong_arguments_raise_as_jax_jit_does():
    f = compile_options.jit(lambda x, *, k: x * k, static_argnames=("k",))
    small = np.arange(3, dtype=np.float32)
    f(small, k=2)
    with pytest.raises(TypeError):
        f(small, small, k=2)
    with pytest.raises(TypeError):
        f(small, k=2, other=1)
    with pytest.raises(ValueError, match="static"):
        f(small, k=np.arange(2))  # a static argument must be hashable: jax.jit's error


@pytest.mark.parametrize("face", ["onnx", "openvino"])
def test_bfloat16_nan_payloads_keep_their_bits_in_a_small_eager_top_k(face):
    """XLA:CPU's elemental emitter computes bfloat16 in float32 and rounds every NaN back to
    the canonical one: a small eager TopK returned 0x7FC0 for 0x7FC1 (and 0xFFC0 for 0xFFC3)
    while its jitted program kept them. The selected elements keep their bits."""
    import ml_dtypes

    x = np.random.default_rng(0).standard_normal((1, 6, 2, 4)).astype(ml_dtypes.bfloat16)
    bits = x.view(np.uint16)
    bits[0, 1, 1, 2], bits[0, 3, 0, 0] = 0x7FC1, 0xFFC3
    if face == "onnx":
        def f(v):
            return onnx.top_k(v, 2, axis=1)[0]
    else:
        def f(v):
            return ov.top_k(v, 2, axis=-2, mode="max", sort="index", opset=1)[0]
    eager = np.asarray(f(x)).view(np.uint16)
    assert {0x7FC1, 0xFFC3} <= set(eager.ravel().tolist())  # the payloads are selected
    np.testing.assert_array_equal(eager, np.asarray(jax.jit(f)(x)).view(np.uint16))
