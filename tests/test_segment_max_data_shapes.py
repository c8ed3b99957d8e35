"""SegmentMax-16 on the data shapes of the benchmarks: clean, empty segments, NaN (1 in 10,000
and 1 in 100), heavy ties and signed zeros, in both fill modes, through each form of the
lowering (the scatter with the rule's combiner, the public form a JAX without that primitive
takes, and the member count on demand that large inputs use).

Oracles: ``segment_max`` of tests/segment_oracle.py (a NumPy/Python loop from the spec text) for
the values (it does not look at zero signs); for the sign of a zero maximum, IEEE maximum's
``max(-0.0, +0.0) = +0.0`` in either order, which SegmentMax has always returned, written here as
"negative only when no member of the column is +0.0".
"""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest
from helpers import public_forms
from segment_oracle import segment_max

from jaxmax import openvino as jov
from jaxmax._src.lowering import segment

ROWS, COLS, SEGMENTS = 1200, 6, 40
SHAPES = ("clean", "empty", "nan_1e-4", "nan_1e-2", "ties", "signed_zeros")


def _case(shape: str, dtype) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SHAPES.index(shape))
    ids = np.sort(rng.integers(0, SEGMENTS, ROWS))
    x = rng.standard_normal((ROWS, COLS))
    if shape == "empty":  # a quarter of the segments, the first and the last among them
        absent = np.concatenate([[0, SEGMENTS - 1], rng.choice(SEGMENTS, SEGMENTS // 4)])
        ids = np.sort(rng.choice(np.setdiff1d(np.arange(SEGMENTS), absent), ROWS))
    elif shape.startswith("nan"):
        rate = float(shape.split("_")[1])
        x.reshape(-1)[rng.random(x.size) < rate] = np.nan
        x.reshape(-1)[rng.integers(0, x.size, 3)] = np.nan  # some NaN even at 1e-4
        x[ids == 5, 2] = np.nan  # an all-NaN column of a segment
    elif shape == "ties":
        x = rng.integers(-2, 1, (ROWS, COLS)).astype(np.float64)
    elif shape == "signed_zeros":  # non-positive data whose maxima are zeros of either sign
        x = -np.abs(x)
        x[rng.random(x.shape) < 0.05] = 0.0
        x[rng.random(x.shape) < 0.05] = -0.0
        x[ids == 3] = -0.0  # a segment of -0.0 only
    return x.astype(dtype), ids.astype(np.int32)


def _zero_signs(data: np.ndarray, ids: np.ndarray, want: np.ndarray, fill: str) -> np.ndarray:
    """Expected sign bits of the zeros of `want`: +0.0 for an empty segment's ZERO fill, and for
    a zero maximum -0.0 only when no member of that column is +0.0."""
    signs = np.zeros(want.shape, bool)
    for seg in range(want.shape[0]):
        members = data[ids == seg]
        if members.size:
            plus = ((members == 0) & ~np.signbit(members)).any(axis=0)
            signs[seg] = (want[seg] == 0) & ~plus
    return signs


@pytest.fixture(params=["combiner", "public", "count-on-demand"])
def form(request, monkeypatch):
    """The scatter with the rule's combiner (members counted always, as for inputs this small),
    the public masked form, and the combiner with members counted only when an output is
    lowest(T) (the form of inputs over `segment._COUNT_ALWAYS_ROWS` rows)."""
    if request.param == "public":  # the private scatter's fallback (helpers.public_forms)
        with public_forms():
            yield request.param
        return
    jax.clear_caches()  # the jitted lowering must trace again with the chosen form
    if request.param == "count-on-demand":
        monkeypatch.setattr(segment, "_COUNT_ALWAYS_ROWS", 0)
    yield request.param
    jax.clear_caches()


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16], ids=["f32", "bf16"])
def test_data_shapes_against_oracle(form, dtype):
    for shape in SHAPES:
        data, ids = _case(shape, dtype)
        for fill in ("ZERO", "LOWEST"):
            got = np.asarray(jov.segment_max(data, ids, SEGMENTS, fill_mode=fill))
            want = segment_max(data, ids, SEGMENTS, fill)
            context = f"{form} {shape} {fill}"
            assert got.dtype == want.dtype, context
            np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64),
                                          err_msg=context)
            zeros = want == 0
            np.testing.assert_array_equal(np.signbit(got.astype(np.float32))[zeros],
                                          _zero_signs(data, ids, want, fill)[zeros],
                                          err_msg=f"{context}: zero signs")


def test_signed_zeros_in_either_order(form):
    # Hand-written: +0.0 wins over -0.0 whichever comes first; -0.0 alone stays -0.0, also
    # next to a NaN; an empty segment under ZERO is +0.0.
    data = np.array([[-0.0, 0.0, -0.0], [0.0, -0.0, np.nan], [-0.0, -0.0, -0.0]], np.float32)
    ids = np.array([0, 0, 2], np.int32)
    got = np.asarray(jov.segment_max(data, ids, 4, fill_mode="ZERO"))
    np.testing.assert_array_equal(np.signbit(got), [[False, False, True], [False] * 3,
                                                    [True] * 3, [False] * 3])
