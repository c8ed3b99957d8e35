"""8-bit pools sharded along a pooled axis compile, and give the NumPy oracles' answer.

An int8 ONNX MaxPool sharded along a pooled axis whose output does not divide over the devices
aborted the whole process in XLA's SPMD partitioner (``spmd_partitioner.cc`` ``Check failed:
!target.IsReplicatedOrSingleDevice()``): the compact form's variadic ``reduce_window`` returned
its integer values straight to the output's replicated sharding constraint, which Shardy moved
onto that one result while the others kept their operands' sharding, and the partitioner cannot
reshard such a mixed tuple (jaxmax/_src/explicit_axes.py, ``open_results``). Floats were spared
by the NaN select after the reduction; a user's replicated constraint on an ``Auto`` mesh hit
it too.

An abort kills the process, so each case runs in a fresh interpreter on four CPU devices (an
abort is then a failed test that names the sharding it was compiling) and writes its results to
a file, compared here with the NumPy loops of tests/pool_oracle.py and
tests/adaptive_unpool_oracle.py: int8 and uint8, the ONNX and OpenVINO faces, sharded along each
spatial axis (D too for the 3-D pools) on ``Explicit`` and ``Auto`` meshes.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from adaptive_unpool_oracle import adaptive_max_pool
from helpers import assert_same, run_python
from pool_oracle import max_pool_1
from pool_oracle import onnx as onnx_oracle
from pool_oracle import openvino as openvino_oracle

DTYPES = (np.int8, np.uint8)
DEVICES = 4

# name: (input shape, the call on `v` (source, run in the child), its oracle). The 2-D shapes'
# outputs (10 or 11 along H and W) do not divide over the four devices: the output is replicated
CASES = {
    "ONNX MaxPool k2 s2": (
        (2, 4, 20, 20), "onnx.max_pool(v, kernel_shape=(2, 2), strides=(2, 2))",
        lambda x: onnx_oracle(x, [2, 2], [2, 2], [0, 0, 0, 0])[:1]),
    "ONNX MaxPool k3 s2 p1 ceil, Y and Indices": (
        (2, 4, 20, 20),
        "onnx.max_pool(v, kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), ceil_mode=1,"
        " return_indices=True)",
        lambda x: onnx_oracle(x, [3, 3], [2, 2], [1, 1, 1, 1], ceil_mode=1)),
    "ONNX MaxPool k2 s2, Indices in storage_order 1": (
        (2, 4, 20, 20),
        "onnx.max_pool(v, kernel_shape=(2, 2), strides=(2, 2), storage_order=1,"
        " return_indices=True)",
        lambda x: onnx_oracle(x, [2, 2], [2, 2], [0, 0, 0, 0], storage_order=1)),
    "ONNX MaxPool-22 3-D k3 s2 p1 ceil, Y and Indices": (
        (2, 4, 12, 12, 12),
        "onnx.max_pool(v, kernel_shape=(3, 3, 3), strides=(2, 2, 2), pads=(1,) * 6,"
        " ceil_mode=1, return_indices=True)",
        lambda x: onnx_oracle(x, [3, 3, 3], [2, 2, 2], [1] * 6, ceil_mode=1)),
    "MaxPool-1 k2 s2": (
        (2, 4, 20, 20), "ov.max_pool(v, kernel=(2, 2), strides=(2, 2))",
        lambda x: (max_pool_1(x, kernel=2, strides=2),)),
    "MaxPool-8 k3 s2 p1 ceil, values and indices": (
        (2, 4, 20, 20),
        "ov.max_pool(v, kernel=(3, 3), strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1),"
        " rounding_type='ceil', opset=8, index_element_type='i32')",
        lambda x: openvino_oracle(x, [3, 3], [2, 2], [(1, 1), (1, 1)], rounding="ceil")),
    "MaxPool-14 ceil_torch k3 s2 p1, values and indices": (
        (2, 4, 20, 20),
        "ov.max_pool(v, kernel=(3, 3), strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1),"
        " rounding_type='ceil_torch', opset=14, index_element_type='i32')",
        lambda x: openvino_oracle(x, [3, 3], [2, 2], [(1, 1), (1, 1)], rounding="ceil_torch")),
    "MaxPool-8 3-D k3 s2 p1 ceil, values and indices": (
        (2, 4, 12, 12, 12),
        "ov.max_pool(v, kernel=(3, 3, 3), strides=(2, 2, 2), pads_begin=(1,) * 3,"
        " pads_end=(1,) * 3, rounding_type='ceil', opset=8, index_element_type='i32')",
        lambda x: openvino_oracle(x, [3] * 3, [2] * 3, [(1, 1)] * 3, rounding="ceil")),
    "AdaptiveMaxPool-8 -> (7, 6)": (
        (2, 4, 20, 20), "ov.adaptive_max_pool(v, (7, 6), index_element_type='i32')",
        lambda x: adaptive_max_pool(x, (7, 6))),
    "AdaptiveMaxPool-8 3-D -> (5, 3, 7)": (
        (2, 4, 12, 12, 12), "ov.adaptive_max_pool(v, (5, 3, 7), index_element_type='i32')",
        lambda x: adaptive_max_pool(x, (5, 3, 7))),
    "ONNX ReduceMax over the spatial axes": (
        (2, 4, 20, 20), "onnx.reduce_max(v, (2, 3))",
        lambda x: (np.max(x, axis=(2, 3), keepdims=True),)),
    "OpenVINO ReduceMax over the spatial axes": (
        (2, 4, 20, 20), "ov.reduce_max(v, (2, 3))",
        lambda x: (np.max(x, axis=(2, 3)),)),
}

_CHILD = """
    import numpy as np
    import jax

    jax.config.update("jax_num_cpu_devices", {devices})
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

    from jaxmax import onnx, openvino as ov

    data = np.load({data!r})
    axes = {axes!r}
    out = {{}}
    for axis_type in {axis_types!r}:
        mesh = jax.make_mesh(({devices},), ("d",), devices=jax.devices()[:{devices}],
                             axis_types=(getattr(AxisType, axis_type),))
        for dtype in data.files:
            x = data[dtype]
            for axis in axes:
                spec = [None] * x.ndim
                spec[axis] = "d"
                print("compiling", dtype, "sharded along axis", axis, axis_type, flush=True)
                got = jax.jit(lambda v: {call})(jax.device_put(x, NamedSharding(mesh, P(*spec))))
                for i, g in enumerate(got if isinstance(got, tuple) else (got,)):
                    out[f"{{axis_type}} {{dtype}} {{axis}} {{i}}"] = np.asarray(g)
    np.savez({result!r}, **out)
