"""Group ``reduce``: ReduceMax over several axes, float32/bfloat16/int8, and float32 with NaN.

The NaN cases put each jaxmax face's NaN data and NaN-free data rows side by side (sampled in
turn, so their ratio holds up on a shared machine) and report NaN / NaN-free per face: the
OpenVINO face skips NaN (a masked reduction), the ONNX face propagates it.
"""

from __future__ import annotations

import numpy as np

from .backends import (
    flat_sum,
    jax_jit,
    jnp,
    jonnx,
    jov,
    numpy_call,
    ort_reduce,
    ov_reduce,
    torch_call,
)
from .cases import (
    FLOOR,
    INFO,
    JAXMAX,
    Case,
    Impl,
    Ratio,
    Sizes,
    axes_label,
    floor_case,
    shape_label,
)

GROUP = "reduce"
F32_AXES: list[tuple[int, ...]] = [(0,), (1,), (2, 3), (3,)]  # and all axes
NARROW_AXES: list[tuple[int, ...]] = [(2, 3), (0,)]  # bfloat16 and int8

OV_FACE = "jaxmax.openvino.reduce_max (jit)"
ONNX_FACE = "jaxmax.onnx.reduce_max (jit)"
NAN_DATA = {OV_FACE: "NaN data (OpenVINO: NaN skipped)",
            ONNX_FACE: "NaN data (ONNX: NaN propagates)"}
CLEAN_DATA = "NaN-free data"


def _ov_max(ax: tuple[int, ...]) -> Impl:
    return Impl(OV_FACE, "jax", jax_jit(lambda: lambda x: jov().reduce_max(x, ax)), JAXMAX)


def _onnx_max(ax: tuple[int, ...]) -> Impl:
    return Impl(ONNX_FACE, "jax", jax_jit(lambda: lambda x: jonnx().reduce_max(x, ax, keepdims=0)),
                JAXMAX)


def _runtimes(ax: tuple[int, ...]) -> list[Impl]:
    """The onnxruntime, OpenVINO and torch rows of a case."""
    return [
        Impl("onnxruntime ReduceMax", "ort", ort_reduce(ax)),
        Impl("OpenVINO CPU ReduceMax", "ov", ov_reduce(ax)),
        Impl("torch.amax", "torch", torch_call(lambda torch: lambda x: torch.amax(x, dim=ax))),
    ]


def _impls(ax: tuple[int, ...]) -> list[Impl]:
    return [
        _ov_max(ax),
        _onnx_max(ax),
        Impl("jnp.max (jit)", "jax", jax_jit(lambda: lambda x: jnp().max(x, axis=ax))),
        Impl("np.max", "numpy", numpy_call(lambda x: np.max(x, axis=ax))),
        *_runtimes(ax),
    ]


def _nan_case(name: str, ax: tuple[int, ...], floor: str) -> Case:
    """Each face on NaN data and on NaN-free data, with jnp.max and np.nanmax for reference."""
    faces: list[Impl] = []
    ratios: list[Ratio] = []
    for face in (_ov_max(ax), _onnx_max(ax)):
        nan_label = f"{face.label}, {NAN_DATA[face.label]}"
        clean_label = f"{face.label}, {CLEAN_DATA}"
        faces.append(Impl(nan_label, face.backend, face.build, JAXMAX))
        faces.append(Impl(clean_label, face.backend, face.build, JAXMAX, inputs="f32"))
        ratios.append(Ratio(f"{face.label.split(' ')[0]} NaN / NaN-free", nan_label, clean_label))
    impls = faces + [
        Impl("jnp.max (jit; YNNPACK may drop NaN)", "jax",
             jax_jit(lambda: lambda x: jnp().max(x, axis=ax))),
        Impl("np.nanmax (skips NaN)", "numpy", numpy_call(lambda x: np.nanmax(x, axis=ax))),
        *_runtimes(ax),
    ]
    return Case(GROUP, name, "f32nan", impls, floor, check=False, ratios=ratios)


def _floor(key: str, dtype: str, shp: str) -> Case:
    name = f"reduce {dtype} {shp}: read floor"
    if key == "i8":
        # XLA widens an int8 sum to int32 and runs ~200x slower than a read (~500 ms on the
        # full tensor): not a floor. The flat max of the same bytes in NumPy is one.
        impls = [Impl("np.max of the flat array", "numpy",
                      numpy_call(lambda x: x.reshape(-1).max()), FLOOR),
                 Impl("jit flat jnp.sum (int32 accumulation, not a floor)", "jax",
                      jax_jit(flat_sum), INFO)]
    else:
        impls = [Impl("jit flat jnp.sum", "jax", jax_jit(flat_sum), FLOOR)]
    return floor_case(GROUP, name, key, impls)


def cases(sz: Sizes) -> list[Case]:
    nd = len(sz.reduce)
    shp = shape_label(sz.reduce)
    f32_axes = F32_AXES + [tuple(range(nd))]
    f32_floor = _floor("f32", "f32", shp)
    out = [f32_floor]
    for axes in f32_axes:
        out.append(Case(GROUP, f"reduce f32 axes={axes_label(axes, nd)}", "f32", _impls(axes),
                        f32_floor.name))
    for axes in f32_axes:
        out.append(_nan_case(f"reduce f32 with 0.1% NaN axes={axes_label(axes, nd)}", axes,
                             f32_floor.name))
    for key, dtype in [("bf16", "bf16"), ("i8", "int8")]:
        fl = _floor(key, dtype, shp)
        out.append(fl)
        for axes in NARROW_AXES:
            out.append(Case(GROUP, f"reduce {dtype} axes={axes_label(axes, nd)}", key,
                            _impls(axes), fl.name))
    return out
