"""Max-scatter against the sequential-fold oracle on seeded random cases: ranks 1-4, every axis,
duplicate and negative indices, NaN, ±0, ±inf, subnormals, every dtype the faces allow; eager
(concrete indices) and under ``jit`` (traced indices, the run-time row check); and each layout
of the core (row form, per-element form, run-time detection) on row-layout indices."""

from __future__ import annotations

import functools
import itertools

import jax
import ml_dtypes
import numpy as np
import pytest
import scatter_oracle
from helpers import is_float
from scatter_cases import call
from test_scatter import assert_bits, oracle

from jaxmax._src.lowering.scatter import max_scatter as lowering

FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
DTYPES = FLOATS + INTS + [np.bool_]

# the float pool: ties, both zeros, infinities and NaN on every target
POOL = np.array([-np.inf, -2.0, -1.0, -0.0, 0.0, 1.0, 2.0, np.inf, np.nan])
# subnormals compete only with normal numbers here: XLA's CPU compare flushes them to zero, so
# a subnormal against a zero is not asserted either way
SUBNORMAL_POOL = np.array([-np.inf, -1.0, 1.0, np.nan])


def values(rng, shape, dtype, subnormal=False):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if is_float(dtype):
        pool = SUBNORMAL_POOL if subnormal else POOL
        out = rng.choice(pool, size=shape).astype(dtype)
        if subnormal:
            tiny = ml_dtypes.finfo(dtype).smallest_subnormal
            pick = rng.random(shape)
            out[pick < 0.3] = tiny
            out[(pick >= 0.3) & (pick < 0.5)] = -tiny
            out[(pick >= 0.5) & (pick < 0.6)] = 3 * tiny
        return out
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.max, 0, 1, 2, info.max - 1] + ([-1, -2] if info.min else []))
    return rng.choice(pool, size=shape).astype(dtype)


def elements_case(rng, rank, axis, row_layout):
    data_shape = tuple(int(n) for n in rng.integers(1, 4, rank))
    along = int(rng.integers(0, 6))
    if row_layout:
        shape = tuple(along if d == axis else n for d, n in enumerate(data_shape))
        ids = rng.integers(-data_shape[axis], data_shape[axis], along)
        view = [1] * rank
        view[axis] = along
        indices = np.broadcast_to(ids.reshape(view), shape).copy()
    else:
        shape = tuple(along if d == axis else int(rng.integers(1, n + 1))
                      for d, n in enumerate(data_shape))
        indices = rng.integers(-data_shape[axis], data_shape[axis], shape)
    return data_shape, indices


def nd_case(rng, rank):
    data_shape = tuple(int(n) for n in rng.integers(1, 4, rank))
    k = int(rng.integers(0, rank + 1))
    lead = tuple(int(n) for n in rng.integers(1, 4, int(rng.integers(0, 3))))
    cols = [rng.integers(-data_shape[j], data_shape[j], lead + (1,)) for j in range(k)]
    indices = np.concatenate(cols, -1) if k else np.zeros(lead + (0,), np.int64)
    return data_shape, indices, lead + data_shape[k:]


def x64(dtype):
    return jax.enable_x64(True) if np.dtype(dtype).itemsize == 8 else _null()


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def same_program_either_way(face, data, indices, updates, kw) -> bool:
    """Whether the face lowers to one program whether its indices are concrete or traced: the
    coordinate faces always (`max_scatter.scatter_by_coordinates` has no layout to choose);
    the element faces when `max_scatter.scatter_along_axis` settles the layout itself (data
    of rank 1: the row form; shapes that rule the row form out: the per-element form) or has
    nothing to scatter. Otherwise concrete indices choose the row or the per-element form at
    trace time and traced ones the run-time detection: two programs."""
    if face in ("snd", "sndu"):
        return True
    axis = kw.get("axis", 0) % data.ndim
    return (data.ndim == 1 or data.size == 0 or updates.size == 0
            or not lowering.row_layout_possible(data.shape, indices.shape, axis))


def matches_oracle(cases, traced: bool = True):
    """Each case ``(face, data, indices, updates, kw, label)``: the face with concrete indices
    (closed over, so checked for range and laid out at trace time, as an eager call is) and,
    when `traced`, with traced ones (the run-time row check) equals the sequential-fold oracle
    bit for bit.

    When `traced`, a case that lowers to one program either way (`same_program_either_way`)
    is run with traced indices only: an eager call compiles that very program, its indices an
    argument of the jitted lowering as under ``jit`` (closed over here they would be
    constants, a program no call compiles), and the concrete call would only add its range
    check, on indices drawn in range. Every case and index kind is one jitted program: the
    compiles, one per call when each ran alone, were the test's run time. Each call keeps its
    own parameters, so that no two calls share an operand."""
    kinds = [("concrete",) if not traced else
             ("traced",) if same_program_either_way(face, data, indices, updates, kw) else
             ("concrete", "traced")
             for face, data, indices, updates, kw, _ in cases]
    expected = [oracle(face, data, indices, updates, kw)
                for face, data, indices, updates, kw, _ in cases]

    def run(args):
        return [tuple(call(face, data, indices if kind == "concrete" else passed, updates,
                           **dict(kw)) for kind in case_kinds)
                for (face, _, indices, _, kw, _), (data, passed, updates), case_kinds
                in zip(cases, args, kinds, strict=True)]

    got = jax.jit(run)([(data, indices, updates) for _, data, indices, updates, _, _ in cases])
    for (face, _, _, _, kw, label), want, outs, case_kinds in zip(cases, expected, got, kinds,
                                                                  strict=True):
        for kind, out in zip(case_kinds, outs, strict=True):
            assert_bits(out, want, f"{face} {kw} {kind} indices {label}")


