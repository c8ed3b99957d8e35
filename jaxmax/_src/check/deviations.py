"""The runtime deviations docs/semantics.md documents, each a proof over single elements.

A rule returns, per node output, the elements it explains: an element is explained only where
the documented deviation predicts a difference (its window, slice or broadcast partners hold
the input the deviation is about, found through the binding: see ``fields``) and jaxmax's value
there is exactly the contract's (see ``contract``). ``explain`` applies a node's rules to its
differing elements; whatever no rule explains fails the node. A shape or dtype difference is
never explained (the caller fails the node before asking).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import numpy as np

from jaxmax._src import node_binding
from jaxmax._src.check import contract, fields, roi_contract
from jaxmax._src.node_binding import NodeFunction

ONNXRUNTIME = "onnxruntime"
OPENVINO_CPU = "OpenVINO CPU"


def differing(ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """Mask of the elements that are not identical: NaN equals NaN, ``-0.0`` differs from
    ``+0.0``."""
    if ours.dtype.kind in "fc" or theirs.dtype.kind in "fc":
        a = ours.astype(np.float64) if ours.dtype.kind != "c" else ours
        b = theirs.astype(np.float64) if theirs.dtype.kind != "c" else theirs
        same = (a == b) & (np.signbit(a) == np.signbit(b))
        return ~(same | (np.isnan(a) & np.isnan(b)))
    return ours != theirs


class Unproven(Exception):
    """A window fact the binding cannot establish: the rule asking explains nothing."""


class Case:
    """One node's run: the binding, its runtime inputs, jaxmax's and the runtime's outputs
    (equal in number, shape and dtype), with the window facts the rules share, computed once.

    ``args`` holds every positional slot's value in the binding's order, the constant ones
    (ONNX initializers and ``Constant`` outputs, OpenVINO ``Constant`` nodes) filled in: the
    rules read operands from it, never from the runtime inputs alone, so that any mix of
    runtime and constant inputs is read alike."""

    def __init__(self, binding: NodeFunction, inputs: Sequence[np.ndarray],
                 ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray]):
        self.binding = binding
        self.inputs = [np.asarray(x) for x in inputs]
        self.args = [np.asarray(x) for x in node_binding.filled(binding.slots, self.inputs)]
        self.ours = [np.asarray(y) for y in ours]
        self.theirs = [np.asarray(t) for t in theirs]
        self.data = fields.data_inputs(binding)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.ours[0].shape

    def holds(self, mark: Callable[[np.ndarray], np.ndarray | None]) -> np.ndarray:
        """Where output 0's elements have a window holding an element `mark` marks."""
        masks = [mark(x) if k in self.data else None for k, x in enumerate(self.args)]
        hit = fields.holds(self.binding, self.args, masks, self.shape)
        if hit is None:
            raise Unproven(self.binding.call)
        return hit

    @functools.cached_property
    def nan(self) -> np.ndarray:
        return self.holds(lambda x: np.isnan(x) if x.dtype.kind == "f" else None)


def _float_mark(test: Callable[[np.ndarray], np.ndarray]):
    return lambda x: test(x) if x.dtype.kind == "f" else None


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ~differing(a, b)


Masks = list[np.ndarray | None]


# --- onnxruntime -----------------------------------------------------------------------------

def _nan_propagated(case: Case) -> Masks:
    """ReduceMax, MaxPool, GlobalMaxPool: a window holding a NaN gives NaN (and, for Indices,
    the position of its first NaN); onnxruntime drops NaN or lets the first element decide."""
    out: Masks = [case.nan & np.isnan(case.ours[0])]
    if len(case.ours) == 2:  # MaxPool's Indices
        (k,) = case.data
        first = fields.first_marked(case.binding, case.args, np.isnan(case.args[k]),
                                    case.shape)
        if first is None:
            out.append(None)
        else:
            if case.binding.attributes.get("storage_order", 0):
                first = _column_major(first, case.args[k].shape)
            out.append(case.nan & (case.ours[1] == first))
    return out


