"""Group ``max_pool``: MaxPool forward (2-D and 3-D) and its gradient, against
``lax.reduce_window``, onnxruntime, OpenVINO and torch.

Cases: 2-D k3 s2 p1 (the ResNet stem), k2 s2 and k3 s1 p1, 3-D k3 s2 p1 (values, and values
with MaxPool-8 indices), and the gradients of the sum of the 2-D and 3-D k3 s2 p1 pools
(``jax.grad`` against ``reduce_window``'s ``select_and_scatter_add`` and torch's backward).
The stride-1 case carries a write-floor row (`write_floor`) and the ratio of jaxmax to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .backends import (
    flat_sum,
    jax_jit,
    jov,
    ort_pool,
    ov_pool,
    ov_pool8,
    torch_call,
    torch_pool_grad,
)
from .cases import FLOOR, INFO, JAXMAX, Case, Impl, Ratio, Sizes, floor_case, shape_label

GROUP = "max_pool"


def reduce_window(k: int, s: int, p: int, nsp: int) -> Callable[[Any], Any]:
    """``lax.reduce_window`` max pooling of (N, C, *spatial) data with -inf padding."""
    from jax import lax

    window, strides = (1, 1) + (k,) * nsp, (1, 1) + (s,) * nsp
    pads = ((0, 0), (0, 0)) + ((p, p),) * nsp
    return lambda x: lax.reduce_window(x, np.float32(-np.inf), lax.max, window, strides, pads)


def jaxmax_pool(k: int, s: int, p: int, nsp: int) -> Callable[[Any], Any]:
    """``jaxmax.openvino.max_pool`` (MaxPool-1) with symmetric pads."""
    return lambda x: jov().max_pool(x, kernel=(k,) * nsp, strides=(s,) * nsp,
                                    pads_begin=(p,) * nsp, pads_end=(p,) * nsp)


def pool_floors(group: str, sz: Sizes) -> dict[str, Case]:
    """The read floors of the pool2d and pool3d inputs, by input key."""
    return {key: floor_case(group, f"{group} f32 {shape_label(shape)}: read floor", key,
                            [Impl("jit flat jnp.sum", "jax", jax_jit(flat_sum), FLOOR)])
            for key, shape in [("pool2d", sz.pool2d), ("pool3d", sz.pool3d)]}


def _forward(k: int, s: int, p: int, nsp: int) -> list[Impl]:
    kernel, strides, pads = (k,) * nsp, (s,) * nsp, (p,) * nsp
    tname = f"max_pool{nsp}d"
    return [
        Impl("jaxmax.openvino.max_pool (jit)", "jax", jax_jit(lambda: jaxmax_pool(k, s, p, nsp)),
             JAXMAX),
        Impl("lax.reduce_window max (jit)", "jax", jax_jit(lambda: reduce_window(k, s, p, nsp))),
        Impl("onnxruntime MaxPool", "ort", ort_pool(kernel, strides, pads)),
        Impl("OpenVINO CPU MaxPool", "ov", ov_pool(kernel, strides, pads)),
        Impl(f"torch {tname}", "torch", torch_call(
            lambda torch: lambda x: getattr(torch.nn.functional, tname)(x, k, s, p))),
    ]


def _grad_of_sum(pool: Callable[[int, int, int, int], Callable[[Any], Any]], nsp: int
                 ) -> Callable[[], Callable]:
    """``jax.grad`` of the sum of the k3 s2 p1 pool `pool` over `nsp` spatial axes."""

    def make() -> Callable:
        import jax

        f = pool(3, 2, 1, nsp)
        return jax.grad(lambda x: f(x).sum())

    return make


def fresh_output() -> Callable[[Any], Any]:
    # A gradient is a new array of the input's size; on this machine most of the cost of
    # producing one is the kernel zero-filling its freshly mapped pages. x * 2 shows it.
    return lambda x: x * 2


FRESH_OUTPUT_LABEL = "jit x * 2: a fresh array of the input's size"
WRITE_FLOOR_LABEL = "[write floor] jit x[:out] * 2: reads the input, writes a fresh output"


def write_floor(out_spatial: tuple[int, ...]) -> Callable[[], Callable[[Any], Any]]:
    """The cheapest jitted JAX program that reads the input and writes a fresh array of the
    output's shape (same dtype): the leading `out_spatial` block of the input, times 2. On this
    machine most of it is the kernel zero-filling the freshly mapped output pages."""
    def make() -> Callable[[Any], Any]:
        index = (slice(None), slice(None)) + tuple(slice(0, n) for n in out_spatial)
        return lambda x: x[index] * 2

    return make


def write_floor_rows(jaxmax_label: str, out_spatial: tuple[int, ...]
                     ) -> tuple[Impl, list[Ratio]]:
    """The write-floor row of a case and the ratio of its jaxmax row to it."""
    return (Impl(WRITE_FLOOR_LABEL, "jax", jax_jit(write_floor(out_spatial)), INFO),
            [Ratio("jaxmax / write floor", jaxmax_label, WRITE_FLOOR_LABEL)])


def _indices_3d() -> list[Impl]:
    k, s, p, nsp = 3, 2, 1, 3
    return [
        Impl("jaxmax.openvino.max_pool opset 8, values + i32 indices (jit)", "jax", jax_jit(
            lambda: lambda x: jov().max_pool(x, kernel=(k,) * nsp, strides=(s,) * nsp,
                                             pads_begin=(p,) * nsp, pads_end=(p,) * nsp,
                                             index_element_type="i32", opset=8)), JAXMAX),
        Impl("onnxruntime MaxPool with Indices", "ort",
             ort_pool((k,) * nsp, (s,) * nsp, (p,) * nsp, indices=True)),
        Impl("OpenVINO CPU MaxPool-8 (values + i32 indices)", "ov",
             ov_pool8((k,) * nsp, (s,) * nsp, (p,) * nsp)),
        Impl("torch max_pool3d(return_indices=True)", "torch", torch_call(
            lambda torch: lambda x: torch.nn.functional.max_pool3d(x, k, s, p,
                                                                   return_indices=True))),
    ]


def cases(sz: Sizes) -> list[Case]:
    floors = pool_floors(GROUP, sz)
    out = list(floors.values())
    for name, key, (k, s, p, nsp) in [("max_pool 2-D k3 s2 p1", "pool2d", (3, 2, 1, 2)),
                                      ("max_pool 2-D k2 s2", "pool2d", (2, 2, 0, 2)),
                                      ("max_pool 2-D k3 s1 p1", "pool2d", (3, 1, 1, 2)),
                                      ("max_pool 3-D k3 s2 p1", "pool3d", (3, 2, 1, 3))]:
        impls, ratios = _forward(k, s, p, nsp), []
        if s == 1:  # an output as large as the input: the write floor is the reference
            shape = sz.pool2d if key == "pool2d" else sz.pool3d
            out_spatial = tuple(n + 2 * p - k + 1 for n in shape[2:])
            floor_row, ratios = write_floor_rows(impls[0].label, out_spatial)
            impls.append(floor_row)
        out.append(Case(GROUP, name, key, impls, floors[key].name, ratios=ratios))
    out.append(Case(GROUP, "max_pool 3-D k3 s2 p1, values + indices", "pool3d", _indices_3d(),
                    floors["pool3d"].name))
    for key, nsp in [("pool2d", 2), ("pool3d", 3)]:
        out.append(Case(GROUP, f"max_pool {nsp}-D k3 s2 p1: gradient", key, [
            Impl("jax.grad of jaxmax max_pool sum (jit)", "jax",
                 jax_jit(_grad_of_sum(jaxmax_pool, nsp)), JAXMAX),
            Impl("jax.grad of reduce_window sum (jit)", "jax",
                 jax_jit(_grad_of_sum(reduce_window, nsp))),
            Impl(f"torch max_pool{nsp}d forward+backward", "torch",
                 torch_pool_grad(3, 2, 1, nsp)),
            Impl(FRESH_OUTPUT_LABEL, "jax", jax_jit(fresh_output), INFO),
        ], floors[key].name))
    return out
