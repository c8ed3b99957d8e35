"""The values the contract (docs/semantics.md) gives where a runtime deviates, in NumPy.

``python -m jaxmax check`` excuses a runtime's deviation at an element only when jaxmax's value
there is exactly the contract's. These are small sequential-rule evaluations written from the
contract's text, independent of jaxmax's lowerings, for the operators whose runtime deviations
need a value (the OpenVINO face's NaN-skipping and tie rules, ONNX ArgMax's first NaN, the
scatter folds of ScatterElementsUpdate-12 and ScatterNDUpdate-15). Each
takes the binding's resolved attributes; each returns None for an input it does not cover,
and then nothing is excused.
"""

from __future__ import annotations

import numpy as np

from jaxmax._src import node_binding
from jaxmax._src.node_binding import NodeFunction


def _lowest(dtype: np.dtype):
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def ov_reduce_max(binding: NodeFunction, x: np.ndarray) -> np.ndarray | None:
    """ReduceMax-1 (docs/semantics.md §3): max(lowest(T), the non-NaN elements of the slice)."""
    if x.dtype.kind not in "fiu":
        return None
    axes = binding.attributes["axes"]
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    keep = bool(binding.attributes.get("keep_dims", False))
    if x.ndim == 0:  # the axis range of rank 1 (0 and -1) over the one element
        return np.maximum(np.where(np.isnan(x), _lowest(x.dtype), x) if x.dtype.kind == "f"
                          else x, _lowest(x.dtype))
    axes = tuple(sorted({a % x.ndim for a in axes}))
    if not axes:
        return x.copy()  # empty axes: the identity
    finite = np.where(np.isnan(x), -np.inf, x) if x.dtype.kind == "f" else x
    folded = np.max(finite, axis=axes, keepdims=keep, initial=_lowest(x.dtype))
    return np.maximum(folded, _lowest(x.dtype)).astype(x.dtype)


def ov_maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """Maximum-1 (docs/semantics.md §7.3): ``a < b ? b : a`` elementwise after broadcasting."""
    try:
        a, b = np.broadcast_arrays(a, b)
    except ValueError:
        return None
    return np.where(a < b, b, a)


