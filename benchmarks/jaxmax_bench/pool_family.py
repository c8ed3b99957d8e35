"""Group ``pool_family``: pooling with indices, dilated pooling and the dilated gradient.

Cases (float32, the ``pool2d`` input: the ResNet stem (32, 64, 112, 112), quick (4, 16, 56,
56)): k3 s2 p1 with indices (jaxmax MaxPool-14 and ONNX MaxPool with Indices; onnxruntime
MaxPool with its Indices output; torch ``max_pool2d(return_indices=True)``; only the values are
compared, since torch numbers indices within each channel plane), a dilated k3 d2 s1 p1 forward
(jaxmax; onnxruntime; torch), and the gradient of the sum of the dilated pool (jaxmax
``jax.grad``; torch forward + backward).
"""

from __future__ import annotations

from collections.abc import Callable

from .backends import jax_jit, jonnx, jov, ort_pool, torch_call, torch_pool_grad
from .cases import JAXMAX, Case, Impl, Sizes, shape_label
from .max_pool import pool_floors, write_floor_rows

GROUP = "pool_family"


def cases(sz: Sizes) -> list[Case]:
    floor = pool_floors(GROUP, sz)["pool2d"]
    shp = shape_label(sz.pool2d)

    def dilated_pool_sum() -> Callable:
        import jax

        return jax.grad(lambda v: jov().max_pool(v, kernel=3, strides=1, dilations=2,
                                                 pads_begin=1, pads_end=1, opset=8)[0].sum())

    dilated_label = "jaxmax.onnx.max_pool k3 d2 (jit)"
    dilated_out = tuple(n + 2 - 5 + 1 for n in sz.pool2d[2:])  # k3 d2 p1: reach 5
    dilated_floor, dilated_ratios = write_floor_rows(dilated_label, dilated_out)
    return [floor, Case(GROUP, f"pool_family stem k3 s2 p1 {shp}, values + indices", "pool2d", [
        Impl("jaxmax.openvino.max_pool opset 14, values + i32 indices (jit)", "jax", jax_jit(
            lambda: lambda v: jov().max_pool(v, kernel=3, strides=2, pads_begin=1, pads_end=1,
                                             index_element_type="i32", opset=14)), JAXMAX),
        Impl("jaxmax.onnx.max_pool, Y + Indices (jit)", "jax", jax_jit(
            lambda: lambda v: jonnx().max_pool(v, kernel_shape=[3, 3], strides=[2, 2],
                                               pads=[1, 1, 1, 1], return_indices=True)), JAXMAX),
        Impl("onnxruntime MaxPool with Indices", "ort",
             ort_pool((3, 3), (2, 2), (1, 1), indices=True)),
        Impl("torch max_pool2d(return_indices=True)", "torch", torch_call(
            lambda torch: lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1,
                                                                   return_indices=True))),
    ], floor.name), Case(GROUP, "pool_family dilated k3 d2 s1 p1, forward", "pool2d", [
        Impl(dilated_label, "jax", jax_jit(
            lambda: lambda v: jonnx().max_pool(v, kernel_shape=[3, 3], dilations=[2, 2],
                                               pads=[1, 1, 1, 1])), JAXMAX),
        Impl("onnxruntime MaxPool k3 d2", "ort", ort_pool((3, 3), (1, 1), (1, 1),
                                                          dilations=(2, 2))),
        Impl("torch max_pool2d k3 d2", "torch", torch_call(
            lambda torch: lambda x: torch.nn.functional.max_pool2d(x, 3, 1, 1, dilation=2))),
        dilated_floor,
    ], floor.name, ratios=dilated_ratios),
        Case(GROUP, "pool_family dilated k3 d2 s1 p1, gradient", "pool2d", [
        Impl("jax.grad of jaxmax max_pool k3 d2 sum (jit)", "jax", jax_jit(dilated_pool_sum),
             JAXMAX),
        Impl("torch max_pool2d k3 d2 forward + backward", "torch",
             torch_pool_grad(3, 1, 1, 2, dilation=2)),
    ], floor.name)]
