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
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from jaxmax._src.tour import (
    adaptive_unpool_cases,
    arg_max_top_k_cases,
    detection_cases,
    elementwise_cases,
    pool_cases,
    reduce_cases,
    roi_align_cases,
    scatter_cases,
)
from jaxmax._src.tour.case import Case

#: The tour's case builders, in the order of the table's rows; a new family adds its line here.
CASE_BUILDERS: tuple[Callable[[], list[Case]], ...] = (
    reduce_cases.openvino_reduce_cases,
    pool_cases.max_pool_1_cases,
    reduce_cases.segment_max_cases,
    reduce_cases.onnx_reduce_cases,
    pool_cases.pool_cases,
    elementwise_cases.elementwise_cases,
    arg_max_top_k_cases.arg_max_top_k_cases,
    adaptive_unpool_cases.adaptive_unpool_cases,
    scatter_cases.scatter_cases,
    roi_align_cases.roi_align_cases,
    detection_cases.detection_cases,
)


def default_cases() -> list[Case]:
    """The tour: the spec texts' examples and the corner cases where frameworks disagree."""
    return [case for build in CASE_BUILDERS for case in build()]


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


def _as_tuple(outputs) -> tuple:
    """A call's outputs as a tuple (one array, or the tuple an operator returns)."""
    return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


def _same_outputs(actual, expected) -> str | None:
    """:func:`_same` over every output of a call, naming the output that differs."""
    actual, expected = _as_tuple(actual), _as_tuple(expected)
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        problem = _same(a, e)
        if problem:
            return problem if len(actual) == 1 else f"output {i}: {problem}"
    return None


def _other(data: np.ndarray) -> np.ndarray:
    """A second batch element of the same shape and dtype: the data reversed (negated if bool)."""
    return ~data if data.dtype == np.bool_ else np.flip(data).copy()

# Running
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    """What happened to one case: the checks run and the failures."""

    case: Case
    checks: list[str]
    failures: list[str]
    jitted: Callable[[jax.Array], Any] | None = None

    @property
    def agrees(self) -> bool:
        return not self.failures


def _median_seconds(fn: Callable[[jax.Array], Any], x: jax.Array, repeats: int) -> float:
    """Median wall time of `repeats` calls of an already compiled `fn`."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(x))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_case(case: Case, transforms: bool = True) -> Outcome:
    """Check one case eagerly and under ``jax.jit``; with `transforms`, also under ``jax.vmap``
    (a batch of the data and its reverse) and, for finite floating data, ``jax.grad``."""
    outcome = Outcome(case, [], [])

    def check(label: str, actual, expected) -> None:
        outcome.checks.append(label)
        problem = _same_outputs(actual, expected)
        if problem:
            outcome.failures.append(f"{label}: {problem}")

    data = np.asarray(case.data)
    x = jnp.asarray(data)
    try:
        reference = case.reference(data)
        expected = (reference.outputs if case.expected is None
                    else tuple(np.asarray(e) for e in _as_tuple(case.expected)))
        if case.shape is not None and expected[0].shape != tuple(case.shape):
            outcome.failures.append(
                f"expected shape {expected[0].shape}, the spec says {case.shape}")
        if case.expected is not None and _same_outputs(reference.outputs, expected):
            outcome.failures.append(  # the NumPy loops must reproduce the spec example too
                f"the NumPy reference gives {[r.tolist() for r in reference.outputs]}, "
                f"the spec example {[e.tolist() for e in expected]}")
        check("eager", case.run(x), expected)
        outcome.jitted = jax.jit(case.run)
        check("jit", outcome.jitted(x), expected)
        if not transforms:
            return outcome

        other = _other(data)
        batched = jax.jit(jax.vmap(case.run))(jnp.stack([x, jnp.asarray(other)]))
        check("vmap", batched, tuple(np.stack(pair) for pair in zip(
            expected, case.reference(other).outputs, strict=True)))

        first = expected[0]
        if (np.issubdtype(data.dtype, np.floating) and np.isfinite(data).all()
                and np.issubdtype(first.dtype, np.floating)):
            # integer cotangents keep every gradient sum exact
            cotangent = (np.arange(first.size) % 5 + 1).astype(first.dtype).reshape(first.shape)
            grad = jax.jit(jax.grad(
                lambda v: jnp.sum(_as_tuple(case.run(v))[0] * cotangent)))(x)
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
    else:
        out.write(f"All {len(outcomes)} cases agree with the expected values (spec examples "
                  f"and NumPy loops), eagerly and under jit, vmap and grad.\n")
    out.write(where_it_ran() + "\n")
    return 1 if failed else 0


def where_it_ran() -> str:
    """One sentence: the processes and devices of this JAX run (a multi-process job runs the
    tour in each process, on that process's first device)."""
    processes, devices = jax.process_count(), jax.device_count()
    local = jax.local_device_count()
    return (f"Ran on {processes} process{'es' if processes != 1 else ''} and {devices} "
            f"device{'s' if devices != 1 else ''} ({jax.default_backend()}; this is process "
            f"{jax.process_index()}, with {local} of them).")


_DESCRIPTION = """\
A short tour of jaxmax that needs no arguments and no network. It runs every public operator
on small built-in inputs: the examples of the specification texts and operator pages, plus the
corner cases where frameworks disagree (NaN, -inf, signed zeros, ties, empty segments, ceil
windows in the padding, same_lower, overlapping adaptive windows, duplicate unpool indices).

  openvino: reduce_max, reduce_logical_or, max_pool (MaxPool-1/-8/-14), segment_max, top_k
            (TopK-1/-3/-11), adaptive_max_pool, maximum
  onnx:     reduce_max, max_pool, global_max_pool, arg_max, top_k, max_unpool, max

Every result is compared, exactly (values, indices, dtypes, zero signs), with an expected value
computed without jaxmax: the values of the spec example, or plain NumPy loops over the slices,
windows, rows or segments. Every case is also run under jax.jit; the first case of each row
also under jax.vmap (a batch of two inputs) and, for floating data, jax.grad (checked against
the NumPy gradient routing).

The table has one row per operator and spec version: the number of cases, the backend
(jax.default_backend()), the checks run, whether everything agreed, and the median time of a
jitted call of the row's first case.

`python -m jaxmax check MODEL` checks a model's max-family nodes instead (see
`python -m jaxmax check --help`)."""


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
    with warnings.catch_warnings():
        # int64 indices are int32 without jax_enable_x64: JAX says so once per call site; the
        # tour's references expect the int32 and the table is what the reader wants to see
        warnings.filterwarnings("ignore", message=".*which JAX stores as int32.*")
        warnings.filterwarnings("ignore", message=".*[Ee]xplicitly requested dtype.*int64.*")
        return run_tour(default_cases() if cases is None else cases, out=out,
                        repeats=args.repeats, verbose=args.verbose)