# every rank and axis on one dtype of each kind (float, signed, unsigned, bool); the half
# floats, whose widening is the same at every rank, on ranks 1-2; every other dtype at rank 2
# (compiles dominate the run time)
MAIN = [np.float32, np.int32, np.uint8, np.bool_]
HALF = [np.float16, ml_dtypes.bfloat16]
SWEEP = ([(d, r) for d in MAIN for r in (1, 2, 3, 4)] + [(d, r) for d in HALF for r in (1, 2)]
         + [(d, 2) for d in DTYPES if d not in MAIN + HALF])
sweep = pytest.mark.parametrize("dtype,rank", SWEEP, ids=lambda v: str(np.dtype(v)) if not
                                isinstance(v, int) else f"r{v}")


def sweep_rng(test_seed: int, dtype, rank: int):
    """The generator of one sweep entry: each test, dtype and rank draws its own cases."""
    return np.random.default_rng(test_seed * rank + DTYPES.index(dtype))


@sweep
def test_elements_faces_match_the_oracle(dtype, rank):
    rng = sweep_rng(1000, dtype, rank)
    cases = []
    with x64(dtype):
        for trial in range(2):
            for axis in range(rank):
                data_shape, indices = elements_case(rng, rank, axis, row_layout=trial == 0)
                data = values(rng, data_shape, dtype)
                updates = values(rng, indices.shape, dtype)
                for face, kw in (("se", {}), ("seu", {}), ("seu", {"use_init_val": False})):
                    kw = dict(kw, axis=axis - rank if axis % 2 else axis)
                    cases.append((face, data, indices, updates, kw,
                                  f"{data_shape} {indices.tolist()} {updates.tolist()} "
                                  f"{data.tolist()}"))
        matches_oracle(cases)


@sweep
def test_nd_faces_match_the_oracle(dtype, rank):
    rng = sweep_rng(2000, dtype, rank)
    cases = []
    with x64(dtype):
        for _ in range(3):
            data_shape, indices, upd_shape = nd_case(rng, rank)
            data = values(rng, data_shape, dtype)
            updates = values(rng, upd_shape, dtype)
            for face in ("snd", "sndu"):
                cases.append((face, data, indices, updates, {}, f"{indices.tolist()}"))
        matches_oracle(cases)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_subnormals_against_normal_numbers(dtype):
    rng = np.random.default_rng(7)
    cases = []
    with x64(dtype):
        for trial in range(6):
            data_shape, indices = elements_case(rng, 2, trial % 2, row_layout=trial < 3)
            data = values(rng, data_shape, dtype, subnormal=True)
            updates = values(rng, indices.shape, dtype, subnormal=True)
            for face in ("se", "seu"):
                cases.append((face, data, indices, updates, {"axis": trial % 2}, str(trial)))
            nd_idx = indices.reshape(-1, 1) % data_shape[0]
            nd_upd = values(rng, (nd_idx.shape[0], data_shape[1]), dtype, subnormal=True)
            for face in ("snd", "sndu"):
                cases.append((face, data, nd_idx, nd_upd, {}, str(trial)))
        matches_oracle(cases, traced=False)


LAYOUTS = ("rows", "elements", "detect")


RULES = ("maximum", "acc_gt", "acc_lt")


@pytest.mark.parametrize("use_init", [True, False])
def test_row_and_element_forms_match_the_oracle(use_init):
    # every layout the core can take on row-layout indices (the row form, the per-element form,
    # the run-time detection) against the sequential fold of each rule: each (rank, axis) on
    # two dtypes, in turn, so that every dtype meets every rule without the full cross product
    # of compiles. Integers and bool lower to one program for every rule (one scatter-max:
    # `test_integer_forms_are_one_program_for_every_rule`), so their cases compile once and
    # meet each rule's oracle; the floats' cases compile once per rule
    rng = np.random.default_rng(11)
    dtypes = itertools.cycle((np.float32, np.float16, np.int32, np.bool_))
    cases = []
    for rank in (1, 2, 3):
        for axis in range(rank):
            for dtype in (next(dtypes), next(dtypes)):
                data_shape, indices = elements_case(rng, rank, axis, row_layout=True)
                data = values(rng, data_shape, dtype)
                updates = values(rng, indices.shape, dtype)
                cases.append((rank, axis, dtype, data, indices, updates))
    calls = [(rule, k) for k, (_, _, dtype, *_) in enumerate(cases)
             for rule in (RULES if is_float(np.dtype(dtype)) else RULES[:1])]

    # every call and layout in one jitted program (the lowering is jitted with its layout
    # static: each call alone was one compile)
    def run(args):
        return [[lowering.scatter_along_axis(data, idx, updates, cases[k][1], rule, use_init,
                                             layout)
                 for layout in LAYOUTS]
                for (rule, k), (data, idx, updates) in zip(calls, args, strict=True)]

    got = dict(zip(calls, jax.jit(run)([(cases[k][3], cases[k][4].astype(np.int32), cases[k][5])
                                        for _, k in calls]), strict=True))
    for rule in RULES:
        step = "ieee" if rule == "maximum" else rule
        for k, (rank, axis, dtype, data, indices, updates) in enumerate(cases):
            want = scatter_oracle.scatter_elements(data, indices, updates, axis, step,
                                                   use_init_val=use_init)
            outs = got[rule if is_float(np.dtype(dtype)) else RULES[0], k]
            for layout, out in zip(LAYOUTS, outs, strict=True):
                assert_bits(out, want, f"{layout} {rule} {rank} {axis} {dtype}")


