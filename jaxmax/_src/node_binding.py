"""Shared pieces of ``onnx.from_node`` and ``openvino.from_node``: the `Slot` both binders
describe a node's inputs with, the callable they return (`bind` -> `NodeFunction`), the lazy
import of the optional runtimes, and the error for a node jaxmax cannot bind.

Nothing here imports ``onnx``, ``onnxruntime`` or ``openvino`` at module level: importing jaxmax
must never import them.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np

#: What to install for `from_node` and `python -m jaxmax check` (the extra exists in pyproject).
INSTALL_HINT = 'pip install "jaxmax[runtimes]"'


def import_runtime(module: str, purpose: str) -> ModuleType:
    """Import an optional runtime lazily; a missing one raises an ImportError naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"{purpose} needs the `{module.split('.')[0]}` package, which is not "
                          f"installed ({err}): {INSTALL_HINT}") from err


class NodeBindingError(ValueError):
    """A node jaxmax cannot bind: its operator or version is missing, or an input that decides
    the output shape is not a constant. ``missing`` says what is missing; ``input_name`` is set
    when the problem is a non-constant input."""

    def __init__(self, message: str, *, missing: str, input_name: str | None = None):
        super().__init__(message)
        self.missing = missing
        self.input_name = input_name


def check_version(where: str, op_type: str, version: int,
                  versions: Mapping[str, Sequence[int]]) -> None:
    """Raise a `NodeBindingError` unless jaxmax binds `op_type` at `version` (`versions`: the
    face's ``VERSIONS``, the versions it binds of each operator)."""
    if op_type not in versions:
        raise NodeBindingError(
            f"{where}: jaxmax has no {op_type} operator (it binds {', '.join(versions)})",
            missing=f"operator {op_type}")
    if version not in versions[op_type]:
        raise NodeBindingError(
            f"{where}: jaxmax has {op_type} versions {list(versions[op_type])}, not {version}",
            missing=f"operator {op_type}-{version}")


def format_value(value: Any) -> str:
    """A short, Python-looking rendering of an attribute value for the `call` text."""
    if isinstance(value, np.ndarray):
        return repr(value.tolist()) if value.size <= 16 else f"<array {value.shape} {value.dtype}>"
    if isinstance(value, tuple):
        return repr(list(value))
    if isinstance(value, np.generic):
        return repr(value.item())
    return repr(value)


def _is_default(value: Any, default: Any) -> bool:
    if default is inspect.Parameter.empty or isinstance(value, np.ndarray):
        return False
    try:
        return type(value) is type(default) and bool(value == default)
    except (TypeError, ValueError):
        return False


def format_call(function: str, positional: Sequence[str], keywords: dict[str, Any],
                public: Callable | None = None) -> str:
    """``onnx.max_pool(X, kernel_shape=[3, 3], opset=13)``: keywords equal to `public`'s
    defaults are left out (the text is an equivalent call, shorter than what is passed)."""
    defaults: dict[str, Any] = {}
    if public is not None:
        try:
            defaults = {name: p.default for name, p in inspect.signature(public).parameters.items()}
        except (TypeError, ValueError):
            defaults = {}
    parts = list(positional) + [f"{k}={format_value(v)}" for k, v in keywords.items()
                                if not _is_default(v, defaults.get(k, inspect.Parameter.empty))]
    return f"{function}({', '.join(parts)})"


