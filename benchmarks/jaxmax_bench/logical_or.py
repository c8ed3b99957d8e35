"""Group ``logical_or``: ReduceLogicalOr of sparse boolean data over several axes.

The all-axes case uses all-False data, so that ``np.any`` cannot stop at the first True. The
read floor is a NumPy flat ``max`` of the bytes viewed as uint8.
"""

from __future__ import annotations

import numpy as np

from .backends import jax_jit, jnp, jov, numpy_call, ort_reduce, ov_reduce, torch_call
from .cases import FLOOR, JAXMAX, Case, Impl, Sizes, axes_label, floor_case, shape_label

GROUP = "logical_or"


def _impls(ax: tuple[int, ...]) -> list[Impl]:
    return [
        Impl("jaxmax.openvino.reduce_logical_or (jit)", "jax",
             jax_jit(lambda: lambda x: jov().reduce_logical_or(x, ax)), JAXMAX),
        Impl("jnp.any (jit)", "jax", jax_jit(lambda: lambda x: jnp().any(x, axis=ax))),
        Impl("np.any", "numpy", numpy_call(lambda x: np.any(x, axis=ax))),
        Impl("np.max of the uint8 view", "numpy",
             numpy_call(lambda x: x.view(np.uint8).max(axis=ax))),
        Impl("onnxruntime ReduceMax (bool, opset 20)", "ort", ort_reduce(ax, opset=20)),
        Impl("OpenVINO CPU ReduceLogicalOr", "ov", ov_reduce(ax, logical=True)),
        Impl("torch.any", "torch", torch_call(lambda torch: lambda x: torch.any(x, dim=ax))),
    ]


def cases(sz: Sizes) -> list[Case]:
    nd = len(sz.reduce)
    floor = floor_case(GROUP, f"logical_or bool {shape_label(sz.reduce)}: read floor", "bool", [
        Impl("np.max of the uint8 view (flat)", "numpy",
             numpy_call(lambda x: x.reshape(-1).view(np.uint8).max()), FLOOR)])
    out = [floor]
    for axes in [(0,), (1,), (2, 3)]:
        out.append(Case(GROUP, f"logical_or axes={axes_label(axes, nd)}", "bool", _impls(axes),
                        floor.name))
    out.append(Case(GROUP, "logical_or axes=all, all False", "bool_false",
                    _impls(tuple(range(nd))), floor.name))
    return out
