"""``onnx.from_node``: bind an ``onnx.NodeProto`` of the max family to the jaxmax call that
computes it, with the node's attributes (schema defaults filled in) and its opset's version."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from jaxmax._src import node_binding, validation
from jaxmax._src.node_binding import NodeBindingError, NodeFunction, Slot
from jaxmax._src.onnx import versions

#: ONNX operator -> the since-versions jaxmax implements (the table in
#: :mod:`jaxmax._src.onnx.versions`).
VERSIONS: dict[str, tuple[int, ...]] = {
    op: versions.TABLE.since_versions(op) for op in versions.TABLE}

_PURPOSE = "jaxmax.onnx.from_node"


def _node_label(node) -> str:
    return repr(node.name) if node.name else f"<unnamed, outputs {list(node.output)}>"


def _attributes(onnx, node, schema, where: str) -> dict[str, Any]:
    """The node's attributes over the schema's defaults, as Python values (strings decoded)."""
    values: dict[str, Any] = {}
    for name, attr in schema.attributes.items():
        if attr.default_value.name:
            values[name] = onnx.helper.get_attribute_value(attr.default_value)
    for attr in node.attribute:
        if attr.name not in schema.attributes:
            raise NodeBindingError(
                f"{where}: attribute `{attr.name}` is not in the {schema.name}-"
                f"{schema.since_version} schema", missing=f"attribute {attr.name}")
        values[attr.name] = onnx.helper.get_attribute_value(attr)
    for name, value in values.items():
        if isinstance(value, bytes):
            values[name] = value.decode()
        elif isinstance(value, list):
            values[name] = tuple(value)
    return values


def _constant(op_type: str, key: str, value) -> np.ndarray:
    """A value of `constants`, which every process of a job must be able to read whole."""
    known = validation.known_value(value)
    if known is None:
        raise TypeError(f"from_node({op_type}): constants[{key!r}] must be a concrete value "
                        f"every process holds (a NumPy array or a replicated JAX array), got "
                        f"a traced value or a global array sharded over other processes")
    return known


def from_node(node, *, opset: int, constants: Mapping[str, Any] | None = None) -> NodeFunction:
    """Bind an ONNX node of the max family to the jaxmax call that computes it.

    The version is the operator's since-version at `opset` (the model's ``opset_import`` for the
    default domain): the largest since-version ``<= opset``, as ONNX picks it. Attributes are read
    from the node, with the schema's defaults (``onnx.defs.get_schema``) for the ones it omits.
    Bound operators and versions: ReduceMax 1/11/12/13/18/20, MaxPool 1/8/10/11/12/22
    (``Indices`` when the node has a second output), GlobalMaxPool 1/22, Max 1/6/8/12/13, ArgMax
    1/11/12/13, TopK 1/10/11/24, MaxUnpool 9/11/22, Hardmax 1/11/13, MaxRoiPool 1/22, RoiAlign
    10/16/22 (max as the spec's interpolate-then-max), ScatterElements and ScatterND 18
    (reduction max; other reductions raise the not-bound error). A ScatterElements or ScatterND
    node of version 16 (opsets 16-17) with reduction max is outside the ONNX schema (max arrives
    in 18), but torch's TorchScript exporter writes it and onnxruntime runs it with the
    version-18 rule: it is bound as version 18 (``opset=18`` in the call), and the callable's
    ``note`` says so. ``onnx.scatter_elements(..., opset=16, reduction="max")`` itself still
    raises.

    Args:
      node: an ``onnx.NodeProto`` (default domain).
      opset: the model's opset for the default domain (``model.opset_import``).
      constants: values of the node's inputs that are constants in the graph (initializers,
        ``Constant`` outputs), keyed by the input's tensor name or by the schema's input name
        (``"axes"``, ``"K"``, ``"output_shape"``). The inputs that decide the output shape
        (ReduceMax-18+ ``axes``, TopK-10+ ``K``, MaxUnpool ``output_shape``) must be here when
        the node has them. Other constant inputs are fixed in the callable. Keys that name no
        input of the node are ignored, so one dict of a graph's initializers serves every node.

    Returns:
      A callable taking the node's runtime inputs in order (the inputs not named in
      `constants` and not empty optional ones) and returning a tuple with one array per
      non-empty node output, in the node's output order. It is jittable and vmappable; its
      ``call`` attribute shows the jaxmax call (arguments equal to its defaults left out), e.g.
      ``onnx.max_pool(X, kernel_shape=[2, 2], strides=[2, 2], opset=13)``.

    Raises:
      ImportError: the ``onnx`` package is not installed (``pip install "jaxmax[runtimes]"``).
      TypeError: `node` is not a NodeProto, `opset` not an int.
      ValueError: (a ``NodeBindingError``) the node's operator or version is one jaxmax lacks, a
        shape-deciding input is not in `constants`, an attribute is not in the schema; the
        message names the node, its operator and version, and what is missing. Bad attribute
        values raise as the jaxmax operator does when the callable is first called.

    >>> import numpy as np
    >>> from onnx import helper
    >>> from jaxmax import onnx
    >>> node = helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=0)
    >>> f = onnx.from_node(node, opset=18, constants={"axes": np.array([1])})
    >>> f.call
    'onnx.reduce_max(data, axes=[1], keepdims=0, opset=18)'
    >>> f(np.array([[1.0, 5.0], [3.0, 2.0]], np.float32))
    (Array([5., 3.], dtype=float32),)
    """
    onnx = node_binding.import_runtime("onnx", _PURPOSE)
    if not isinstance(node, onnx.NodeProto):
        raise TypeError(f"onnx.from_node: `node` must be an onnx.NodeProto, got "
                        f"{type(node).__name__}")
    if isinstance(opset, bool) or not isinstance(opset, int | np.integer):
        raise TypeError(f"onnx.from_node: `opset` must be an int (the model's opset_import "
                        f"version for the default domain), got {opset!r}")
    opset = int(opset)
    constants = dict(constants or {})
    label = _node_label(node)
    op_type = node.op_type
    if node.domain not in ("", "ai.onnx"):
        raise NodeBindingError(
            f"ONNX node {label} ({node.domain}.{op_type}): jaxmax binds default-domain operators "
            f"only, not domain {node.domain!r}", missing=f"operator {node.domain}.{op_type}")
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        raise NodeBindingError(
            f"ONNX node {label} ({op_type}, opset {opset}): no such ONNX operator at opset "
            f"{opset}", missing=f"operator {op_type}") from None
    version = int(schema.since_version)
    where = f"ONNX node {label} ({op_type}-{version})"
    run_as, note = _beyond_schema(onnx, node, version)
    node_binding.check_version(where, op_type, run_as, VERSIONS)
    attrs = _attributes(onnx, node, schema, where)

    # each node input as a Slot: its formal name (the schema's), constant value, tensor name
    formal = [p.name for p in schema.inputs]
    variadic = schema.inputs[-1].option.name == "Variadic"  # Max: data_0 names them all
    inputs: list[Slot] = []
    for i, tensor in enumerate(node.input):
        name = formal[min(i, len(formal) - 1)]  # a variadic last parameter repeats
        if variadic and i >= len(formal) - 1:
            name = f"{name.rstrip('0123456789').rstrip('_')}_{i - len(formal) + 1}"
        if not tensor:
            inputs.append(Slot(name, _ABSENT, tensor))
        elif tensor in constants:
            inputs.append(Slot(name, _constant(op_type, tensor, constants[tensor]), tensor))
        elif name in constants and not variadic:
            inputs.append(Slot(name, _constant(op_type, name, constants[name]), tensor))
        else:
            inputs.append(Slot(name, _RUNTIME, tensor))
    binder = _BINDERS[op_type]
    function, positional, keywords = binder(where, run_as, attrs, inputs, node)
    keywords["opset"] = opset if run_as == version else run_as
    return node_binding.bind(
        where, "onnx", function, positional, keywords, node_name=node.name, op_type=op_type,
        version=version, input_names=[slot.source for slot in positional if slot.runtime],
        output_names=[o for o in node.output if o], note=note)


#: Scatter reductions onnxruntime runs at version 16 (opsets 16-17) although the schema adds
#: them only in version 18: torch's TorchScript exporter writes ScatterElements with reduction
#: max at opset 16 and 17 (``scatter_reduce(..., "amax")``), the dynamo exporter a setup
#: scatter with reduction min.
_SCATTER_AHEAD = {"ScatterElements": 16, "ScatterND": 16}
_AHEAD_REDUCTIONS = ("max", "min")


def _beyond_schema(onnx, node, version: int) -> tuple[int, str]:
    """The version whose rule binds the node, and a note when it is not the node's own: a
    scatter node of version 16 with reduction max or min is outside the ONNX schema at its
    opset, and run as version 18, as onnxruntime runs it (the public ``scatter_elements`` /
    ``scatter_nd`` keep rejecting ``reduction='max'`` below opset 18)."""
    if _SCATTER_AHEAD.get(node.op_type) != version:
        return version, ""
    reduction = next((onnx.helper.get_attribute_value(a) for a in node.attribute
                      if a.name == "reduction"), b"none")
    if isinstance(reduction, bytes):
        reduction = reduction.decode()
    if reduction not in _AHEAD_REDUCTIONS:
        return version, ""
    return 18, (f"outside the ONNX schema at this opset; run as {node.op_type}-18, as "
                f"onnxruntime does")


_RUNTIME = node_binding.RUNTIME
_ABSENT = node_binding.ABSENT


def _static_input(where: str, inputs, index: int, why: str):
    """The constant value of input `index`, None when absent; raise when it is a runtime input."""
    if index >= len(inputs) or inputs[index].absent:
        return None
    slot = inputs[index]
    if slot.runtime:
        raise NodeBindingError(
            f"{where}: input `{slot.name}` (tensor {slot.source!r}) decides {why} and must be a "
            f"constant: pass it in `constants` (keyed {slot.source!r} or {slot.name!r})",
            missing=f"constant input {slot.name}", input_name=slot.source)
    return slot.value


def _runtime(inputs: list[Slot], indices) -> list[Slot]:
    """The slots at `indices` that the node has (an empty optional input is left out)."""
    return [inputs[i] for i in indices if i < len(inputs) and not inputs[i].absent]


def _pick(attrs: dict, names) -> dict:
    return {name: attrs[name] for name in names if name in attrs}


def _reduce_max(where, version, attrs, inputs, node):
    keywords: dict[str, Any] = {}
    if version >= 18:
        axes = _static_input(where, inputs, 1, "which axes are reduced")
    else:
        axes = attrs.get("axes")
    keywords["axes"] = None if axes is None else tuple(np.asarray(axes).reshape(-1).tolist())
    keywords.update(_pick(attrs, ("keepdims", "noop_with_empty_axes")))
    return "reduce_max", _runtime(inputs, [0]), keywords


def _max_pool(where, version, attrs, inputs, node):
    keywords = _pick(attrs, ("kernel_shape", "auto_pad", "ceil_mode", "dilations", "pads",
                             "storage_order", "strides"))
    if len(node.output) >= 2 and node.output[1]:
        keywords["return_indices"] = True
    return "max_pool", _runtime(inputs, [0]), keywords


def _global_max_pool(where, version, attrs, inputs, node):
    return "global_max_pool", _runtime(inputs, [0]), {}


def _max(where, version, attrs, inputs, node):
    return "max", _runtime(inputs, range(len(inputs))), {}


def _arg_max(where, version, attrs, inputs, node):
    return "arg_max", _runtime(inputs, [0]), _pick(attrs, ("axis", "keepdims",
                                                           "select_last_index"))


def _top_k(where, version, attrs, inputs, node):
    if version == 1:
        k = attrs.get("k")
        if k is None:
            raise NodeBindingError(f"{where}: the required attribute `k` is missing",
                                   missing="attribute k")
    else:
        k = _static_input(where, inputs, 1, "the output shape")
        if k is None:
            raise NodeBindingError(f"{where}: the required input `K` is missing",
                                   missing="input K")
    data = _runtime(inputs, [0])
    keywords = _pick(attrs, ("axis", "largest", "sorted"))
    return "top_k", [*data, Slot("K", k)], keywords


def _max_unpool(where, version, attrs, inputs, node):
    output_shape = _static_input(where, inputs, 2, "the output shape")
    positional = _runtime(inputs, [0, 1])
    if output_shape is not None:
        positional.append(Slot("output_shape", output_shape))
    return "max_unpool", positional, _pick(attrs, ("kernel_shape", "pads", "strides"))


def _hardmax(where, version, attrs, inputs, node):
    return "hardmax", _runtime(inputs, [0]), _pick(attrs, ("axis",))


def _max_roi_pool(where, version, attrs, inputs, node):
    if "pooled_shape" not in attrs:
        raise NodeBindingError(f"{where}: the required attribute `pooled_shape` is missing",
                               missing="attribute pooled_shape")
    return "max_roi_pool", _runtime(inputs, [0, 1]), _pick(attrs, ("pooled_shape",
                                                                  "spatial_scale"))


def _max_reduction(where, attrs) -> None:
    """Scatter nodes bind only with reduction max: jaxmax implements no other reduction."""
    reduction = attrs.get("reduction", "none")
    if reduction != "max":
        raise NodeBindingError(
            f"{where}: reduction {reduction!r}: jaxmax binds reduction 'max' only",
            missing=f"reduction {reduction}")


def _scatter_elements(where, version, attrs, inputs, node):
    _max_reduction(where, attrs)
    return ("scatter_elements", _runtime(inputs, [0, 1, 2]),
            {"axis": attrs.get("axis", 0), "reduction": "max"})


def _scatter_nd(where, version, attrs, inputs, node):
    _max_reduction(where, attrs)
    return "scatter_nd", _runtime(inputs, [0, 1, 2]), {"reduction": "max"}


def _roi_align(where, version, attrs, inputs, node):
    keywords = _pick(attrs, ("mode", "output_height", "output_width", "sampling_ratio",
                             "spatial_scale", "coordinate_transformation_mode"))
    return "roi_align", _runtime(inputs, [0, 1, 2]), keywords


_BINDERS = {
    "RoiAlign": _roi_align,
    "ScatterElements": _scatter_elements,
    "ScatterND": _scatter_nd,
    "ReduceMax": _reduce_max,
    "MaxPool": _max_pool,
    "GlobalMaxPool": _global_max_pool,
    "Max": _max,
    "ArgMax": _arg_max,
    "TopK": _top_k,
    "MaxUnpool": _max_unpool,
    "Hardmax": _hardmax,
    "MaxRoiPool": _max_roi_pool,
}
