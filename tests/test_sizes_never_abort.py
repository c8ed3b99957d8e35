"""Sizes that no array can have raise `ValueError` naming the argument that made them, before
anything is built; a merely huge output fails with a Python exception. Both run in a
subprocess, so that a regression to a process abort fails the test instead of killing pytest
(docs/semantics.md §2)."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from helpers import run_python

from jaxmax import openvino as ov

SIZE_SCRIPT = """
    import json, sys
    import numpy as np
    import jax
    from jaxmax import openvino as ov
    x = np.ones((1, 1, 4, 4), np.float32)
    d = np.ones((3,), np.float32)
    cases = {
        "pads_begin 2**40": lambda: ov.max_pool(x, kernel=2, strides=1, pads_begin=2**40),
        "pads_end 2**62": lambda: ov.max_pool(x, kernel=2, strides=2**62, pads_end=2**62),
        "pads 2**30 3-D": lambda: ov.max_pool(np.ones((1, 1, 2, 2, 2), np.int8), kernel=1,
                                             strides=1, pads_begin=2**20, pads_end=2**20),
        "num_segments 2**62": lambda: ov.segment_max(d, [0, 0, 1], 2**62, fill_mode="ZERO"),
        # int8 output of 2**62 bytes exists on paper, its int32 member count (2**64 bytes) not
        "num_segments 2**62 int8": lambda: ov.segment_max(d.astype(np.int8), [0, 0, 1], 2**62,
                                                          fill_mode="ZERO"),
        # (2**62, 0): XLA multiplies extents one by one, so the trailing 0 does not save it
        "num_segments 2**62 empty rows": lambda: ov.segment_max(
            np.ones((3, 0), np.float32), [0, 0, 1], 2**62, fill_mode="LOWEST"),
        "num_segments 2**62 LOWEST": lambda: ov.segment_max(d, [0, 0, 1], 2**62,
                                                            fill_mode="LOWEST"),
        "ids 2**62": lambda: ov.segment_max(d, np.array([0, 0, 2**62]), fill_mode="ZERO"),
        "pads_end 10**6 read": lambda: np.asarray(
            ov.max_pool(x, kernel=2, strides=1, pads_end=10**6)),
        "pads_end 10**6 ceil read": lambda: np.asarray(
            ov.max_pool(x, kernel=3, strides=2, pads_end=10**6, rounding_type="ceil")),
        # huge strides: the same windows as a small one, forward and backward
        "strides 2**40 grad": lambda: jax.grad(
            lambda v: ov.max_pool(v, kernel=2, strides=2**40).sum())(x).sum().item(),
        "strides 2**61 ceil": lambda: np.asarray(ov.max_pool(
            np.arange(4.0, dtype=np.float32).reshape(1, 1, 4), kernel=2, strides=2**61,
            rounding_type="ceil")).tolist(),
        "strides 2**63-1 ceil grad": lambda: jax.grad(lambda v: ov.max_pool(
            v, kernel=3, strides=2**63 - 1, pads_end=2, rounding_type="CEIL").sum())(x).tolist(),
    }
    if jax.config.jax_enable_x64:
        cases["num_segments 2**40 read"] = lambda: np.asarray(
            ov.segment_max(d, [0, 0, 1], 2**40, fill_mode="ZERO"))
    for name, call in cases.items():
        print(json.dumps([name, "start", ""]), flush=True)
        try:
            value = call()
            print(json.dumps([name, "no error", value if isinstance(value, (float, list)) else ""]),
                  flush=True)
        except Exception as err:
            print(json.dumps([name, type(err).__name__, str(err)[:400]]), flush=True)
"""


def _size_rows(x64: bool) -> dict:
    result = run_python(SIZE_SCRIPT, env_x64=x64)
    rows = {}
    for line in result.stdout.strip().splitlines():
        name, kind, message = json.loads(line)
        rows[name] = (kind, message)
    assert result.returncode == 0, (rows, result.stderr[-2000:])  # a process abort
    return rows


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_sizes_never_abort_the_process(x64):
    rows = _size_rows(x64)
    impossible = ["pads_begin 2**40", "pads_end 2**62", "pads 2**30 3-D", "num_segments 2**62",
                  "num_segments 2**62 int8", "num_segments 2**62 empty rows",
                  "num_segments 2**62 LOWEST"]
    # without x64 the id 2**62 is refused before its size is: it would wrap in 32 bits
    impossible += ["ids 2**62"] if x64 else []
    for name in impossible:
        kind, message = rows[name]
        assert kind == "ValueError" and "no array can be that large" in message, (name, rows[name])
        assert message.startswith(("MaxPool-1:", "SegmentMax-16:"))
        if name.startswith("num_segments"):  # the argument that made the size absurd
            assert message.startswith("SegmentMax-16: `num_segments` = 4611686018427387904 "), \
                (name, message)
    if not x64:
        kind, message = rows["ids 2**62"]
        assert kind == "ValueError" and message.startswith("SegmentMax-16: `segment_ids`")
        assert "jax_enable_x64" in message
    huge = ["pads_end 10**6 read", "pads_end 10**6 ceil read"]
    huge += ["num_segments 2**40 read"] if x64 else []
    for name in huge:
        kind, message = rows[name]
        assert kind == "JaxRuntimeError" and "RESOURCE_EXHAUSTED" in message, (name, rows[name])
    assert rows["strides 2**40 grad"] == ("no error", 1.0)  # one window, one cotangent
    assert rows["strides 2**61 ceil"] == ("no error", [[[1.0, float(np.finfo(np.float32).min)]]])
    grad = np.zeros((1, 1, 4, 4))
    grad[0, 0, 0, 0] = 1  # the first window's first maximum; the second window sees padding
    assert rows["strides 2**63-1 ceil grad"] == ("no error", grad.tolist())


def test_more_than_2_31_segments_without_x64():
    if jax.config.jax_enable_x64:
        pytest.skip("x64 mode is on")
    # (n, 0) rows: no memory is needed, only the segment count exceeds int32
    out = ov.segment_max(np.ones((3, 0), np.float32), [0, 0, 1], 2**31 + 5, fill_mode="ZERO")
    assert out.shape == (2**31 + 5, 0)
