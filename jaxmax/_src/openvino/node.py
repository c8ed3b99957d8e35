"""``openvino.from_node``: bind an ``openvino.Node`` of the max family to the jaxmax call that
computes it, with the node's attributes and its operator version (``type_info``)."""

from __future__ import annotations

import numpy as np

from jaxmax._src import node_binding
from jaxmax._src.node_binding import NodeBindingError, NodeFunction, Slot
from jaxmax._src.openvino import versions

#: OpenVINO operator -> the versions jaxmax implements (the table in
#: :mod:`jaxmax._src.openvino.versions`).
VERSIONS: dict[str, tuple[int, ...]] = {
    op: versions.TABLE.since_versions(op) for op in versions.TABLE}

_PURPOSE = "jaxmax.openvino.from_node"


_RUNTIME = node_binding.RUNTIME


def _constant(output) -> np.ndarray | None:
    """The value of an input that a Constant produces, else None."""
    producer = output.get_node()
    if producer.get_type_name() == "Constant":
        return np.array(producer.get_data())
    return None


def _folded(output) -> np.ndarray | None:
    """The value OpenVINO's bound propagation knows for an input (lower == upper), else None."""
    try:
        tensor = output.get_tensor()
        lower, upper = tensor.get_lower_value(), tensor.get_upper_value()
        if lower is None or upper is None:
            return None
        lo, up = np.array(lower.data), np.array(upper.data)
    except Exception:  # noqa: BLE001 (no bounds known: not a constant)
        return None
    return lo if lo.shape == up.shape and np.array_equal(lo, up) else None


def _version(node) -> int:
    version_id = node.get_type_info().version_id
    try:
        return int(str(version_id).removeprefix("opset"))
    except ValueError:
        raise NodeBindingError(
            f"OpenVINO node {node.get_friendly_name()!r} ({node.get_type_name()}, "
            f"{version_id}): not a standard opset operator", missing=f"operator "
            f"{node.get_type_name()} ({version_id})") from None


def from_node(node) -> NodeFunction:
    """Bind an OpenVINO node of the max family to the jaxmax call that computes it.

    The version is the node's ``get_type_info().version_id`` (``"opset8"`` for MaxPool-8) and
    is passed as the jaxmax function's `opset`. Attributes are read with ``get_attributes()``.
    Bound operators: ReduceMax-1, ReduceLogicalOr-1, MaxPool-1/-8/-14, SegmentMax-16, Maximum-1,
    TopK-1/-3/-11, AdaptiveMaxPool-8, ROIAlign-3/-9, ScatterElementsUpdate-12 and
    ScatterNDUpdate-15 (reduction max; other reductions raise the not-bound error), ROIPooling-1
    (method max).

    Args:
      node: an ``openvino.Node``, e.g. from ``openvino.Model.get_ordered_ops()``.

    Returns:
      A callable taking the node's runtime inputs in order (the inputs not produced by a
      ``Constant`` node: those are read from the graph) and returning a tuple with one array per
      node output. Jittable and vmappable; ``call`` shows the jaxmax call.

    An input that decides the output shape (ReduceMax/ReduceLogicalOr ``axes``, TopK ``k``,
    AdaptiveMaxPool ``output_shape``, SegmentMax ``num_segments``) must be known in the graph:
    produced by a ``Constant`` or folded to one value by OpenVINO's bound propagation. A
    SegmentMax without ``num_segments`` takes its segment count from the node's static output
    shape (OpenVINO's own shape inference), or from constant ``segment_ids``.

    Raises:
      ImportError: the ``openvino`` package is not installed (``pip install "jaxmax[runtimes]"``).
      TypeError: `node` is not an OpenVINO node.
      ValueError: (a ``NodeBindingError``) an operator or version jaxmax lacks, or a
        shape-deciding input that is not constant; the message names the node, its operator and
        version, and what is missing.

    >>> import numpy as np
    >>> import openvino.opset1 as ops
    >>> from jaxmax import openvino as ov
    >>> x = ops.parameter([2, 3], np.float32)
    >>> node = ops.reduce_max(x, ops.constant(np.array([1])), keep_dims=True)
    >>> f = ov.from_node(node)
    >>> f.call
    'ov.reduce_max(data, axes=[1], keep_dims=True)'
    >>> f(np.array([[1, 5, 2], [0, -1, 3]], np.float32))
    (Array([[5.],
           [3.]], dtype=float32),)
    """
    openvino = node_binding.import_runtime("openvino", _PURPOSE)
    if not isinstance(node, openvino.Node):
        raise TypeError(f"openvino.from_node: `node` must be an openvino.Node, got "
                        f"{type(node).__name__}")
    op_type = node.get_type_name()
    version = _version(node)
    label = repr(node.get_friendly_name())
    where = f"OpenVINO node {label} ({op_type}-{version})"
    node_binding.check_version(where, op_type, version, VERSIONS)
    attrs = dict(node.get_attributes())
    inputs: list[Slot] = []
    for i in range(node.get_input_size()):
        port = node.input_value(i)
        const = _constant(port)
        inputs.append(Slot(f"input {i}", _RUNTIME if const is None else const, port))
    function, positional, keywords = _BINDERS[op_type](where, version, attrs, inputs, node)
    output_names = [node.output(i).get_any_name() if node.output(i).get_names() else
                    f"{node.get_friendly_name()}:{i}" for i in range(node.get_output_size())]
    return node_binding.bind(
        where, "openvino", function, positional, keywords,
        node_name=node.get_friendly_name(), op_type=op_type, version=version,
        input_names=[slot.name for slot in positional if slot.runtime],
        output_names=output_names)


