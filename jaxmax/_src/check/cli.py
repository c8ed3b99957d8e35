"""``python -m jaxmax check MODEL``: prove, node by node, that jaxmax reproduces a model's
max-family nodes exactly in the model's own runtime."""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import TextIO

import numpy as np

from jaxmax._src.check import deviations, report
from jaxmax._src.check.errors import CheckError
from jaxmax._src.check.runners import ModelInput, OnnxModel, OpenVinoModel

DESCRIPTION = """\
Run MODEL in its own runtime (onnxruntime's CPU provider for .onnx, OpenVINO's CPU plugin with
INFERENCE_PRECISION_HINT=f32 for .xml) with the inputs and outputs of every max-family node
exposed, feed each node's real inputs to its jaxmax binding (jaxmax.onnx.from_node /
jaxmax.openvino.from_node, jitted, with jax_enable_x64), and compare every output exactly: NaN
equals NaN, -0.0 differs from +0.0, dtypes must match.

Bound operators: ONNX ReduceMax, MaxPool, GlobalMaxPool, Max, ArgMax, TopK, MaxUnpool,
RoiAlign, Hardmax, MaxRoiPool, ScatterElements and ScatterND (18 and later, reduction max; at
opsets 16-17, where reduction max is outside the ONNX schema but torch's exporter writes it, run
as version 18, as onnxruntime does, and said so in the row); OpenVINO ReduceMax-1,
ReduceLogicalOr-1, MaxPool-1/-8/-14, SegmentMax-16, Maximum-1, TopK-1/-3/-11,
AdaptiveMaxPool-8, ROIAlign-3/-9, ROIPooling-1, ScatterElementsUpdate-12 and ScatterNDUpdate-15
(reduction max). Every other node (a scatter with another reduction too) is listed as not
covered, by op type.

The table has one row per max-family node: its name, operator and version, the jaxmax call it is
bound to, its output shapes, and "exact" or the number of differing elements with the first
one. Where the runtime is known to deviate from the spec (docs/semantics.md lists each: NaN
order, +-0 ties, TopK tie order, 64-bit data on the CPU plugin, ...), a difference is excused
element by element, only where the deviation predicts it: the element's own window or slice
(from the node's attributes) holds what the deviation is about (a NaN, zeros of both signs, a
value 32 bits would change, ...) and jaxmax's value there is the contract's. The row then says
"runtime deviation", how many elements each deviation explained and the section of
docs/semantics.md that documents it. A shape or dtype difference is never excused; any element
no deviation explains fails the node.

Exit status: 0 when every covered node is exact (or each difference is explained by a listed
runtime deviation), 1 when a covered node differs or jaxmax raised on it, 2 on bad input (a
missing or unreadable model, a runtime that is not installed, a dynamic dim without --shape,
--inputs names that do not match the model's inputs, ScatterElementsUpdate indices or shapes on
which OpenVINO's CPU plugin would write outside its buffers, a runtime error or crash),
reported as one line on stderr; 3 when check itself failed (a bug in check, not in the model or
in jaxmax's operators): the node's row and one line on stderr name the node and the error,
never a traceback.
"""

