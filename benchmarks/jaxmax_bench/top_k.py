"""Group ``top_k``: ONNX ArgMax, ONNX TopK and OpenVINO TopK-11 on the shapes of issue 19.

* ArgMax over axis 1 of (1, 21, 512, 512) float32 (a segmentation head: 21 classes per pixel);
* ArgMax over axis 1 of (256, 1000) (a classifier);
* TopK k=100 of (1, 25200) (a detector's candidates), k=5 of (256, 1000) on axis 1, k=10 of
  (64, 1000, 16) on axis 1 (an axis before the last).

Side by side with the plain JAX forms (``jnp.argmax``, ``lax.top_k`` with the axis moved last),
onnxruntime, the OpenVINO CPU plugin (ArgMax as the TopK k=1 its ONNX frontend emits) and torch.
Ratios: each jaxmax row over the plain JAX row (the price of the NaN, signed-zero and tie rules),
and two info rows over it: ``lax.top_k`` with a pass over the data, and ``lax.top_k`` of an array
computed from the data (what the rules need beyond ``lax.top_k``, each alone).
The data are NaN-free normals: the ArgMax lowerings take their fast branch (a ``cond`` sends
the data that need it to the exact key); the full-size TopK cases take the selection by chunk
maxima, which has no branch. ``--quick`` runs smaller shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backends import jax_jit, jnp, jonnx, jov, ort_graph, ov_model, torch_call
from .cases import INFO, JAXMAX, QUICK, Case, Ctx, Impl, Ratio, Sizes, shape_label

GROUP = "top_k"

FULL_SHAPES = {"seg": (1, 21, 512, 512), "cls": (256, 1000), "det": (1, 25200),
               "mid": (64, 1000, 16)}
QUICK_SHAPES = {"seg": (1, 21, 128, 128), "cls": (64, 1000), "det": (1, 6300),
                "mid": (16, 1000, 16)}


def _with(name: str, shape: tuple[int, ...]):
    """A build wrapper that adds the seeded float32 input `name` of `shape` to the context."""
    def wrap(build):
        def built(ctx: Ctx):
            if name not in ctx.arrays:
                rng = np.random.default_rng(sum(shape) + len(name))
                ctx.arrays[name] = rng.standard_normal(shape, dtype=np.float32)
            return build(ctx)
        return built
    return wrap


def _lax_top_k(k: int, axis: int, *, summed: bool = False, scale: float | None = None):
    """``lax.top_k`` with the axis moved last; `summed`: also the data's sum (one more pass over
    the data); `scale`: of the data times `scale` (an array computed from the data)."""
    def make():
        import jax

        def f(x):
            data = x if scale is None else x * np.float32(scale)
            values, indices = jax.lax.top_k(jnp().moveaxis(data, axis, -1), k)
            out = jnp().moveaxis(values, -1, axis), jnp().moveaxis(indices, -1, axis)
            return out + (jnp().sum(x),) if summed else out
        return f
    return make


def _ort_arg_max(name: str, axis: int):
    def build(ctx: Ctx) -> Any:
        return ort_graph("ArgMax", {"x": ctx.np(name)}, out_dtypes=[np.int64], opset=13,
                         axis=axis, keepdims=0)
    return build


def _ort_top_k(name: str, k: int, axis: int):
    def build(ctx: Ctx) -> Any:
        return ort_graph("TopK", {"x": ctx.np(name)}, inits={"K": np.array([k], np.int64)},
                         out_dtypes=[np.float32, np.int64], opset=11, axis=axis)
    return build


def _ov_top_k(name: str, k: int, axis: int, indices_only: bool = False):
    def build(ctx: Ctx) -> Any:
        import openvino.opset1 as o1
        import openvino.opset11 as o11

        def node(p):
            if indices_only:  # ArgMax as OpenVINO's ONNX frontend lowers it
                top = o11.topk(p, o1.constant(np.array(k, np.int64)), axis, "max", "none",
                               "i64", False)
                return o1.squeeze(top.output(1), o1.constant(np.array([axis], np.int64)))
            return o11.topk(p, o1.constant(np.array(k, np.int64)), axis, "max", "value", "i32",
                            True).output(0)
        return ov_model(node, [ctx.np(name)])
    return build


def _jax(fn, name: str):
    return jax_jit(lambda: fn, (name,))


def _arg_max_case(shapes: dict, key: str, axis: int) -> Case:
    shape = shapes[key]
    wrap = _with(key, shape)
    ours = "jaxmax.onnx.arg_max (jit)"
    plain = "jnp.argmax (jit)"
    read = "XLA read: flat lax.reduce_max of the data (jit)"
    impls = [
        Impl(ours, "jax", wrap(_jax(lambda x: jonnx().arg_max(x, axis=axis, keepdims=0), key)),
             JAXMAX),
        Impl(plain, "jax", wrap(_jax(lambda x: jnp().argmax(x, axis=axis), key))),
        # about the cheapest XLA program that reads every element (one vectorised reduction,
        # dispatch included): an arg max built on XLA reads every element too
        Impl(read, "jax", wrap(_jax(_flat_max, key)), INFO),
        Impl("onnxruntime ArgMax-13", "ort", wrap(_ort_arg_max(key, axis))),
        Impl("OpenVINO CPU TopK-11 k=1 (ONNX ArgMax)", "ov",
             wrap(_ov_top_k(key, 1, axis, indices_only=True))),
        Impl("torch.argmax", "torch",
             wrap(torch_call(lambda torch: lambda x: torch.argmax(x, dim=axis), (key,)))),
    ]
    return Case(GROUP, f"ArgMax f32 {shape_label(shape)} axis {axis}", "small", impls,
                _FLOOR_NONE, ratios=[Ratio("arg_max / jnp.argmax", ours, plain),
                                     Ratio("arg_max / XLA read", ours, read)])


def _flat_max(x):
    import jax

    return jax.lax.reduce_max(x.reshape(-1), (0,))


def _top_k_case(shapes: dict, key: str, k: int, axis: int) -> Case:
    shape = shapes[key]
    wrap = _with(key, shape)
    onnx_face = "jaxmax.onnx.top_k (jit)"
    ov_face = "jaxmax.openvino.top_k (jit)"
    plain = "lax.top_k (jit)"
    with_pass = "lax.top_k and jnp.sum of the data (jit)"
    of_computed = "lax.top_k of x * 2 (jit)"
    impls = [
        Impl(onnx_face, "jax", wrap(_jax(lambda x: jonnx().top_k(x, k, axis=axis), key)),
             JAXMAX),
        Impl(ov_face, "jax", wrap(_jax(
            lambda x: jov().top_k(x, k, axis=axis, mode="max", sort="value"), key)), JAXMAX),
        Impl(plain, "jax", wrap(jax_jit(_lax_top_k(k, axis), (key,)))),
        # What a rule needs beyond lax.top_k, alone: a pass over the data (the ONNX face must
        # find an unselected -NaN, its maximum), and a lax.top_k of an array computed from the
        # data (the exact key that data with NaN or selected zeros take)
        Impl(with_pass, "jax", wrap(jax_jit(_lax_top_k(k, axis, summed=True), (key,))), INFO),
        Impl(of_computed, "jax", wrap(jax_jit(_lax_top_k(k, axis, scale=2.0), (key,))), INFO),
        Impl("onnxruntime TopK-11", "ort", wrap(_ort_top_k(key, k, axis))),
        Impl("OpenVINO CPU TopK-11 (stable)", "ov", wrap(_ov_top_k(key, k, axis))),
        Impl("torch.topk", "torch",
             wrap(torch_call(lambda torch: lambda x: torch.topk(x, k, dim=axis), (key,)))),
    ]
    return Case(GROUP, f"TopK k={k} f32 {shape_label(shape)} axis {axis}", "small", impls,
                _FLOOR_NONE, ratios=[Ratio("onnx.top_k / lax.top_k", onnx_face, plain),
                                     Ratio("ov.top_k / lax.top_k", ov_face, plain),
                                     Ratio("top_k and a pass / lax.top_k", with_pass, plain),
                                     Ratio("top_k of x * 2 / lax.top_k", of_computed, plain)])


_FLOOR_NONE = "top_k: no floor"


def cases(sz: Sizes) -> list[Case]:
    shapes = QUICK_SHAPES if sz == QUICK else FULL_SHAPES
    return [
        _arg_max_case(shapes, "seg", 1),
        _arg_max_case(shapes, "cls", 1),
        _top_k_case(shapes, "det", 100, 1),
        _top_k_case(shapes, "cls", 5, 1),
        _top_k_case(shapes, "mid", 10, 1),
    ]


def cpu_time_ratios(repeats: int = 5) -> None:
    """Process CPU time per jitted call, best of `repeats` loops, jaxmax against the plain JAX
    form on the full shapes: less sensitive to a loaded machine than wall time (a call waiting
    for a core costs no CPU time). ``cd benchmarks && python -m jaxmax_bench.top_k``."""
    import time
    import warnings

    import jax
    from jax import lax

    from jaxmax import onnx

    warnings.simplefilter("ignore")  # int64 indices without x64

    def cpu_ms(f, x, n):
        f = jax.jit(f)
        jax.block_until_ready(f(x))
        best = float("inf")
        for _ in range(repeats):
            t = time.process_time()
            for _ in range(n):
                jax.block_until_ready(f(x))
            best = min(best, (time.process_time() - t) / n * 1e3)
        return best

    rng = np.random.default_rng(0)
    rows = [("ArgMax", FULL_SHAPES["seg"], 1, None), ("ArgMax", FULL_SHAPES["cls"], 1, None),
            ("TopK", FULL_SHAPES["det"], 1, 100), ("TopK", FULL_SHAPES["cls"], 1, 5),
            ("TopK", FULL_SHAPES["mid"], 1, 10)]
    for op, shape, ax, k in rows:
        x = jax.device_put(rng.standard_normal(shape, dtype=np.float32))
        n = max(5, int(2e6 // x.size))
        if op == "ArgMax":
            ours = cpu_ms(lambda v, a=ax: onnx.arg_max(v, axis=a, keepdims=0), x, n)
            plain = cpu_ms(lambda v, a=ax: jnp().argmax(v, axis=a), x, n)
        else:
            ours = cpu_ms(lambda v, a=ax, k=k: onnx.top_k(v, k, axis=a), x, n)
            plain = cpu_ms(lambda v, a=ax, k=k: lax.top_k(jnp().moveaxis(v, a, -1), k), x, n)
        print(f"{op} {shape_label(shape)} axis {ax}" + (f" k={k}" if k else "")
              + f": jaxmax {ours:.3f} ms, plain {plain:.3f} ms, {ours / plain:.2f}x")


if __name__ == "__main__":
    cpu_time_ratios()
