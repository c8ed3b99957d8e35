"""The registry of benchmark groups: name -> function from `Sizes` to that group's cases."""

from __future__ import annotations

from collections.abc import Callable

from . import (
    adaptive_unpool,
    data_shapes,
    detection,
    eager,
    elementwise,
    logical_or,
    long_window,
    many_shapes,
    max_pool,
    pool_family,
    reduce,
    roi_align,
    segment_max,
    top_k,
)
from .cases import Case, Sizes

CASE_BUILDERS: dict[str, Callable[[Sizes], list[Case]]] = {
    m.GROUP: m.cases for m in (reduce, logical_or, max_pool, segment_max, eager, pool_family,
                               elementwise, top_k, adaptive_unpool, data_shapes,
                               long_window, many_shapes, roi_align, detection)}
GROUPS = tuple(CASE_BUILDERS)


def group_cases(groups: list[str], sz: Sizes) -> list[Case]:
    return [c for g in groups for c in CASE_BUILDERS[g](sz)]
