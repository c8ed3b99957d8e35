"""Helpers the test files share: lowest(T) and ONNX's empty value, the float test, the exact
comparison, the x64 switch and the special-float data generators.

``tests/`` is on ``sys.path`` under pytest, so test files import this as ``helpers``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np


def is_float(dtype) -> bool:
    """Floating dtypes, the ml_dtypes ones (bfloat16) included."""
    return bool(jnp.issubdtype(np.dtype(dtype), jnp.floating))


def lowest(dtype) -> np.ndarray:
    """lowest(T) as a 0-d array of `dtype`: the most negative finite value of a floating type,
    ``iinfo.min`` of an integer type (0 when unsigned)."""
    dtype = np.dtype(dtype)
    info = ml_dtypes.finfo(dtype) if is_float(dtype) else np.iinfo(dtype)
    return np.array(info.min, dtype)


def assert_same(actual, expected, context: str = "", *, zero_signs: bool = True) -> None:
    """Exact equality of dtype, shape and values, zero signs included (`zero_signs`: False only
    against a runtime whose zero sign is a documented deviation); NaN equals NaN (16-bit floats
    are compared in float64, which holds each of their values exactly)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{context}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{context}: shape {actual.shape} != {expected.shape}"
    if is_float(expected.dtype):
        actual, expected = actual.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_array_equal(actual, expected, err_msg=context)
    if zero_signs and is_float(expected.dtype):  # assert_array_equal takes -0 == +0
        zeros = expected == 0
        flipped = np.flatnonzero(np.signbit(actual[zeros]) != np.signbit(expected[zeros]))
        assert flipped.size == 0, (
            f"{context}: {flipped.size} zeros of the other sign, the first at "
            f"{np.argwhere(zeros)[flipped[0]].tolist()}: {actual[zeros][flipped[0]]!r}, "
            f"expected {expected[zeros][flipped[0]]!r}")


def onnx_empty(dtype) -> np.ndarray:
    """ONNX's value for a max over no element, as a 0-d array of `dtype`: -inf (floating),
    iinfo.min (integers), False (bool)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array(False)
    return np.array(-np.inf if is_float(dtype) else np.iinfo(dtype).min, dtype)


def x64_for(*dtypes):
    """``jax.enable_x64(True)`` when a 64-bit dtype is involved (else jnp.asarray would narrow
    it), a null context otherwise."""
    if any(np.dtype(d).itemsize >= 8 for d in dtypes):
        return jax.enable_x64(True)
    return contextlib.nullcontext()


@contextlib.contextmanager
def pool_form(compact: bool):
    """MaxPool's compact form forced on or off (`pool_compact.FORCE`) for the block: the form is
    chosen while tracing, so JAX's caches are cleared on the way in and out."""
    from jaxmax._src.lowering.pooling import compact as pool_compact

    saved = pool_compact.FORCE
    pool_compact.FORCE = compact
    jax.clear_caches()
    try:
        yield
    finally:
        pool_compact.FORCE = saved
        jax.clear_caches()


@contextlib.contextmanager
def public_forms():
    """Every JAX internal's public fallback for the block, as a JAX whose internals moved would
    run: the private combiner scatter (`scatter.private.USE`), the tracer's recorded producer
    (`scatter.built.USE`) and the batched linear call (`linear_calls.USE`) switched off, and
    the internals replaced by stubs that fail if reached, so a test passing inside has run the
    fallback. The forms are chosen while tracing, so JAX's caches are cleared on the way in
    and out."""
    from jaxmax._src import linear_calls
    from jaxmax._src.lowering.scatter import built, private

    def unreachable(*args, **kwargs):
        raise AssertionError("a JAX internal was used with its public form forced")

    saved = (private.USE, private.bind, built.USE, built._known_constant, linear_calls.USE,
             linear_calls.call)
    (private.USE, private.bind, built.USE, built._known_constant, linear_calls.USE,
     linear_calls.call) = (False, unreachable, False, unreachable, False, unreachable)
    jax.clear_caches()
    try:
        yield
    finally:
        (private.USE, private.bind, built.USE, built._known_constant, linear_calls.USE,
         linear_calls.call) = saved
        jax.clear_caches()


def special_floats(rng, shape, dtype=np.float32, p_nan=0.12, p_ninf=0.12, p_inf=0.04):
    """Random floats (normal, scale 10) with NaN, -inf and +inf sprinkled in."""
    x = rng.standard_normal(shape) * 10
    u = rng.random(shape)
    x[u < p_nan] = np.nan
    x[(u >= p_nan) & (u < p_nan + p_ninf)] = -np.inf
    x[(u >= p_nan + p_ninf) & (u < p_nan + p_ninf + p_inf)] = np.inf
    return x.astype(dtype)


def unique_values(rng, shape, scale=0.1):
    """Distinct, well separated float64 values (gaps of `scale`, >> a finite-difference step)."""
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2) * scale).reshape(shape)


def child_env(env_x64: bool = False) -> dict[str, str]:
    """The environment of a fresh interpreter for a test: CPU only, no inherited XLA flags (so
    one CPU device unless its code asks for more), 64-bit mode if asked."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "1" if env_x64 else "0"}
    env.pop("XLA_FLAGS", None)
    return env


def run_python(code: str, env_x64: bool = False) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter (one CPU device; 64-bit mode if asked)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env=child_env(env_x64))


def explicit_mesh(spec, count: int = 4):
    """A mesh of the first `count` devices with ``Explicit`` axes for partition spec `spec`:
    ``("a", "b")`` of shape ``(2, count // 2)`` when the spec names ``"a"``, else ``("d",)``."""
    from jax.sharding import AxisType

    devices = jax.devices()[:count]
    if "a" in tuple(spec):
        return jax.make_mesh((2, count // 2), ("a", "b"), axis_types=(AxisType.Explicit,) * 2,
                             devices=devices)
    return jax.make_mesh((count,), ("d",), axis_types=(AxisType.Explicit,), devices=devices)
