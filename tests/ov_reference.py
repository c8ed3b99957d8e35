"""Run one OpenVINO operator on NumPy inputs: reference kernels and the CPU plugin.

A small helper for differential tests. Build a single-op graph with a *node factory* (a
function that takes one OpenVINO node per input and returns the operator node), then either

* :func:`evaluate` it with ``Node.evaluate`` -- OpenVINO core's reference kernels, no plugin,
  no compilation; or
* :func:`compile_cpu` it into a ``Model`` and run it on the ``CPU`` plugin with
  ``{"INFERENCE_PRECISION_HINT": "f32"}`` (the plugin otherwise computes in bfloat16 on CPUs
  that support it).

Every input is a NumPy array (``ml_dtypes.bfloat16`` arrays become ``bf16``). An input wrapped
in :class:`Const` becomes a ``Constant`` node instead of a ``Parameter``, which lets shape
inference see its value: pass attribute-like inputs (axes, kernel sizes, ...) that way, so the
output shape is static. Example::

    import openvino.opset1 as ops
    from ov_reference import Const, evaluate, compile_cpu  # tests/ is on sys.path under pytest

    (out,) = evaluate(lambda x, a: ops.reduce_max(x, a, False), x, Const(np.array([1])))
    (out,) = compile_cpu(lambda x, a: ops.reduce_max(x, a, False), x, Const(np.array([1])))

Notes measured with OpenVINO 2026.4:

* ``Node.evaluate`` returns False for element types the reference kernel does not implement
  (ReduceMax-1: f64, i16, u16); :func:`evaluate` raises :class:`Unsupported` then.
* Shape inference errors (an axis out of range, rank-0 data with ``keep_dims=True`` in the
  reductions) raise ``RuntimeError`` while the factory builds the node.
* Evaluating rank-0 data with ``keep_dims=True`` and axes given as a *Parameter* (dynamic
  output shape) crashed the process with a segmentation fault: keep such inputs ``Const``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import openvino as ov
import openvino.opset1 as _ops
from openvino import op as _op

__all__ = ["Const", "Unsupported", "compile_cpu", "evaluate", "CPU_CONFIG"]

CPU_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}

_BF16 = np.dtype(ml_dtypes.bfloat16)


class Unsupported(RuntimeError):
    """``Node.evaluate`` returned False: the reference has no kernel for these inputs."""


class Const:
    """Marks an input to become a ``Constant`` node (its value is visible to shape inference)."""

    def __init__(self, value: Any):
        self.value = np.asarray(value)


def _element_type(dtype: np.dtype) -> ov.Type:
    if dtype == _BF16:
        return ov.Type.bf16
    return ov.Type(np.dtype(dtype))


def _to_tensor(array: np.ndarray) -> ov.Tensor:
    array = np.asarray(array, order="C")  # not ascontiguousarray: it turns 0-D into 1-D
    if array.dtype == _BF16:
        # The Python API has no bfloat16 dtype; copy the bits into a bf16 tensor.
        tensor = ov.Tensor(ov.Type.bf16, ov.Shape(list(array.shape)))
        tensor.data.view(np.uint16).reshape(array.shape)[...] = array.view(np.uint16)
        return tensor
    return ov.Tensor(array)


def _from_tensor(tensor: ov.Tensor) -> np.ndarray:
    shape = tuple(tensor.shape)
    data = tensor.data
    if tensor.element_type == ov.Type.bf16:
        # `.data` of a bf16 tensor is exposed with a 16-bit float dtype: reinterpret the bits.
        data = data.view(np.uint16).view(ml_dtypes.bfloat16)
    return np.array(data, copy=True).reshape(shape)


def _build(node_factory: Callable[..., Any], inputs: Sequence[Any]):
    """The operator node, its Parameters, and the arrays fed to each of its inputs."""
    nodes, params, arrays = [], [], []
    for item in inputs:
        if isinstance(item, Const):
            arrays.append(item.value)
            nodes.append(_op.Constant(_to_tensor(item.value)))
        else:
            array = np.asarray(item)
            arrays.append(array)
            param = _ops.parameter(list(array.shape), _element_type(array.dtype))
            params.append(param)
            nodes.append(param)
    result = node_factory(*nodes)
    node = result.get_node() if isinstance(result, ov.Output) else result
    return node, params, arrays


def evaluate(node_factory: Callable[..., Any], *inputs: Any) -> list[np.ndarray]:
    """Outputs of ``node_factory(*input_nodes).evaluate`` (OpenVINO's reference kernels).

    Args:
      node_factory: called with one node per input (``Parameter``, or ``Constant`` for a
        :class:`Const`); returns the operator node (or one of its outputs).
      *inputs: NumPy arrays, or :class:`Const` wrappers around them.

    Returns:
      One NumPy array per output of the node, of the output's element type and shape.

    Raises:
      Unsupported: ``Node.evaluate`` returned False.
      RuntimeError: OpenVINO rejected the node (shape or type inference).
    """
    node, _, arrays = _build(node_factory, inputs)
    outputs = []
    for index in range(node.get_output_size()):
        pshape = node.get_output_partial_shape(index)
        shape = pshape.to_shape() if pshape.is_static else ov.Shape([0])  # evaluate resizes
        outputs.append(ov.Tensor(node.get_output_element_type(index), shape))
    if not node.evaluate(outputs, [_to_tensor(a) for a in arrays]):
        raise Unsupported(f"Node.evaluate returned False for {node.get_type_name()} on "
                          f"{[(a.dtype.name, a.shape) for a in arrays]}")
    return [_from_tensor(t) for t in outputs]


_CORE: ov.Core | None = None


def compile_cpu(node_factory: Callable[..., Any], *inputs: Any,
                config: dict | None = None) -> list[np.ndarray]:
    """Outputs of the single-op model run on OpenVINO's ``CPU`` plugin.

    Same arguments as :func:`evaluate`. Non-:class:`Const` inputs become model Parameters fed
    by the given arrays. Compiled with :data:`CPU_CONFIG` (f32 inference precision) unless
    `config` is given.
    """
    global _CORE
    if _CORE is None:
        _CORE = ov.Core()
    node, params, arrays = _build(node_factory, inputs)
    fed = [a for item, a in zip(inputs, arrays, strict=True) if not isinstance(item, Const)]
    model = ov.Model([node.output(i) for i in range(node.get_output_size())], params)
    compiled = _CORE.compile_model(model, "CPU", CPU_CONFIG if config is None else config)
    request = compiled.create_infer_request()
    request.infer({i: _to_tensor(a) for i, a in enumerate(fed)})
    return [_from_tensor(request.get_output_tensor(i)) for i in range(node.get_output_size())]
