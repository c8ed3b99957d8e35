"""The newcomer's tour behind ``python -m jaxmax``.

Every public operator runs on small built-in inputs: the examples of the specification texts
and a few corner cases where frameworks disagree. Each result is checked against an expected
value computed here without jaxmax (an array copied from the spec example, or a plain NumPy loop
over the slices, windows or segments), then the same call runs once under ``jax.jit``,
``jax.vmap`` (a batch of two inputs) and ``jax.grad`` (floating data), and those are checked as
well. A table is printed; the exit status is non-zero when anything disagrees.

The tour is data: :func:`default_cases` builds the list of :class:`Case` objects and
:func:`run_tour` runs any list of them, so a test can hand it a case with a wrong expected value
and see the tour fail.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TextIO

import jax
import jax.numpy as jnp
import numpy as np

from jaxmax._src.tour.references import (
    Reference,
    pool_reference,
    reduce_reference,
    segment_reference,
)

# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """One call of one operator with its independent expectation.

    Attributes:
      operator: the public name, e.g. ``"openvino.reduce_max"``.
      spec: the specification and version, e.g. ``"ReduceMax-1"``.
      name: what the case shows.
      data: the input that jit/vmap/grad act on.
      run: ``data -> jax.Array``, the jaxmax call with every other argument bound.
      reference: ``data -> Reference``, the NumPy reference for any input of this shape.
      expected: a hard-coded expected output (from the spec text); ``None`` uses
        ``reference(data).value``.
      shape: the output shape the spec text states, checked when given.
    """

    operator: str
    spec: str
    name: str
    data: np.ndarray
    run: Callable[[jax.Array], jax.Array]
    reference: Callable[[np.ndarray], Reference]
    expected: np.ndarray | None = None
    shape: tuple[int, ...] | None = None


def _same(actual, expected) -> str | None:
    """``None`` if equal in shape, dtype and every value (NaN equals NaN), else why not."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype}, expected {expected.dtype}"
    try:
        np.testing.assert_array_equal(actual, expected, strict=True)
    except AssertionError as err:
        return " ".join(str(err).split())[:300]
    return None


def _other(data: np.ndarray) -> np.ndarray:
    """A second batch element of the same shape and dtype: the data reversed (negated if bool)."""
    return ~data if data.dtype == np.bool_ else np.flip(data).copy()


def _unique(shape: tuple[int, ...], seed: int, dtype=np.float32) -> np.ndarray:
    """Distinct values (so gradients have no ties), centred on zero, in a seeded order."""
    size = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(size) - size // 2).astype(dtype).reshape(shape)


