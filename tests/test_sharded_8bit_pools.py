"""8-bit pools sharded along a pooled axis compile, and give the NumPy oracles' answer.

An int8 ONNX MaxPool sharded along a pooled axis whose output does not divide over the devices
aborted the whole process in XLA's SPMD partitioner (``spmd_partitioner.cc`` ``Check failed:
!target.IsReplicatedOrSingleDevice()``): the compact form's variadic ``reduce_window`` returned
its integer values straight to the output's replicated sharding constraint, which Shardy moved
onto that one result while the others kept their operands' sharding, and the partitioner cannot
reshard such a mixed tuple (jaxmax/_src/explicit_axes.py, ``open_results``). Floats were spared
by the NaN select after the reduction; a user's replicated constraint on an ``Auto`` mesh hit
it too.

An abort kills the process, so the cases run in a child interpreter on four CPU devices, one
after another (the fixture `outcomes`; a fresh child takes over after a case that kills one, and
that case's test fails naming the shardings it was compiling: one program per case and mesh
axis type holds both dtypes sharded along each axis), each writing its results to a file,
compared here with the NumPy loops of tests/pool_oracle.py and tests/adaptive_unpool_oracle.py:
int8 and uint8, the ONNX and OpenVINO faces, sharded along each spatial axis (D too for the 3-D
pools) on ``Explicit`` and ``Auto`` meshes.
"""

from __future__ import annotations

import dataclasses
import select
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest
from adaptive_unpool_oracle import adaptive_max_pool
from helpers import assert_same, child_env
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

# One child runs every job (a test's case) in turn, each as the per-case child did before:
# "job NAME" before it, "compiling ..." before each compile, "done NAME" once its results file
# is written. When a child dies (an abort in XLA) or stops progressing, the job it was running
# gets the failure (its own test fails, naming the sharding being compiled) and a fresh child
# runs the jobs after it. One interpreter start (JAX and jaxmax imports) for all the cases
# instead of one a case.
_CHILD = """
    import numpy as np
    import jax

    jax.config.update("jax_num_cpu_devices", {devices})
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

    from jaxmax import onnx, openvino as ov


    def run(name, call, data, result, axes, devices, axis_types):
        print("job", name, flush=True)
        data = np.load(data)
        out = {{}}
        for axis_type in axis_types:
            mesh = jax.make_mesh((devices,), ("d",), devices=jax.devices()[:devices],
                                 axis_types=(getattr(AxisType, axis_type),))
            # every (dtype, sharded axis) of this mesh in one program: one compile instead of
            # one each, every call the same static call on an input of the same sharding
            keys = [(dtype, axis) for dtype in data.files for axis in axes]
            inputs = []
            for dtype, axis in keys:
                spec = [None] * data[dtype].ndim
                spec[axis] = "d"
                inputs.append(jax.device_put(data[dtype], NamedSharding(mesh, P(*spec))))
            print("compiling", " and ".join(data.files), "sharded along axes", axes, axis_type,
                  flush=True)
            f = call(mesh)
            every = jax.jit(lambda xs: [f(x) for x in xs])(inputs)
            for (dtype, axis), got in zip(keys, every, strict=True):
                for i, g in enumerate(got if isinstance(got, tuple) else (got,)):
                    out[f"{{axis_type}} {{dtype}} {{axis}} {{i}}"] = np.asarray(g)
        np.savez(result, **out)
        print("done", name, flush=True)

"""
_JOB = "run({name!r}, lambda mesh: lambda v: {call}, {data!r}, {result!r}, {axes!r}, " \
    "{devices}, {axis_types!r})\n"
_TIMEOUT = 300  # seconds without a line from the child (run_python's per-child timeout)


