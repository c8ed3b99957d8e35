#!/usr/bin/env python
"""Side-by-side timings of jaxmax and its competitors; prints one table.

    python benchmarks/run.py                  # full sizes (~200 MB tensors), a few minutes
    python benchmarks/run.py --quick          # small sizes, few repeats, well under 2 minutes
    python benchmarks/run.py --only reduce,max_pool --out results.md

Groups: reduce, logical_or, max_pool, segment_max, eager. Columns: the median wall time of one
call (warm-up excluded, JAX results waited for with ``block_until_ready``), its ratio to the
group's read floor (the time to merely read the input once: a jitted flat ``jnp.sum``; for bool
and int8 data a NumPy flat ``max`` of the bytes, since XLA's int8 sum widens to int32 and is
far slower than a read; for eager calls one eager call of a cached jitted ``jnp.sum``), and its
ratio to the fastest competitor in the same case (everything that is
not jaxmax and not a floor). A competitor that is not importable, or that rejects the case,
shows "n/a" and a note below the table says why.

Each runtime runs in its own worker subprocess (``--worker``) that prints one JSON line per
measurement; onnxruntime and OpenVINO are never loaded in the same process (a heap corruption
was once seen when both ran large inputs in one process). Workers run one after another, so
runtimes never compete for the cores; within a worker, the implementations of a case are
sampled in turn (round-robin), so a burst of load hits them alike. Every result is also
digested (shape, weighted sum, NaN count) and compared across implementations of a case: a
"differs" note flags a row whose output is not the same array (cases with NaN data are not
compared: the runtimes' NaN rules differ by design).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _timing  # noqa: E402

GROUPS = ("reduce", "logical_or", "max_pool", "segment_max", "eager")
BACKENDS = ("jax", "numpy", "ort", "ov", "torch")
BACKEND_MODULE = {"jax": "jax", "numpy": "numpy", "ort": "onnxruntime", "ov": "openvino",
                  "torch": "torch"}

# Row roles: jaxmax rows; competitors (the 'x best' reference); the read floor of a floor case
# (the 'x floor' reference); info rows (shown with 'x floor' only).
JAXMAX, COMPETITOR, FLOOR, INFO = "jaxmax", "competitor", "floor", "info"

# PyTorch's OpenMP threads spin-wait between parallel regions by default; when another process
# holds a core (a shared CI machine) a 0.1 ms torch.amax then takes ~50 ms. PASSIVE makes them
# sleep instead. Only torch uses OpenMP here; an OMP_WAIT_POLICY already set is kept.
TORCH_OMP_WAIT_POLICY = "PASSIVE"


# ----------------------------------------------------------------------------------------------
# Sizes

@dataclasses.dataclass(frozen=True)
class Sizes:
    reduce: tuple[int, ...]
    pool2d: tuple[int, ...]
    pool3d: tuple[int, ...]
    seg_rows: int
    seg_cols: int
    seg_count: int


FULL = Sizes(reduce=(64, 256, 56, 56), pool2d=(32, 64, 112, 112), pool3d=(8, 32, 32, 64, 64),
             seg_rows=2_000_000, seg_cols=32, seg_count=20_000)
QUICK = Sizes(reduce=(16, 64, 28, 28), pool2d=(4, 16, 56, 56), pool3d=(2, 8, 16, 32, 32),
              seg_rows=100_000, seg_cols=32, seg_count=1_000)

# (warm-up calls, min samples, max samples, seconds per implementation of a case after which
# min samples suffice). One more untimed call follows the warm-up (it sizes the timing loop);
# a call slower than SLOW_CALL_S needs only 3 samples.
FULL_REPS = (1, 5, 9, 1.5)
QUICK_REPS = (1, 3, 5, 0.3)


# ----------------------------------------------------------------------------------------------
# Inputs: NumPy arrays, generated identically (seeded) in every worker.

def make_inputs(key: str, sz: Sizes) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(_seed(key))
    if key == "f32":
        return {"x": rng.standard_normal(sz.reduce, dtype=np.float32)}
    if key == "f32nan":
        x = rng.standard_normal(sz.reduce, dtype=np.float32)
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size, max(1, flat.size // 1000))] = np.nan  # ~0.1% NaN
        return {"x": x}
    if key == "bf16":
        import ml_dtypes

        return {"x": rng.standard_normal(sz.reduce, dtype=np.float32).astype(ml_dtypes.bfloat16)}
    if key == "i8":
        return {"x": rng.integers(-128, 128, sz.reduce, dtype=np.int8)}
    if key == "bool":
        # sparse True (~0.1%): the per-slice results are data dependent
        return {"x": rng.integers(0, 1000, sz.reduce, dtype=np.uint16) == 0}
    if key == "bool_false":
        # all False: an any() over everything cannot stop at the first True (np.any does)
        return {"x": np.zeros(sz.reduce, np.bool_)}
    if key == "pool2d":
        return {"x": rng.standard_normal(sz.pool2d, dtype=np.float32)}
    if key == "pool3d":
        return {"x": rng.standard_normal(sz.pool3d, dtype=np.float32)}
    if key == "seg":
        ids = np.sort(rng.integers(0, sz.seg_count, sz.seg_rows)).astype(np.int32)
        return {"x": rng.standard_normal((sz.seg_rows, sz.seg_cols), dtype=np.float32),
                "ids": ids,
                "lengths": np.bincount(ids, minlength=sz.seg_count).astype(np.int64)}
    if key == "small":
        return {"x": rng.standard_normal((8, 8), dtype=np.float32),
                "ids": np.array([0, 0, 1, 1, 1, 2, 3, 3], np.int32)}
    raise KeyError(key)


def _seed(key: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(key))


class Ctx:
    """One input set, with per-runtime conversions cached (built outside the timed region)."""

    def __init__(self, key: str, sz: Sizes):
        self.key = key
        self.sz = sz
        self.arrays = make_inputs(key, sz)
        self._jax: dict[str, Any] = {}
        self._torch: dict[str, Any] = {}

    def np(self, name: str = "x") -> np.ndarray:
        return self.arrays[name]

    def jax(self, name: str = "x"):
        if name not in self._jax:
            import jax

            self._jax[name] = jax.block_until_ready(jax.device_put(self.arrays[name]))
        return self._jax[name]

    def torch(self, name: str = "x"):
        if name not in self._torch:
            import torch

            a = self.arrays[name]
            if a.dtype.kind not in "biuf":  # bfloat16: reinterpret the bits
                t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
            else:
                t = torch.from_numpy(a)
            self._torch[name] = t
        return self._torch[name]


# ----------------------------------------------------------------------------------------------
# Cases

Build = Callable[[Ctx], Callable[[], Any]]


@dataclasses.dataclass
class Impl:
    label: str
    backend: str
    build: Build
    role: str = COMPETITOR
    inputs: str | None = None  # another input set than the case's (e.g. NaN-free next to NaN)


@dataclasses.dataclass
class Case:
    group: str
    name: str
    inputs: str
    impls: list[Impl]
    floor: str  # name of the floor case whose FLOOR row is the read floor
    check: bool = True  # compare result digests across impls


# -- builders: JAX --------------------------------------------------------------------------------

def jax_jit(make: Callable[[], Callable], names: tuple[str, ...] = ("x",)) -> Build:
    """Jit ``make()`` and call it on the device copies of `names`."""

    def build(ctx: Ctx):
        import jax

        f = jax.jit(make())
        args = [ctx.jax(n) for n in names]
        return lambda: jax.block_until_ready(f(*args))

    return build


def jax_eager(make: Callable[[], Callable], names: tuple[str, ...] = ("x",)) -> Build:
    def build(ctx: Ctx):
        import jax

        f = make()
        args = [ctx.jax(n) for n in names]
        return lambda: jax.block_until_ready(f(*args))

    return build


def _jov():
    from jaxmax import openvino

    return openvino


def _jonnx():
    from jaxmax import onnx

    return onnx


def _jnp():
    import jax.numpy as jnp

    return jnp


def flat_sum() -> Callable:
    jnp = _jnp()
    return lambda x: jnp.sum(x.reshape(-1))


# -- builders: NumPy ------------------------------------------------------------------------------

def numpy_call(fn: Callable[[np.ndarray], Any]) -> Build:
    def build(ctx: Ctx):
        x = ctx.np()
        return lambda: fn(x)

    return build


# -- builders: onnxruntime ------------------------------------------------------------------------

def _onnx_type(dtype: np.dtype) -> int:
    from onnx import TensorProto

    table = {"float32": TensorProto.FLOAT, "int8": TensorProto.INT8, "bool": TensorProto.BOOL,
             "bfloat16": TensorProto.BFLOAT16, "int32": TensorProto.INT32,
             "int64": TensorProto.INT64}
    return table[np.dtype(dtype).name]


def ort_graph(op: str, feeds: dict[str, np.ndarray], *, inits: dict[str, np.ndarray] | None = None,
              inputs: tuple[str, ...] = ("x",), opset: int = 18, **attrs) -> Callable:
    """An onnxruntime session of one node `op`(inputs..., inits...) -> y; returns run()."""
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    inits = inits or {}
    node = helper.make_node(op, list(inputs) + list(inits), ["y"], **attrs)
    x0 = feeds[inputs[0]]
    graph = helper.make_graph(
        [node], "bench",
        [helper.make_tensor_value_info(n, _onnx_type(feeds[n].dtype), feeds[n].shape)
         for n in inputs],
        [helper.make_tensor_value_info("y", _onnx_type(x0.dtype), None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = {n: feeds[n] for n in inputs}
    return lambda: sess.run(None, feed)[0]


def ort_reduce(axes: tuple[int, ...], opset: int = 18) -> Build:
    def build(ctx: Ctx):
        return ort_graph("ReduceMax", {"x": ctx.np()}, inits={"axes": np.array(axes, np.int64)},
                         opset=opset, keepdims=0)

    return build


def ort_pool(kernel, strides, pads) -> Build:
    def build(ctx: Ctx):
        return ort_graph("MaxPool", {"x": ctx.np()}, kernel_shape=list(kernel),
                         strides=list(strides), pads=list(pads) + list(pads))

    return build


def ort_scatter_max() -> Build:
    def build(ctx: Ctx):
        x, ids, nseg = ctx.np("x"), ctx.np("ids"), ctx.sz.seg_count
        # ScatterND(data, indices, updates, reduction="max"); the (nseg, cols) start value is a
        # constant -inf initializer; the (rows, 1) int64 index tensor is prepared once, untimed.
        start = np.full((nseg,) + x.shape[1:], -np.inf, np.float32)
        feeds = {"indices": ids.astype(np.int64)[:, None], "x": x}
        import onnxruntime as ort
        from onnx import helper, numpy_helper

        node = helper.make_node("ScatterND", ["start", "indices", "x"], ["y"], reduction="max")
        graph = helper.make_graph(
            [node], "bench",
            [helper.make_tensor_value_info("indices", _onnx_type(np.int64), feeds["indices"].shape),
             helper.make_tensor_value_info("x", _onnx_type(np.float32), x.shape)],
            [helper.make_tensor_value_info("y", _onnx_type(np.float32), None)],
            initializer=[numpy_helper.from_array(start, "start")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 10
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return lambda: sess.run(None, feeds)[0]

    return build


# -- builders: OpenVINO ---------------------------------------------------------------------------

OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


def _ov_type(dtype: np.dtype):
    import openvino as ov

    table = {"float32": ov.Type.f32, "int8": ov.Type.i8, "bool": ov.Type.boolean,
             "bfloat16": ov.Type.bf16, "int32": ov.Type.i32, "int64": ov.Type.i64}
    return table[np.dtype(dtype).name]


def ov_model(make_node: Callable, arrays: list[np.ndarray]) -> Callable:
    """Compile ``make_node(*parameters)`` for the CPU plugin (f32 precision); returns run().

    The inputs are bound once as tensors (shared memory where OpenVINO supports the dtype) and
    outputs are returned without a copy, so a call measures the plugin's inference only.
    """
    import openvino as ov
    import openvino.opset1 as o1

    params = [o1.parameter(list(a.shape), _ov_type(a.dtype), name=f"p{i}")
              for i, a in enumerate(arrays)]
    model = ov.Model([make_node(*params)], params)
    compiled = ov.Core().compile_model(model, "CPU", OV_CONFIG)
    req = compiled.create_infer_request()
    for i, a in enumerate(arrays):
        if a.dtype.kind in "biuf":
            tensor = ov.Tensor(np.ascontiguousarray(a), shared_memory=True)
        else:  # bfloat16: OpenVINO's Python tensors expose it as 16-bit storage; copy the bits
            tensor = ov.Tensor(_ov_type(a.dtype), ov.Shape(list(a.shape)))
            tensor.data[...] = a.view(tensor.data.dtype)
        req.set_input_tensor(i, tensor)

    def run():
        out = req.infer(share_outputs=True)[0]
        return out.view(arrays[0].dtype) if arrays[0].dtype.kind not in "biuf" else out

    return run


def ov_reduce(axes: tuple[int, ...], logical: bool = False) -> Build:
    def build(ctx: Ctx):
        import openvino.opset1 as o1

        op = o1.reduce_logical_or if logical else o1.reduce_max
        return ov_model(lambda p: op(p, o1.constant(np.array(axes, np.int64)), keep_dims=False),
                        [ctx.np()])

    return build


def ov_pool(kernel, strides, pads) -> Build:
    def build(ctx: Ctx):
        import openvino.opset1 as o1

        return ov_model(lambda p: o1.max_pool(p, list(strides), list(pads), list(pads),
                                              list(kernel)), [ctx.np()])

    return build


def ov_segment_max() -> Build:
    def build(ctx: Ctx):
        import openvino.opset1 as o1
        import openvino.opset16 as o16

        nseg = ctx.sz.seg_count
        return ov_model(
            lambda d, i: o16.segment_max(d, i, o1.constant(np.array(nseg, np.int32)),
                                         fill_mode="ZERO"),
            [ctx.np("x"), ctx.np("ids")])

    return build


# -- builders: torch ------------------------------------------------------------------------------

def torch_call(make: Callable[[Any], Callable], names: tuple[str, ...] = ("x",)) -> Build:
    """``make(torch)`` gives f; a call runs f(*tensors) under inference_mode."""

    def build(ctx: Ctx):
        import torch

        f = make(torch)
        args = [ctx.torch(n) for n in names]

        def run():
            with torch.inference_mode():
                return f(*args)

        return run

    return build


def torch_pool_grad(kernel, stride, pad, nsp: int) -> Build:
    def build(ctx: Ctx):
        import torch.nn.functional as F

        pool = F.max_pool2d if nsp == 2 else F.max_pool3d
        x = ctx.torch()

        def run():
            t = x.detach().requires_grad_(True)
            pool(t, kernel, stride, pad).sum().backward()
            return t.grad

        return run

    return build


# -- the case table -------------------------------------------------------------------------------

def _axes_label(axes: tuple[int, ...], ndim: int) -> str:
    return "all" if tuple(axes) == tuple(range(ndim)) else str(tuple(axes)).replace(",)", ")")


def reduce_cases(sz: Sizes) -> list[Case]:
    shape = sz.reduce
    nd = len(shape)
    cases: list[Case] = []
    shp = "x".join(map(str, shape))

    def floor_case(key: str, dtype: str) -> str:
        name = f"reduce {dtype} {shp}: read floor"
        if key == "i8":
            # XLA widens an int8 sum to int32 and runs ~200x slower than a read (~500 ms on the
            # full tensor): not a floor. The flat max of the same bytes in NumPy is one.
            impls = [Impl("np.max of the flat array", "numpy",
                          numpy_call(lambda x: x.reshape(-1).max()), FLOOR),
                     Impl("jit flat jnp.sum (int32 accumulation, not a floor)", "jax",
                          jax_jit(flat_sum), INFO)]
        else:
            impls = [Impl("jit flat jnp.sum", "jax", jax_jit(flat_sum), FLOOR)]
        cases.append(Case("reduce", name, key, impls, name))
        return name

    def impls(axes, dtype):
        ax = tuple(axes)
        out = [
            Impl("jaxmax.openvino.reduce_max (jit)", "jax",
                 jax_jit(lambda: lambda x: _jov().reduce_max(x, ax)), JAXMAX),
            Impl("jaxmax.onnx.reduce_max (jit)", "jax",
                 jax_jit(lambda: lambda x: _jonnx().reduce_max(x, ax, keepdims=0)), JAXMAX),
            Impl("jnp.max (jit)", "jax", jax_jit(lambda: lambda x: _jnp().max(x, axis=ax))),
            Impl("np.max", "numpy", numpy_call(lambda x: np.max(x, axis=ax))),
            Impl("onnxruntime ReduceMax", "ort", ort_reduce(ax)),
            Impl("OpenVINO CPU ReduceMax", "ov", ov_reduce(ax)),
            Impl("torch.amax", "torch", torch_call(lambda torch: lambda x: torch.amax(x, dim=ax))),
        ]
        return out

    f32_floor = floor_case("f32", "f32")
    for axes in [(0,), (1,), (2, 3), (3,), tuple(range(nd))]:
        cases.append(Case("reduce", f"reduce f32 axes={_axes_label(axes, nd)}", "f32",
                          impls(axes, "f32"), f32_floor))
    def nan_impls(ax):
        return [
            Impl("jaxmax.openvino.reduce_max (jit), NaN data", "jax",
                 jax_jit(lambda: lambda x: _jov().reduce_max(x, ax)), JAXMAX),
            Impl("jaxmax.openvino.reduce_max (jit), NaN-free data", "jax",
                 jax_jit(lambda: lambda x: _jov().reduce_max(x, ax)), JAXMAX, inputs="f32"),
            Impl("jnp.max (jit; YNNPACK may drop NaN)", "jax",
                 jax_jit(lambda: lambda x: _jnp().max(x, axis=ax))),
            Impl("np.nanmax (skips NaN)", "numpy", numpy_call(lambda x: np.nanmax(x, axis=ax))),
            Impl("onnxruntime ReduceMax", "ort", ort_reduce(ax)),
            Impl("OpenVINO CPU ReduceMax", "ov", ov_reduce(ax)),
            Impl("torch.amax", "torch", torch_call(lambda torch: lambda x: torch.amax(x, dim=ax))),
        ]

    for axes in [(2, 3), (0,)]:
        cases.append(Case("reduce", f"reduce f32 with 0.1% NaN axes={_axes_label(axes, nd)}",
                          "f32nan", nan_impls(axes), f32_floor, check=False))
    for key, dtype in [("bf16", "bf16"), ("i8", "int8")]:
        fl = floor_case(key, dtype)
        for axes in [(2, 3), (0,)]:
            cases.append(Case("reduce", f"reduce {dtype} axes={_axes_label(axes, nd)}", key,
                              impls(axes, dtype), fl))
    return cases


def logical_or_cases(sz: Sizes) -> list[Case]:
    shape = sz.reduce
    nd = len(shape)
    shp = "x".join(map(str, shape))
    floor = f"logical_or bool {shp}: read floor"
    cases = [Case("logical_or", floor, "bool", [
        Impl("np.max of the uint8 view (flat)", "numpy",
             numpy_call(lambda x: x.reshape(-1).view(np.uint8).max()), FLOOR)], floor)]
    def or_impls(ax):
        return [
            Impl("jaxmax.openvino.reduce_logical_or (jit)", "jax",
                 jax_jit(lambda: lambda x: _jov().reduce_logical_or(x, ax)), JAXMAX),
            Impl("jnp.any (jit)", "jax", jax_jit(lambda: lambda x: _jnp().any(x, axis=ax))),
            Impl("np.any", "numpy", numpy_call(lambda x: np.any(x, axis=ax))),
            Impl("np.max of the uint8 view", "numpy",
                 numpy_call(lambda x: x.view(np.uint8).max(axis=ax))),
            Impl("onnxruntime ReduceMax (bool, opset 20)", "ort", ort_reduce(ax, opset=20)),
            Impl("OpenVINO CPU ReduceLogicalOr", "ov", ov_reduce(ax, logical=True)),
            Impl("torch.any", "torch", torch_call(lambda torch: lambda x: torch.any(x, dim=ax))),
        ]

    for axes in [(0,), (1,), (2, 3)]:
        cases.append(Case("logical_or", f"logical_or axes={_axes_label(axes, nd)}", "bool",
                          or_impls(axes), floor))
    cases.append(Case("logical_or", "logical_or axes=all, all False", "bool_false",
                      or_impls(tuple(range(nd))), floor))
    return cases


def max_pool_cases(sz: Sizes) -> list[Case]:
    cases: list[Case] = []
    floors = {}
    for key, shape in [("pool2d", sz.pool2d), ("pool3d", sz.pool3d)]:
        name = f"max_pool f32 {'x'.join(map(str, shape))}: read floor"
        floors[key] = name
        cases.append(Case("max_pool", name, key,
                          [Impl("jit flat jnp.sum", "jax", jax_jit(flat_sum), FLOOR)], name))

    def pool_impls(k: int, s: int, p: int, nsp: int) -> list[Impl]:
        kernel, strides, pads = (k,) * nsp, (s,) * nsp, (p,) * nsp
        window, wstrides = (1, 1) + kernel, (1, 1) + strides
        wpad = ((0, 0), (0, 0)) + ((p, p),) * nsp

        def reduce_window():
            from jax import lax

            return lambda x: lax.reduce_window(x, np.float32(-np.inf), lax.max, window,
                                               wstrides, wpad)

        tname = f"max_pool{nsp}d"
        return [
            Impl("jaxmax.openvino.max_pool (jit)", "jax", jax_jit(
                lambda: lambda x: _jov().max_pool(x, kernel=kernel, strides=strides,
                                                  pads_begin=pads, pads_end=pads)), JAXMAX),
            Impl("lax.reduce_window max (jit)", "jax", jax_jit(reduce_window)),
            Impl("onnxruntime MaxPool", "ort", ort_pool(kernel, strides, pads)),
            Impl("OpenVINO CPU MaxPool", "ov", ov_pool(kernel, strides, pads)),
            Impl(f"torch {tname}", "torch", torch_call(
                lambda torch: lambda x: getattr(torch.nn.functional, tname)(x, k, s, p))),
        ]

    cases.append(Case("max_pool", "max_pool 2-D k3 s2 p1", "pool2d", pool_impls(3, 2, 1, 2),
                      floors["pool2d"]))
    cases.append(Case("max_pool", "max_pool 2-D k2 s2", "pool2d", pool_impls(2, 2, 0, 2),
                      floors["pool2d"]))
    cases.append(Case("max_pool", "max_pool 3-D k3 s2 p1", "pool3d", pool_impls(3, 2, 1, 3),
                      floors["pool3d"]))

    def jax_grad(use_jaxmax: bool, nsp: int):
        def make():
            import jax
            from jax import lax

            if use_jaxmax:
                def loss(x):
                    return _jov().max_pool(x, kernel=(3,) * nsp, strides=(2,) * nsp,
                                           pads_begin=(1,) * nsp, pads_end=(1,) * nsp).sum()
            else:
                def loss(x):
                    return lax.reduce_window(x, np.float32(-np.inf), lax.max, (1, 1) + (3,) * nsp,
                                             (1, 1) + (2,) * nsp,
                                             ((0, 0), (0, 0)) + ((1, 1),) * nsp).sum()
            return jax.grad(loss)

        return make

    def fresh_output():
        # A gradient is a new array of the input's size; on this machine most of the cost of
        # producing one is the kernel zero-filling its freshly mapped pages. x * 2 shows it.
        return lambda x: x * 2

    for key, nsp in [("pool2d", 2), ("pool3d", 3)]:
        cases.append(Case("max_pool", f"max_pool {nsp}-D k3 s2 p1: gradient", key, [
            Impl("jax.grad of jaxmax max_pool sum (jit)", "jax", jax_jit(jax_grad(True, nsp)),
                 JAXMAX),
            Impl("jax.grad of reduce_window sum (jit)", "jax", jax_jit(jax_grad(False, nsp))),
            Impl(f"torch max_pool{nsp}d forward+backward", "torch",
                 torch_pool_grad(3, 2, 1, nsp)),
            Impl("jit x * 2: a fresh array of the input's size", "jax", jax_jit(fresh_output),
                 INFO),
        ], floors[key]))
    return cases


def segment_max_cases(sz: Sizes) -> list[Case]:
    nseg = sz.seg_count
    shp = f"{sz.seg_rows}x{sz.seg_cols}"
    floor = f"segment_max f32 {shp}: read floor"
    cases = [Case("segment_max", floor, "seg",
                  [Impl("jit flat jnp.sum", "jax", jax_jit(flat_sum), FLOOR)], floor)]

    def jaxmax_seg(fill: str):
        return lambda: lambda x, i: _jov().segment_max(x, i, nseg, fill_mode=fill)

    def raw_seg():
        import jax

        return lambda x, i: jax.ops.segment_max(x, i, nseg)

    cases.append(Case("segment_max", f"segment_max {shp}, {nseg} sorted segments", "seg", [
        Impl("jaxmax.openvino.segment_max ZERO (jit)", "jax",
             jax_jit(jaxmax_seg("ZERO"), ("x", "ids")), JAXMAX),
        Impl("jaxmax.openvino.segment_max LOWEST (jit)", "jax",
             jax_jit(jaxmax_seg("LOWEST"), ("x", "ids")), JAXMAX),
        Impl("jax.ops.segment_max (jit)", "jax", jax_jit(raw_seg, ("x", "ids"))),
        Impl("onnxruntime ScatterND(reduction=max)", "ort", ort_scatter_max()),
        Impl("torch.segment_reduce max (lengths)", "torch", torch_call(
            lambda torch: lambda x, n: torch.segment_reduce(x, "max", lengths=n, axis=0),
            ("x", "lengths"))),
        Impl("OpenVINO CPU SegmentMax", "ov", ov_segment_max()),
    ], floor))
    return cases


def eager_cases(sz: Sizes) -> list[Case]:
    floor = "eager 8x8 f32: dispatch floor"

    def cached_sum():
        import jax

        f = jax.jit(flat_sum())
        return f

    cases = [Case("eager", floor, "small", [
        Impl("eager call of a cached jit jnp.sum", "jax", jax_eager(cached_sum), FLOOR)], floor)]
    cases.append(Case("eager", "eager reduce_max 8x8 axes=(1)", "small", [
        Impl("jaxmax.openvino.reduce_max (eager)", "jax",
             jax_eager(lambda: lambda x: _jov().reduce_max(x, 1)), JAXMAX),
        Impl("jnp.max (eager)", "jax", jax_eager(lambda: lambda x: _jnp().max(x, axis=1))),
    ], floor))

    def raw_seg():
        import jax

        return lambda x, i: jax.ops.segment_max(x, i, 4)

    cases.append(Case("eager", "eager segment_max 8x8, 4 segments", "small", [
        Impl("jaxmax.openvino.segment_max ZERO (eager)", "jax", jax_eager(
            lambda: lambda x, i: _jov().segment_max(x, i, 4, fill_mode="ZERO"), ("x", "ids")),
            JAXMAX),
        Impl("jax.ops.segment_max (eager)", "jax", jax_eager(raw_seg, ("x", "ids"))),
    ], floor))
    return cases


CASE_BUILDERS = {"reduce": reduce_cases, "logical_or": logical_or_cases,
                 "max_pool": max_pool_cases, "segment_max": segment_max_cases,
                 "eager": eager_cases}


# ----------------------------------------------------------------------------------------------
# Worker: measure one backend's rows for some groups; one JSON object per line on stdout.

def worker(backend: str, groups: list[str], quick: bool) -> None:
    sz = QUICK if quick else FULL
    warmup, min_reps, max_reps, budget = QUICK_REPS if quick else FULL_REPS
    emit_stream = sys.stdout
    sys.stdout = sys.stderr  # anything a library prints goes to stderr, not into the JSON stream

    def emit(obj):
        emit_stream.write(json.dumps(obj) + "\n")
        emit_stream.flush()

    import_error = None
    try:
        __import__(BACKEND_MODULE[backend])
        if backend == "jax":
            import jaxmax  # noqa: F401
    except Exception as e:  # noqa: BLE001
        import_error = f"{BACKEND_MODULE[backend]} not importable ({type(e).__name__})"

    for group in groups:
        ctxs: dict[str, Ctx] = {}
        for case in CASE_BUILDERS[group](sz):
            rows, runs = [], []
            for impl in case.impls:
                if impl.backend != backend:
                    continue
                row = {"case": case.name, "impl": impl.label, "ms": None, "err": None}
                rows.append(row)
                runs.append(None)
                if import_error:
                    row["err"] = import_error
                    continue
                try:
                    key = impl.inputs or case.inputs
                    if key not in ctxs:
                        ctxs[key] = Ctx(key, sz)
                    runs[-1] = impl.build(ctxs[key])
                    runs[-1]()  # fails here rather than in the middle of the timing rounds
                except Exception as e:  # noqa: BLE001
                    row["err"] = _error(e)
                    runs[-1] = None
            built = [(row, run) for row, run in zip(rows, runs, strict=True) if run is not None]
            try:
                timings = _timing.measure([run for _, run in built], warmup=warmup,
                                          min_reps=min_reps, max_reps=max_reps, budget_s=budget)
                for (row, run), (ms, n, inner) in zip(built, timings, strict=True):
                    row.update(ms=ms, n=n, inner=inner)
                    if case.check:
                        row["digest"] = _timing.digest(run())
            except Exception as e:  # noqa: BLE001
                for row, _ in built:
                    row.update(ms=None, err=_error(e))
            del runs, built
            for row in rows:
                emit(row)
        ctxs.clear()
        emit({"done": group})


def _error(e: Exception) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0][:160] if msg else ''}"


# ----------------------------------------------------------------------------------------------
# Parent: run the workers, assemble and print the table.

def run_backend(backend: str, groups: list[str], quick: bool, results: dict, notes: list,
                timeout_s: float) -> None:
    pending = list(groups)
    while pending:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", backend,
               "--only", ",".join(pending)] + (["--quick"] if quick else [])
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
        env.setdefault("OMP_WAIT_POLICY", TORCH_OMP_WAIT_POLICY)
        t_start = time.perf_counter()
        with tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
            timed_out = threading.Event()

            def kill(proc=proc, timed_out=timed_out):
                timed_out.set()
                proc.kill()

            limit_s = timeout_s * len(pending)
            timer = threading.Timer(limit_s, kill)
            timer.start()
            try:
                for line in proc.stdout:
                    line = line.strip()
                    if not line.startswith("{"):
                        continue
                    obj = json.loads(line)
                    if "done" in obj:
                        pending.remove(obj["done"])
                        continue
                    results[(obj["case"], obj["impl"])] = obj
                    shown = obj["err"] if obj["ms"] is None else f"{_timing.fmt_ms(obj['ms'])} ms"
                    print(f"  [{backend}] {obj['case']} | {obj['impl']}: {shown}",
                          file=sys.stderr, flush=True)
                rc = proc.wait()
            finally:
                timer.cancel()
                if proc.poll() is None:  # interrupted: do not leave the worker running
                    proc.kill()
                    proc.wait()
            print(f"[{backend}] worker finished in {time.perf_counter() - t_start:.0f} s "
                  f"(exit code {rc})", file=sys.stderr, flush=True)
            if pending:  # the worker stopped before finishing its groups
                err.seek(0)
                tail = " | ".join(err.read().strip().splitlines()[-3:])[-300:]
                why = (f"killed after {limit_s:.0f} s" if timed_out.is_set()
                       else f"exit code {rc}")
                group = pending.pop(0)
                notes.append(f"{backend} worker died in group {group} ({why}): {tail}")
                for case in CASE_BUILDERS[group](QUICK if quick else FULL):
                    for impl in case.impls:
                        if impl.backend == backend and (case.name, impl.label) not in results:
                            results[(case.name, impl.label)] = {
                                "case": case.name, "impl": impl.label, "ms": None,
                                "err": f"{backend} worker died ({why})"}


def header_lines(quick: bool) -> list[str]:
    def ver(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    libs = ", ".join(f"{d} {ver(d)}" for d in
                     ("jaxmax", "jax", "jaxlib", "numpy", "ml_dtypes", "onnx", "onnxruntime",
                      "openvino", "torch"))
    warmup, min_reps, max_reps, budget = QUICK_REPS if quick else FULL_REPS
    omp = os.environ.get("OMP_WAIT_POLICY", TORCH_OMP_WAIT_POLICY)
    return [
        f"jaxmax benchmarks ({'quick' if quick else 'full'} sizes), "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}",
        f"machine: {platform.machine()}, {cpu}, {os.cpu_count()} logical cores "
        f"({usable} usable), load average {load}; Python {platform.python_version()}",
        f"libraries: {libs}",
        f"timing: median of {min_reps}-{max_reps} samples (3 for calls over 0.5 s) after "
        f"{warmup + 1} untimed calls, a case's implementations sampled in turn within a worker, "
        f"each sample after {_timing.LEAD_IN_S * 1e3:.0f} ms of untimed calls of its own; "
        f"'x floor' = median / read floor of the same data; 'x best' = median / fastest "
        f"competitor (not jaxmax, not a floor) in the case",
        f"runtimes use their default thread counts; each runs in its own worker process, one "
        f"after another; OMP_WAIT_POLICY={omp} (torch)",
    ]


def build_table(cases: list[Case], results: dict, notes: list) -> list[list[str]]:
    rows: list[list[str]] = []
    floor_ms = {}
    missing: dict[tuple[str, str], list[str]] = {}
    for case in cases:
        for impl in case.impls:
            if impl.role == FLOOR:
                floor_ms[case.name] = results.get((case.name, impl.label), {}).get("ms")
    for case in cases:
        rs = [(impl, results.get((case.name, impl.label),
                                 {"ms": None, "err": "not measured"})) for impl in case.impls]
        comp = [r["ms"] for impl, r in rs if impl.role == COMPETITOR and r.get("ms") is not None]
        best = min(comp) if comp else None
        fl = floor_ms.get(case.floor)
        checked = [(impl, r) for impl, r in rs
                   if impl.role in (JAXMAX, COMPETITOR) and r.get("digest") is not None]
        ref = checked[0][1]["digest"] if checked else None
        ref_label = checked[0][0].label if checked else None
        for impl, r in rs:
            ms = r.get("ms")
            label = impl.label
            if impl.role in (FLOOR, INFO):
                label = f"[{impl.role}] {label}"
            if ms is None:
                missing.setdefault((impl.label, str(r.get("err"))), []).append(case.name)
            if case.check and case.floor != case.name and ref is not None \
                    and impl.role in (JAXMAX, COMPETITOR) and r.get("digest") is not None \
                    and not _timing.same_digest(ref, r["digest"]):
                notes.append(f"{case.name} | {impl.label}: result differs from {ref_label} "
                             f"(digest {r['digest']} vs {ref})")
                label += " (result differs!)"
            xf = ms / fl if ms is not None and fl else None
            xb = ms / best if ms is not None and best and impl.role in (JAXMAX, COMPETITOR) \
                else None
            rows.append([case.name, label, _timing.fmt_ms(ms), _timing.fmt_ratio(xf),
                         _timing.fmt_ratio(xb)])
    for (label, err), where in missing.items():
        cases_txt = "; ".join(where) if len(where) <= 3 else f"{len(where)} cases"
        notes.append(f"{label}: n/a in {cases_txt}: {err}")
    return rows


COLUMNS = ["case", "implementation", "median ms", "x floor", "x best"]
PLAIN_JAX = ("jnp.", "lax.", "jax.ops.", "jax.grad of reduce_window")


def chart_rows(cases: list[Case], results: dict) -> list[tuple[str, float | None, float | None]]:
    """Per case with competitors: (case, jaxmax's first row / best competitor, plain JAX's)."""
    out = []
    for case in cases:
        ms = {impl.label: results.get((case.name, impl.label), {}).get("ms")
              for impl in case.impls}
        comp = [ms[i.label] for i in case.impls if i.role == COMPETITOR and ms[i.label]]
        if not comp:
            continue
        best = min(comp)
        ours = next((ms[i.label] for i in case.impls if i.role == JAXMAX and ms[i.label]), None)
        plain = next((ms[i.label] for i in case.impls if i.role == COMPETITOR and ms[i.label]
                      and i.backend == "jax" and i.label.startswith(PLAIN_JAX)), None)
        out.append((case.name, ours / best if ours else None, plain / best if plain else None))
    return out


def render_chart(chart: list[tuple[str, float | None, float | None]]) -> str:
    """Text bars of time / fastest other implementation ('#' = 0.25; '>' = cut at 12)."""
    lines = ["time / fastest other implementation of the case (1.00 = as fast as the best; "
             "'#' = 0.25)"]
    for name, ours, plain in chart:
        lines.append(name)
        for label, ratio in (("jaxmax", ours), ("plain JAX", plain)):
            if ratio is None:
                continue
            bar = "#" * min(48, round(ratio * 4)) + (">" if ratio > 12 else "")
            lines.append(f"  {label:<10}{ratio:6.2f} {bar}")
    return "\n".join(lines)


def render_text(rows: list[list[str]]) -> str:
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(COLUMNS)]
    right = {2, 3, 4}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [line(COLUMNS), line(["-" * w for w in widths])]
    prev = None
    for r in rows:
        if prev is not None and r[0] != prev:
            out.append("")
        out.append(line([r[0] if r[0] != prev else ""] + r[1:]))
        prev = r[0]
    return "\n".join(out)


def render_markdown(header: list[str], rows: list[list[str]], notes: list[str],
                    chart: str = "") -> str:
    out = [f"# {header[0]}", ""] + [f"- {h}" for h in header[1:]] + [""]
    if chart:
        out += ["```text", chart, "```", ""]
    out.append("| " + " | ".join(COLUMNS) + " |")
    out.append("|" + "|".join(["---", "---", "---:", "---:", "---:"]) + "|")
    prev = None
    for r in rows:
        out.append("| " + " | ".join([r[0] if r[0] != prev else ""] + r[1:]) + " |")
        prev = r[0]
    if notes:
        out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    ap.add_argument("--only", default=",".join(GROUPS),
                    help=f"comma-separated groups from {', '.join(GROUPS)}")
    ap.add_argument("--backends", default=",".join(BACKENDS),
                    help=f"comma-separated runtimes from {', '.join(BACKENDS)}")
    ap.add_argument("--out", help="also write the table (and header, notes) as markdown here")
    ap.add_argument("--worker", choices=BACKENDS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    bad = [g for g in groups if g not in GROUPS]
    if bad:
        ap.error(f"unknown group(s) {bad}; choose from {GROUPS}")
    if args.worker:
        worker(args.worker, groups, args.quick)
        return 0
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in backends if b not in BACKENDS]
    if bad:
        ap.error(f"unknown backend(s) {bad}; choose from {BACKENDS}")

    sz = QUICK if args.quick else FULL
    cases = [c for g in groups for c in CASE_BUILDERS[g](sz)]
    results: dict = {}
    notes: list[str] = []
    header = header_lines(args.quick)
    start = time.perf_counter()
    timeout_s = 120 if args.quick else 600  # per group and worker; a hung worker is killed
    for backend in backends:
        wanted = [g for g in groups if any(i.backend == backend for c in CASE_BUILDERS[g](sz)
                                           for i in c.impls)]
        if not wanted:
            continue
        if importlib.util.find_spec(BACKEND_MODULE[backend]) is None:
            for c in cases:
                for i in c.impls:
                    if i.backend == backend:
                        results[(c.name, i.label)] = {"ms": None,
                                                      "err": f"{BACKEND_MODULE[backend]} "
                                                             f"not importable"}
            continue
        print(f"[{backend}] groups: {', '.join(wanted)}", file=sys.stderr, flush=True)
        run_backend(backend, wanted, args.quick, results, notes, timeout_s)
    for c in cases:  # rows of runtimes left out with --backends are not shown
        c.impls = [i for i in c.impls if i.backend in backends]
    cases = [c for c in cases if c.impls]
    rows = build_table(cases, results, notes)
    elapsed = time.perf_counter() - start
    header.append(f"wall time of this run: {elapsed:.0f} s")
    print("\n".join(header))
    print()
    print(render_text(rows))
    if notes:
        print("\nNotes:")
        for n in notes:
            print(f"- {n}")
    if args.out:
        with open(args.out, "w") as f:
            f.write(render_markdown(header, rows, notes, render_chart(chart_rows(cases,
                                                                                 results))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
