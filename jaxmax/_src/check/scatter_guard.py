"""Keep ``check`` alive on the inputs that crash OpenVINO's CPU plugin.

The plugin's ScatterElementsUpdate (every version) writes outside its buffers on an index
below ``-size`` (it adds ``size`` once and writes there: index -5 on size 4 segfaults, -100
corrupts the heap) and on an indices shape larger than the data's off the scatter axis
(docs/semantics.md §8.4); both kill the process that runs it, or silently corrupt what it
computes. onnxruntime and the plugin's other scatter nodes reject such inputs with an error.

``check`` therefore validates every ScatterElementsUpdate node's shapes and indices before the
plugin runs the node: static ones from the model, indices that are a model input or a constant
from the feeds, and indices the model computes from a run of the subgraph that computes them
(which runs no scatter). A bad one is a one-line error naming the node (exit status 2) and the
model is not run. Only when a scatter node's indices depend on another scatter node does the
plugin run in a child process (``ov_child.py``): a crash is the same one-line error naming the
runtime and those nodes, and after a run that survives, their indices are checked too.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from jaxmax._src.check.errors import CheckError
from jaxmax._src.check.ov_names import input_name

OP = "ScatterElementsUpdate"
RUNTIME = "OpenVINO CPU"
WHY = ("the CPU plugin writes outside its buffer on an index below -size or an indices shape "
       "larger than the data's (docs/semantics.md §8.4)")
# what check does about it, found before the run or after a run in a child process
BEFORE = "so check does not run the model"
AFTER = "so check does not trust the run (in a child process)"


def _op(node) -> str:
    version = str(node.get_type_info().version_id).removeprefix("opset")
    return f"{OP}-{version}"


def _static_value(output, feeds: dict[str, np.ndarray]) -> np.ndarray | None:
    """The value of a node input fed by a model input or a constant; None when computed."""
    source = output.get_node()
    kind = source.get_type_name()
    if kind == "Constant":
        return np.asarray(source.get_data())
    if kind == "Parameter":
        return feeds.get(input_name(output))
    return None


def _shape(output) -> tuple[int, ...] | None:
    shape = output.get_partial_shape()
    return None if shape.is_dynamic else tuple(int(d) for d in shape.to_shape())


def _check_shapes(node, data: tuple[int, ...], indices: tuple[int, ...], axis: int,
                  then: str) -> None:
    if len(indices) != len(data):
        return  # shape inference rejects a rank mismatch before the plugin runs
    for d, (n, m) in enumerate(zip(indices, data, strict=True)):
        if d != axis and n > m:
            raise CheckError(
                f"{RUNTIME}: node {node.get_friendly_name()!r} ({_op(node)}): indices shape "
                f"{indices} exceeds data shape {data} at dim {d}; {WHY}, {then}")


def _check_indices(node, indices: np.ndarray, size: int, axis: int, then: str) -> None:
    """CheckError naming the node and the first index outside ``[-size, size - 1]``."""
    indices = np.asarray(indices)
    bad = (indices < -size) | (indices >= size)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CheckError(
            f"{RUNTIME}: node {node.get_friendly_name()!r} ({_op(node)}): index "
            f"{int(indices[at])} at {list(at)} is outside [{-size}, {size - 1}] (axis {axis}); "
            f"{WHY}, {then}")


def probe_ports(node) -> list[Any]:
    """The ports whose values `check_run` needs: indices, axis, and data when its shape is
    dynamic."""
    ports = [node.input_value(1), node.input_value(3)]
    return ports if _shape(node.input_value(0)) is not None else [*ports, node.input_value(0)]


def check_run(node, values: list[np.ndarray], then: str) -> None:
    """The node's real shapes and indices, from the values of `probe_ports`."""
    indices, axis = np.asarray(values[0]), np.asarray(values[1])
    data = _shape(node.input_value(0))
    data = tuple(np.asarray(values[2]).shape) if data is None else data
    if not data or axis.size != 1:
        return
    k = int(axis.reshape(-1)[0])
    if -len(data) <= k < len(data):
        k %= len(data)
        _check_shapes(node, data, tuple(indices.shape), k, then)
        _check_indices(node, indices, data[k], k, then)


