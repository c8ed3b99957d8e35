"""The float flags that ScatterElementsUpdate-12's exact stages branch on (`geometry.when`),
against NumPy reading the bits: each flag is raised (NaN or ``-inf``) whenever its condition
holds (a miss would
skip an exact stage and return a wrong result), on arrays long enough for XLA's vectorised
reductions, with the odd value at the start, in the middle and at the end. And the structure
that keeps the row's compile short: every conditional of the rule asks its flag the same way,
so that XLA compiles one predicate kernel for all of them."""

from __future__ import annotations

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import x64_for

from jaxmax import openvino as ov
from jaxmax._src.lowering.scatter import geometry, rules
from jaxmax._src.lowering.scatter import max_scatter as lowering

SHAPE = (300, 70)  # 21000 elements: the vectorised reductions' main loops and their tails


def _bits(x):
    signed = np.dtype(f"int{8 * x.dtype.itemsize}")
    return x.view(signed)


def _has_nan(x):
    return bool(np.isnan(x).any())


def _has_subnormal(x):
    magnitude = np.abs(x.astype(np.float64)) if x.dtype == np.float32 else np.abs(x)
    return bool(((magnitude > 0) & (magnitude < np.finfo(x.dtype).tiny)).any())


def _has_zero(x):
    return bool((x == 0).any())  # NumPy's compare does not flush subnormals


def _has_neg_zero(x):
    return bool(((x == 0) & (_bits(x) < 0)).any())


def _has_neg_subnormal(x):
    return bool(((x < 0) & (x > -np.finfo(x.dtype).tiny)).any())


def _odd_values(dtype):
    info = np.finfo(dtype)
    sub = dtype.type(1e-40 if dtype == np.float32 else 1e-310)
    return {"nan": dtype.type(np.nan), "-nan": -dtype.type(np.nan), "+0": dtype.type(0.0),
            "-0": dtype.type(-0.0), "subnormal": sub, "-subnormal": -sub,
            "largest subnormal": np.nextafter(info.tiny, dtype.type(0)),
            "smallest normal": info.tiny, "-smallest normal": -info.tiny,
            "inf": dtype.type(np.inf), "-inf": dtype.type(-np.inf), "max": info.max}


def _arrays(dtype):
    rng = np.random.default_rng(3)
    yield "clean", (rng.standard_normal(SHAPE) * 3).astype(dtype)
    for name, value in _odd_values(np.dtype(dtype)).items():
        for where in (0, SHAPE[0] * SHAPE[1] // 2 + 1, SHAPE[0] * SHAPE[1] - 1):
            x = (rng.standard_normal(SHAPE) * 3).astype(dtype)
            x.reshape(-1)[where] = value
            yield f"{name} at {where}", x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_flags_are_nan_when_their_condition_holds(dtype):
    # flags may be raised more often than needed (an exact stage then runs for nothing), never
    # less: each one against the bits; the clean arrays must pass clean, or the fast path would
    # never be taken (checked where the flag is exact)
    with x64_for(dtype):
        flags = {name: jax.jit(getattr(rules, name)) for name in (
            "_odd_flag", "_tiny_flag", "_nan_flag", "_neg_zero_flag", "_subnormal_flag")}
        for context, x in _arrays(dtype):
            got = {name: not f(x) > -np.inf for name, f in flags.items()}
            nan, zero, sub = _has_nan(x), _has_zero(x), _has_subnormal(x)
            assert got["_odd_flag"] == (nan or zero or sub), context
            assert got["_tiny_flag"] >= (zero or sub), context
            if not nan:
                assert got["_tiny_flag"] == (zero or sub), context
            assert got["_nan_flag"] == nan, context  # no infinities of both signs here
            # (1 / x of a tiny negative normal may raise it too: the division is approximate)
            assert got["_neg_zero_flag"] >= (_has_neg_zero(x) or _has_neg_subnormal(x)), context
            assert got["_neg_zero_flag"] >= nan, context
            if context == "clean" or "inf" in context or "max" in context:
                assert not got["_neg_zero_flag"], context
            assert got["_subnormal_flag"] == sub, context


def test_either_and_the_detect_flag():
    nan, zero = np.float32(np.nan), np.float32(0)
    calls = []

    def second(v):
        calls.append(1)
        return v

    either = jax.jit(lambda a, b: geometry.either(a, second, b))
    assert np.isnan(either(nan, zero)) and np.isnan(either(zero, nan))
    assert either(zero, zero) == 0
    flag = jax.jit(geometry.flag)
    assert np.isnan(flag(np.arange(5000) == 4999)) and flag(np.zeros(5000, bool)) == 0
    picked = jax.jit(lambda f: geometry.when(f, lambda: 1, lambda: 2))
    assert picked(nan) == 1 and picked(np.float32(-np.inf)) == 1
    assert picked(zero) == 2 and picked(np.float32(np.inf)) == 2
    assert picked(np.finfo(np.float32).min) == 2


def _cond_predicates(jaxpr, found):
    """The equation that computes each `cond`'s index, found in `jaxpr` and its sub-jaxprs."""
    producers = {}
    for eqn in jaxpr.eqns:
        for out in eqn.outvars:
            producers[out] = eqn
        if eqn.primitive.name == "cond":
            index = producers.get(eqn.invars[0])
            found.append(index)
        for sub in _subjaxprs(eqn):
            _cond_predicates(sub, found)
    return found


def _subjaxprs(eqn):
    for value in eqn.params.values():
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, jax.extend.core.ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, jax.extend.core.Jaxpr):
                yield item