def ov_top_k(binding: NodeFunction, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """TopK-1/-3/-11 (docs/semantics.md §6.4): the top k by value, NaN after every number in
    both modes, ties (and ``-0.0 == +0.0``) to the lower index; ``sort=index`` reorders the
    chosen elements by ascending index. Returns (values, int64 indices)."""
    if x.dtype.kind != "f" or x.ndim == 0:
        return None
    k = int(np.asarray(next(s.value for s in binding.slots if s.name == "k")).reshape(()))
    axis = int(binding.attributes["axis"]) % x.ndim
    mode = str(binding.attributes["mode"]).lower()
    sort = str(binding.attributes["sort"]).lower()
    moved = np.moveaxis(x, axis, -1).astype(np.float64)
    # a stable ascending sort puts NaN last; negating puts the largest first, NaN still last
    key = -moved if mode == "max" else moved
    key = np.where(key == 0, 0.0, key)  # -0.0 and +0.0 tie
    order = np.argsort(key, axis=-1, kind="stable")[..., :k]
    if sort == "index":
        order = np.sort(order, axis=-1)
    values = np.take_along_axis(np.moveaxis(x, axis, -1), order, axis=-1)
    return np.moveaxis(values, -1, axis), np.moveaxis(order, -1, axis).astype(np.int64)


def onnx_arg_max_of_nan(binding: NodeFunction, x: np.ndarray) -> np.ndarray | None:
    """ArgMax (docs/semantics.md §6.2) on a slice holding a NaN: its first NaN (the last with
    ``select_last_index=1``); meaningful only at slices that hold one."""
    if x.dtype.kind != "f" or x.ndim == 0:
        return None
    axis = int(binding.attributes.get("axis", 0)) % x.ndim
    nan = np.isnan(x)
    if binding.attributes.get("select_last_index", 0):
        index = x.shape[axis] - 1 - np.argmax(np.flip(nan, axis=axis), axis=axis)
    else:
        index = np.argmax(nan, axis=axis)
    if binding.attributes.get("keepdims", 1):
        index = np.expand_dims(index, axis)
    return index.astype(np.int64)


def _fold(out: np.ndarray, target: np.ndarray, values: np.ndarray, keep_acc) -> np.ndarray:
    """Fold `values` into the flat array `out` at positions `target`, in the order given:
    ``acc = acc if keep_acc(acc, u) else u`` per step. Vectorised over targets: the k-th
    update of every target is folded in step k."""
    order = np.argsort(target, kind="stable")  # the given order within each target
    sorted_target = target[order]
    starts = np.flatnonzero(np.r_[True, sorted_target[1:] != sorted_target[:-1]])
    rank = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    for k in range(int(rank.max(initial=-1)) + 1):
        step = order[rank == k]
        acc, u = out[target[step]], values[step]
        with np.errstate(invalid="ignore"):
            out[target[step]] = np.where(keep_acc(acc, u), acc, u)
    return out


def ov_scatter_elements_update(binding: NodeFunction, inputs) -> np.ndarray | None:
    """ScatterElementsUpdate-12 max (docs/semantics.md §8.3): per target, the fold ``acc = acc
    > u ? acc : u`` from its data element (lowest(T) for a touched target when
    ``use_init_val`` is false) over the updates routed to it, in row-major order."""
    if binding.function != "scatter_elements_update" or len(binding.slots) != 4:
        return None
    data, indices, updates, axis = node_binding.filled(binding.slots, inputs)
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    if data.dtype.kind != "f" or indices.shape != updates.shape or indices.ndim != data.ndim:
        return None
    axis = int(np.asarray(axis).reshape(-1)[0]) % data.ndim
    size = data.shape[axis]
    if indices.dtype.kind not in "iu" or ((indices < -size) | (indices >= size)).any():
        return None
    coords = list(np.indices(indices.shape).reshape(indices.ndim, -1))
    coords[axis] = indices.reshape(-1).astype(np.int64) % size
    if any((c >= n).any() for c, n in zip(coords, data.shape, strict=True)):
        return None
    target = np.ravel_multi_index(tuple(coords), data.shape)
    out = data.reshape(-1).copy()
    if not binding.attributes.get("use_init_val", True):
        out[target] = np.finfo(data.dtype).min
    out = _fold(out, target, updates.reshape(-1), lambda acc, u: acc > u)
    return out.reshape(data.shape)


def ov_scatter_nd_update(binding: NodeFunction, inputs) -> np.ndarray | None:
    """ScatterNDUpdate-15 max (docs/semantics.md §8.3): per target, the spec's ``out = max(out,
    u)`` (``acc < u ? u : acc``) from its data element over the updates routed to it, the
    index tuples in row-major order (``k = 0``: every tuple names the whole tensor)."""
    if binding.function != "scatter_nd_update" or len(binding.slots) != 3:
        return None
    data, indices, updates = (np.asarray(a) for a in node_binding.filled(binding.slots, inputs))
    if data.dtype.kind not in "fiub" or indices.ndim < 1 or indices.dtype.kind not in "iu":
        return None
    k = indices.shape[-1]
    lead, window = indices.shape[:-1], data.shape[k:]
    if k > data.ndim or updates.size != int(np.prod(lead)) * int(np.prod(window)):
        return None
    tuples = indices.reshape(int(np.prod(lead)), k).astype(np.int64)
    sizes = np.asarray(data.shape[:k], np.int64)
    if ((tuples < -sizes) | (tuples >= sizes)).any():
        return None
    first = (np.ravel_multi_index(tuple((tuples % sizes).T), data.shape[:k]) if k
             else np.zeros(len(tuples), np.int64))
    width = int(np.prod(window))
    target = (first[:, None] * width + np.arange(width)).reshape(-1)
    out = _fold(data.reshape(-1).copy(), target, updates.reshape(-1), lambda acc, u: ~(acc < u))
    return out.reshape(data.shape)
