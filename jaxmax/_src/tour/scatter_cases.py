"""The tour's max-scatter cases: the contract's examples and the rows where the runtimes
disagree (``docs/semantics.md §8.4``), one per face. Each case's data is the `updates` array
(what ``jit``, ``vmap`` and ``grad`` act on); its reference is the face's sequential fold, which
also names the update each output's cotangent goes to (``-1``: to `data`)."""

from __future__ import annotations

from functools import partial

import numpy as np

from jaxmax._src.tour.case import Case
from jaxmax._src.tour.references import Reference


def _step(rule: str, acc, u) -> bool:
    """Whether the update replaces the accumulator under `rule` (the face's binary step)."""
    if rule == "acc_gt":
        return not acc > u
    if rule == "acc_lt":
        return bool(acc < u)
    if np.isnan(acc):
        return False
    if np.isnan(u):
        return True
    if acc == u == 0:
        return bool(np.signbit(acc) and not np.signbit(u))
    return bool(u > acc)


def scatter_reference(updates: np.ndarray, *, data: np.ndarray, indices: np.ndarray, axis: int,
                      rule: str) -> Reference:
    """The fold of `updates` (routed by `indices` along `axis`, or by coordinate tuples when
    `axis` is None) onto `data`, and the update that receives each output's cotangent (the one
    the fold kept; with ties under the IEEE rule the last kept, the tour's cases have none)."""
    out = np.array(data, copy=True)
    winners = np.full(out.shape, -1, np.int64)
    flat_updates = updates.reshape(-1)
    if axis is None:
        k = indices.shape[-1]
        rows = indices.reshape(-1, k)
        window = int(np.prod(data.shape[k:], dtype=np.int64))
        routes = [(tuple(int(c) % data.shape[j] for j, c in enumerate(rows[r])) +
                   np.unravel_index(w, data.shape[k:]), r * window + w)
                  for r in range(rows.shape[0]) for w in range(window)]
    else:
        routes = []
        axis = axis % data.ndim
        for p in np.ndindex(*indices.shape):
            t = p[:axis] + (int(indices[p]) % data.shape[axis],) + p[axis + 1:]
            routes.append((t, int(np.ravel_multi_index(p, indices.shape))))
    for target, source in routes:
        if _step(rule, out[target], flat_updates[source]):
            out[target] = flat_updates[source]
            winners[target] = source
    return Reference(out, winners=winners)


def scatter_cases() -> list[Case]:
    from jaxmax import onnx
    from jaxmax import openvino as ov
    f32 = np.float32
    nan = np.nan
    cases: list[Case] = []

    def add(operator, spec, name, run, data, indices, updates, axis, rule, expected):
        cases.append(Case(operator, spec, name, np.asarray(updates, f32),
                          partial(run, np.asarray(data, f32), indices),
                          partial(scatter_reference, data=np.asarray(data, f32), indices=indices,
                                  axis=axis, rule=rule),
                          expected=np.asarray(expected, f32)))

    def se(d, i, u):
        return onnx.scatter_elements(d, i, u, reduction="max")

    def se_last(d, i, u):
        return onnx.scatter_elements(d, i, u, axis=-1, reduction="max")

    def snd(d, i, u):
        return onnx.scatter_nd(d, i, u, reduction="max")

    def seu(d, i, u):
        return ov.scatter_elements_update(d, i, u, 0, reduction="max")

    def sndu(d, i, u):
        return ov.scatter_nd_update(d, i, u, reduction="max")

    idx = np.array([1, 0, 0, 3])
    add("onnx.scatter_elements", "ScatterElements-18", "duplicates reduce by max", se,
        np.zeros(4), idx, [5, -2, 7, -1], 0, "ieee", [7, 5, 0, 0])
    add("onnx.scatter_elements", "ScatterElements-18", "axis -1 with a negative index", se_last,
        np.zeros((2, 3)), np.array([[2, -1], [0, 1]]), [[1, 5], [2, 3]], -1, "ieee",
        [[0, 0, 5], [2, 3, 0]])
    add("onnx.scatter_elements", "ScatterElements-18", "IEEE: a NaN update wins in any order",
        se, np.zeros(2), np.array([0, 0]), [nan, 2], 0, "ieee", [nan, 0])
    add("onnx.scatter_nd", "ScatterND-18", "row slices, duplicates", snd, np.zeros((2, 3)),
        np.array([[1], [1]]), [[1, 5, 2], [4, 0, 3]], None, "ieee", [[0, 0, 0], [4, 5, 3]])
    add("openvino.scatter_elements_update", "ScatterElementsUpdate-12",
        "spec fold: a NaN erases what came before", seu, np.array([5]), np.array([0, 0, 0]),
        [1, nan, 0], 0, "acc_gt", [0])
    add("openvino.scatter_elements_update", "ScatterElementsUpdate-12",
        "spec fold: ties to the last (data +0, update -0 gives -0)", seu, np.array([0.0, 1.0]),
        np.array([0, 1]), [-0.0, 3.0], 0, "acc_gt", [-0.0, 3])
    add("openvino.scatter_nd_update", "ScatterNDUpdate-15",
        "spec snippet: ties to the earliest, data first", sndu, np.array([2.0, 0.0]),
        np.array([[0], [1], [1]]), [2, -0.0, 5], None, "acc_lt", [2, 5])
    add("openvino.scatter_nd_update", "ScatterNDUpdate-15",
        "spec snippet: NaN updates skipped, NaN data sticks", sndu, np.array([0, nan]),
        np.array([[0], [0], [1]]), [2, nan, 1], None, "acc_lt", [2, nan])
    return cases