EPILOG = """\
examples:
  python -m jaxmax check model.onnx
  python -m jaxmax check model.xml --seed 1
  python -m jaxmax check model.onnx --inputs inputs.npz
  python -m jaxmax check model.onnx --shape input=1,3,224,224
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jaxmax check", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL",
                   help="an ONNX model (.onnx) or an OpenVINO IR (.xml, with its .bin beside it)")
    p.add_argument("--inputs", metavar="NPZ",
                   help="real input data: a .npz file (numpy.savez) with one array per model "
                        "input, named as the model's inputs; shapes and dtypes are taken from "
                        "the arrays. Default: random data from the declared shapes and dtypes")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the random inputs (default 0): floats standard normal, "
                        "integers in [0, 10), bools fair coins")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="fix the shape of input NAME (needed for every input with a dynamic or "
                        "named dim when --inputs is not given); repeat for several inputs")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="progress bar on stderr: auto (the default) shows it for 10 nodes or "
                        "more when stderr is a terminal")
    return p


def _parse_shapes(items: list[str], inputs: list[ModelInput]) -> dict[str, tuple[int, ...]]:
    names = {i.name: i for i in inputs}
    shapes = {}
    for item in items:
        name, sep, dims = item.rpartition("=")
        if not sep or not name:
            raise CheckError(f"--shape {item!r}: expected NAME=D0,D1,... (for example "
                             f"input=1,3,224,224)")
        if name not in names:
            raise CheckError(f"--shape {item!r}: the model has no input {name!r} (its inputs: "
                             f"{', '.join(names)})")
        try:
            shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
        except ValueError:
            raise CheckError(f"--shape {item!r}: the dims must be integers") from None
        if any(d < 0 for d in shape):
            raise CheckError(f"--shape {item!r}: the dims must be >= 0")
        declared = names[name].shape
        if len(shape) != len(declared) and declared != (None,):
            raise CheckError(f"--shape {item!r}: input {name!r} has rank {len(declared)}, "
                             f"got {len(shape)} dims")
        for d, want in zip(shape, declared, strict=False):
            if want is not None and d != want and declared != (None,):
                raise CheckError(f"--shape {item!r}: input {name!r} has a fixed dim {want}, "
                                 f"got {d}")
        shapes[name] = shape
    return shapes


def _random_inputs(inputs: list[ModelInput], shapes: dict[str, tuple[int, ...]],
                   seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in inputs:
        shape = shapes.get(i.name, i.shape)
        if None in shape:
            dims = ",".join("?" if d is None else str(d) for d in i.shape)
            raise CheckError(f"input {i.name!r} has dynamic dims ({dims}): give them with "
                             f"--shape {i.name}=D0,D1,... (or pass --inputs)")
        size = tuple(int(d) for d in shape if d is not None)
        if i.dtype.kind == "f":
            feeds[i.name] = rng.standard_normal(size).astype(i.dtype)
        elif i.dtype.kind in "iu":
            feeds[i.name] = rng.integers(0, 10, size).astype(i.dtype)
        elif i.dtype.kind == "b":
            feeds[i.name] = rng.random(size) < 0.5
        else:
            raise CheckError(f"input {i.name!r} has dtype {i.dtype}, which check cannot "
                             f"generate: pass --inputs")
    return feeds


def _npz_inputs(path: str, inputs: list[ModelInput]) -> dict[str, np.ndarray]:
    file = Path(path)
    if not file.is_file():
        raise CheckError(f"--inputs {path}: no such file")
    try:
        data = np.load(file, allow_pickle=False)
        if isinstance(data, np.ndarray):
            raise CheckError(f"--inputs {path}: a .npy array, not a .npz archive of named "
                             f"inputs (numpy.savez(path, name=array, ...))")
        with data:
            feeds = {name: np.asarray(data[name]) for name in data.files}
    except CheckError:
        raise
    except Exception as err:  # noqa: BLE001 (whatever NumPy raises on a file it cannot read)
        raise CheckError(f"--inputs {path}: not a readable .npz file "
                         f"({type(err).__name__}: {err})") from None
    want = [i.name for i in inputs]
    missing = [n for n in want if n not in feeds]
    extra = [n for n in feeds if n not in want]
    if missing or extra:
        raise CheckError(f"--inputs {path}: the names do not match the model's inputs "
                         f"{want}: missing {missing}, unknown {extra}")
    for i in inputs:
        got = feeds[i.name]
        if got.dtype != i.dtype:
            raise CheckError(f"--inputs {path}: {i.name!r} has dtype {got.dtype}, the model "
                             f"declares {i.dtype}")
        if len(got.shape) != len(i.shape) and i.shape != (None,) or any(
                d is not None and d != g for d, g in zip(i.shape, got.shape, strict=False)):
            shown = ",".join("?" if d is None else str(d) for d in i.shape)
            raise CheckError(f"--inputs {path}: {i.name!r} has shape {got.shape}, the model "
                             f"declares ({shown})")
    return feeds


def _load(path_text: str):
    path = Path(path_text)
    if not path.is_file():
        raise CheckError(f"{path_text}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        return OnnxModel(path)
    if suffix == ".xml":
        return OpenVinoModel(path)
    raise CheckError(f"{path_text}: cannot read a {suffix or 'suffix-less'} file: give an ONNX "
                     f"model (.onnx) or an OpenVINO IR (.xml)")


def _shapes_text(arrays) -> str:
    return ", ".join(str(tuple(int(d) for d in a.shape)) for a in arrays)


#: Exit status when check itself fails (its own bug): distinct from a node that differs (1) and
#: from bad input (2).
INTERNAL_ERROR = 3


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"


def _internal(where: str, error: BaseException) -> str:
    return (f"jaxmax check: internal error {where}: {_one_line(error)} (a bug in jaxmax check, "
            f"not in the model or in jaxmax's operators: please report it)")


def run(argv: list[str], out: TextIO, err: TextIO) -> int:
    args = parser().parse_args(argv)
    stage = ["reading the model"]  # what _check is doing, for an internal error's line
    try:
        return _check(args, out, err, stage)
    except CheckError as error:
        print(f"jaxmax check: {error}", file=err)
        return 2
    except Exception as error:  # noqa: BLE001 (check's own bug: one line, its own status)
        print(_internal(f"while {stage[0]}", error), file=err)
        return INTERNAL_ERROR


def _check(args, out: TextIO, err: TextIO, stage: list[str]) -> int:
    import jax

    from jaxmax._src.onnx.node import VERSIONS as ONNX_OPS
    from jaxmax._src.openvino.node import VERSIONS as OV_OPS

    if args.inputs and args.shape:
        raise CheckError("--shape and --inputs do not combine: with --inputs the arrays' shapes "
                         "are the input shapes")
    model = _load(args.model)
    if args.inputs:
        feeds = _npz_inputs(args.inputs, model.inputs)
        shapes = {name: tuple(a.shape) for name, a in feeds.items()}
    else:
        shapes = _parse_shapes(args.shape, model.inputs)
        feeds = _random_inputs(model.inputs, shapes, args.seed)
        shapes = {name: tuple(a.shape) for name, a in feeds.items()}
    if isinstance(model, OpenVinoModel):
        model.reshape(shapes)
    covered = ONNX_OPS if isinstance(model, OnnxModel) else OV_OPS
    stage[0] = "binding the model's nodes"
    entries, others = model.bind(covered)
    stage[0] = f"running the model in {model.runtime}"
    model.run(feeds, entries)
    stage[0] = "comparing the nodes"

    rows: list[tuple[str, ...]] = []
    counts: collections.Counter[str] = collections.Counter()
    bound = [e for e in entries if e.binding is not None]
    show = args.progress == "always" or (args.progress == "auto" and len(bound) >= 10
                                         and err.isatty())
    progress = report.Progress(len(bound), show, err)
    internal: list[str] = []
    for entry in entries:
        if entry.binding is None:
            for_type = entry.reason or "not bound"
            others[entry.op_type] += 1
            rows.append((entry.name, entry.op, "-", "-", f"not covered: {for_type}"))
            continue
        progress.step(entry.name)
        try:
            outcome = _compare(model.runtime, entry, jax)
        except Exception as error:  # noqa: BLE001 (check's own bug: named, its own status)
            internal.append(_internal(f"on node {entry.name!r} ({entry.op})", error))
            outcome = report.Outcome("internal", f"internal error in check: {_one_line(error)}")
        counts[outcome.status] += 1
        call = entry.binding.call + (f"  [{entry.note}]" if entry.note else "")
        rows.append((entry.name, entry.op, call, _shapes_text(entry.outputs), outcome.text))
    progress.close()

    print(f"jaxmax check {args.model}: {model.runtime}, {len(model.inputs)} input(s) "
          f"{_shapes_text([feeds[i.name] for i in model.inputs])}"
          f"{', seed ' + str(args.seed) if not args.inputs else ', inputs ' + args.inputs}",
          file=out)
    if rows:
        report.table(rows, ("node", "op", "jaxmax call", "outputs", "result"), out)
    total = len(bound)
    exact = counts["exact"]
    by_type = ", ".join(f"{t} x{n}" if n > 1 else t for t, n in sorted(others.items()))
    not_covered = sum(others.values())
    line = f"{exact} of {total} max-family nodes exact"
    if counts["deviation"]:
        line += f", {counts['deviation']} runtime deviation(s)"
    if counts["mismatch"] or counts["error"]:
        line += f", {counts['mismatch'] + counts['error']} differ or failed"
    if counts["internal"]:
        line += f", {counts['internal']} not checked (internal error)"
    line += f", {not_covered} not covered" + (f" ({by_type})" if by_type else "")
    print(line, file=out)
    for text in internal:
        print(text, file=err)
    if internal:
        return INTERNAL_ERROR
    return 0 if counts["mismatch"] == 0 and counts["error"] == 0 else 1


def jaxmax_outputs(binding, inputs, jax) -> list[np.ndarray]:
    """The bound node's outputs on the runtime's inputs, jitted (the tests' seam for a
    corrupted jaxmax output)."""
    return [np.asarray(o) for o in jax.jit(binding)(*inputs)]


def _compare(runtime: str, entry, jax) -> report.Outcome:
    binding = entry.binding
    try:
        ours = jaxmax_outputs(binding, entry.inputs, jax)
    except Exception as error:  # noqa: BLE001 (reported in the row, exit status 1)
        return report.Outcome("error", f"jaxmax raised {type(error).__name__}: "
                                       f"{' '.join(str(error).split())[:200]}")
    theirs = entry.outputs
    if len(ours) != len(theirs):
        return report.Outcome("mismatch", f"{len(ours)} outputs != runtime {len(theirs)}")
    results = [report.compare_output(a, b) for a, b in zip(ours, theirs, strict=True)]
    total = sum(n for n, _ in results)
    if total == 0:
        return report.Outcome("exact", "exact")
    if any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(ours, theirs, strict=True)):
        # a shape or dtype difference is never a runtime deviation
        firsts = "; ".join(f"output {k}: {text}" for k, (n, text) in enumerate(results) if n)
        return report.Outcome("mismatch", f"{total} differ ({firsts})")
    found = deviations.explain(runtime, deviations.Case(binding, entry.inputs, ours, theirs))
    explained = "; ".join(f"{n} element{'s' if n > 1 else ''}: {rule.label}"
                          for rule, n in found.counts)
    left = found.unexplained
    if left == 0:
        firsts = "; ".join(f"output {k}: {text}" for k, (n, text) in enumerate(results) if n)
        return report.Outcome("deviation", f"runtime deviation, {total} differ, each explained: "
                                           f"{explained} ({firsts})")
    firsts = "; ".join(f"output {k}: {report.first(mask, a, b)}"
                       for k, (mask, a, b) in enumerate(zip(found.left, ours, theirs,
                                                             strict=True)) if mask.any())
    text = f"{total} differ, {left} unexplained ({firsts})"
    return report.Outcome("mismatch", text + (f"; explained: {explained}" if explained else ""))


def main(argv: list[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    """Entry point: ``python -m jaxmax check ...`` (argv without the ``check`` word)."""
    import jax

    argv = sys.argv[2:] if argv is None else argv
    with jax.enable_x64(True):
        return run(argv, out or sys.stdout, err or sys.stderr)