def _data(shape, dtype) -> np.ndarray:
    """Every value of `dtype` (many ties in each window), a block of iinfo.min (windows at
    lowest(T) only) and a block of iinfo.max (ties at the top)."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(len(shape)).integers(info.min, int(info.max) + 1, shape)
    x[0, 0, :6] = info.min
    x[1, 1, :6] = info.max
    return x.astype(dtype)


AXIS_TYPES = ("Explicit", "Auto")


@dataclasses.dataclass(frozen=True)
class Job:
    call: str  # on `v` (and its mesh `mesh`), run in the child
    shape: tuple
    axes: tuple  # each sharded in turn over the mesh's one axis
    devices: int = DEVICES
    axis_types: tuple = AXIS_TYPES


JOBS = {case: Job(call, shape, tuple(range(2, len(shape))))
        for case, (shape, call, _) in CASES.items()}
JOBS["the report"] = Job("onnx.max_pool(v, kernel_shape=(2, 2), strides=(2, 2))",
                         (2, 4, 24, 18), (3,), devices=2)
JOBS["a replicated constraint"] = Job(
    "jax.lax.with_sharding_constraint(onnx.max_pool(v, kernel_shape=(2, 2), strides=(2, 2),"
    " return_indices=True), NamedSharding(mesh, P()))", (2, 4, 20, 20), (2, 3),
    axis_types=("Auto",))


def _child(code: str) -> tuple[int | None, list[str], str]:
    """`code` in a fresh interpreter (helpers.child_env): its exit code (None when it printed
    nothing for `_TIMEOUT` seconds and was killed), stdout lines and stderr."""
    lines: list[str] = []
    with tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 stderr=err, text=True, env=child_env())
        assert child.stdout is not None
        while True:
            ready, _, _ = select.select([child.stdout], [], [], _TIMEOUT)
            if not ready:
                child.kill()
                child.wait()
                status = None
                break
            line = child.stdout.readline()
            if not line:
                status = child.wait()
                break
            lines.append(line.rstrip("\n"))
        child.stdout.close()
        err.seek(0)
        return status, lines, err.read()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict:
    """Every job of `JOBS` run in as few children as its failures allow: per job, its outputs
    by ``"{axis type} {dtype} {axis} {output}"``, or the message of its child's failure."""
    tmp = tmp_path_factory.mktemp("8bit")
    files = {}
    for i, (name, job) in enumerate(JOBS.items()):
        data, result = tmp / f"data{i}.npz", tmp / f"result{i}.npz"
        np.savez(data, **{np.dtype(t).name: _data(job.shape, t) for t in DTYPES})
        files[name] = (str(data), str(result))
    out: dict = {}
    remaining = list(JOBS)
    while remaining:
        code = textwrap.dedent(_CHILD.format(devices=max(JOBS[n].devices for n in remaining)))
        code += "".join(_JOB.format(name=n, call=JOBS[n].call, data=files[n][0],
                                    result=files[n][1], axes=JOBS[n].axes,
                                    devices=JOBS[n].devices, axis_types=JOBS[n].axis_types)
                        for n in remaining)
        returncode, lines, stderr = _child(code)
        done = {line[len("done "):] for line in lines if line.startswith("done ")}
        for name in list(remaining):
            if name not in done:
                break
            with np.load(files[name][1]) as got:
                out[name] = {k: got[k] for k in got.files}
            remaining.remove(name)
        if not remaining:
            break
        # the first job without results failed: the lines since it started say where
        name = remaining.pop(0)
        started = [i for i, line in enumerate(lines) if line == f"job {name}"]
        own = lines[started[0] + 1:] if started else []
        last = own[-1:] or ["before compiling"]
        state = f"printed nothing for {_TIMEOUT} s" if returncode is None else \
            f"failed ({returncode})"
        out[name] = f"the child {state}, {last[0]}:\n{stderr[-3000:]}"
    return out


def _run(outcomes: dict, name: str) -> dict:
    """Job `name`'s outputs; a failed test where its child failed."""
    got = outcomes[name]
    assert not isinstance(got, str), got
    return got


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
def test_an_8bit_pool_sharded_along_a_pooled_axis(case, outcomes):
    shape, _, oracle = CASES[case]
    axes = JOBS[case].axes
    _check(_run(outcomes, case), oracle, shape, axes, case)


def test_the_reported_case(outcomes):
    """The report: ONNX MaxPool k2 s2 on int8 (2, 4, 24, 18) sharded along W over two devices
    (an output of 9 along W)."""
    job = JOBS["the report"]
    _check(_run(outcomes, "the report"),
           lambda x: onnx_oracle(x, [2, 2], [2, 2], [0, 0, 0, 0])[:1], job.shape, job.axes,
           "the report")


def test_a_replicated_constraint_on_an_auto_mesh(outcomes):
    """A user's replicated sharding constraint on the pool's outputs, on an ``Auto`` mesh: the
    same mixed tuple without any ``Explicit`` axis."""
    job = JOBS["a replicated constraint"]
    _check(_run(outcomes, "a replicated constraint"),
           lambda x: onnx_oracle(x, [2, 2], [2, 2], [0, 0, 0, 0]), job.shape, job.axes,
           "a replicated constraint", axis_types=job.axis_types)
