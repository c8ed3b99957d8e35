"""Pools sharded along a pooled axis keep the sign of a zero maximum.

A window whose maximum is ``-0.0`` must give ``-0.0`` whatever the input's sharding. XLA's SPMD
partitioner replicates a few rows of a sharded axis with an all-reduce that adds the owner's
rows to zeros, and ``-0.0 + 0.0 = +0.0``: the pools' border boxes read such rows, and a sharded
pool returned ``+0.0`` there (found with 4 CPU devices, a same_upper 3x3 stride-2 pool sharded
along H). ``assert_same`` treats the zeros as equal, so these tests compare the bits.

The oracles are the NumPy loops of tests/pool_oracle.py; the data are negative values with
zeros of both signs, so that many windows' maxima are zeros, some of them in the border windows
that read padding.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from pool_oracle import max_pool_1
from pool_oracle import onnx as onnx_oracle
from pool_oracle import openvino as openvino_oracle

from jaxmax import onnx
from jaxmax import openvino as ov


def _zeros_data(seed: int, shape) -> np.ndarray:
    """Values in [-4, -1) with about a fifth ``-0.0`` and a twentieth ``+0.0``."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, -1, shape).astype(np.float32)
    u = rng.random(shape)
    x[u < 0.2] = -0.0
    x[u > 0.95] = 0.0
    return x


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint32) if a.dtype == np.float32 else a


def _assert_bits(got, want, context):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, context
    differ = np.flatnonzero(_bits(got).ravel() != _bits(want).ravel())
    assert differ.size == 0, (
        f"{context}: {differ.size} outputs differ, first at flat {differ[0]}: "
        f"got {got.ravel()[differ[0]]!r}, want {want.ravel()[differ[0]]!r}")


SPECS = {
    "H": P(None, None, "d"),
    "W": P(None, None, None, "d"),
    "H and W": P(None, None, "a", "b"),
}


def _mesh(spec, axis_type):
    if "a" in spec:
        return jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    return jax.make_mesh((8,), ("d",), axis_types=(axis_type,))


# (the call, its oracle): same_upper and explicit pads, strides 1 and 2, a ceil window, and
# both faces with and without indices
CASES = {
    "MaxPool-1 same_upper k3 s2": (
        lambda v: ov.max_pool(v, kernel=3, strides=2, auto_pad="same_upper"),
        lambda x: max_pool_1(x, kernel=3, strides=2, auto_pad="same_upper")),
    "MaxPool-1 k3 s1 p1": (
        lambda v: ov.max_pool(v, kernel=3, strides=1, pads_begin=1, pads_end=1),
        lambda x: max_pool_1(x, kernel=3, strides=1, pads_begin=1, pads_end=1)),
    "MaxPool-8 k3 s2 p1 ceil, values and indices": (
        lambda v: ov.max_pool(v, kernel=3, strides=2, pads_begin=1, pads_end=1,
                              rounding_type="ceil", opset=8),
        lambda x: openvino_oracle(x, [3, 3], [2, 2], [(1, 1), (1, 1)], rounding="ceil")),
    "ONNX MaxPool k3 s2 p1": (
        lambda v: onnx.max_pool(v, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        lambda x: onnx_oracle(x, [3, 3], [2, 2], [1, 1, 1, 1])[:1]),
    # ceil rounding: an output that does not divide over the devices (17 along H and W), the
    # halo form (jaxmax/_src/lowering/pooling/halo.py)
    "MaxPool-14 ceil_torch k3 s2 p1, values and indices": (
        lambda v: ov.max_pool(v, kernel=3, strides=2, pads_begin=1, pads_end=1,
                              rounding_type="ceil_torch", opset=14, index_element_type="i32"),
        lambda x: openvino_oracle(x, [3, 3], [2, 2], [(1, 1), (1, 1)], rounding="ceil_torch")),
    "ONNX MaxPool k3 s2 p1 ceil": (
        lambda v: onnx.max_pool(v, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                ceil_mode=1),
        lambda x: onnx_oracle(x, [3, 3], [2, 2], [1, 1, 1, 1], ceil_mode=1)[:1]),
    "ONNX MaxPool k3 s2 p1 ceil with Indices (storage_order 1)": (
        lambda v: onnx.max_pool(v, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                ceil_mode=1, storage_order=1, return_indices=True),
        lambda x: onnx_oracle(x, [3, 3], [2, 2], [1, 1, 1, 1], ceil_mode=1, storage_order=1)),
    "ONNX MaxPool k2 s1 p(1,0) with Indices": (
        lambda v: onnx.max_pool(v, kernel_shape=[2, 2], pads=[1, 1, 0, 0],
                                return_indices=True),
        lambda x: onnx_oracle(x, [2, 2], [1, 1], [1, 1, 0, 0])),
}


# Smaller inputs take forms that the partitioner splits without the adding all-reduce: the
# defect showed from about 128 KiB.
SHAPE = (32, 1, 32, 32)


@functools.cache
def _case_data(case: str):
    x = _zeros_data(len(case), SHAPE)
    want = CASES[case][1](x)
    return x, want if isinstance(want, tuple) else (want,)


@functools.cache
def _sharded_results(sharded: str, axis_type):
    """Every case of `CASES` on its own data sharded along `sharded` over an `axis_type` mesh, in
    one jitted program (one compile for the eight calls instead of eight: each call is the same
    static call on an input of the same sharding as in a program of its own): {case: outputs as
    NumPy arrays}, computed by the first test of the group and read by the others."""
    spec = SPECS[sharded]
    mesh = _mesh(spec, axis_type)
    xs = {case: jax.device_put(_case_data(case)[0], NamedSharding(mesh, spec)) for case in CASES}
    got = jax.jit(lambda d: {case: CASES[case][0](v) for case, v in d.items()})(xs)
    return {case: tuple(np.asarray(g) for g in (out if isinstance(out, tuple) else (out,)))
            for case, out in got.items()}


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto],
                         ids=["explicit", "auto"])
