"""A hash of the lowered StableHLO of every JAX benchmark row and of each lowering form, one line
per program: to show that a refactoring changes no compiled program (run it on the base commit
and on the change, then ``diff`` the two outputs).

Programs hashed:

* every row of every group of ``run.py`` whose runtime is JAX (jaxmax and plain JAX alike), at
  the quick and the full sizes: ``jax.jit(f).lower(*specs)`` of the row's function on its
  inputs' shapes (an eager row is jitted here; a ``many_shapes`` row on three of its shapes);
* the forms that sizes alone do not all reach on those rows: MaxPool's compact form (pairs and
  triples), its unrolled taps and the staged 3-D values, under both values rules, values alone,
  with indices and their gradient; AdaptiveMaxPool, ArgMax, TopK and the scatter faces on a few
  shapes around their thresholds.

The text is lowered without debug information (``Lowered.as_text()``; no source locations), so
a moved line or a renamed Python function changes no hash unless it changes the program.

Run: ``PYTHONPATH=$PWD python benchmarks/hlo_hashes.py [--quick-only] [--only SUBSTRING]
> hashes.txt`` (55 minutes for everything on a 2-core machine at load 15-19; rows that fail to
lower print ``ERR`` and the exception's type).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _hash(fn: Callable[..., Any], args: list[Any]) -> str:
    import jax
    import numpy as np

    arrays = [i for i, a in enumerate(args) if isinstance(a, (np.ndarray, jax.Array))]
    specs = [jax.ShapeDtypeStruct(args[i].shape, args[i].dtype) for i in arrays]

    def call(*values: Any) -> Any:
        full = list(args)
        for i, v in zip(arrays, values, strict=True):
            full[i] = v
        return fn(*full)

    text = jax.jit(call).lower(*specs).as_text()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def benchmark_rows(quick_only: bool) -> Iterator[tuple[str, Callable[[], str]]]:
    """(row name, a function returning its hash) for every JAX row of every group."""
    import numpy as np
    from jaxmax_bench.cases import Ctx, sizes
    from jaxmax_bench.compile_cost import JaxRun, ShapeSweep
    from jaxmax_bench.groups import CASE_BUILDERS

    for quick in (True,) if quick_only else (True, False):
        sz = sizes(quick)
        for group, cases in CASE_BUILDERS.items():
            for case in cases(sz):
                ctxs: dict[str, Ctx] = {}
                for impl in case.impls:
                    if impl.backend != "jax":
                        continue
                    key = impl.inputs or case.inputs
                    name = f"{'quick' if quick else 'full'} | {group} | {case.name} | {impl.label}"

                    def one(impl: Any = impl, key: str = key, ctxs: dict = ctxs,
                            sz: Any = sz) -> str:
                        if key not in ctxs:
                            ctxs[key] = Ctx(key, sz)
                        run = impl.build(ctxs[key])
                        if isinstance(run, JaxRun):
                            return _hash(run.fn, run.args)
                        if isinstance(run, ShapeSweep):
                            rng = np.random.default_rng(0)
                            fn = run.make()
                            return " ".join(_hash(fn, list(run.inputs(rng, s)))
                                            for s in run.shapes[:3])
                        return "not a JAX run"

                    yield name, one


def form_rows() -> Iterator[tuple[str, Callable[[], str]]]:
    """(form name, a function returning its hash) for the lowering forms, forced where a switch
    exists."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxmax import onnx
    from jaxmax import openvino as ov
    from jaxmax._src.lowering.pooling import compact as pool_compact

    def forced(fn: Callable[..., Any], args: list[Any], force: bool | None,
               pairs: bool | None) -> Callable[[], str]:
        def one() -> str:
            old = pool_compact.FORCE, pool_compact.PAIRS
            pool_compact.FORCE, pool_compact.PAIRS = force, pairs
            jax.clear_caches()
            try:
                return _hash(fn, args)
            finally:
                pool_compact.FORCE, pool_compact.PAIRS = old
                jax.clear_caches()

        return one

    def spec(shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
        return np.zeros(shape, dtype)

    pools: list[tuple[str, tuple[int, ...], dict[str, Any]]] = [
        ("2d k3 s2 p1", (2, 3, 17, 19), {"k": (3, 3), "s": (2, 2), "p": (1, 1), "d": (1, 1)}),
        ("2d k2 s2", (2, 3, 16, 16), {"k": (2, 2), "s": (2, 2), "p": (0, 0), "d": (1, 1)}),
        ("2d k3 d2 p2", (2, 3, 20, 20), {"k": (3, 3), "s": (1, 1), "p": (2, 2), "d": (2, 2)}),
        ("2d k7 s1 p3", (1, 2, 24, 24), {"k": (7, 7), "s": (1, 1), "p": (3, 3), "d": (1, 1)}),
        ("3d k3 s2 p1", (2, 2, 9, 10, 11), {"k": (3,) * 3, "s": (2,) * 3, "p": (1,) * 3,
                                             "d": (1,) * 3}),
        ("3d k3 s2 p1 staged", (4, 8, 16, 32, 32), {"k": (3,) * 3, "s": (2,) * 3, "p": (1,) * 3,
                                                     "d": (1,) * 3}),
        ("1d k5", (2, 3, 50), {"k": (5,), "s": (1,), "p": (2,), "d": (1,)}),
        ("2d k3 s2 p1 large", (8, 64, 56, 56), {"k": (3, 3), "s": (2, 2), "p": (1, 1),
                                                 "d": (1, 1)}),
    ]
    forms = [("compact pairs", True, True), ("compact triples", True, False),
             ("unrolled", False, None), ("by size", None, None)]
    for label, shape, a in pools:
        k, s, p, d = a["k"], a["s"], a["p"], a["d"]
        nsp = len(k)

        def onnx_values(x: Any, k: Any = k, s: Any = s, p: Any = p, d: Any = d) -> Any:
            return onnx.max_pool(x, kernel_shape=k, strides=s, pads=p + p, dilations=d)

        def onnx_indices(x: Any, k: Any = k, s: Any = s, p: Any = p, d: Any = d) -> Any:
            return onnx.max_pool(x, kernel_shape=k, strides=s, pads=p + p, dilations=d,
                                 return_indices=True)

        def ov_values(x: Any, k: Any = k, s: Any = s, p: Any = p) -> Any:
            return ov.max_pool(x, kernel=k, strides=s, pads_begin=p, pads_end=p)

        def ov8(x: Any, k: Any = k, s: Any = s, p: Any = p, d: Any = d) -> Any:
            return ov.max_pool(x, kernel=k, strides=s, pads_begin=p, pads_end=p, dilations=d,
                               opset=8)

        def grad(f: Callable[..., Any]) -> Callable[..., Any]:
            def g(x: Any) -> Any:
                def loss(v: Any) -> Any:
                    out = f(v)
                    out = out[0] if isinstance(out, tuple) else out
                    return jnp.sum(out * jnp.arange(out.size, dtype=out.dtype).reshape(out.shape))
                return jax.grad(loss)(x)
            return g

        calls: list[tuple[str, Callable[..., Any]]] = [
            ("onnx values (propagate)", onnx_values), ("onnx indices", onnx_indices),
            ("onnx grad", grad(onnx_values)), ("ov-1 values (skip)", ov_values),
            ("ov-1 grad", grad(ov_values)), ("ov-8 values and indices", ov8),
            ("ov-8 grad", grad(ov8)),
            ("ov-1 jvp", lambda x, f=ov_values: jax.jvp(f, (x,), (x,))),
            ("onnx jvp", lambda x, f=onnx_values: jax.jvp(f, (x,), (x,))),
        ]
        if nsp == 2:
            calls.append(("ov-1 bf16", lambda x, f=ov_values: f(x.astype(jnp.bfloat16))))
            calls.append(("onnx int8", lambda x, f=onnx_values: f(x.astype(jnp.int8))))
            calls.append(("ov-8 vmap", lambda x, f=ov8: jax.vmap(f)(x[None])))
        for form, force, pairs in forms:
            for what, fn in calls:
                yield (f"forms | max_pool {label} {shape} | {form} | {what}",
                       forced(fn, [spec(shape)], force, pairs))

    adaptive = [((2, 3, 14, 14), (5, 3)), ((2, 3, 14, 14), (7, 7)), ((1, 1, 4000), (7,)),
                ((1, 2, 100003), (7,)), ((4, 16, 56, 56), (5, 3)), ((1, 2, 9, 10, 11), (2, 3, 4)),
                ((8, 64, 28, 28), (5, 3))]
    for shape, out in adaptive:
        def amp(x: Any, out: Any = out) -> Any:
            return ov.adaptive_max_pool(x, out)

        for form, force in (("compact", True), ("unrolled", False), ("by size", None)):
            yield (f"forms | adaptive_max_pool {shape} -> {out} | {form}",
                   forced(amp, [spec(shape)], force, None))
            yield (f"forms | adaptive_max_pool {shape} -> {out} | {form} | grad",
                   forced(lambda x, f=amp: jax.grad(lambda v: jnp.sum(f(v)[0]))(x),
                          [spec(shape)], force, None))

    arg_shapes = [(7,), (100,), (600,), (5000,), (256, 1000), (1000, 256), (3, 70, 9),
                  (1, 21, 64, 64), (64, 1024), (2, 513)]
    for shape in arg_shapes:
        for axis in range(len(shape)):
            for dtype in (np.float32, np.int8, jnp.bfloat16):
                for last in (0, 1):
                    name = f"forms | arg_max {shape} {np.dtype(dtype).name} axis {axis}"
                    yield (f"{name} last {last}",
                           forced(lambda x, a=axis, last=last: onnx.arg_max(
                               x, axis=a, keepdims=0, select_last_index=last),
                               [spec(shape, dtype)], None, None))
            for k in (1, 5):
                if k <= shape[axis]:
                    yield (f"forms | top_k {shape} axis {axis} k {k}",
                           forced(lambda x, a=axis, k=k: onnx.top_k(x, k, axis=a),
                                  [spec(shape)], None, None))
                    yield (f"forms | ov top_k {shape} axis {axis} k {k}",
                           forced(lambda x, a=axis, k=k: ov.top_k(x, k, axis=a, mode="max",
                                                                   sort="value"),
                                  [spec(shape)], None, None))

    for rows, cols, n in ((100, 8, 50), (1000, 64, 10000), (100000, 64, 1000000)):
        data, upd = spec((rows, cols)), spec((n, cols))
        ids = np.zeros((n,), np.int32)
        full = np.zeros((n, cols), np.int32)
        yield (f"forms | onnx scatter_elements max rows ({rows}, {cols}) <- {n}",
               forced(lambda d, i, u: onnx.scatter_elements(
                   d, jnp.broadcast_to(i[:, None], u.shape), u, axis=0, reduction="max"),
                   [data, ids, upd], None, None))
        yield (f"forms | onnx scatter_elements max materialised ({rows}, {cols}) <- {n}",
               forced(lambda d, i, u: onnx.scatter_elements(d, i, u, axis=0, reduction="max"),
                      [data, full, upd], None, None))
        yield (f"forms | ov seu-12 max materialised ({rows}, {cols}) <- {n}",
               forced(lambda d, i, u: ov.scatter_elements_update(d, i, u, 0, reduction="max"),
                      [data, full, upd], None, None))
        yield (f"forms | ov seu-12 max rows ({rows}, {cols}) <- {n}",
               forced(lambda d, i, u: ov.scatter_elements_update(
                   d, jnp.broadcast_to(i[:, None], u.shape), u, 0, reduction="max"),
                   [data, ids, upd], None, None))
        yield (f"forms | onnx scatter_nd max ({rows}, {cols}) <- {n}",
               forced(lambda d, i, u: onnx.scatter_nd(d, i[:, None], u, reduction="max"),
                      [data, ids, upd], None, None))
        yield (f"forms | ov segment_max ({n}, {cols}) -> {rows}",
               forced(lambda u, i, r=rows: ov.segment_max(u, i, r, fill_mode="LOWEST"),
                      [upd, np.sort(ids)], None, None))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick-only", action="store_true",
                        help="the benchmark rows at the quick sizes only")
    parser.add_argument("--only", default="", help="rows whose name contains this")
    parser.add_argument("--no-rows", action="store_true", help="the forms only")
    parser.add_argument("--no-forms", action="store_true", help="the benchmark rows only")
    args = parser.parse_args()
    import warnings

    warnings.simplefilter("ignore")
    sources: list[Iterator[tuple[str, Callable[[], str]]]] = []
    if not args.no_rows:
        sources.append(benchmark_rows(args.quick_only))
    if not args.no_forms:
        sources.append(form_rows())
    for source in sources:
        for name, one in source:
            if args.only not in name:
                continue
            try:
                digest = one()
            except Exception as e:  # a row that cannot lower is reported, not fatal
                digest = f"ERR {type(e).__name__}"
            print(f"{digest}  {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
