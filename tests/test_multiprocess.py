"""Every public operator on global arrays of a multi-process JAX job, bit for bit.

Each test starts a job on this machine (tests/multiprocess.py): 2 processes of 2 CPU devices,
and 4 processes of 1, gloo collectives, ``jax.distributed.initialize`` on a free localhost port.
Every process runs the checks of tests/multiprocess_worker.py over the table of
tests/multiprocess_cases.py: inputs built with ``jax.make_array_from_callback`` and sharded
along the batch, the channels, the pooled / reduced / top-k / segment / scatter axis, or with
indices and updates sharded, on Explicit and Auto meshes, under ``jax.jit`` (values, indices and
the gradient in one program) and eagerly; each process compares every block of the outputs it
holds bit for bit (zero signs count) with the same block of the case jitted on one device, and
a row passes when it passes in every process. The data hold NaN,
-inf, zeros of both signs and ties.

The job checks the QUICK lists (every public function, each on the layouts where process
boundaries cut its work, within CI's budget); ``JAXMAX_MULTIPROCESS=full`` adds the whole table,
every layout on both axis types and eagerly.
"""

from __future__ import annotations

import json
import os

import multiprocess
import multiprocess_worker
import pytest
from multiprocess_cases import CASES, EAGER_ERRORS, EAGER_QUICK, QUICK, by_name

from jaxmax import onnx
from jaxmax import openvino as ov

FULL = os.environ.get("JAXMAX_MULTIPROCESS") == "full"
LAYOUTS = {"2x2": (2, 2), "4x1": (4, 1)}


def results(finished: list[multiprocess.Finished]) -> list[dict]:
    """The RESULT rows of the job: every process must have printed the same rows (suite, case,
    layout, mesh) in the same order, each judging the blocks of the outputs it holds; a row is
    ok when it is ok in every process, and its message names each process that failed it."""
    per_process = [[json.loads(line.removeprefix("RESULT ")) for line in f.stdout.splitlines()
                    if line.startswith("RESULT ")] for f in finished]
    key = lambda r: (r["suite"], r["case"], r["layout"], r["mesh"])  # noqa: E731
    for f, mine in zip(finished[1:], per_process[1:], strict=True):
        assert [key(r) for r in mine] == [key(r) for r in per_process[0]], \
            f"process {f.process_id} ran other checks than process 0"
    rows = []
    for same in zip(*per_process, strict=True):
        bad = [f"process {f.process_id}: {r['message']}"
               for f, r in zip(finished, same, strict=True) if not r["ok"]]
        rows.append(dict(same[0], ok=not bad, message="; ".join(bad) or None))
    return rows


def _failures(rows: list[dict]) -> list[str]:
    return [f"{r['suite']} {r['mesh']} {r['case']} [{r['layout']}]: {r['message']}"
            for r in rows if not r["ok"]]


@pytest.fixture(scope="module")
def quick_references(tmp_path_factory) -> str:
    """The one-device references of every case of the QUICK lists, computed once in this
    process (each case jitted on one device, tests/multiprocess_worker.py's `references`)
    for every process of both jobs, which would otherwise each compute the same: a file."""
    path = str(tmp_path_factory.mktemp("multiprocess") / "references.pickle")
    names = list(dict.fromkeys(c for q in QUICK.values() for c, _ in q))
    multiprocess_worker.save_references([by_name(n) for n in names], path)
    return path


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_quick_table(layout, quick_references):
    processes, devices = LAYOUTS[layout]
    rows = results(multiprocess.launch(
        processes, devices, [f"references={quick_references}", f"quick-{layout}"], timeout=400))
    expected = len(QUICK[layout]) + len(EAGER_QUICK) + len(EAGER_ERRORS) + (layout == "2x2")
    assert len(rows) == expected
    failures = _failures(rows)
    assert not failures, "\n".join(failures)


# Rows of the whole table known to differ from one device, each with its reason; they must
# fail (a fix makes the test fail until the entry goes), and nothing else may.
KNOWN: dict[tuple[str, str], str] = {}  # none since ReduceMax settles a zero maximum's sign


@pytest.mark.skipif(not FULL, reason="the whole table runs with JAXMAX_MULTIPROCESS=full")
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_full_table(layout):
    processes, devices = LAYOUTS[layout]
    rows = results(multiprocess.launch(processes, devices, ["full"], timeout=3600))
    layouts = sum(len(c.layouts) for c in CASES)
    assert len(rows) >= 3 * layouts
    unknown = _failures([r for r in rows if (r["case"], r["layout"]) not in KNOWN])
    assert not unknown, "\n".join(unknown)
    known = [r for r in rows if (r["case"], r["layout"]) in KNOWN]
    assert {(r["case"], r["layout"]) for r in known} == set(KNOWN), "a KNOWN row never ran"
    assert not any(r["ok"] for r in known), \
        "a known difference is gone: remove it from KNOWN"


def test_quick_lists_reach_every_public_function():
    public = {f"onnx.{n}" for n in onnx.__all__} | {f"openvino.{n}" for n in ov.__all__}
    public -= {"onnx.from_node", "openvino.from_node"}  # binds a node to one of the others
    for layout in LAYOUTS:
        named = {c.split(" ")[0] for c, _ in QUICK[layout]}
        assert named <= public
        if layout == "2x2":
            assert named == public, sorted(public - named)
    for name, layout in [p for q in QUICK.values() for p in q] + EAGER_QUICK:
        assert layout in by_name(name).layouts, (name, layout)
    table = {c.name.split(" ")[0] for c in CASES}
    assert table == public, sorted(public - table)


def test_a_failing_process_fails_the_run_with_every_output():
    with pytest.raises(multiprocess.JobFailed) as info:
        multiprocess.launch(2, 1, ["fail-1"], timeout=60)
    text = str(info.value)
    assert "process 1 (exit 3)" in text and "process 0 (exit 0)" in text
    assert "process 1 was asked to fail" in text
    assert "process 0 did its part" in text


def test_a_hang_fails_the_run_at_its_deadline_with_every_output():
    with pytest.raises(multiprocess.JobFailed) as info:
        multiprocess.launch(2, 1, ["hang-1"], timeout=3)
    text = str(info.value)
    assert "outlived its 3 s deadline" in text
    assert "process 1 (killed at the deadline)" in text and "process 0 (exit 0)" in text
    assert "process 1 waits for ever" in text
