"""`python -m jaxmax`: the newcomer's tour runs, prints its table, and fails when it should.

The full tour runs once, in a subprocess, exactly as a reader would start it. The failure paths
run in-process on one or two cases each: a deliberately wrong expected value, a reference with
the wrong NaN rule, a correct value with a wrong gradient, and a crash must each give a "no" row
and a non-zero exit status.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from pool_oracle import output_length

from jaxmax import openvino as ov
from jaxmax._src.tour import references as tour_references
from jaxmax._src.tour import runner as tour

ROOT = Path(__file__).resolve().parent.parent

# every (operator, spec version) row the tour must print
ROWS = {
    ("openvino.reduce_max", "ReduceMax-1"),
    ("openvino.reduce_logical_or", "ReduceLogicalOr-1"),
    ("openvino.max_pool", "MaxPool-1"),
    ("openvino.max_pool", "MaxPool-8"),
    ("openvino.max_pool", "MaxPool-14"),
    ("openvino.segment_max", "SegmentMax-16"),
    ("openvino.top_k", "TopK-1"),
    ("openvino.top_k", "TopK-3"),
    ("openvino.top_k", "TopK-11"),
    ("openvino.adaptive_max_pool", "AdaptiveMaxPool-8"),
    ("openvino.maximum", "Maximum-1"),
    ("onnx.reduce_max", "ReduceMax-13"),
    ("onnx.reduce_max", "ReduceMax-18"),
    ("onnx.reduce_max", "ReduceMax-20"),
    ("onnx.max_pool", "MaxPool-22"),
    ("onnx.global_max_pool", "GlobalMaxPool-22"),
    ("onnx.arg_max", "ArgMax-13"),
    ("onnx.top_k", "TopK-1"),
    ("onnx.top_k", "TopK-24"),
    ("onnx.max_unpool", "MaxUnpool-22"),
    ("onnx.scatter_elements", "ScatterElements-18"),
    ("onnx.scatter_nd", "ScatterND-18"),
    ("openvino.scatter_elements_update", "ScatterElementsUpdate-12"),
    ("openvino.scatter_nd_update", "ScatterNDUpdate-15"),
    ("onnx.max", "Max-8"),
    ("onnx.hardmax", "Hardmax-13"),
    ("onnx.hardmax", "Hardmax-11"),
    ("onnx.max_roi_pool", "MaxRoiPool-22"),
    ("openvino.roi_pooling", "ROIPooling-1"),
    ("onnx.max", "Max-13"),
    ("onnx.roi_align", "RoiAlign-16"),
    ("openvino.roi_align", "ROIAlign-9"),
}
# rows without a gradient: boolean data, integer outputs
NO_GRAD = {"openvino.reduce_logical_or", "onnx.arg_max"}
COLUMNS = ["operator", "spec version", "cases", "backend", "checked", "agree", "jit median"]


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    return subprocess.run([sys.executable, "-m", "jaxmax", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def _table(text: str) -> list[dict[str, str]]:
    """The rows of the tour's table as dicts keyed by column name."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("operator "))
    assert re.split(r"\s{2,}", lines[start].strip()) == COLUMNS
    assert set(lines[start + 1].replace(" ", "")) == {"-"}
    rows = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(COLUMNS), line
        rows.append(dict(zip(COLUMNS, cells, strict=True)))
    return rows


def _case(name: str) -> tour.Case:
    matches = [c for c in tour.default_cases() if c.name == name]
    assert len(matches) == 1, name
    return matches[0]


def test_tour_runs_every_operator_and_all_agree():
    result = _run()
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _table(result.stdout)
    assert {(r["operator"], r["spec version"]) for r in rows} == ROWS
    assert len(rows) == len(ROWS)
    for row in rows:
        assert row["agree"] == "yes", row
        assert row["backend"] in ("cpu", "gpu", "tpu"), row
        checked = row["checked"].split()
        assert checked[:3] == ["values", "jit", "vmap"], row
        # every row but ReduceLogicalOr (bool) and ArgMax (integer output) checks a gradient
        assert ("grad" in checked) == (row["operator"] not in NO_GRAD), row
        assert re.fullmatch(r"\d+(\.\d+)? (us|ms)", row["jit median"]), row
        assert int(row["cases"]) >= 1
    assert sum(int(r["cases"]) for r in rows) == len(tour.default_cases())
    assert "disagree" not in result.stdout.lower().replace("where frameworks disagree", "")
    assert "cases agree" in result.stdout
    # the subprocess has no forced device count: one CPU device, one process
    assert result.stdout.rstrip().splitlines()[-1] == \
        "Ran on 1 process and 1 device (cpu; this is process 0, with 1 of them)."