"""


def _data(shape, dtype) -> np.ndarray:
    """Every value of `dtype` (many ties in each window), a block of iinfo.min (windows at
    lowest(T) only) and a block of iinfo.max (ties at the top)."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(len(shape)).integers(info.min, int(info.max) + 1, shape)
    x[0, 0, :6] = info.min
    x[1, 1, :6] = info.max
    return x.astype(dtype)


AXIS_TYPES = ("Explicit", "Auto")


def _run(call: str, shape, axes, tmp_path, devices: int = DEVICES,
         axis_types=AXIS_TYPES) -> dict:
    """`call` (on `v`, its mesh `mesh`) on every dtype of `DTYPES`, sharded along each of `axes`
    over `devices` CPU devices on meshes of each of `axis_types`, in a fresh interpreter: its
    outputs by ``"{axis type} {dtype} {axis} {output}"``; a failed test where the child
    fails."""
    data, result = tmp_path / "data.npz", tmp_path / "result.npz"
    np.savez(data, **{np.dtype(t).name: _data(shape, t) for t in DTYPES})
    code = _CHILD.format(devices=devices, data=str(data), axes=tuple(axes), call=call,
                         result=str(result), axis_types=tuple(axis_types))
    done = run_python(textwrap.dedent(code))
    last = done.stdout.strip().splitlines()[-1:] or ["before compiling"]
    assert done.returncode == 0, (
        f"the child failed ({done.returncode}), {last[0]}:\n{done.stderr[-3000:]}")
    with np.load(result) as got:
        return {k: got[k] for k in got.files}


def _check(got: dict, oracle, shape, axes, context: str, axis_types=AXIS_TYPES) -> None:
    """`_run`'s outputs `got` against `oracle` (a tuple of outputs) on the same data."""
    for dtype in DTYPES:
        want = oracle(_data(shape, dtype))
        for axis_type in axis_types:
            for axis in axes:
                where = f"{context}, {np.dtype(dtype).name} along axis {axis}, {axis_type}"
                for i, w in enumerate(want):
                    g = got[f"{axis_type} {np.dtype(dtype).name} {axis} {i}"]
                    w = np.asarray(w)
                    if i:  # indices: int32 without 64-bit mode
                        assert g.dtype.kind == "i", where
                        g = g.astype(w.dtype)
                    assert_same(g, w, f"{where}, output {i}")
                assert f"{axis_type} {np.dtype(dtype).name} {axis} {len(want)}" not in got


@pytest.mark.parametrize("case", list(CASES))
def test_an_8bit_pool_sharded_along_a_pooled_axis(case, tmp_path):
    shape, call, oracle = CASES[case]
    axes = tuple(range(2, len(shape)))
    _check(_run(call, shape, axes, tmp_path), oracle, shape, axes, case)


def test_the_reported_case(tmp_path):
    """The report: ONNX MaxPool k2 s2 on int8 (2, 4, 24, 18) sharded along W over two devices
    (an output of 9 along W)."""
    shape, axes = (2, 4, 24, 18), (3,)
    got = _run("onnx.max_pool(v, kernel_shape=(2, 2), strides=(2, 2))", shape, axes, tmp_path,
               devices=2)
    _check(got, lambda x: onnx_oracle(x, [2, 2], [2, 2], [0, 0, 0, 0])[:1], shape, axes,
           "the report")


def test_a_replicated_constraint_on_an_auto_mesh(tmp_path):
    """A user's replicated sharding constraint on the pool's outputs, on an ``Auto`` mesh: the
    same mixed tuple without any ``Explicit`` axis."""
    shape, axes = (2, 4, 20, 20), (2, 3)
    call = ("jax.lax.with_sharding_constraint(onnx.max_pool(v, kernel_shape=(2, 2),"
            " strides=(2, 2), return_indices=True), NamedSharding(mesh, P()))")
    got = _run(call, shape, axes, tmp_path, axis_types=("Auto",))
    _check(got, lambda x: onnx_oracle(x, [2, 2], [2, 2], [0, 0, 0, 0]), shape, axes,
           "a replicated constraint", axis_types=("Auto",))