def default_cases() -> list[Case]:
    """The tour: the spec texts' examples and the corner cases where frameworks disagree."""
    from jaxmax import onnx
    from jaxmax import openvino as ov

    f32 = np.float32
    nan, inf = np.nan, np.inf
    low32 = np.finfo(f32).min
    cases: list[Case] = []

    # OpenVINO ReduceMax-1 / ReduceLogicalOr-1: the four layers of the spec text (6x12x10x24).
    big = _unique((6, 12, 10, 24), seed=0)
    flags = np.random.default_rng(1).random((6, 12, 10, 24)) < 0.02
    examples = [([2, 3], True, (6, 12, 1, 1)), ([2, 3], False, (6, 12)),
                ([1], False, (6, 10, 24)), ([-2], False, (6, 12, 24))]
    for fn, spec, data, rule in ((ov.reduce_max, "ReduceMax-1", big, "openvino"),
                                 (ov.reduce_logical_or, "ReduceLogicalOr-1", flags, "or")):
        for axes, keep, shape in examples:
            cases.append(Case(
                f"openvino.{fn.__name__}", spec,
                f"spec example: axes {axes}, keep_dims={str(keep).lower()}", data,
                partial(fn, axes=axes, keep_dims=keep),
                partial(reduce_reference, axes=axes, keep=keep, rule=rule), shape=shape))
        if rule == "openvino":
            cases.append(Case(
                "openvino.reduce_max", spec, "NaN skipped; only -inf/NaN -> lowest",
                np.array([[1, nan], [nan, nan], [-inf, -inf], [inf, nan]], f32),
                partial(fn, axes=1), partial(reduce_reference, axes=[1], keep=False, rule=rule),
                expected=np.array([1, low32, low32, inf], f32)))

    # OpenVINO MaxPool-1: the spec example (same_upper, kernel 3, stride 2: pads 0 / 1 on a
    # 4x4 input), its same_lower mirror, a ceil window lying in the end padding, 3-D pooling.
    grid = np.arange(16, dtype=f32).reshape(1, 1, 4, 4)
    for auto_pad, expected in (("same_upper", [[10, 11], [14, 15]]),
                               ("same_lower", [[5, 7], [13, 15]])):
        cases.append(Case(
            "openvino.max_pool", "MaxPool-1", f"spec example: {auto_pad}, kernel 3, stride 2",
            grid, partial(ov.max_pool, kernel=[3, 3], strides=[2, 2], pads_begin=[0, 0],
                          pads_end=[1, 1], auto_pad=auto_pad),
            partial(pool_reference, kernel=[3, 3], strides=[2, 2], pads_begin=[0, 0],
                    pads_end=[1, 1], rounding="floor", auto_pad=auto_pad),
            expected=np.array(expected, f32).reshape(1, 1, 2, 2)))
    low16 = np.finfo(np.float16).min
    cases.append(Case(
        "openvino.max_pool", "MaxPool-1", "ceil: last window in padding (float16)",
        grid.astype(np.float16),
        partial(ov.max_pool, kernel=2, strides=2, pads_begin=0, pads_end=1, rounding_type="ceil"),
        partial(pool_reference, kernel=[2, 2], strides=[2, 2], pads_begin=[0, 0],
                pads_end=[1, 1], rounding="ceil", auto_pad="explicit"),
        expected=np.array([[5, 7, low16], [13, 15, low16], [low16] * 3],
                          np.float16).reshape(1, 1, 3, 3)))
    cases.append(Case(
        "openvino.max_pool", "MaxPool-1", "3-D, kernel 2x3x2, pads 1, ceil",
        _unique((2, 3, 4, 5, 6), seed=2),
        partial(ov.max_pool, kernel=[2, 3, 2], strides=[2, 1, 2], pads_begin=[1, 0, 1],
                pads_end=[0, 1, 1], rounding_type="ceil"),
        partial(pool_reference, kernel=[2, 3, 2], strides=[2, 1, 2], pads_begin=[1, 0, 1],
                pads_end=[0, 1, 1], rounding="ceil", auto_pad="explicit")))

    # OpenVINO SegmentMax-16: the description's example and the three examples of the spec text
    # (the text gives ids and counts but no data values; the data here is ours).
    def segment(name, data, ids, count, fill, expected):
        ids = np.array(ids, np.int32)
        cases.append(Case(
            "openvino.segment_max", "SegmentMax-16", name, np.asarray(data),
            partial(ov.segment_max, segment_ids=ids, num_segments=count, fill_mode=fill),
            partial(segment_reference, segment_ids=ids, num_segments=count, fill_mode=fill),
            expected=np.asarray(expected, np.asarray(data).dtype)))

    segment("spec description: ids 0,0,0,1,1,3,5,5, ZERO",
            np.array([3, -1, 2, -7, -4, 9, 0.5, 8], f32), [0, 0, 0, 1, 1, 3, 5, 5], None, "ZERO",
            [3, -4, 0, 9, 0, 8])
    segment("spec example 1: num_segments 2 < 4, ZERO",
            np.array([-5, -2, 4, 3, 7], f32), [0, 0, 2, 3, 3], 2, "ZERO", [-2, 0])
    segment("spec example 2: num_segments 8 > 4, ZERO",
            np.array([-5, -2, 4, 3, 7], f32), [0, 0, 2, 3, 3], 8, "ZERO",
            [-2, 0, 4, 7, 0, 0, 0, 0])
    segment("spec example 3: int32 3x4, LOWEST",
            np.array([[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, -12]], np.int32), [0, 1, 1],
            None, "LOWEST", [[1, -2, 3, -4], [5, 10, 11, 8]])
    segment("empty segment, LOWEST", np.array([1.5, -3, 2], f32), [0, 0, 2], None, "LOWEST",
            [1.5, low32, 2])

    # ONNX ReduceMax: the operator page's examples, one per since-version, and its NaN rule.
    page = np.array([[[5, 1], [20, 2]], [[30, 1], [40, 2]], [[55, 1], [60, 2]]], f32)
    doc_examples: list[tuple[str, list[int] | None, int, int, list]] = [
            ("doc: do_not_keepdims, axes [1]", [1], 0, 18, [[20, 2], [40, 2], [60, 2]]),
            ("doc: keepdims, axes [1]", [1], 1, 13, [[[20, 2]], [[40, 2]], [[60, 2]]]),
            ("doc: default_axes_keepdims", None, 1, 18, [[[60]]]),
            ("doc: negative_axes_keepdims, axes [-2]", [-2], 1, 20,
             [[[20, 2]], [[40, 2]], [[60, 2]]])]
    for name, doc_axes, keepdims, opset, expected in doc_examples:
        cases.append(Case(
            "onnx.reduce_max", f"ReduceMax-{opset}", name, page,
            partial(onnx.reduce_max, axes=doc_axes, keepdims=keepdims, opset=opset),
            partial(reduce_reference, axes=range(3) if doc_axes is None else doc_axes,
                    keep=bool(keepdims), rule="onnx"),
            expected=np.array(expected, f32)))
    cases.append(Case(
        "onnx.reduce_max", "ReduceMax-18", "NaN propagates; -inf stays -inf",
        np.array([[1, nan], [nan, 1], [-inf, -inf], [inf, 2]], f32),
        partial(onnx.reduce_max, axes=[1], keepdims=0, opset=18),
        partial(reduce_reference, axes=[1], keep=False, rule="onnx"),
        expected=np.array([nan, nan, -inf, inf], f32)))
    cases.append(Case(
        "onnx.reduce_max", "ReduceMax-20", "bool data (logical or), axes [0]",
        np.array([[True, False, False], [False, False, True]]),
        partial(onnx.reduce_max, axes=[0], keepdims=0, opset=20),
        partial(reduce_reference, axes=[0], keep=False, rule="or"),
        expected=np.array([True, False, True])))
    return cases


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    """What happened to one case: the checks run and the failures."""

    case: Case
    checks: list[str]
    failures: list[str]
    jitted: Callable[[jax.Array], jax.Array] | None = None

    @property
    def agrees(self) -> bool:
        return not self.failures


