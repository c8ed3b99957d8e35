"""ReduceMax on slices whose maximum is a zero of either sign, on one device and sharded along
the reduced axis: the bits of every result.

* ONNX ReduceMax: ``+0.0`` is above ``-0.0`` (docs/semantics.md §4): a slice holding both gives
  ``+0.0`` in any order, ``-0.0`` alone gives ``-0.0``.
* OpenVINO ReduceMax-1: the reference fold ``acc = x > acc ? x : acc`` from lowest(T) keeps the
  first zero it meets (docs/semantics.md §3).

Sharded along the reduced axis, partial maxima are combined across devices, where an
order-dependent or adding combination would change the sign. The expected values come from
those two rules written out here, not from the library.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxmax import onnx
from jaxmax import openvino as ov


def _onnx_rule(row) -> float:
    if not np.any(row > 0) and np.any(row == 0):
        return 0.0 if np.any((row == 0) & ~np.signbit(row)) else -0.0
    return float(np.max(row))


def _openvino_rule(row) -> float:
    acc = float(np.finfo(np.float32).min)
    for v in row.tolist():
        if v > acc:
            acc = v
    return acc


def _rows(seed: int, count: int, length: int) -> np.ndarray:
    """Rows of negative numbers and zeros of both signs in random places; some rows of -0.0
    zeros only, some of +0.0 only."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, -1, (count, length)).astype(np.float32)
    for r in range(count):
        n_zeros = rng.integers(1, min(6, length) + 1)
        at = rng.choice(length, n_zeros, replace=False)
        kind = r % 4  # 0: mixed, 1: -0 only, 2: +0 only, 3: mixed, +0 first
        signs = rng.integers(0, 2, n_zeros).astype(bool) if kind in (0, 3) else (
            np.ones(n_zeros, bool) if kind == 1 else np.zeros(n_zeros, bool))
        if kind == 3:
            at.sort()
            signs[0] = False
        x[r, at] = np.where(signs, np.float32(-0.0), np.float32(0.0))
    return x


def _bits(a) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.uint32)


CALLS = {
    "ONNX ReduceMax": (lambda v: onnx.reduce_max(v, axes=[1], keepdims=0), _onnx_rule),
    "ReduceMax-1": (lambda v: ov.reduce_max(v, 1), _openvino_rule),
}


@pytest.mark.parametrize("length", [2, 8, 33, 256])
@pytest.mark.parametrize("name", list(CALLS))
def test_zero_maxima_on_one_device(name, length):
    call, rule = CALLS[name]
    x = _rows(length, 64, length)
    want = np.array([rule(row) for row in x], np.float32)
    for run in (call, jax.jit(call)):
        np.testing.assert_array_equal(_bits(run(x)), _bits(want))


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
@pytest.mark.parametrize("name", list(CALLS))
def test_zero_maxima_sharded_along_the_reduced_axis(name, axis_type):
    call, rule = CALLS[name]
    mesh = jax.make_mesh((8,), ("d",), axis_types=(axis_type,))
    for length in (8, 64):
        x = _rows(length + 1, 32, length)
        want = np.array([rule(row) for row in x], np.float32)
        xs = jax.device_put(x, NamedSharding(mesh, P(None, "d")))
        assert math.prod(xs.sharding.shard_shape(x.shape)) < x.size
        for run in (call, jax.jit(call)):
            np.testing.assert_array_equal(_bits(run(xs)), _bits(want), err_msg=f"{length}")