class NodeFunction:
    """The callable `from_node` returns: takes the node's runtime inputs in order and returns a
    tuple with one array per node output. Jittable and vmappable (every attribute and constant
    input is fixed in it).

    Attributes:
      node_name: the node's name (ONNX ``NodeProto.name``, OpenVINO friendly name).
      op_type: the operator (``"MaxPool"``).
      version: the operator version (ONNX since-version, OpenVINO ``MaxPool-8`` -> 8).
      call: the jaxmax call the node is bound to, as text.
      input_names: the runtime inputs the callable takes, in order.
      output_names: the node's outputs, in the order of the returned tuple.
      sources: where each runtime input comes from in the graph (ONNX: the tensor names;
        OpenVINO: the ``openvino.Output`` ports), for tools that run the model.
      function: the public jaxmax function's name (``"max_pool"``).
      slots: its positional arguments (`Slot`: runtime or constant), in order.
      attributes: the keyword arguments it is called with: the node's resolved attributes
        (schema defaults filled in) and the version, as data for tools that reason about the
        node (``python -m jaxmax check`` reads its axes and windows from them).
      note: what the binding does beyond the node's schema, for the reader ("" when nothing:
        e.g. an ONNX ScatterElements-16 node with reduction max, run as ScatterElements-18).
    """

    def __init__(self, fn: Callable[..., tuple], *, node_name: str, op_type: str, version: int,
                 call: str, input_names: Sequence[str], output_names: Sequence[str],
                 face: str, function: str, slots: Sequence[Slot],
                 attributes: Mapping[str, Any], public: Callable | None = None,
                 note: str = ""):
        self._fn = fn
        self._public = public
        self.note = note
        self.function = function
        self.slots = tuple(slots)
        self.attributes = dict(attributes)
        self.node_name = node_name
        self.op_type = op_type
        self.version = version
        self.call = call
        self.input_names = tuple(input_names)
        self.output_names = tuple(output_names)
        self.face = face
        self.sources = tuple(slot.source for slot in self.slots if slot.runtime)
        self.__name__ = f"{face}_{op_type}_{version}"  # for jax.jit's naming
        self.__doc__ = f"{face} {op_type}-{version} node {node_name!r}: {call}"

    def __call__(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(
                f"{self.face} {self.op_type}-{self.version} node {self.node_name!r}: takes "
                f"{len(self.input_names)} runtime input(s) {list(self.input_names)}, got "
                f"{len(inputs)}")
        out = self._fn(*inputs)
        return tuple(out) if isinstance(out, tuple) else (out,)

    def with_slots(self, *values):
        """The public function called on a value for every positional slot (`slots`' order,
        constant slots included) with the node's `attributes`: for tools that replace a constant
        input too (``python -m jaxmax check`` runs its window indicators through it). Returns a
        tuple, as calling the node does."""
        if self._public is None or len(values) != len(self.slots):
            raise TypeError(f"{self.face} {self.op_type}-{self.version} node {self.node_name!r}: "
                            f"with_slots takes {len(self.slots)} value(s) "
                            f"{[slot.name for slot in self.slots]}, got {len(values)}")
        out = self._public(*values, **self.attributes)
        return tuple(out) if isinstance(out, tuple) else (out,)

    def __repr__(self) -> str:
        return (f"<{self.face}.from_node {self.op_type}-{self.version} {self.node_name!r}: "
                f"{self.call}>")


class Marker:
    """A named sentinel for an input slot (``RUNTIME``: taken from the call)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


RUNTIME = Marker("<runtime>")
ABSENT = Marker("<absent>")  # an empty optional ONNX input


@dataclasses.dataclass(frozen=True)
class Slot:
    """One input of a node as both binders see it, and one positional argument of the bound call.

    Attributes:
      name: the spec's name of the input (``"X"``, ``"axes"``, ``"data"``), shown in the call text.
      value: ``RUNTIME`` (fed when the callable is called), ``ABSENT`` (an empty optional input),
        or the constant value fixed in the callable.
      source: where a runtime value comes from in the graph: the ONNX tensor name or the
        ``openvino.Output`` port; None for a value the binder computed.
    """

    name: str
    value: Any
    source: Any = None

    @property
    def runtime(self) -> bool:
        return self.value is RUNTIME

    @property
    def absent(self) -> bool:
        return self.value is ABSENT


def filled(slots: Sequence[Slot], runtime: Sequence[Any]) -> list[Any]:
    """Every positional slot filled: runtime slots from `runtime`, in order; the others with
    their constant."""
    it = iter(runtime)
    return [next(it) if slot.runtime else slot.value for slot in slots]


def assemble(function: Callable, slots: Sequence[Slot],
             keywords: dict[str, Any]) -> Callable[..., Any]:
    """A function of the runtime inputs that calls `function` with every positional slot filled
    (`filled`)."""
    slots = tuple(slots)

    def fn(*runtime):
        return function(*filled(slots, runtime), **keywords)

    return fn


# face -> (public module, prefix of the call text)
_FACES = {"onnx": ("jaxmax.onnx", "onnx"), "openvino": ("jaxmax.openvino", "ov")}


def bind(where: str, face: str, function: str, slots: Sequence[Slot], keywords: dict[str, Any],
         *, node_name: str, op_type: str, version: int, input_names: Sequence[str],
         output_names: Sequence[str], note: str = "") -> NodeFunction:
    """The `NodeFunction` calling the public `function` of `face` ("onnx" or "openvino") with
    the positional `slots` and `keywords`. The function is looked up now, so that this module
    imports no operator. `input_names` names the runtime slots, in order."""
    module, prefix = _FACES[face]
    for slot in slots:
        if not isinstance(slot, Slot):  # a binder's bug, never the user's input
            raise TypeError(f"{where}: binder returned {slot!r}, not a node_binding.Slot")
    try:
        public = getattr(importlib.import_module(module), function)
    except AttributeError:  # an operator this install of jaxmax does not have
        raise NodeBindingError(f"{where}: this jaxmax has no {face}.{function}",
                               missing=f"function {face}.{function}") from None
    shown = [slot.name if slot.runtime else format_value(slot.value) for slot in slots]
    return NodeFunction(assemble(public, slots, keywords), node_name=node_name, op_type=op_type,
                        version=version,
                        call=format_call(f"{prefix}.{function}", shown, keywords, public),
                        input_names=input_names, output_names=output_names, face=prefix,
                        function=function, slots=slots, attributes=keywords, public=public,
                        note=note)