def _median_seconds(fn: Callable[[jax.Array], jax.Array], x: jax.Array, repeats: int) -> float:
    """Median wall time of `repeats` calls of an already compiled `fn`."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(x).block_until_ready()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_case(case: Case, transforms: bool = True) -> Outcome:
    """Check one case eagerly and under ``jax.jit``; with `transforms`, also under ``jax.vmap``
    (a batch of the data and its reverse) and, for finite floating data, ``jax.grad``."""
    outcome = Outcome(case, [], [])

    def check(label: str, actual, expected) -> None:
        outcome.checks.append(label)
        problem = _same(actual, expected)
        if problem:
            outcome.failures.append(f"{label}: {problem}")

    data = np.asarray(case.data)
    x = jnp.asarray(data)
    try:
        reference = case.reference(data)
        expected = reference.value if case.expected is None else np.asarray(case.expected)
        if case.shape is not None and expected.shape != tuple(case.shape):
            outcome.failures.append(f"expected shape {expected.shape}, the spec says {case.shape}")
        if case.expected is not None and _same(reference.value, expected):
            outcome.failures.append(  # the NumPy loops must reproduce the spec example too
                f"the NumPy reference gives {reference.value.tolist()}, "
                f"the spec example {expected.tolist()}")
        check("eager", case.run(x), expected)
        outcome.jitted = jax.jit(case.run)
        check("jit", outcome.jitted(x), expected)
        if not transforms:
            return outcome

        other = _other(data)
        batched = jax.jit(jax.vmap(case.run))(jnp.stack([x, jnp.asarray(other)]))
        check("vmap", batched, np.stack([expected, case.reference(other).value]))

        if np.issubdtype(data.dtype, np.floating) and np.isfinite(data).all():
            # integer cotangents keep every gradient sum exact
            cotangent = (np.arange(expected.size) % 5 + 1).astype(data.dtype).reshape(
                expected.shape)
            grad = jax.jit(jax.grad(lambda v: jnp.sum(case.run(v) * cotangent)))(x)
            outcome.checks.append("grad")
            want = reference.vjp(data, cotangent)
            got = np.asarray(grad, np.float64)
            if not np.allclose(got, want, rtol=1e-6, atol=0):
                outcome.failures.append(f"grad: max abs difference {np.abs(got - want).max()}")
    except Exception as err:  # a crash is a disagreement, reported in the table, never hidden
        outcome.failures.append(f"raised {type(err).__name__}: {err}")
    return outcome


_COLUMNS = ("operator", "spec version", "cases", "backend", "checked", "agree", "jit median")


def _format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms"


def _widths(rows: Sequence[Sequence[str]]) -> list[int]:
    return [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() + "\n"


def run_tour(cases: Sequence[Case], out: TextIO = sys.stdout, repeats: int = 20,
             verbose: bool = False) -> int:
    """Run `cases`, print the table, and return the exit status: 0 if every case agrees.

    One row per (operator, spec version). Every case is checked eagerly and under ``jax.jit``;
    the first case of a row also under ``jax.vmap``, and the first one with finite floating data
    under ``jax.grad``. The time is the median of `repeats` jitted calls of the row's first case.
    """
    backend = jax.default_backend()
    out.write(f"jaxmax tour: jax {jax.__version__}, backend {backend}, "
              f"{jax.device_count()} device(s)\n\n")
    groups: dict[tuple[str, str], list[Case]] = {}
    for case in cases:
        groups.setdefault((case.operator, case.spec), []).append(case)

    rows, outcomes = [], []
    for (operator, spec), members in groups.items():
        need_grad = True
        group_outcomes = []
        for i, case in enumerate(members):
            floating = np.issubdtype(np.asarray(case.data).dtype, np.floating)
            finite = floating and np.isfinite(case.data).all()
            outcome = run_case(case, transforms=i == 0 or (need_grad and finite))
            need_grad = need_grad and "grad" not in outcome.checks
            group_outcomes.append(outcome)
        head = group_outcomes[0]
        seconds = None
        if head.jitted is not None and head.agrees:
            seconds = _median_seconds(head.jitted, jnp.asarray(head.case.data), repeats)
        checked = ["values"] + [c for c in ("jit", "vmap", "grad")
                                if any(c in o.checks for o in group_outcomes)]
        agrees = all(o.agrees for o in group_outcomes)
        rows.append((operator, spec, str(len(members)), backend, " ".join(checked),
                     "yes" if agrees else "no", _format_seconds(seconds)))
        outcomes += group_outcomes

    widths = _widths(rows + [_COLUMNS])
    out.write(_line(_COLUMNS, widths))
    out.write(_line(["-" * w for w in widths], widths))
    for row in rows:
        out.write(_line(row, widths))
    out.write("\n")
    if verbose:
        cells = [("ok" if o.agrees else "NO", o.case.operator, o.case.spec, o.case.name,
                  " ".join(o.checks)) for o in outcomes]
        widths = _widths(cells)
        for c in cells:
            out.write(_line(c, widths))
        out.write("\n")
    failed = [o for o in outcomes if not o.agrees]
    for o in failed:
        for failure in o.failures:
            out.write(f"DISAGREES {o.case.operator} ({o.case.spec}) [{o.case.name}] {failure}\n")
    if failed:
        out.write(f"{len(failed)} of {len(outcomes)} cases disagree.\n")
        return 1
    out.write(f"All {len(outcomes)} cases agree with the expected values (spec examples and "
              f"NumPy loops), eagerly and under jit, vmap and grad.\n")
    return 0


_DESCRIPTION = """\
A short tour of jaxmax that needs no arguments and no network. It runs every operator
(openvino.reduce_max, reduce_logical_or, max_pool, segment_max; onnx.reduce_max) on small
built-in inputs: the examples of the specification texts, plus corner cases where frameworks
disagree (NaN, -inf, empty segments, ceil windows in the padding, same_lower).

Every result is compared, exactly, with an expected value computed without jaxmax: the values of
the spec example, or plain NumPy loops over the slices, windows or segments. Every case is also
run under jax.jit; the first case of each row also under jax.vmap (a batch of two inputs) and,
for floating data, jax.grad (checked against the NumPy gradient routing).

The table has one row per operator and spec version: the number of cases, the backend
(jax.default_backend()), the checks run, whether everything agreed, and the median time of a
jitted call of the row's first case."""


def main(argv: Sequence[str] | None = None, cases: Sequence[Case] | None = None,
         out: TextIO = sys.stdout) -> int:
    """Command-line entry point; returns the exit status (1 if any case disagrees)."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxmax", description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: 0 when every case agrees, 1 otherwise.")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also list every case with the checks it ran")
    parser.add_argument("--repeats", type=int, default=20, metavar="N",
                        help="timed calls of the jitted function per row (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return run_tour(default_cases() if cases is None else cases, out=out, repeats=args.repeats,
                    verbose=args.verbose)
