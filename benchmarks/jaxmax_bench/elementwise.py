"""Group ``elementwise``: ONNX Max and OpenVINO Maximum-1 of two float32 tensors of the
``reduce`` size ((64, 256, 56, 56) in the full run).

The second operand is the first one reversed along the last axis, built once outside the timed
region. Every call writes a fresh 205 MB output: most of its time is the kernel's first-touch
page faults on that buffer (see docs/semantics.md §9.3), which is also where the
runtimes differ, not in the comparisons. ``Maximum-1`` returns a different zero on ``-0/+0``
ties and ``a`` on NaN, so its digest is not compared with the IEEE rows (the data has neither).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backends import jax_jit, jnp, jonnx, jov, ort_graph, ov_model, torch_call
from .cases import FLOOR, JAXMAX, Case, Ctx, Impl, Ratio, Sizes, floor_case, shape_label

GROUP = "elementwise"


def _with_second(ctx: Ctx) -> Ctx:
    """The case's context with ``y`` (x reversed along its last axis) added once."""
    if "y" not in ctx.arrays:
        ctx.arrays["y"] = np.ascontiguousarray(ctx.np("x")[..., ::-1])
    return ctx


def _paired(build):
    return lambda ctx: build(_with_second(ctx))


def _ort_max(ctx: Ctx) -> Any:
    return ort_graph("Max", {"x": ctx.np("x"), "y": ctx.np("y")}, opset=13)


def _ov_maximum(ctx: Ctx) -> Any:
    import openvino.opset1 as o1

    return ov_model(lambda a, b: o1.maximum(a, b), [ctx.np("x"), ctx.np("y")])


def cases(sz: Sizes) -> list[Case]:
    label = shape_label(sz.reduce)
    floor = floor_case(GROUP, f"max f32 {label}: read floor", "f32", [
        Impl("flat jnp.sum (jit)", "jax", jax_jit(lambda: lambda x: jnp().sum(x.reshape(-1))),
             FLOOR)])
    two = ("x", "y")
    impls = [
        Impl("jaxmax.onnx.max (jit)", "jax",
             _paired(jax_jit(lambda: lambda x, y: jonnx().max(x, y), two)), JAXMAX),
        Impl("jaxmax.onnx.max (eager)", "jax",
             _paired(lambda ctx: _eager(lambda x, y: jonnx().max(x, y), ctx)), JAXMAX),
        Impl("jaxmax.openvino.maximum (jit)", "jax",
             _paired(jax_jit(lambda: lambda x, y: jov().maximum(x, y), two)), JAXMAX),
        Impl("jnp.maximum (jit)", "jax",
             _paired(jax_jit(lambda: lambda x, y: jnp().maximum(x, y), two))),
        Impl("np.maximum", "numpy", _paired(lambda ctx: _np_max(ctx))),
        Impl("onnxruntime Max-13", "ort", _paired(_ort_max)),
        Impl("OpenVINO CPU Maximum-1", "ov", _paired(_ov_maximum)),
        Impl("torch.maximum", "torch",
             _paired(torch_call(lambda torch: torch.maximum, two))),
    ]
    ratios = [Ratio("onnx.max / jnp.maximum", "jaxmax.onnx.max (jit)", "jnp.maximum (jit)"),
              Ratio("ov.maximum / jnp.maximum", "jaxmax.openvino.maximum (jit)",
                    "jnp.maximum (jit)")]
    return [floor, Case(GROUP, f"max of two f32 {label}", "f32", impls, floor.name,
                        check=False, ratios=ratios)]


def _eager(fn, ctx: Ctx):
    import jax

    x, y = ctx.jax("x"), ctx.jax("y")
    return lambda: jax.block_until_ready(fn(x, y))


def _np_max(ctx: Ctx):
    x, y = ctx.np("x"), ctx.np("y")
    return lambda: np.maximum(x, y)