def test_help_explains_the_tour():
    result = _run("--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert text.startswith("usage: python -m jaxmax")
    for word in ("reduce_max", "reduce_logical_or", "max_pool", "segment_max", "top_k",
                 "adaptive_max_pool", "maximum", "global_max_pool", "arg_max", "max_unpool",
                 "jax.jit", "jax.vmap", "jax.grad", "NumPy", "Exit status", "--verbose", "check"):
        assert word in text, word


def test_unknown_argument_is_a_usage_error():
    with pytest.raises(SystemExit) as info:
        tour.main(["--no-such-flag"])
    assert info.value.code == 2


def _run_tour(cases, **kwargs) -> tuple[int, str, list[dict[str, str]]]:
    out = io.StringIO()
    status = tour.main([], cases=cases, out=out, **kwargs)
    return status, out.getvalue(), _table(out.getvalue())


def test_a_wrong_expected_value_fails_the_tour():
    case = _case("spec example: same_upper, kernel 3, stride 2")
    wrong = np.array(case.expected, copy=True)
    wrong[0, 0, 1, 1] += 1  # 15 -> 16
    good, bad = case, dataclasses.replace(case, expected=wrong)

    status, text, rows = _run_tour([good])
    assert status == 0 and rows[0]["agree"] == "yes", text

    status, text, rows = _run_tour([bad])
    assert status == 1, text
    assert rows[0]["agree"] == "no"
    assert rows[0]["jit median"] == "-"
    assert "DISAGREES openvino.max_pool (MaxPool-1) [spec example: same_upper" in text
    assert "1 of 1 cases disagree" in text


def test_one_bad_case_among_good_ones_fails_only_its_row():
    good = _case("doc: do_not_keepdims, axes [1]")
    lowest_instead_of_zero = np.array([-2, -3.4028235e38], np.float32)
    bad = dataclasses.replace(_case("spec example 1: num_segments 2 < 4, ZERO"),
                              expected=lowest_instead_of_zero)
    status, text, rows = _run_tour([good, bad])
    assert status == 1, text
    agree = {r["operator"]: r["agree"] for r in rows}
    assert agree == {"onnx.reduce_max": "yes", "openvino.segment_max": "no"}


def test_the_wrong_nan_rule_is_caught():
    # The OpenVINO NaN case checked against a reference folding with the ONNX rule (NaN wins):
    # the tour must notice that the two frameworks disagree.
    case = _case("NaN skipped; only -inf/NaN -> lowest")
    onnx_rule = dataclasses.replace(
        case, expected=None,
        reference=lambda d: tour_references.reduce_reference(d, axes=[1], keep=False, rule="onnx"))
    status, text, _ = _run_tour([onnx_rule])
    assert status == 1
    assert "eager:" in text


def test_a_wrong_gradient_is_caught():
    # Right values, but no gradient flows: only the grad check can see it.
    case = _case("spec example: same_lower, kernel 3, stride 2")
    frozen = dataclasses.replace(case, run=lambda x: jax.lax.stop_gradient(case.run(x)))
    status, text, rows = _run_tour([frozen])
    assert status == 1, text
    assert "grad: max abs difference" in text
    assert "eager:" not in text and "jit:" not in text


def test_a_crash_is_reported_not_raised():
    case = _case("spec example 2: num_segments 8 > 4, ZERO")
    broken = dataclasses.replace(
        case, run=lambda x: ov.segment_max(x, np.array([0, 0, 2, 3, 3]), fill_mode="MEDIAN"))
    status, text, rows = _run_tour([broken])
    assert status == 1
    assert rows[0]["agree"] == "no"
    assert "raised ValueError: SegmentMax-16" in text


def test_every_public_operator_is_in_the_tour():
    from jaxmax import onnx as jonnx

    public = {f"openvino.{name}" for name in ov.__all__ if name != "from_node"}
    public |= {f"onnx.{name}" for name in jonnx.__all__ if name != "from_node"}
    assert public == {operator for operator, _ in ROWS}


def test_the_numpy_references_reproduce_the_spec_examples():
    # The loops in tour_references.py are the oracle: on every case with values copied from a
    # spec text they must give those values, every output (independently of jaxmax).
    checked = 0
    for case in tour.default_cases():
        if case.expected is not None:
            expected = case.expected if isinstance(case.expected, tuple) else (case.expected,)
            outputs = case.reference(case.data).outputs
            assert len(outputs) == len(expected), case.name
            for got, want in zip(outputs, expected, strict=True):
                np.testing.assert_array_equal(got, want, strict=True, err_msg=case.name)
            checked += 1
    assert checked >= 40


def test_the_reference_pool_length_agrees_with_the_closed_form():
    # The tour counts windows one by one; tests/pool_oracle.py writes the closed form: two
    # independent readings of the four rounding rules, on every small geometry.
    for size, k, s, d, lo, hi in itertools.product(range(1, 10), range(1, 5), range(1, 5),
                                                    range(1, 4), range(4), range(4)):
        if (k - 1) * d + 1 <= size + lo + hi:
            # the oracle reads OpenVINO's ceil_torch and ONNX's ceil_mode each as written
            for rounding in ("floor", "ceil", "ceil_torch", "onnx_ceil"):
                got = tour_references._pool_length(size, k, s, d, lo, hi, rounding)
                assert got == output_length(size, k, s, d, lo, hi, rounding), (
                    size, k, s, d, lo, hi, rounding)


def test_reference_gradient_routing():
    # Hand-worked: ties share (ReduceMax, SegmentMax), the first maximum takes all (MaxPool).
    data = np.array([[3, 1, 3], [2, 2, 0]], np.float32)
    ref = tour_references.reduce_reference(data, axes=[1], keep=False, rule="openvino")
    np.testing.assert_array_equal(ref.vjp(data, np.array([4, 6])), [[2, 0, 2], [3, 3, 0]])
    pooled = tour_references.pool_reference(data[None, None], kernel=[1, 3], strides=[1, 1],
                                 pads_begin=[0, 0], pads_end=[0, 0], rounding="floor",
                                 auto_pad="explicit")
    cotangent = np.array([4, 6]).reshape(1, 1, 2, 1)
    np.testing.assert_array_equal(pooled.vjp(data[None, None], cotangent),
                                  [[[[4, 0, 0], [6, 0, 0]]]])


def test_reference_gradient_routing_by_winners():
    # TopK: each output's cotangent to the element its index names (ties by index, -0 == +0);
    # ONNX Max: a tie gives each side half; Maximum-1: a tie keeps a.
    data = np.array([[0.0, 2, -0.0, 2]], np.float32)
    top = tour_references.top_k_reference(data, k=3, axis=1, largest=True, nan="top")
    np.testing.assert_array_equal(top.extra[0], [[1, 3, 0]])
    np.testing.assert_array_equal(top.vjp(data, np.array([[1, 10, 100]])), [[100, 1, 0, 10]])
    a, b = np.array([1, 2, 3], np.float32), np.array([1, 5, 0], np.float32)
    ieee = tour_references.maximum_reference(a, b, rule="ieee")
    np.testing.assert_array_equal(ieee.vjp(a, np.array([2, 2, 2])), [1, 0, 2])
    openvino = tour_references.maximum_reference(a, b, rule="openvino")
    np.testing.assert_array_equal(openvino.vjp(a, np.array([2, 2, 2])), [2, 0, 2])
    # MaxUnpool: the overwritten duplicate gets nothing back
    unpool = tour_references.unpool_reference(np.array([[[1.0, 2.0]]]), np.array([[[3, 3]]]),
                                              (1, 1, 4))
    np.testing.assert_array_equal(unpool.value, [[[0, 0, 0, 2]]])
    np.testing.assert_array_equal(unpool.vjp(np.array([[[1.0, 2.0]]]),
                                             np.array([[[5, 6, 7, 8]]])), [[[0, 8]]])
    # AdaptiveMaxPool: overlapping windows (3 -> 2: [0, 2) and [1, 3)) both route to the 9
    pooled = tour_references.adaptive_reference(np.array([[[1.0, 9.0, 4.0]]]), [2])
    np.testing.assert_array_equal(pooled.extra[0], [[[1, 1]]])
    np.testing.assert_array_equal(pooled.vjp(np.array([[[1.0, 9.0, 4.0]]]),
                                             np.array([[[3, 4]]])), [[[0, 7, 0]]])
