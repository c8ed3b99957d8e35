"""Group ``eager``: per-call dispatch cost of un-jitted calls on 8x8 inputs.

The floor is one eager call of a cached jitted ``jnp.sum``.
"""

from __future__ import annotations

from collections.abc import Callable

from .backends import flat_sum, jax_eager, jnp, jov
from .cases import FLOOR, JAXMAX, Case, Impl, Ratio, Sizes, floor_case
from .segment_max import jax_segment_max, jaxmax_segment_max

GROUP = "eager"


def _cached_sum() -> Callable:
    import jax

    return jax.jit(flat_sum())


def cases(sz: Sizes) -> list[Case]:
    floor = floor_case(GROUP, "eager 8x8 f32: dispatch floor", "small", [
        Impl("eager call of a cached jit jnp.sum", "jax", jax_eager(_cached_sum), FLOOR)])
    xi = ("x", "ids")
    return [floor, Case(GROUP, "eager reduce_max 8x8 axes=(1)", "small", [
        Impl("jaxmax.openvino.reduce_max (eager)", "jax",
             jax_eager(lambda: lambda x: jov().reduce_max(x, 1)), JAXMAX),
        Impl("jnp.max (eager)", "jax", jax_eager(lambda: lambda x: jnp().max(x, axis=1))),
    ], floor.name, ratios=[Ratio("reduce_max / jnp.max", "jaxmax.openvino.reduce_max (eager)",
                                 "jnp.max (eager)")]),
        Case(GROUP, "eager segment_max 8x8, 4 segments", "small", [
        Impl("jaxmax.openvino.segment_max ZERO (eager)", "jax",
             jax_eager(jaxmax_segment_max(4, "ZERO"), xi), JAXMAX),
        Impl("jax.ops.segment_max (eager)", "jax", jax_eager(jax_segment_max(4), xi)),
    ], floor.name)]