def _reads_a_scatter(ports) -> bool:
    """Whether computing `ports` runs a ScatterElementsUpdate node."""
    seen: set[str] = set()
    stack = [p.get_node() for p in ports]
    while stack:
        node = stack.pop()
        if node.get_name() in seen:
            continue
        seen.add(node.get_name())
        if node.get_type_name() == OP:
            return True
        stack += [i.get_source_output().get_node() for i in node.inputs()]
    return False


def pre_run(ov, core, model, inputs: list[np.ndarray], nodes: list[Any]) -> list[Any]:
    """Compute, in this process, the indices of the `nodes` whose indices no scatter node
    computes (a model of those ports only runs no scatter), and check them (CheckError before
    the model runs); returns the other nodes (for `run_in_child`)."""
    safe = [n for n in nodes if not _reads_a_scatter(probe_ports(n))]
    if safe:
        ports = [p for n in safe for p in probe_ports(n)]
        probe = ov.Model(ports, model.get_parameters(), "jaxmax_check_indices")
        compiled = core.compile_model(probe, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        results = compiled(inputs)
        at = 0
        for node in safe:
            count = len(probe_ports(node))
            check_run(node, [results[at + j] for j in range(count)], BEFORE)
            at += count
    return [n for n in nodes if not any(n is m for m in safe)]


def validate(model, feeds: dict[str, np.ndarray]) -> list[Any]:
    """Validate every ScatterElementsUpdate node of `model` that can be validated before the
    run (raises CheckError on a bad one); returns the others (whose indices, axis or shapes
    the model computes)."""
    computed = []
    for node in model.get_ordered_ops():
        if node.get_type_name() != OP:
            continue
        data, indices = _shape(node.input_value(0)), _shape(node.input_value(1))
        axis_value = _static_value(node.input_value(3), feeds)
        if data is None or indices is None or axis_value is None or not data:
            computed.append(node)
            continue
        axis = int(np.asarray(axis_value).reshape(-1)[0])
        if not -len(data) <= axis < len(data):
            continue  # the plugin rejects a bad axis with an error
        axis %= len(data)
        _check_shapes(node, data, indices, axis, BEFORE)
        values = _static_value(node.input_value(1), feeds)
        if values is None:
            computed.append(node)
        else:
            _check_indices(node, values, data[axis], axis, BEFORE)
    return computed


def run_in_child(ov, probe, inputs: list[np.ndarray], nodes: list[Any]) -> list[np.ndarray]:
    """Compile and run `probe` on the CPU plugin in a child process (``ov_child.py``); a crash
    or an error is a CheckError naming the runtime and `nodes`."""
    names = ", ".join(repr(n.get_friendly_name()) for n in nodes)
    with tempfile.TemporaryDirectory(prefix="jaxmax_check_") as tmp:
        where = Path(tmp)
        ov.save_model(probe, str(where / "model.xml"), compress_to_fp16=False)
        np.savez(where / "feeds.npz", *inputs)
        child = subprocess.run([sys.executable, str(Path(__file__).with_name("ov_child.py")),
                                tmp], capture_output=True, text=True, check=False)
        if child.returncode < 0:
            try:
                name = signal.Signals(-child.returncode).name
            except ValueError:
                name = f"signal {-child.returncode}"
            raise CheckError(f"{RUNTIME} crashed ({name}) running the model (in a child "
                             f"process); the indices of its {OP} node(s) {names} depend on "
                             f"another scatter's output, and {WHY}")
        if child.returncode != 0:
            message = " ".join(child.stderr.split())[-300:]
            raise CheckError(f"OpenVINO could not run the model: {message}")
        with np.load(where / "results.npz") as results:
            return [results[f"arr_{k}"] for k in range(len(results.files))]
