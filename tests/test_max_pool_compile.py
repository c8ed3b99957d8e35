"""Compiling the pooling operators: no error-level XLA log line, and no compile time that grows
with the window (docs/semantics.md §9). Each check runs in a child process, whose stderr holds
XLA's C++ log and whose compile caches start empty.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# XLA's C++ log prefix of an error-level line: "E1126 15:05:48.139545  15277 file.cc:10] ..."
XLA_ERROR = re.compile(r"^E\d{4} \d\d:\d\d:\d\d", re.MULTILINE)


def _child(code: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "JAX_PLATFORMS": "cpu"})


def test_xla_error_pattern_is_recognised():
    line = ("E1126 15:05:48.139545   15277 algebraic_simplifier.cc:10564] Algebraic simplifier "
            "is likely stuck in a circular simplification loop")
    assert XLA_ERROR.search("I0000 00:00:00.0 x.cc:1] fine\n" + line)
    assert not XLA_ERROR.search("I1126 15:05:48.139545 1 x.cc:1] info\nEverything fine\n")


def test_no_xla_error_line_compiling_every_pooling_operator():
    """Every pooling operator, both forms, odd shapes and 16-bit dtypes, values, indices and
    gradients: the compile prints no error-level line (one such was XLA's algebraic simplifier
    cycling on the unrolled bfloat16 taps). The calls of each form are compiled as one program
    per set of compile options their eager calls take (tests/jit_batch.py), the gradients each
    under ``jax.jit``: every operator's lowering is in a compiled module either way, and XLA's
    simplifier runs over the whole module."""
    code = """
        import sys, warnings
        from functools import partial
        warnings.simplefilter("ignore")
        sys.path.insert(0, "tests")
        import jax, jax.numpy as jnp, numpy as np
        from jit_batch import jit_each
        from jaxmax import onnx, openvino as ov
        from jaxmax._src.lowering.pooling import compact as pool_compact
        GEOMETRIES = [((2, 2, 3, 4, 3), [2, 4, 3], [4, 4, 2], [0, 0, 2], [3, 0, 0]),
                      ((1, 3, 5, 7), [3, 2], [2, 3], [1, 0], [2, 1]),
                      ((2, 1, 9), [4], [3], [2], [3])]

        rng = np.random.default_rng(0)
        for force in (True, False):
            pool_compact.FORCE = force
            jax.clear_caches()
            calls, gradients, points = [], [], []
            for shape, k, s, pb, pe in GEOMETRIES:
                ov_pool = partial(ov.max_pool, kernel=k, strides=s, pads_begin=pb, pads_end=pe)
                onnx_pool = partial(onnx.max_pool, kernel_shape=k, strides=s, pads=pb + pe)
                adaptive = partial(ov.adaptive_max_pool, output_shape=[3] * len(k))
                for dtype in (jnp.bfloat16, np.float16, np.int8):
                    x = jnp.asarray(rng.standard_normal(shape) * 9, dtype)
                    calls += [
                        (partial(ov_pool, rounding_type="ceil"), (x,)),
                        (partial(ov_pool, rounding_type="ceil_torch",
                                 dilations=2 if len(k) == 1 else 1, opset=14), (x,)),
                        (partial(onnx_pool, ceil_mode=1, return_indices=True,
                                 opset=12 if dtype != jnp.bfloat16 else 22), (x,)),
                        (adaptive, (x,))]
                    if dtype == jnp.bfloat16:
                        if force:  # a reduction: the same program in both forms
                            calls.append((onnx.global_max_pool, (x,)))
                        gradients += [
                            lambda v, f=ov_pool: f(v).astype(float).sum(),
                            lambda v, f=onnx_pool: f(v).astype(float).sum(),
                            lambda v, f=adaptive: f(v)[0].astype(float).sum()]
                        points.append(x)
            jit_each(calls, as_eager=True)
            for i, loss in enumerate(gradients):
                jax.block_until_ready(jax.jit(jax.grad(loss))(points[i // 3]))
        print("done")
    """
    result = _child(code, timeout=600)
    assert result.returncode == 0 and "done" in result.stdout, result.stderr[-3000:]
    errors = XLA_ERROR.findall(result.stderr)
    assert not errors, "\n".join(line for line in result.stderr.splitlines()
                                 if XLA_ERROR.match(line))


def test_long_windows_compile_quickly():
    """Long windows of every pooling operator compile in seconds, not minutes (each was 10 s
    to minutes, or never finished, while the lowerings unrolled one expression per tap or per
    window): each compile, after ``jax.clear_caches()``, within a generous 10 s."""
    code = """
        import time, warnings
        warnings.simplefilter("ignore")
        import jax, jax.numpy as jnp
        from jaxmax import onnx, openvino as ov
        S, f32 = jax.ShapeDtypeStruct, jnp.float32
        CASES = {
            "MaxPool-1 1-D k1000": (lambda v: ov.max_pool(v, kernel=1000, strides=1),
                                    S((1, 1, 5000), f32)),
            "MaxPool-8 1-D k1000 indices": (lambda v: ov.max_pool(v, kernel=1000, strides=1,
                                                                  opset=8), S((1, 1, 5000), f32)),
            "MaxPool-14 1-D k1000 indices": (lambda v: ov.max_pool(v, kernel=1000, strides=1,
                                                                   opset=14),
                                             S((1, 1, 5000), f32)),
            "MaxPool-1 2-D k32 s1": (lambda v: ov.max_pool(v, kernel=32, strides=1),
                                     S((1, 1, 64, 64), f32)),
            "MaxPool-1 2-D k32 s1 gradient": (
                jax.grad(lambda v: ov.max_pool(v, kernel=32, strides=1).sum()),
                S((1, 1, 64, 64), f32)),
            "ONNX MaxPool k32 s32 Indices": (
                lambda v: onnx.max_pool(v, kernel_shape=(32, 32), strides=(32, 32),
                                        return_indices=True), S((1, 1, 64, 64), f32)),
            "ONNX MaxPool 1-D k1000 gradient": (
                jax.grad(lambda v: onnx.max_pool(v, kernel_shape=(1000,)).sum()),
                S((1, 1, 5000), f32)),
            "MaxPool-14 3-D k5 d2 indices": (
                lambda v: ov.max_pool(v, kernel=5, strides=1, dilations=2, opset=14),
                S((1, 8, 16, 32, 32), f32)),
            "AdaptiveMaxPool (1, 1, 100003) -> 7": (lambda v: ov.adaptive_max_pool(v, (7,)),
                                                    S((1, 1, 100003), f32)),
            "AdaptiveMaxPool (8, 64, 224, 224) -> (5, 3)": (
                lambda v: ov.adaptive_max_pool(v, (5, 3)), S((8, 64, 224, 224), f32)),
            "AdaptiveMaxPool (1, 1, 100003) -> 7 gradient": (
                jax.grad(lambda v: ov.adaptive_max_pool(v, (7,))[0].sum()),
                S((1, 1, 100003), f32)),
            "GlobalMaxPool (8, 64, 224, 224)": (onnx.global_max_pool,
                                                S((8, 64, 224, 224), f32)),
        }
        for name, (fn, spec) in CASES.items():
            jax.clear_caches()
            start = time.perf_counter()
            jax.jit(fn).lower(spec).compile()
            print(f"{name}: {time.perf_counter() - start:.2f}", flush=True)
    """
    result = _child(code, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    times = dict(line.rsplit(": ", 1) for line in result.stdout.splitlines())
    assert len(times) == 12, result.stdout
    slow = {name: t for name, t in times.items() if float(t) > 10}
    assert not slow, f"compile seconds over 10: {slow}"