def test_integer_forms_are_one_program_for_every_rule():
    # what lets the integer and bool cases above compile once for the three rules: the same
    # jaxpr (no NaN, no signed zero: every rule is one scatter-max), for every layout
    data, indices = np.zeros((3, 2)), np.array([[0, 0], [2, 2], [0, 0], [1, 1]], np.int32)
    for dtype, use_init, layout in itertools.product((np.int32, np.bool_), (True, False),
                                                     LAYOUTS):
        jaxprs = {str(jax.make_jaxpr(functools.partial(
            lowering.scatter_along_axis, axis=0, rule=rule, use_init=use_init,
            layout=layout))(data.astype(dtype), indices, np.ones((4, 2), dtype)))
            for rule in RULES}
        assert len(jaxprs) == 1, f"{np.dtype(dtype)} {use_init} {layout}"


def test_oracle_steps_are_the_face_folds():
    # the oracle's own steps, on the cases where the faces differ (docs/semantics.md §8.4)
    nan = np.float32(np.nan)
    assert np.isnan(scatter_oracle.step_ieee(np.float32(2), nan))
    assert scatter_oracle.step_acc_gt(nan, np.float32(1)) == 1
    assert np.isnan(scatter_oracle.step_acc_lt(nan, np.float32(1)))
    assert not np.signbit(scatter_oracle.step_ieee(np.float32(-0.0), np.float32(0.0)))
    assert np.signbit(scatter_oracle.step_acc_gt(np.float32(0.0), np.float32(-0.0)))
    assert np.signbit(scatter_oracle.step_acc_lt(np.float32(-0.0), np.float32(0.0)))


@pytest.mark.parametrize("face", ["se", "seu", "snd", "sndu"])
@pytest.mark.parametrize("odd", ["nan", "neg_zero", "subnormal", "subnormal_among_zeros",
                                 "nan_and_zeros"])
def test_odd_values_found_in_a_large_output(face, odd):
    # the check that lets XLA's float scatter-max stand must see one odd value among thousands
    # of outputs: XLA's vectorised CPU min, for one, drops a NaN from arrays this long; zeros
    # of both signs in `updates` send the subnormal check from its float sum to the bits
    rng = np.random.default_rng(17)
    data = (rng.standard_normal((100, 64)) + 5).astype(np.float32)
    updates = (rng.standard_normal((1000, 64)) + 5).astype(np.float32)
    odd_value = {"nan": np.nan, "neg_zero": -0.0, "subnormal": 1e-40,
                 "subnormal_among_zeros": 1e-40, "nan_and_zeros": np.nan}[odd]
    if not odd.startswith("nan"):  # so that the odd update is the result
        data[:, 1] = -1.0
        updates[:, 1] = -1.0
    updates[::7, 1] = odd_value
    if odd.endswith("zeros"):  # zero results, of either sign
        data[:, 2] = updates[:, 2] = -1.0
        updates[::5, 2] = 0.0
        updates[::3, 2] = -0.0
    ids = rng.integers(0, 100, 1000)
    if face in ("se", "seu"):
        indices = np.broadcast_to(ids[:, None], updates.shape).astype(np.int32)
    else:
        indices = ids[:, None].astype(np.int32)
    # eagerly (the jitted lowering, compiled once per face: every odd value has these shapes
    # and row indices) and, on the element faces, under one jit per face (the run-time row
    # check), so each program compiles once for the five. A coordinate face under jit would
    # compile its eager call's program again (`same_program_either_way`: these arguments are
    # too large for the fast options of a small eager call)
    expected = oracle(face, data, indices, updates, {})
    assert_bits(call(face, data, indices, updates), expected, f"{face} eager {odd} in updates")
    if face in ("se", "seu"):
        assert_bits(_traced(face)(data, indices, updates), expected,
                    f"{face} jit {odd} in updates")


@functools.cache
def _traced(face):
    return jax.jit(lambda data, indices, updates: call(face, data, indices, updates))