@pytest.mark.parametrize("layout", ["detect", "rows", "elements"])
def test_every_conditional_asks_its_flag_the_same_way(layout):
    # XLA:CPU compiles one kernel per distinct fusion: the row's compile time rests on every
    # conditional of the acc_gt rule having the index convert(not(gt(flag, -inf))) of a float
    # flag
    spec = (jax.ShapeDtypeStruct((10, 4), jnp.float32), jax.ShapeDtypeStruct((30, 4), jnp.int32),
            jax.ShapeDtypeStruct((30, 4), jnp.float32))
    closed = jax.make_jaxpr(lambda d, i, u: lowering.scatter_along_axis(
        d, i, u, 0, "acc_gt", True, layout))(*spec)
    found = _cond_predicates(closed.jaxpr, [])
    assert len(found) >= (5 if layout == "rows" else 8), layout
    for eqn in found:
        assert eqn is not None and eqn.primitive.name == "convert_element_type", eqn
    # behind each convert: not(gt(a float32 scalar, -inf))
    for sub in [closed.jaxpr, *_all_subjaxprs(closed.jaxpr)]:
        producers = {out: e for e in sub.eqns for out in e.outvars}
        for eqn in sub.eqns:
            if eqn.primitive.name == "cond":
                negation = producers[producers[eqn.invars[0]].invars[0]]
                assert negation.primitive.name == "not", negation
                compare = producers[negation.invars[0]]
                assert compare.primitive.name == "gt", compare
                assert compare.invars[0].aval.dtype == np.float32, compare
                assert compare.invars[1].val == -np.inf, compare


def _all_subjaxprs(jaxpr):
    for eqn in jaxpr.eqns:
        for sub in _subjaxprs(eqn):
            yield sub
            yield from _all_subjaxprs(sub)


def test_one_predicate_kernel_in_the_compiled_row():
    # the same, where it counts: the optimised program of SEU-12 on a materialised index
    # holds one distinct predicate computation for all its conditionals
    # at the row's own shapes: on small ones XLA fuses a reduction with its compare
    spec = (jax.ShapeDtypeStruct((100_000, 64), jnp.float32),
            jax.ShapeDtypeStruct((1_000_000, 64), jnp.int32),
            jax.ShapeDtypeStruct((1_000_000, 64), jnp.float32))
    text = jax.jit(lambda d, i, u: ov.scatter_elements_update(d, i, u, 0, reduction="max")).lower(
        *spec).compile().as_text()
    conditionals = [line for line in text.splitlines() if " conditional(" in line]
    assert len(conditionals) >= 8
    predicates = {line.split("conditional(")[1].split(",")[0].strip("%") for line in conditionals}
    bodies = set()
    for name in predicates:
        line = next(x for x in text.splitlines() if f"%{name} = " in x)
        called = line.split("calls=%")[1].split(",")[0]
        start = text.index(f"%{called} ")
        body = text[start:text.index("\n}", start)]
        ops = tuple(x.split(" = ")[1].split("(")[0].split()[-1] for x in body.splitlines()[1:]
                    if " = " in x)
        bodies.add(ops)
    assert len(bodies) == 1, bodies
