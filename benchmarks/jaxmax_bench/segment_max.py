"""Group ``segment_max``: a segment max of (rows, cols) float32 rows over sorted segment ids,
both of jaxmax's fill modes, against ``jax.ops.segment_max`` (with and without
``indices_are_sorted=True``; the ratios to the hinted one are printed), onnxruntime
ScatterND(max), torch ``segment_reduce`` and OpenVINO SegmentMax-16.
"""

from __future__ import annotations

from collections.abc import Callable

from .backends import flat_sum, jax_jit, jov, ort_scatter_max, ov_segment_max, torch_call
from .cases import FLOOR, JAXMAX, Case, Impl, Ratio, Sizes, floor_case

GROUP = "segment_max"


def jaxmax_segment_max(nseg: int, fill: str) -> Callable[[], Callable]:
    return lambda: lambda x, i: jov().segment_max(x, i, nseg, fill_mode=fill)


def jax_segment_max(nseg: int, sorted_hint: bool = False) -> Callable[[], Callable]:
    def make() -> Callable:
        import jax

        return lambda x, i: jax.ops.segment_max(x, i, nseg, indices_are_sorted=sorted_hint)

    return make


SORTED_LABEL = "jax.ops.segment_max(indices_are_sorted=True) (jit)"


def cases(sz: Sizes) -> list[Case]:
    nseg = sz.seg_count
    shp = f"{sz.seg_rows}x{sz.seg_cols}"
    floor = floor_case(GROUP, f"segment_max f32 {shp}: read floor", "seg",
                       [Impl("jit flat jnp.sum", "jax", jax_jit(flat_sum), FLOOR)])
    xi = ("x", "ids")
    return [floor, Case(GROUP, f"segment_max {shp}, {nseg} sorted segments", "seg", [
        Impl("jaxmax.openvino.segment_max ZERO (jit)", "jax",
             jax_jit(jaxmax_segment_max(nseg, "ZERO"), xi), JAXMAX),
        Impl("jaxmax.openvino.segment_max LOWEST (jit)", "jax",
             jax_jit(jaxmax_segment_max(nseg, "LOWEST"), xi), JAXMAX),
        Impl("jax.ops.segment_max (jit)", "jax", jax_jit(jax_segment_max(nseg), xi)),
        Impl(SORTED_LABEL, "jax", jax_jit(jax_segment_max(nseg, True), xi)),
        Impl("onnxruntime ScatterND(reduction=max)", "ort", ort_scatter_max()),
        Impl("torch.segment_reduce max (lengths)", "torch", torch_call(
            lambda torch: lambda x, n: torch.segment_reduce(x, "max", lengths=n, axis=0),
            ("x", "lengths"))),
        Impl("OpenVINO CPU SegmentMax", "ov", ov_segment_max()),
    ], floor.name, ratios=[
        Ratio(f"{fill} / segment_max sorted", f"jaxmax.openvino.segment_max {fill} (jit)",
              SORTED_LABEL) for fill in ("ZERO", "LOWEST")])]