def _column_major(flat: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """ONNX MaxPool's storage_order=1 index of row-major flat positions: the (n, c) plane
    offset plus the spatial position in column-major order."""
    plane = int(np.prod(shape[2:]))
    safe = np.where(flat >= 0, flat, 0)
    spatial = np.unravel_index(safe % plane, shape[2:])
    column = np.ravel_multi_index(spatial, shape[2:], order="F")
    return np.where(flat >= 0, safe - safe % plane + column, -1)


def _arg_max_nan(case: Case) -> Masks:
    """ArgMax: a slice holding a NaN gives its first NaN (last with select_last_index);
    onnxruntime seeds with the first element."""
    want = contract.onnx_arg_max_of_nan(case.binding, case.args[0])
    return [None if want is None else case.nan & (case.ours[0] == want)]


def _no_number_window(case: Case) -> Masks:
    """MaxPool, GlobalMaxPool: a window with no element above -inf (only -inf, or no input
    element) is -inf in jaxmax and lowest(T) in onnxruntime (MLAS); a window with no input
    element has index -1 in jaxmax."""
    y, t = case.ours[0], case.theirs[0]
    if y.dtype.kind != "f":
        return [None] * len(case.ours)
    numbers = case.holds(lambda x: ~np.isneginf(x) if x.dtype.kind == "f" else
                         np.ones(x.shape, bool))
    out: Masks = [~numbers & np.isneginf(y) & (t == np.finfo(t.dtype).min)]
    if len(case.ours) == 2:
        anything = case.holds(lambda x: np.ones(x.shape, bool))
        out.append(~anything & (case.ours[1] == -1))
    return out


def _zero_tie(want: Callable[[Case], np.ndarray | None]):
    """Elementwise max of +0.0 and -0.0: the runtime returns another zero than the contract.
    Explained where both values are zeros, the broadcast inputs at the element hold zeros of
    both signs, and jaxmax's zero is the contract's (`want`)."""

    def rule(case: Case) -> Masks:
        y, t = case.ours[0], case.theirs[0]
        if y.dtype.kind != "f":
            return [None]
        plus = case.holds(_float_mark(lambda x: (x == 0) & ~np.signbit(x)))
        minus = case.holds(_float_mark(lambda x: (x == 0) & np.signbit(x)))
        expected = want(case)
        if expected is None or expected.shape != y.shape:
            return [None]
        return [(y == 0) & (t == 0) & plus & minus & _same(y, expected)]

    return rule


def _plus_zero(case: Case) -> np.ndarray:
    return np.zeros(case.shape, case.ours[0].dtype)  # ONNX Max: IEEE, +0.0 for a tie


def _heap_order(case: Case) -> Masks:
    """TopK sorted=0: onnxruntime returns the chosen (value, index) pairs in heap order.
    Explained per slice, where the two outputs hold the same pairs."""
    if case.binding.attributes.get("sorted", 1) or len(case.ours) != 2:
        return [None, None]
    axis = int(case.binding.attributes.get("axis", -1)) % len(case.shape)
    moved = [np.moveaxis(a, axis, -1) for a in (*case.ours, *case.theirs)]
    ours_v, ours_i, their_v, their_i = moved
    if (ours_i < 0).any() or (their_i < 0).any():
        return [None, None]
    a, b = np.argsort(ours_i, axis=-1), np.argsort(their_i, axis=-1)  # pairs by index
    same = (_same(np.take_along_axis(ours_v, a, -1), np.take_along_axis(their_v, b, -1))
            & (np.take_along_axis(ours_i, a, -1) == np.take_along_axis(their_i, b, -1)))
    whole = np.broadcast_to(same.all(axis=-1, keepdims=True), ours_v.shape)
    slice_ok = np.moveaxis(whole, -1, axis)
    return [slice_ok, slice_ok]


# --- OpenVINO's CPU plugin -------------------------------------------------------------------

def _ov_nan(want: Callable[[Case], Sequence[np.ndarray] | None]):
    """ReduceMax, Maximum, TopK: the CPU plugin's NaN handling depends on the position; the
    OpenVINO face never lets NaN win. Explained where the window holds a NaN and jaxmax's
    value (and index) there is the contract's (`want`)."""

    def rule(case: Case) -> Masks:
        expected = want(case)
        if expected is None:
            return [None] * len(case.ours)
        return [None if e is None or e.shape != y.shape else case.nan & _same(y, e.astype(y.dtype))
                for y, e in zip(case.ours, expected, strict=False)]

    return rule


def _want_reduce(case: Case):
    value = contract.ov_reduce_max(case.binding, case.args[0])
    return None if value is None else [value]


def _want_maximum(case: Case):
    value = contract.ov_maximum(case.args[0], case.args[1])
    return None if value is None else [value]


def _want_top_k(case: Case):
    return contract.ov_top_k(case.binding, case.args[0])


def _wide(x: np.ndarray) -> np.ndarray | None:
    """Elements 32 bits would change: 64-bit integers outside int32, float64 values float32
    does not hold exactly."""
    if x.dtype in (np.int64, np.uint64):
        info = np.iinfo(np.int32)
        return (x < info.min) | (x > info.max)
    if x.dtype == np.float64:
        with np.errstate(over="ignore"):
            return ~np.isnan(x) & (x.astype(np.float32).astype(np.float64) != x)
    return None


def _not_f32(x: np.ndarray) -> np.ndarray | None:
    """Integers float32 does not hold exactly."""
    if x.dtype.kind not in "iu":
        return None
    exact = x.astype(np.float64)
    return x.astype(np.float32).astype(np.float64) != exact


def _changed_by(mark: Callable[[np.ndarray], np.ndarray | None]):
    """Explained where the window holds an element `mark` marks (one the CPU plugin's narrower
    arithmetic changes), in every output (values and indices)."""

    def rule(case: Case) -> Masks:
        hit = case.holds(mark)
        return [np.broadcast_to(hit, y.shape) if y.shape == case.shape else None
                for y in case.ours]

    return rule


def _f64_infinity(case: Case) -> Masks:
    """float64: the CPU plugin converts to f32 saturating, so an infinity becomes +-FLT_MAX.
    Explained where the window holds an infinity, jaxmax's value is an infinity and the
    runtime's is FLT_MAX of the same sign."""
    out: Masks = []
    for y, t in zip(case.ours, case.theirs, strict=True):
        if y.dtype != np.float64 or y.shape != case.shape:
            out.append(None)
            continue
        saturated = np.isinf(y) & (t == np.copysign(np.finfo(np.float32).max, y))
        out.append(saturated & case.holds(
            lambda x: np.isinf(x) if x.dtype == np.float64 else None))
    return out


def _f16_lowest(case: Case) -> Masks:
    """float16: the CPU plugin computes in f32 and gives -inf where the reference's lowest is
    -65504. Explained where jaxmax gives lowest(float16) exactly and the runtime -inf."""
    return [(y == np.finfo(np.float16).min) & np.isneginf(t) if y.dtype == np.float16 else None
            for y, t in zip(case.ours, case.theirs, strict=True)]


def _ov_zero(case: Case) -> np.ndarray | None:
    return contract.ov_maximum(case.args[0], case.args[1])


def _tie_order(case: Case) -> Masks:
    """TopK: the CPU plugin picks another of tied elements. Explained where jaxmax's value and
    index are the contract's (ties to the lower index) and the runtime's index names an element
    of the same value, whose value it returns."""
    expected = contract.ov_top_k(case.binding, case.args[0])
    if expected is None or len(case.ours) != 2:
        return [None, None]
    x = case.args[0]
    axis = int(case.binding.attributes["axis"]) % x.ndim
    n = x.shape[axis]
    theirs_i = case.theirs[1].astype(np.int64)
    if (theirs_i < 0).any() or (theirs_i >= n).any():
        return [None, None]
    ours_i = case.ours[1].astype(np.int64)
    picked = np.take_along_axis(x, theirs_i, axis=axis)
    chosen = np.take_along_axis(x, np.clip(ours_i, 0, n - 1), axis=axis)
    ok = (_same(case.ours[0], expected[0]) & (ours_i == expected[1])
          & ((picked == chosen) | (np.isnan(picked) & np.isnan(chosen)))
          & _same(case.theirs[0], picked.astype(case.theirs[0].dtype)))
    return [ok, ok]


# --- detection operators (docs/semantics.md §11.5) -------------------------------------------

def _hardmax_nan(case: Case) -> Masks:
    """Hardmax: onnxruntime skips NaN (no 1 at all when a row starts with one). Explained in
    the rows holding a NaN, where jaxmax's output is the contract's."""
    x = case.inputs[0]
    want = roi_contract.hardmax(case.binding, x)
    opset = int(case.binding.attributes.get("opset", 13))
    axis = int(case.binding.attributes.get("axis", 1 if opset < 13 else -1)) % x.ndim
    axes = tuple(range(axis, x.ndim)) if opset < 13 else (axis,)
    has_nan = np.broadcast_to(np.isnan(x).any(axis=axes, keepdims=True), x.shape)
    return [has_nan & _same(case.ours[0], want)]


def _roi_fold(ours: str, theirs: str, exact_edges: bool = False):
    """MaxRoiPool/ROIPooling: the runtime folds each bin another way (and the CPU plugin places
    bin edges by exact integers). Explained where jaxmax's value is the contract's fold `ours`
    and the runtime's is exactly the documented fold `theirs`."""

    def rule(case: Case) -> Masks:
        x, rois = case.inputs[0], case.inputs[1]
        want = roi_contract.roi_pool(case.binding, x, rois, ours)
        runtime = roi_contract.roi_pool(case.binding, x, rois, theirs, exact_edges)
        if want is None or runtime is None:
            return [None]
        return [_same(case.ours[0], want) & _same(case.theirs[0], runtime)]

    return rule


# --- the table -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Rule:
    what: str  # "NaN order"
    why: str  # "onnxruntime drops NaN or lets the first element decide"
    section: str  # "§5.5" of docs/semantics.md
    explain: Callable[[Case], Masks]

    @property
    def label(self) -> str:
        return f"{self.what} ({self.why}; docs/semantics.md {self.section})"


_ORT_NAN = "NaN order", "onnxruntime drops NaN or lets the first element decide"
_CPU_NAN = "NaN order", "the CPU plugin's result depends on where the NaN is"
_CPU_64 = "64-bit data", "the CPU plugin computes it in 32 bits"
_F64_INF = "float64 infinity", "the CPU plugin's f32 conversion saturates it to FLT_MAX"
_NO_NUMBER = ("a window with no number above -inf",
              "onnxruntime gives lowest(T) for -inf, jaxmax -inf; no input element: index -1")


# ScatterElements / ScatterND max: onnxruntime folds `acc > u ? acc : u` in index order, so a NaN
# wins only when nothing follows it and a later zero of either sign replaces an equal one; the
# contract is the IEEE maximum of the target's data element and its updates
_ORT_SCATTER = [
    Rule("NaN order", "onnxruntime's fold keeps a NaN only when no update follows it", "§8.4",
         _nan_propagated),
    Rule("sign of a +-0 tie", "onnxruntime's fold keeps the last zero", "§8.4",
         _zero_tie(_plus_zero))]


def _nd_k0_ignored(case: Case) -> Masks:
    """ScatterNDUpdate with ``k = 0`` (indices' last dim 0: each update tuple names the whole
    tensor): the CPU plugin returns ``data`` unchanged. Explained where the runtime's value is
    the data element bit for bit and jaxmax's is the contract's SNDU-15 fold."""
    data, indices, _ = case.args
    if indices.ndim < 1 or indices.shape[-1] != 0 or data.shape != case.shape:
        return [None]
    expected = contract.ov_scatter_nd_update(case.binding, case.inputs)
    if expected is None:
        return [None]
    return [_same(case.theirs[0], data) & _same(case.ours[0], expected)]


def _want_scatter_update(case: Case):
    value = contract.ov_scatter_elements_update(case.binding, case.inputs)
    return None if value is None else [value]


def _ov_scatter_zero(case: Case) -> np.ndarray | None:
    return contract.ov_scatter_elements_update(case.binding, case.inputs)


# ScatterElementsUpdate-12 max: the CPU plugin folds `acc < u ? u : acc` (NaN updates ignored,
# a NaN data element kept, the current value kept on a tie) where the contract folds the
# reference's `acc > u ? acc : u`
_CPU_SCATTER = [
    Rule("NaN order", "the CPU plugin ignores NaN updates and keeps a NaN data element", "§8.4",
         _ov_nan(_want_scatter_update)),
    Rule("sign of a +-0 tie", "the CPU plugin keeps the current zero", "§8.4",
         _zero_tie(_ov_scatter_zero)),
    Rule(*_CPU_64, "§8.4", _changed_by(_wide)), Rule(*_F64_INF, "§8.4", _f64_infinity)]

# ScatterNDUpdate-15 max: the CPU plugin folds the spec's own rule, but ignores the updates when
# k = 0
_CPU_SCATTER_ND = [
    Rule("k = 0", "the CPU plugin ignores the updates", "§8.4", _nd_k0_ignored),
    Rule(*_CPU_64, "§8.4", _changed_by(_wide)), Rule(*_F64_INF, "§8.4", _f64_infinity)]


# documented once, in §10, for every operator the CPU plugin runs (the scatter nodes: §8.4)
_F64_INFINITY = Rule(*_F64_INF, "§10", _f64_infinity)

# for the operators whose value can be lowest(f16) with no such element in the data (a clamp or
# an empty window): elsewhere the rule could never explain anything
_F16_LOWEST = Rule("float16 lowest", "the CPU plugin computes in f32 and gives -inf", "§3",
                   _f16_lowest)


# RoiAlign / ROIAlign (docs/semantics.md §12.5): the runtimes' max rules, the out-of-image
# sample read as 0 * X[n, c, 0, 0], and the CPU plugin's fused multiply-adds


def _roi_planes(case: Case, test: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """(R, C, 1, 1): where `test` marks pixel (0, 0) of the ROI's image and channel."""
    x, batch = case.inputs[0], case.inputs[2]
    ids = np.clip(np.asarray(batch).astype(np.int64), 0, x.shape[0] - 1)
    return test(x[ids, :, 0, 0].astype(np.float64))[:, :, None, None]


def _roi_origin_leak(case: Case) -> Masks:
    """The runtime's out-of-image sample is ``0 * X[n, c, 0, 0]``: NaN where that pixel is NaN
    or infinite, ``-0`` where it is negative. Explained where the ROI's pixel (0, 0) is so and
    the runtime's value is NaN or a zero."""
    bad = _roi_planes(case, lambda v: ~np.isfinite(v) | (v < 0) | np.signbit(v))
    theirs = case.theirs[0]
    return [bad & (np.isnan(theirs) | (theirs == 0))]


def _roi_weighted_corners(case: Case) -> Masks:
    """ONNX RoiAlign max: onnxruntime's sample value is the largest weighted corner. Explained
    where the runtime's value is exactly jaxmax's ``max_sampling="weighted_corners"``."""
    attrs = dict(case.binding.attributes)
    if str(attrs.get("mode", "avg")).lower() != "max":
        return [None]
    from jaxmax import onnx as jonnx  # the public call, as the binding makes it
    x, rois, batch = case.inputs[:3]
    corners = np.asarray(jonnx.roi_align(x, rois, batch, max_sampling="weighted_corners",
                                         **attrs))
    return [_same(corners, case.theirs[0])]


def _roi_zero_floor(case: Case) -> Masks:
    """OpenVINO ROIAlign max: the CPU plugin seeds the fold at 0 (negative maxima, and bins
    whose samples are all NaN, come out 0). Explained where the runtime gives 0 and jaxmax's
    value is <= 0 or NaN-free lowest."""
    if str(case.binding.attributes.get("mode", "")).lower() != "max":
        return [None]
    ours, theirs = case.ours[0].astype(np.float64), case.theirs[0]
    return [(theirs == 0) & ((ours <= 0) | np.isnan(ours))]


def _roi_fma(case: Case) -> Masks:
    """OpenVINO ROIAlign: the CPU plugin fuses multiply-adds and orders the sample formula its
    own way. Explained within ``u * max|X| * (4 + 4*max(H, W))`` (u = unit roundoff of T)."""
    x = case.inputs[0]
    finite = np.isfinite(x)
    if not finite.any():
        return [None]
    u = np.finfo(x.dtype).eps / 2
    tol = u * np.abs(x[finite]).astype(np.float64).max() * (4 + 4 * max(x.shape[2:]))
    ours, theirs = case.ours[0].astype(np.float64), case.theirs[0].astype(np.float64)
    return [np.isfinite(ours) & np.isfinite(theirs) & (np.abs(ours - theirs) <= tol)]


def _roi_nan_order(case: Case) -> Masks:
    """OpenVINO ROIAlign max: the CPU plugin's NaN wins as the bin's last sample. Explained
    where the runtime's value is NaN and the ROI's image plane holds a NaN."""
    x, batch = case.inputs[0], case.inputs[2]
    ids = np.clip(np.asarray(batch).astype(np.int64), 0, x.shape[0] - 1)
    plane_nan = np.isnan(x).any(axis=(2, 3))[ids][:, :, None, None]
    return [plane_nan & np.isnan(case.theirs[0])]


_ORT_ROI_ALIGN = [
    Rule("weighted-corner max", "onnxruntime's max is the largest weighted corner of a sample",
         "§12.3", _roi_weighted_corners),
    Rule("(0, 0) leak", "the runtime reads an out-of-image sample as 0 * X[n, c, 0, 0]",
         "§12.5", _roi_origin_leak)]
_CPU_ROI_ALIGN = [
    Rule("0 floor", "the CPU plugin seeds the max at 0", "§12.3", _roi_zero_floor),
    Rule("(0, 0) leak", "the runtime reads an out-of-image sample as 0 * X[n, c, 0, 0]",
         "§12.5", _roi_origin_leak),
    Rule("NaN order", "the CPU plugin's NaN wins as the bin's last sample", "§12.5",
         _roi_nan_order),
    Rule("fused multiply-add", "the CPU plugin rounds the sample formula its own way",
         "§12.4", _roi_fma)]


RULES: dict[tuple[str, str], list[Rule]] = {
    (ONNXRUNTIME, "ReduceMax"): [Rule(*_ORT_NAN, "§4", _nan_propagated)],
    (ONNXRUNTIME, "MaxPool"): [Rule(*_ORT_NAN, "§5.5", _nan_propagated),
                               Rule(*_NO_NUMBER, "§5.5", _no_number_window)],
    (ONNXRUNTIME, "GlobalMaxPool"): [Rule(*_ORT_NAN, "§5.5", _nan_propagated),
                                     Rule(*_NO_NUMBER, "§5.5", _no_number_window)],
    (ONNXRUNTIME, "ArgMax"): [Rule(*_ORT_NAN, "§6.5", _arg_max_nan)],
    (ONNXRUNTIME, "Max"): [Rule("sign of a +-0 tie", "onnxruntime's zero depends on the length",
                                "§7.3", _zero_tie(_plus_zero))],
    (ONNXRUNTIME, "TopK"): [Rule("sorted=0", "onnxruntime returns the same pairs in heap order",
                                 "§6.3", _heap_order)],
    (ONNXRUNTIME, "Hardmax"): [Rule(*_ORT_NAN, "§11.5", _hardmax_nan)],
    (ONNXRUNTIME, "MaxRoiPool"): [Rule("bin fold", "onnxruntime folds `x < acc ? acc : x` from "
                                       "lowest(T)", "§11.5", _roi_fold("onnx", "reference"))],
    (OPENVINO_CPU, "ROIPooling"): [
        Rule("bin fold and edges", "the CPU plugin folds from the bin's first element and "
             "places edges by exact integers", "§11.5", _roi_fold("reference", "cpu", True))],
    (ONNXRUNTIME, "ScatterElements"): _ORT_SCATTER,
    (ONNXRUNTIME, "ScatterND"): _ORT_SCATTER,
    (ONNXRUNTIME, "RoiAlign"): _ORT_ROI_ALIGN,
    (OPENVINO_CPU, "ROIAlign"): _CPU_ROI_ALIGN,
    (OPENVINO_CPU, "ReduceMax"): [Rule(*_CPU_NAN, "§3", _ov_nan(_want_reduce)),
                                  Rule(*_CPU_64, "§3", _changed_by(_wide)),
                                  _F64_INFINITY, _F16_LOWEST],
    (OPENVINO_CPU, "MaxPool"): [Rule(*_CPU_64, "§5.3", _changed_by(_wide)),
                                _F64_INFINITY, _F16_LOWEST],
    (OPENVINO_CPU, "SegmentMax"): [Rule(*_CPU_64, "§3", _changed_by(_wide)),
                                   _F64_INFINITY, _F16_LOWEST],
    (OPENVINO_CPU, "AdaptiveMaxPool"): [
        Rule(*_CPU_64, "§7.1", _changed_by(_wide)),
        _F64_INFINITY,
        Rule("integers", "the CPU plugin computes them in f32", "§7.1", _changed_by(_not_f32))],
    (OPENVINO_CPU, "Maximum"): [
        Rule(*_CPU_NAN, "§7.3", _ov_nan(_want_maximum)),
        Rule("sign of a +-0 tie", "the CPU plugin returns the second argument", "§7.3",
             _zero_tie(_ov_zero)),
        Rule(*_CPU_64, "§7.3", _changed_by(_wide)),
        _F64_INFINITY],
    (OPENVINO_CPU, "ScatterElementsUpdate"): [*_CPU_SCATTER, _F16_LOWEST],
    (OPENVINO_CPU, "ScatterNDUpdate"): _CPU_SCATTER_ND,
    (OPENVINO_CPU, "TopK"): [
        Rule(*_CPU_NAN, "§6.5", _ov_nan(_want_top_k)),
        Rule("tie order", "the CPU plugin picks another tied element", "§6.5", _tie_order),
        Rule(*_CPU_64, "§6.5", _changed_by(_wide)),
        _F64_INFINITY],
}


@dataclasses.dataclass
class Explanation:
    """Per rule that explained something, how many elements; and what is left unexplained."""

    counts: list[tuple[Rule, int]]
    left: list[np.ndarray]  # per output, the differing elements no rule explains

    @property
    def unexplained(self) -> int:
        return int(sum(m.sum() for m in self.left))


def explain(runtime: str, case: Case) -> Explanation:
    """Apply the node's rules, in table order, to its differing elements."""
    left = [differing(y, t) for y, t in zip(case.ours, case.theirs, strict=True)]
    counts: list[tuple[Rule, int]] = []
    for rule in RULES.get((runtime, case.binding.op_type), []):
        if not any(m.any() for m in left):
            break
        try:
            masks = rule.explain(case)
        except Unproven:  # never an excuse by default
            continue
        n = 0
        for k, mask in enumerate(masks[:len(left)]):
            if mask is None:
                continue
            hit = left[k] & np.broadcast_to(mask, left[k].shape)
            n += int(hit.sum())
            left[k] = left[k] & ~hit
        if n:
            counts.append((rule, n))
    return Explanation(counts, left)