def _static(where: str, inputs: list[Slot], index: int, name: str, why: str) -> np.ndarray:
    slot = inputs[index]
    if not slot.runtime:
        return slot.value
    folded = _folded(slot.source)
    if folded is not None:
        return folded
    producer = slot.source.get_node()
    raise NodeBindingError(
        f"{where}: input {index} `{name}` decides {why} and must be constant, but it comes from "
        f"{producer.get_type_name()} node {producer.get_friendly_name()!r}",
        missing=f"constant input {name}", input_name=name)


def _data(inputs: list[Slot], index: int, name: str) -> Slot:
    """Input `index` as a positional argument named `name` (the spec's name)."""
    return Slot(name, inputs[index].value, inputs[index].source)


def _reduce(function):
    def bind(where, version, attrs, inputs, node):
        axes = _static(where, inputs, 1, "axes", "which axes are reduced")
        keywords = {"axes": tuple(np.asarray(axes).reshape(-1).tolist()) if axes.ndim
                    else int(axes), "keep_dims": bool(attrs.get("keep_dims", False))}
        return function, [_data(inputs, 0, "data")], keywords
    return bind


def _max_pool(where, version, attrs, inputs, node):
    names = ("kernel", "strides", "pads_begin", "pads_end", "rounding_type", "auto_pad")
    if version >= 8:
        names += ("dilations", "axis", "index_element_type")
    keywords = {name: tuple(attrs[name]) if isinstance(attrs[name], list) else attrs[name]
                for name in names if name in attrs}
    keywords["opset"] = version
    return "max_pool", [_data(inputs, 0, "data")], keywords


def _segment_max(where, version, attrs, inputs, node):
    positional = [_data(inputs, 0, "data"), _data(inputs, 1, "segment_ids")]
    if len(inputs) > 2:
        num = _static(where, inputs, 2, "num_segments", "the output shape")
        positional.append(Slot("num_segments", np.asarray(num).reshape(())))
    elif inputs[1].runtime:
        shape = node.get_output_partial_shape(0)
        if shape.rank.is_dynamic or shape[0].is_dynamic:
            raise NodeBindingError(
                f"{where}: without `num_segments` the output shape depends on the values of "
                f"`segment_ids`, which are not constant, and the node's output shape is dynamic",
                missing="constant input segment_ids or num_segments", input_name="segment_ids")
        positional.append(Slot("num_segments", np.asarray(shape[0].get_length())))
    return "segment_max", positional, {"fill_mode": attrs["fill_mode"]}


