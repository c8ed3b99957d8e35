"""Group ``long_window``: pools whose window is long or the whole feature map (global pooling
written as MaxPool, a 1-D pool over a long sequence, an adaptive pool over a long axis), beside
the plain JAX formulation of the same shape. Their compile cost is always measured first, in a
child process with a time limit (``--compile-timeout``): a row whose compile exceeds it shows
">N s" and is not timed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .backends import jax_jit, jnp, jonnx, jov
from .cases import JAXMAX, Case, Impl, Sizes, shape_label
from .roi_align import long_window_cases as roi_align_long_windows  # issue 43

GROUP = "long_window"


def _reduce_window(kernel: tuple[int, ...], strides: tuple[int, ...],
                   dilation: tuple[int, ...] | None = None) -> Callable[[], Callable]:
    """``lax.reduce_window`` max over the trailing axes (no padding)."""
    def make() -> Callable:
        from jax import lax

        lead = (1, 1)
        dil = lead + (dilation or (1,) * len(kernel))
        return lambda x: lax.reduce_window(x, np.float32(-np.inf), lax.max, lead + kernel,
                                           lead + strides, "VALID", window_dilation=dil)
    return make


def _adaptive_plain(out: tuple[int, ...]) -> Callable[[], Callable]:
    """Adaptive max pooling as ``jnp.max`` of each window's slice, stacked (the windows of
    AdaptiveMaxPool: [floor(i L / n), ceil((i + 1) L / n)) along each axis)."""
    def make() -> Callable:
        np_ = jnp()

        def pool(x: Any) -> Any:
            for k, n in enumerate(out):
                axis = x.ndim - len(out) + k
                size = x.shape[axis]
                parts = [np_.max(x[(slice(None),) * axis
                                   + (slice(i * size // n, math.ceil((i + 1) * size / n)),)],
                                 axis=axis, keepdims=True) for i in range(n)]
                x = np_.concatenate(parts, axis=axis)
            return x
        return pool
    return make


def _case(name: str, shape: tuple[int, ...], ours: Callable[[], Callable], ours_label: str,
          plain: Callable[[], Callable], plain_label: str) -> Case:
    key = f"shape:{shape_label(shape)}"
    label = f"{name}, {shape}"
    return Case(GROUP, label, key, [Impl(ours_label, "jax", jax_jit(ours), JAXMAX),
                                    Impl(plain_label, "jax", jax_jit(plain))],
                label, check=False, compile_first=True)


def cases(sz: Sizes) -> list[Case]:
    del sz  # the shapes are the ones that compiled slowly, at any size setting
    rw = "lax.reduce_window max (jit)"
    adaptive = "jnp.max per window, stacked (jit)"
    return [
        _case("MaxPool-8 1-D k1000 s1 with indices", (1, 1, 5000),
              lambda: lambda x: jov().max_pool(x, kernel=(1000,), strides=(1,), opset=8),
              "jaxmax.openvino.max_pool (jit)", _reduce_window((1000,), (1,)), rw),
        _case("MaxPool-1 2-D k32 s1", (1, 8, 64, 64),
              lambda: lambda x: jov().max_pool(x, kernel=(32, 32), strides=(1, 1)),
              "jaxmax.openvino.max_pool (jit)", _reduce_window((32, 32), (1, 1)), rw),
        _case("ONNX MaxPool k32 s32 Y and Indices", (1, 8, 64, 64),
              lambda: lambda x: jonnx().max_pool(x, kernel_shape=[32, 32], strides=[32, 32],
                                                 return_indices=True),
              "jaxmax.onnx.max_pool (jit)", _reduce_window((32, 32), (32, 32)), rw),
        _case("MaxPool-14 3-D k5 d2 with indices", (1, 8, 16, 32, 32),
              lambda: lambda x: jov().max_pool(x, kernel=(5, 5, 5), strides=(1, 1, 1),
                                               dilations=(2, 2, 2), opset=14),
              "jaxmax.openvino.max_pool (jit)", _reduce_window((5, 5, 5), (1, 1, 1), (2, 2, 2)),
              rw),
        _case("AdaptiveMaxPool-8 to 7", (1, 1, 100003),
              lambda: lambda x: jov().adaptive_max_pool(x, (7,)),
              "jaxmax.openvino.adaptive_max_pool (jit)", _adaptive_plain((7,)), adaptive),
        _case("AdaptiveMaxPool-8 to 7", (1, 1, 4000),
              lambda: lambda x: jov().adaptive_max_pool(x, (7,)),
              "jaxmax.openvino.adaptive_max_pool (jit)", _adaptive_plain((7,)), adaptive),
        _case("AdaptiveMaxPool-8 to (5, 3)", (8, 64, 224, 224),
              lambda: lambda x: jov().adaptive_max_pool(x, (5, 3)),
              "jaxmax.openvino.adaptive_max_pool (jit)", _adaptive_plain((5, 3)), adaptive),
        # windows of many reads that are not a regular pool's: 960 and 3480 reads per plane
        _case("AdaptiveMaxPool-8 to (5, 3)", (16, 128, 28, 28),
              lambda: lambda x: jov().adaptive_max_pool(x, (5, 3)),
              "jaxmax.openvino.adaptive_max_pool (jit)", _adaptive_plain((5, 3)), adaptive),
        _case("AdaptiveMaxPool-8 to (5, 3)", (8, 64, 56, 56),
              lambda: lambda x: jov().adaptive_max_pool(x, (5, 3)),
              "jaxmax.openvino.adaptive_max_pool (jit)", _adaptive_plain((5, 3)), adaptive),
        # ---- RoiAlign (issue 43): the largest grids (sr=0 with proposals up to twice the
        # map, sr=8), beside plain JAX on an 8x8 grid ----
        *roi_align_long_windows(GROUP),
        # ---- end RoiAlign ----
    ]
