"""NumPy oracles for the max-scatter faces, written as the specs' sequential folds: the output
starts as a copy of ``data``; each update, in row-major order over ``indices``, is combined into
its target by the face's binary step. No closed form, no vectorisation: one Python step per
update element, so that the test compares the lowering's scatters with the loop the specs
describe (``docs/semantics.md §8.3``).

Steps (``acc`` is the target's current value, ``u`` the update):

* ``ieee``: IEEE-754-2019 ``maximum(acc, u)``: NaN if either is NaN, ``+0`` for a ``±0`` pair
  unless both are ``-0``, else the larger (the ONNX faces).
* ``acc_gt``: ``acc if acc > u else u`` (OpenVINO ScatterElementsUpdate-12's reference fold).
* ``acc_lt``: ``u if acc < u else acc`` (OpenVINO ScatterNDUpdate-15's snippet).

bool data is folded the same way (``>`` on bools makes each step logical OR).
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np


def _is_float(x) -> bool:
    dtype = np.asarray(x).dtype
    return bool(np.issubdtype(dtype, np.floating) or dtype == ml_dtypes.bfloat16)


def _is_nan(x) -> bool:
    return _is_float(x) and bool(np.isnan(x))


def step_ieee(acc, u):
    if _is_nan(acc):
        return acc
    if _is_nan(u):
        return u
    if acc == u == 0 and _is_float(acc):
        return acc if not np.signbit(acc) else u  # -0 only when both are -0
    return u if u > acc else acc


def step_acc_gt(acc, u):
    return acc if acc > u else u


def step_acc_lt(acc, u):
    return u if acc < u else acc


STEPS = {"ieee": step_ieee, "acc_gt": step_acc_gt, "acc_lt": step_acc_lt}


def _lowest(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.False_
    if _is_float(np.zeros((), dtype)):
        return dtype.type(ml_dtypes.finfo(dtype).min)
    return dtype.type(np.iinfo(dtype).min)


def _target(index: int, size: int) -> int | None:
    """The element an index names (negative ones count from the end); None when out of range
    (dropped: only traced indices may be out of range)."""
    index = int(index)
    if -size <= index < 0:
        index += size
    return index if 0 <= index < size else None


def scatter_elements(data, indices, updates, axis: int, step: str,
                     use_init_val: bool = True) -> np.ndarray:
    """Elements scatter: ``out[i with coordinate axis := indices[i]] = step(out[..], u[i])``."""
    data = np.asarray(data)
    indices, updates = np.asarray(indices), np.asarray(updates)
    out = data.copy()
    fn = STEPS[step]
    axis = axis % data.ndim
    touched: set[tuple[int, ...]] = set()
    for pos in itertools.product(*(range(n) for n in indices.shape)):
        t = _target(indices[pos], data.shape[axis])
        if t is None:
            continue
        target = pos[:axis] + (t,) + pos[axis + 1:]
        if not use_init_val and target not in touched:
            out[target] = _lowest(data.dtype)
        touched.add(target)
        out[target] = fn(out[target], updates[pos])
    return out


def scatter_nd(data, indices, updates, step: str) -> np.ndarray:
    """Coordinate scatter: for each index tuple (the last axis of `indices`), in row-major
    order, each element of its slice is folded into the slice of ``out`` it names; a tuple
    with any coordinate out of range is dropped whole."""
    data = np.asarray(data)
    indices, updates = np.asarray(indices), np.asarray(updates)
    out = data.copy()
    fn = STEPS[step]
    k = indices.shape[-1]
    window = data.shape[k:]
    for pos in itertools.product(*(range(n) for n in indices.shape[:-1])):
        coords = [_target(indices[pos + (j,)], data.shape[j]) for j in range(k)]
        if any(c is None for c in coords):
            continue
        slice_u = np.asarray(updates[pos]).reshape(window)
        for inner in itertools.product(*(range(n) for n in window)):
            target = tuple(coords) + inner
            out[target] = fn(out[target], slice_u[inner])
    return out
