"""Builders of timed calls, one family per runtime: JAX, NumPy, onnxruntime, OpenVINO, torch.

Each builder returns a `Build`: given a case's inputs (`Ctx`), it does all the untimed set-up
(jit, model construction and compilation, input binding) and returns a zero-argument call that
waits for its own result. Runtime modules are imported inside the builders, so a worker only
loads the runtime it measures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .cases import Build, Ctx
from .compile_cost import JaxRun

# -- JAX ------------------------------------------------------------------------------------------


def jax_jit(make: Callable[[], Callable], names: tuple[str, ...] = ("x",)) -> Build:
    """Jit ``make()`` and call it on the device copies of `names`."""
    return _jax_call(make, names, jit=True)


def jax_eager(make: Callable[[], Callable], names: tuple[str, ...] = ("x",)) -> Build:
    """Call ``make()`` as is (no jit) on the device copies of `names`."""
    return _jax_call(make, names, jit=False)


def _jax_call(make: Callable[[], Callable], names: tuple[str, ...], jit: bool) -> Build:
    def build(ctx: Ctx) -> Callable[[], Any]:
        import jax

        f = jax.jit(make()) if jit else make()
        return JaxRun(f, [ctx.jax(n) for n in names], jit)

    return build


def jov() -> Any:
    """``jaxmax.openvino``, imported on first use (only the JAX worker loads jaxmax)."""
    from jaxmax import openvino

    return openvino


def jonnx() -> Any:
    """``jaxmax.onnx``, imported on first use."""
    from jaxmax import onnx

    return onnx


def jnp() -> Any:
    import jax.numpy

    return jax.numpy


def flat_sum() -> Callable:
    """The read floor: a flat ``jnp.sum`` of the whole tensor."""
    np_ = jnp()
    return lambda x: np_.sum(x.reshape(-1))


# -- NumPy ----------------------------------------------------------------------------------------

def numpy_call(fn: Callable[[np.ndarray], Any]) -> Build:
    def build(ctx: Ctx) -> Callable[[], Any]:
        x = ctx.np()
        return lambda: fn(x)

    return build


# -- onnxruntime ----------------------------------------------------------------------------------

def _onnx_type(dtype: Any) -> int:
    from onnx import TensorProto

    table = {"float32": TensorProto.FLOAT, "int8": TensorProto.INT8, "bool": TensorProto.BOOL,
             "bfloat16": TensorProto.BFLOAT16, "int32": TensorProto.INT32,
             "int64": TensorProto.INT64}
    return table[np.dtype(dtype).name]


def ort_graph(op: str, feeds: dict[str, np.ndarray], *,
              inits: dict[str, np.ndarray] | None = None,
              node_inputs: Sequence[str] | None = None,
              out_dtypes: Sequence[Any] | None = None, opset: int = 18,
              **attrs: Any) -> Callable[[], Any]:
    """An onnxruntime session of one node `op` fed by `feeds` (graph inputs) and `inits`
    (initializers); returns run().

    The node's inputs are `node_inputs` (default: the feeds, then the initializers, in order).
    Its outputs have `out_dtypes` (default: one output of the first node input's dtype); run()
    returns the single output, or the list of all outputs when there are several.
    """
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    inits = inits or {}
    node_inputs = list(node_inputs or list(feeds) + list(inits))
    arrays = {**feeds, **inits}
    out_dtypes = list(out_dtypes or [arrays[node_inputs[0]].dtype])
    outputs = [f"y{i}" for i in range(len(out_dtypes))]
    node = helper.make_node(op, node_inputs, outputs, **attrs)
    graph = helper.make_graph(
        [node], "bench",
        [helper.make_tensor_value_info(n, _onnx_type(a.dtype), a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(n, _onnx_type(t), None)
         for n, t in zip(outputs, out_dtypes, strict=True)],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    if len(outputs) > 1:
        return lambda: sess.run(None, feeds)
    return lambda: sess.run(None, feeds)[0]


def ort_reduce(axes: tuple[int, ...], opset: int = 18) -> Build:
    def build(ctx: Ctx) -> Callable[[], Any]:
        return ort_graph("ReduceMax", {"x": ctx.np()}, inits={"axes": np.array(axes, np.int64)},
                         opset=opset, keepdims=0)

    return build


def ort_pool(kernel: tuple[int, ...], strides: tuple[int, ...], pads: tuple[int, ...], *,
             dilations: tuple[int, ...] | None = None, indices: bool = False) -> Build:
    """ONNX MaxPool (symmetric `pads`); with `indices`, also its Indices output."""

    def build(ctx: Ctx) -> Callable[[], Any]:
        attrs: dict[str, Any] = {"kernel_shape": list(kernel), "strides": list(strides),
                                 "pads": list(pads) + list(pads)}
        if dilations:
            attrs["dilations"] = list(dilations)
        out_dtypes = [np.float32, np.int64] if indices else None
        return ort_graph("MaxPool", {"x": ctx.np()}, out_dtypes=out_dtypes, **attrs)

    return build


def ort_scatter_max() -> Build:
    """ScatterND(start, indices, x, reduction="max"): a segment max in onnxruntime."""

    def build(ctx: Ctx) -> Callable[[], Any]:
        x, ids, nseg = ctx.np("x"), ctx.np("ids"), ctx.sz.seg_count
        # The (nseg, cols) start value is a constant -inf initializer; the (rows, 1) int64 index
        # tensor is prepared once, untimed.
        start = np.full((nseg,) + x.shape[1:], -np.inf, np.float32)
        return ort_graph("ScatterND", {"indices": ids.astype(np.int64)[:, None], "x": x},
                         inits={"start": start}, node_inputs=["start", "indices", "x"],
                         reduction="max")

    return build


# -- OpenVINO -------------------------------------------------------------------------------------

OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


def _ov_type(dtype: Any) -> Any:
    import openvino as ov

    table = {"float32": ov.Type.f32, "int8": ov.Type.i8, "bool": ov.Type.boolean,
             "bfloat16": ov.Type.bf16, "int32": ov.Type.i32, "int64": ov.Type.i64}
    return table[np.dtype(dtype).name]


def ov_model(make_node: Callable, arrays: list[np.ndarray]) -> Callable[[], Any]:
    """Compile ``make_node(*parameters)`` for the CPU plugin (f32 precision); returns run().

    The inputs are bound once as tensors (shared memory where OpenVINO supports the dtype) and
    outputs are returned without a copy, so a call measures the plugin's inference only.
    """
    import openvino as ov
    import openvino.opset1 as o1

    params = [o1.parameter(list(a.shape), _ov_type(a.dtype), name=f"p{i}")
              for i, a in enumerate(arrays)]
    outs = make_node(*params)  # a node, or a list of outputs (e.g. MaxPool-8's two)
    model = ov.Model(outs if isinstance(outs, list) else [outs], params)
    compiled = ov.Core().compile_model(model, "CPU", OV_CONFIG)
    req = compiled.create_infer_request()
    for i, a in enumerate(arrays):
        if a.dtype.kind in "biuf":
            tensor = ov.Tensor(np.ascontiguousarray(a), shared_memory=True)
        else:  # bfloat16: OpenVINO's Python tensors expose it as 16-bit storage; copy the bits
            tensor = ov.Tensor(_ov_type(a.dtype), ov.Shape(list(a.shape)))
            tensor.data[...] = a.view(tensor.data.dtype)
        req.set_input_tensor(i, tensor)

    def run() -> Any:
        out = req.infer(share_outputs=True)[0]
        return out.view(arrays[0].dtype) if arrays[0].dtype.kind not in "biuf" else out

    return run


def ov_reduce(axes: tuple[int, ...], logical: bool = False) -> Build:
    def build(ctx: Ctx) -> Callable[[], Any]:
        import openvino.opset1 as o1

        op = o1.reduce_logical_or if logical else o1.reduce_max
        return ov_model(lambda p: op(p, o1.constant(np.array(axes, np.int64)), keep_dims=False),
                        [ctx.np()])

    return build


def ov_pool(kernel: tuple[int, ...], strides: tuple[int, ...], pads: tuple[int, ...]) -> Build:
    def build(ctx: Ctx) -> Callable[[], Any]:
        import openvino.opset1 as o1

        return ov_model(lambda p: o1.max_pool(p, list(strides), list(pads), list(pads),
                                              list(kernel)), [ctx.np()])

    return build


def ov_pool8(kernel: tuple[int, ...], strides: tuple[int, ...], pads: tuple[int, ...]) -> Build:
    """OpenVINO MaxPool-8 with both outputs (values and i32 indices)."""
    def build(ctx: Ctx) -> Callable[[], Any]:
        import openvino.opset8 as o8

        return ov_model(lambda p: list(o8.max_pool(
            p, list(strides), [1] * len(kernel), list(pads), list(pads), list(kernel),
            index_element_type="i32").outputs()), [ctx.np()])

    return build


def ov_segment_max() -> Build:
    def build(ctx: Ctx) -> Callable[[], Any]:
        import openvino.opset1 as o1
        import openvino.opset16 as o16

        nseg = ctx.sz.seg_count
        return ov_model(
            lambda d, i: o16.segment_max(d, i, o1.constant(np.array(nseg, np.int32)),
                                         fill_mode="ZERO"),
            [ctx.np("x"), ctx.np("ids")])

    return build


# -- torch ----------------------------------------------------------------------------------------

def torch_call(make: Callable[[Any], Callable], names: tuple[str, ...] = ("x",)) -> Build:
    """``make(torch)`` gives f; a call runs f(*tensors) under inference_mode."""

    def build(ctx: Ctx) -> Callable[[], Any]:
        import torch

        f = make(torch)
        args = [ctx.torch(n) for n in names]

        def run() -> Any:
            with torch.inference_mode():
                return f(*args)

        return run

    return build


def torch_pool_grad(kernel: int, stride: int, pad: int, nsp: int, dilation: int = 1) -> Build:
    """Forward + backward of the sum of torch's max_pool{nsp}d; returns the input gradient."""

    def build(ctx: Ctx) -> Callable[[], Any]:
        import torch.nn.functional as F

        pool = F.max_pool2d if nsp == 2 else F.max_pool3d
        x = ctx.torch()

        def run() -> Any:
            t = x.detach().requires_grad_(True)
            pool(t, kernel, stride, pad, dilation=dilation).sum().backward()
            return t.grad

        return run

    return build
