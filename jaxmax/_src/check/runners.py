"""Run a model in its own runtime with every max-family node's inputs and outputs exposed.

``OnnxModel`` (onnxruntime, CPU) and ``OpenVinoModel`` (OpenVINO's CPU plugin with
``INFERENCE_PRECISION_HINT=f32``) share one shape: ``inputs`` (name, shape with ``None`` for a
dynamic dim, dtype), ``bind()`` -> the nodes (bound with ``from_node`` or not covered), and
``run(feeds)`` -> for each bound node, its runtime inputs and the runtime's outputs. Before the
CPU plugin runs, ``scatter_guard`` checks the ScatterElementsUpdate inputs it would crash on.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from jaxmax._src import node_binding
from jaxmax._src.check.errors import CheckError
from jaxmax._src.check.ov_names import input_name
from jaxmax._src.node_binding import NodeBindingError, NodeFunction


@dataclasses.dataclass
class NodeEntry:
    """One max-family node: bound (``binding``) or not (``reason``)."""

    name: str
    op: str  # "MaxPool-12"
    op_type: str
    binding: NodeFunction | None = None
    reason: str | None = None
    note: str = ""  # e.g. "K taken from this run"
    inputs: list[np.ndarray] = dataclasses.field(default_factory=list)
    outputs: list[np.ndarray] = dataclasses.field(default_factory=list)
    # ONNX: a shape-deciding tensor the graph does not hold as a constant, read from the run
    pending: list[str] = dataclasses.field(default_factory=list)
    node: Any = None


@dataclasses.dataclass
class ModelInput:
    name: str
    shape: tuple[int | None, ...]
    dtype: np.dtype


def _runtime(module: str):
    try:
        return node_binding.import_runtime(module, "python -m jaxmax check")
    except ImportError as err:
        raise CheckError(str(err)) from None


class OnnxModel:
    """An ONNX model run by onnxruntime's CPU provider."""

    runtime = "onnxruntime"
    face = "onnx"

    def __init__(self, path: Path):
        onnx = _runtime("onnx")
        self.ort = _runtime("onnxruntime")
        self.onnx = onnx
        try:
            self.model = onnx.load(str(path))
        except Exception as err:  # noqa: BLE001 (any decoding failure is a bad file)
            raise CheckError(f"cannot read {path} as an ONNX model: "
                             f"{type(err).__name__}: {err}") from None
        if not self.model.graph.node:
            raise CheckError(f"cannot read {path} as an ONNX model: it has no graph nodes")
        opset = next((o.version for o in self.model.opset_import
                      if o.domain in ("", "ai.onnx")), None)
        if opset is None:
            raise CheckError(f"{path}: the model imports no default-domain opset")
        self.opset: int = int(opset)
        graph = self.model.graph
        self.constants: dict[str, np.ndarray] = {
            init.name: onnx.numpy_helper.to_array(init) for init in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                try:
                    value = onnx.numpy_helper.to_array(onnx.helper.get_attribute_value(
                        next(a for a in node.attribute if a.name == "value")))
                except (StopIteration, Exception):  # noqa: BLE001 (sparse or other forms)
                    continue
                self.constants[node.output[0]] = value
        self.inputs = []
        for value_info in graph.input:
            if value_info.name in self.constants:
                continue
            tensor = value_info.type.tensor_type
            if not value_info.type.HasField("tensor_type"):
                raise CheckError(f"{path}: input {value_info.name!r} is not a tensor")
            dims = tuple(d.dim_value if d.HasField("dim_value") else None
                         for d in tensor.shape.dim)
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type))
            self.inputs.append(ModelInput(value_info.name, dims, dtype))

    def bind(self, covered_types) -> tuple[list[NodeEntry], collections.Counter]:
        from jaxmax._src.onnx.node import from_node

        entries: list[NodeEntry] = []
        others: collections.Counter[str] = collections.Counter()
        for k, node in enumerate(self.model.graph.node):
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                continue
            if node.domain not in ("", "ai.onnx"):
                others[f"{node.domain}.{node.op_type}"] += 1
                continue
            if node.op_type not in covered_types:
                others[node.op_type] += 1
                continue
            name = node.name or f"{node.op_type}#{k}"
            constants = {t: self.constants[t] for t in node.input if t in self.constants}
            entry = NodeEntry(name=name, op=node.op_type, op_type=node.op_type, node=node)
            try:
                entry.binding = from_node(node, opset=self.opset, constants=constants)
                entry.note = entry.binding.note
            except NodeBindingError as err:
                if err.input_name is None:
                    entry.reason = str(err)
                else:  # read it from this run, then bind
                    entry.pending.append(err.input_name)
            except Exception as err:  # noqa: BLE001 (reported in the node's row)
                entry.reason = f"binding failed: {type(err).__name__}: {err}"
            entries.append(entry)
        for entry in entries:
            if entry.binding is not None:
                entry.op = f"{entry.op_type}-{entry.binding.version}"
            else:
                schema = self.onnx.defs.get_schema(entry.op_type, self.opset, "")
                entry.op = f"{entry.op_type}-{schema.since_version}"
        return entries, others

    def run(self, feeds: dict[str, np.ndarray], entries: list[NodeEntry]) -> None:
        onnx = self.onnx
        wanted: list[str] = []
        for entry in entries:
            if entry.binding is not None:
                wanted += list(entry.binding.sources) + list(entry.binding.output_names)
            elif entry.pending:
                wanted += [t for t in entry.node.input if t] + [t for t in entry.node.output if t]
        known = set(feeds) | set(self.constants)
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        present = {o.name for o in model.graph.output}
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
            types = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
        except Exception:  # noqa: BLE001 (inference is only a help for the output types)
            types = {}
        extra = []
        for name in dict.fromkeys(wanted):
            if name in known or name in present:
                continue
            if name in types:
                extra.append(types[name])
            else:
                extra.append(onnx.helper.make_empty_tensor_value_info(name))
        model.graph.output.extend(extra)
        try:
            options = self.ort.SessionOptions()
            options.log_severity_level = 3  # errors only: stderr is for check's own lines
            session = self.ort.InferenceSession(model.SerializeToString(), options,
                                                providers=["CPUExecutionProvider"])
            names = [o.name for o in session.get_outputs()]
            results = dict(zip(names, session.run(names, feeds), strict=True))
        except Exception as err:  # noqa: BLE001 (the runtime's message, on one line)
            raise CheckError(f"onnxruntime could not run the model: "
                             f"{' '.join(str(err).split())}") from None
        values = {**self.constants, **feeds, **results}
        from jaxmax._src.onnx.node import from_node

        for entry in entries:
            if entry.pending:
                constants = {t: values[t] for t in entry.node.input if t in self.constants
                             or t in entry.pending}
                try:
                    entry.binding = from_node(entry.node, opset=self.opset, constants=constants)
                    entry.note = "; ".join(filter(None, [
                        f"{', '.join(entry.pending)} taken from this run", entry.binding.note]))
                except Exception as err:  # noqa: BLE001 (reported in the node's row)
                    entry.reason = str(err)
                    continue
            if entry.binding is None:
                continue
            entry.inputs = [values[t] for t in entry.binding.sources]
            entry.outputs = [values[t] for t in entry.binding.output_names]


