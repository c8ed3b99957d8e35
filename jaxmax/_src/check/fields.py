"""Which input elements each output element of a bound node reads, learnt from the binding.

``python -m jaxmax check`` excuses a runtime's documented deviation only at output elements
whose own window (or slice, or broadcast partner) holds the input the deviation is about. The
window comes from the node's real attributes: a windowed node (reduce, pool, segment,
elementwise, scatter) is run, through its own function and attributes, on a 0/1 indicator of
the elements in question in every data slot (a constant input's too, whether an ONNX
initializer or an OpenVINO Constant: its elements belong to the windows, and the data slots
keep one dtype), so that the max over each window is 1 exactly where the window holds one;
ArgMax and TopK read whole slices along the binding's resolved ``axis``. Nothing here reads the
call text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxmax._src.node_binding import NodeFunction

#: Functions whose output elements each fold one window of the data (the max over it); a
#: scatter's window is the target's own data element and the updates routed to it.
WINDOWED = frozenset({"reduce_max", "max_pool", "global_max_pool", "max", "maximum",
                      "adaptive_max_pool", "segment_max", "scatter_elements", "scatter_nd",
                      "scatter_elements_update", "scatter_nd_update"})
#: Functions whose output elements each read one whole slice along ``axis``.
SLICED = frozenset({"arg_max", "top_k"})
#: Slots that are not folded data (ids, indices, counts, shapes, the axis): given unchanged.
_NOT_DATA = frozenset({"segment_ids", "I", "indices", "K", "k", "output_shape",
                       "num_segments", "axis"})


def data_inputs(binding: NodeFunction) -> list[int]:
    """Positions (among the binding's positional slots, runtime and constant alike) of the
    inputs whose values are folded."""
    return [k for k, slot in enumerate(binding.slots) if slot.name not in _NOT_DATA]


def _axis(binding: NodeFunction, ndim: int) -> int:
    return int(binding.attributes["axis"]) % ndim


def _run(binding: NodeFunction, args: Sequence[np.ndarray],
         replaced: dict[int, np.ndarray]) -> np.ndarray | None:
    """Output 0 of the node's function with some slots replaced (a constant as well as a
    runtime input: every data slot gets an indicator of one dtype, whatever feeds it); None
    when it cannot run them (then nothing is proven, and nothing is excused)."""
    values = [replaced.get(k, x) for k, x in enumerate(args)]
    try:
        return np.asarray(binding.with_slots(*values)[0])
    except Exception:  # noqa: BLE001 (an input the operator rejects proves nothing)
        return None


def holds(binding: NodeFunction, args: Sequence[np.ndarray],
          masks: Sequence[np.ndarray | None], shape: tuple[int, ...]) -> np.ndarray | None:
    """Boolean array of output shape `shape`: True where the output element's window holds an
    input element marked in `masks` (`args`: every positional slot's value, constants included;
    one mask per slot, None marks nothing). None when the binding cannot tell (it rejects the
    indicator, or is not a max over windows)."""
    data = data_inputs(binding)
    marked = {k: mask for k, mask in enumerate(masks) if k in data and mask is not None}
    if not any(mask.any() for mask in marked.values()):
        return np.zeros(shape, bool)
    if binding.function in SLICED:
        mask = marked[data[0]]
        axis = _axis(binding, mask.ndim)
        hit = mask.any(axis=axis, keepdims=True)
        if binding.function == "arg_max" and not binding.attributes.get("keepdims", 1):
            hit = np.squeeze(hit, axis)
        return np.broadcast_to(hit, shape)
    if binding.function not in WINDOWED:
        return None
    # float64 0/1 in every data slot: one dtype, as the operators ask of their data inputs
    replaced = {k: marked.get(k, np.zeros(np.shape(args[k]), bool)).astype(np.float64)
                for k in data}
    out = _run(binding, args, replaced)
    if out is None or out.shape != shape:
        return None
    return out == 1


def first_marked(binding: NodeFunction, args: Sequence[np.ndarray], mask: np.ndarray,
                 shape: tuple[int, ...]) -> np.ndarray | None:
    """For a single-data windowed node: the flat position (in the data) of the first marked
    element of each output element's window (row-major window order is ascending flat
    position), -1 where the window holds none; None when the binding cannot tell."""
    (k,) = data_inputs(binding)
    positions = np.arange(mask.size, dtype=np.float64).reshape(mask.shape)
    # the max of -position over a window is minus its first marked position
    encoded = np.where(mask, -positions, -np.inf)
    out = _run(binding, args, {k: encoded})
    if out is None or out.shape != shape:
        return None
    return np.where(np.isfinite(out), -out, -1).astype(np.int64)