def _maximum(where, version, attrs, inputs, node):
    rule = str(attrs.get("auto_broadcast", "numpy"))
    axis = int(attrs.get("auto_broadcast.auto_broadcast_axis", -1))
    if rule.lower() == "pdpd" and axis != -1:
        # jaxmax's pdpd is OpenVINO's default axis -1 (b over a's trailing axes): another axis
        # is the same rule only when it is rank(a) - rank(b)
        ranks = [node.get_input_partial_shape(i).rank for i in (0, 1)]
        if (any(r.is_dynamic for r in ranks)
                or axis != ranks[0].get_length() - ranks[1].get_length()):
            raise NodeBindingError(
                f"{where}: auto_broadcast pdpd with axis {axis}: jaxmax's Maximum-1 has the "
                f"pdpd rule with axis -1 (b over a's trailing axes) only",
                missing=f"pdpd broadcast axis {axis}")
    return "maximum", [_data(inputs, 0, "a"), _data(inputs, 1, "b")], {"auto_broadcast": rule}


def _top_k(where, version, attrs, inputs, node):
    k = _static(where, inputs, 1, "k", "the output shape")
    keywords = {name: attrs[name] for name in ("axis", "mode", "sort", "index_element_type",
                                               "stable") if name in attrs}
    keywords["opset"] = version
    return "top_k", [_data(inputs, 0, "data"), Slot("k", k)], keywords


def _adaptive_max_pool(where, version, attrs, inputs, node):
    output_shape = _static(where, inputs, 1, "output_shape", "the output shape")
    return "adaptive_max_pool", [_data(inputs, 0, "data"), Slot("output_shape", output_shape)], {
        "index_element_type": attrs.get("index_element_type", "i64"), "opset": version}


def _roi_pooling(where, version, attrs, inputs, node):
    keywords = {"pooled_h": int(attrs["pooled_h"]), "pooled_w": int(attrs["pooled_w"]),
                "spatial_scale": float(attrs["spatial_scale"]),
                "method": attrs.get("method", "max"), "opset": version}
    return "roi_pooling", [_data(inputs, 0, "input"), _data(inputs, 1, "rois")], keywords


def _max_reduction(where, attrs) -> None:
    """Scatter nodes bind only with reduction max: jaxmax implements no other reduction."""
    reduction = str(attrs.get("reduction", "none"))
    if reduction.lower() != "max":
        raise NodeBindingError(
            f"{where}: reduction {reduction!r}: jaxmax binds reduction 'max' only",
            missing=f"reduction {reduction.lower()}")


def _scatter_elements_update(where, version, attrs, inputs, node):
    _max_reduction(where, attrs)
    axis = _static(where, inputs, 3, "axis", "the scatter axis")
    positional = [_data(inputs, 0, "data"), _data(inputs, 1, "indices"),
                  _data(inputs, 2, "updates"), Slot("axis", np.asarray(axis).reshape(()))]
    return "scatter_elements_update", positional, {
        "reduction": "max", "use_init_val": bool(attrs.get("use_init_val", True)),
        "opset": version}


def _scatter_nd_update(where, version, attrs, inputs, node):
    _max_reduction(where, attrs)
    positional = [_data(inputs, 0, "data"), _data(inputs, 1, "indices"),
                  _data(inputs, 2, "updates")]
    return "scatter_nd_update", positional, {"reduction": "max", "opset": version}


def _roi_align(where, version, attrs, inputs, node):
    keywords = {name: attrs[name] for name in ("pooled_h", "pooled_w", "sampling_ratio",
                                               "spatial_scale", "mode", "aligned_mode")
                if name in attrs}
    keywords["spatial_scale"] = float(keywords["spatial_scale"])
    keywords["opset"] = version
    positional = [_data(inputs, 0, "data"), _data(inputs, 1, "rois"),
                  _data(inputs, 2, "batch_indices")]
    return "roi_align", positional, keywords


_BINDERS = {
    "ROIAlign": _roi_align,
    "ScatterElementsUpdate": _scatter_elements_update,
    "ScatterNDUpdate": _scatter_nd_update,
    "ReduceMax": _reduce("reduce_max"),
    "ReduceLogicalOr": _reduce("reduce_logical_or"),
    "MaxPool": _max_pool,
    "SegmentMax": _segment_max,
    "Maximum": _maximum,
    "TopK": _top_k,
    "AdaptiveMaxPool": _adaptive_max_pool,
    "ROIPooling": _roi_pooling,
}