@contextlib.contextmanager
def _openvino_errors():
    """The runtime's own error as a CheckError, on one line."""
    try:
        yield
    except CheckError:
        raise
    except Exception as err:  # noqa: BLE001
        raise CheckError(f"OpenVINO could not run the model: "
                         f"{' '.join(str(err).split())[:300]}") from None


class OpenVinoModel:
    """An OpenVINO IR (.xml + .bin) run by the CPU plugin in f32."""

    runtime = "OpenVINO CPU"
    face = "ov"
    _SKIP = ("Parameter", "Constant", "Result")

    def __init__(self, path: Path):
        self.ov = _runtime("openvino")
        self.core = self.ov.Core()
        try:
            self.model = self.core.read_model(str(path))
        except Exception as err:  # noqa: BLE001
            raise CheckError(f"cannot read {path} as an OpenVINO IR: "
                             f"{' '.join(str(err).split())[:300]}") from None
        self.inputs = []
        for port in self.model.inputs:
            shape = port.get_partial_shape()
            if shape.rank.is_dynamic:
                dims: tuple[int | None, ...] = (None,)
            else:
                dims = tuple(None if d.is_dynamic else d.get_length() for d in shape)
            self.inputs.append(ModelInput(input_name(port), dims,
                                          np.dtype(port.get_element_type().to_dtype())))

    def reshape(self, shapes: dict[str, tuple[int, ...]]) -> None:
        """Fix the input shapes (dynamic dims) before binding, so that shapes propagate."""
        if any(None in i.shape for i in self.inputs):
            try:
                self.model.reshape({name: self.ov.PartialShape(list(shape))
                                    for name, shape in shapes.items()})
            except Exception as err:  # noqa: BLE001
                raise CheckError(f"OpenVINO could not reshape the model to {shapes}: "
                                 f"{' '.join(str(err).split())[:300]}") from None

    def bind(self, covered_types) -> tuple[list[NodeEntry], collections.Counter]:
        from jaxmax._src.openvino.node import from_node

        entries: list[NodeEntry] = []
        others: collections.Counter[str] = collections.Counter()
        for node in self.model.get_ordered_ops():
            op_type = node.get_type_name()
            if op_type in self._SKIP:
                continue
            if op_type not in covered_types:
                others[op_type] += 1
                continue
            version = str(node.get_type_info().version_id).removeprefix("opset")
            entry = NodeEntry(name=node.get_friendly_name(), op=f"{op_type}-{version}",
                              op_type=op_type, node=node)
            try:
                entry.binding = from_node(node)
            except NodeBindingError as err:
                entry.reason = str(err)
            except Exception as err:  # noqa: BLE001 (reported in the node's row)
                entry.reason = f"binding failed: {type(err).__name__}: {err}"
            entries.append(entry)
        return entries, others

    def run(self, feeds: dict[str, np.ndarray], entries: list[NodeEntry]) -> None:
        from jaxmax._src.check import scatter_guard

        ov = self.ov
        # scatter indices the plugin would write outside its buffers on: an error before the
        # run, or (computed from another scatter's output) a run in a child process
        order = [input_name(p) for p in self.model.inputs]
        computed = scatter_guard.validate(self.model, feeds)
        if computed:
            with _openvino_errors():
                computed = scatter_guard.pre_run(ov, self.core, self.model,
                                                 [feeds[n] for n in order], computed)
        ports, where = [], []
        for k, entry in enumerate(entries):
            if entry.binding is None:
                continue
            for j, port in enumerate(entry.binding.sources):
                where.append((k, "in", j))
                ports.append(port)
            for j in range(entry.node.get_output_size()):
                where.append((k, "out", j))
                ports.append(entry.node.output(j))
        guarded = len(ports)
        for node in computed:
            ports += scatter_guard.probe_ports(node)
        with _openvino_errors():
            probe = ov.Model(ports, self.model.get_parameters(), "jaxmax_check")
            if computed:
                results = scatter_guard.run_in_child(ov, probe, [feeds[n] for n in order],
                                                     computed)
            else:
                compiled = self.core.compile_model(probe, "CPU",
                                                   {"INFERENCE_PRECISION_HINT": "f32"})
                results = compiled([feeds[name] for name in order])
        at = guarded
        for node in computed:
            count = len(scatter_guard.probe_ports(node))
            scatter_guard.check_run(node, [results[at + j] for j in range(count)],
                                    scatter_guard.AFTER)
            at += count
        for i, (k, kind, _) in enumerate(where):
            value = np.asarray(results[i])
            (entries[k].inputs if kind == "in" else entries[k].outputs).append(value)