@pytest.mark.parametrize("sharded", list(SPECS))
@pytest.mark.parametrize("case", list(CASES))
def test_a_zero_maximum_keeps_its_sign_on_a_sharded_pooled_axis(case, sharded, axis_type):
    _, want = _case_data(case)
    assert (_bits(want[0]) == _bits(np.float32(-0.0))).sum() > 10  # the case has -0 maxima
    # Under jit only: an eager call compiles the same program (the pools' jitted core with the
    # same input sharding; the optimised HLO of the two was identical, names aside, for the
    # cases compared), so it was a second compile checking nothing more. The eight cases of a
    # (sharding, axis type) run in one program (`_sharded_results`).
    got = _sharded_results(sharded, axis_type)[case]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        _assert_bits(g.astype(w.dtype) if w.dtype.kind == "i" else g, w,
                     f"{case}, sharded along {sharded}, {axis_type.name}")


def test_the_reported_case():
    """The report's reproduction, on four of the eight devices."""
    mesh = jax.make_mesh((4,), ("d",), devices=jax.devices()[:4])
    x = np.full((32, 1, 32, 32), -1.0, np.float32)
    x[0, 0, 31, 31] = -0.0
    f = jax.jit(lambda v: ov.max_pool(v, kernel=3, strides=2, auto_pad="same_upper"))
    got = np.asarray(f(jax.device_put(x, NamedSharding(mesh, P(None, None, "d")))))
    assert np.signbit(got[0, 0, 15, 15]) and got[0, 0, 15, 15] == 0
    _assert_bits(got, np.asarray(f(x)), "sharded against unsharded")


@pytest.mark.parametrize("names", [("a", "b"), ("b", "a")], ids=["a,b", "b,a"])
def test_a_ceil_pool_over_two_mesh_axes_of_one_spatial_axis(names):
    """H sharded over two mesh axes at once, in either order: the halo goes to the block that
    follows in the spec's order (``lax.ppermute`` numbers the devices in the mesh's order)."""
    case = "MaxPool-14 ceil_torch k3 s2 p1, values and indices"
    x, want = _case_data(case)
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    got = jax.jit(CASES[case][0])(jax.device_put(x, NamedSharding(mesh, P(None, None, names))))
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        _assert_bits(np.asarray(g).astype(w.dtype) if w.dtype.kind == "i" else g, w,
                     f"H over {names}")
