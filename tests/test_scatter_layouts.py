"""How the along-axis scatter picks its form for traced indices, against the sequential-fold
oracle: the run-time row check (a row's min against its max) on indices one element away from
row layout, at every position and with extreme, negative and out-of-range values; and the
trace-time shortcut for indices built by a broadcast in the same ``jit``."""

from __future__ import annotations

import contextlib
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scatter_oracle
from helpers import public_forms
from test_scatter import assert_bits

from jaxmax import onnx
from jaxmax._src.lowering.scatter import built as scatter_built
from jaxmax._src.lowering.scatter import max_scatter as lowering

I32 = np.iinfo(np.int32)


@partial(jax.jit, static_argnums=(3, 4))
def _detect(data, indices, updates, axis, rule="maximum"):
    # traced indices, one compile per shape, axis and rule
    return lowering.scatter_along_axis(data, indices, updates, axis, rule, True, "detect")


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_one_element_off_row_layout_takes_the_element_form(axis):
    # a row index repeated along every other axis, then one element changed: the run-time check
    # must see it at the row's first, last or any middle position, whatever the values
    rng = np.random.default_rng(5)
    data_shape = (3, 4, 5)
    size = data_shape[axis]
    shape = tuple(6 if d == axis else n for d, n in enumerate(data_shape))
    view = [1, 1, 1]
    view[axis] = 6
    ids = rng.integers(-size, size, 6).reshape(view)
    base = np.broadcast_to(ids, shape).astype(np.int32)
    data = rng.standard_normal(data_shape).astype(np.float32)
    updates = rng.standard_normal(shape).astype(np.float32)
    flat_positions = [0, base.size - 1] + list(rng.integers(0, base.size, 4))
    for k, flat in enumerate(flat_positions):
        pos = np.unravel_index(flat, shape)
        for value in (I32.min, I32.max, -size, size - 1, size + 7, -size - 1, ids.min() - 1):
            indices = base.copy()
            if indices[pos] == value:
                continue
            indices[pos] = value
            for rule, step in (("maximum", "ieee"), ("acc_gt", "acc_gt")):
                want = scatter_oracle.scatter_elements(data, indices, updates, axis, step)
                got = _detect(data, indices, updates, axis, rule)
                assert_bits(got, want, f"axis {axis} pos {pos} value {value} {rule} ({k})")
    # and unchanged, with out-of-range and extreme ids in whole rows (dropped by the row form)
    ids_bad = ids.copy().reshape(-1)
    ids_bad[:3] = (I32.min, I32.max, size)
    rows = np.broadcast_to(ids_bad.reshape(view), shape).astype(np.int32)
    assert_bits(_detect(data, rows, updates, axis),
                scatter_oracle.scatter_elements(data, rows, updates, axis, "ieee"), "rows")


def test_broadcast_in_the_trace_is_recognised():
    # the shortcut answers for the broadcasts it can read, and only for them
    seen = {}

    def probe(ids, row):
        shape = (ids.shape[0], row.shape[0])
        seen["column"] = scatter_built.constant_off_axis(
            jnp.broadcast_to(ids[:, None], shape), 0)
        seen["converted"] = scatter_built.constant_off_axis(
            jnp.broadcast_to(ids[:, None], shape).astype(jnp.int16), 0)
        seen["row along axis 0"] = scatter_built.constant_off_axis(
            jnp.broadcast_to(row[None, :], shape), 0)
        seen["column along axis 1"] = scatter_built.constant_off_axis(
            jnp.broadcast_to(ids[:, None], shape), 1)
        seen["computed"] = scatter_built.constant_off_axis(
            jnp.broadcast_to(ids[:, None], shape) + 1, 0)
        return ids

    jax.jit(probe)(np.arange(5, dtype=np.int32), np.arange(3, dtype=np.int32))
    assert seen == {"column": True, "converted": True, "row along axis 0": False,
                    "column along axis 1": False, "computed": False}
    assert not scatter_built.constant_off_axis(np.zeros((2, 2), np.int32), 0)


@pytest.mark.parametrize("public", [False, True], ids=["record", "public"])
@pytest.mark.parametrize("axis", [0, 1])
def test_broadcast_indices_in_the_trace_match_the_oracle(axis, public):
    # indices broadcast in the jit along the scatter axis (constant off it: the row form at trace
    # time) and along the other axis (not constant off the scatter axis: it must not take it)
    rng = np.random.default_rng(9)
    data = rng.standard_normal((4, 5)).astype(np.float32)
    updates = rng.standard_normal((4, 5)).astype(np.float32)
    ids = rng.integers(-4, 4, 4).astype(np.int32)
    cols = rng.integers(-4, 4, 5).astype(np.int32)

    def built(d, ids, cols, u):
        column = jnp.broadcast_to(ids[:, None], u.shape)
        row = jnp.broadcast_to(cols[None, :], u.shape)
        return (onnx.scatter_elements(d, column, u, axis=axis, reduction="max"),
                onnx.scatter_elements(d, row, u, axis=axis, reduction="max"))

    # public: the tracer's record not read (and the private scatter not bound): the run-time
    # row check decides, with the same results
    with public_forms() if public else contextlib.nullcontext():
        got_column, got_row = jax.jit(built)(data, ids, cols, updates)
    column = np.broadcast_to(ids[:, None], updates.shape)
    row = np.broadcast_to(cols[None, :], updates.shape)
    for got, idx, label in ((got_column, column, "column"), (got_row, row, "row")):
        want = scatter_oracle.scatter_elements(data, idx, updates, axis, "ieee")
        assert_bits(got, want, f"{label} broadcast, axis {axis}")
