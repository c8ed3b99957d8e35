"""Max-scatter on sharded inputs (8 simulated CPU devices, ``tests/conftest.py``): data, indices
and updates sharded along the scatter axis and along another, on ``Explicit`` and ``Auto``
meshes, eagerly and under ``jit``, equal bit for bit to the unsharded answer and the oracle."""

from __future__ import annotations

import functools

import collectives
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from scatter_cases import call
from test_scatter import assert_bits, oracle


@pytest.fixture(params=[AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def mesh(request):
    return jax.make_mesh((2, 4), ("a", "b"), axis_types=(request.param,) * 2)


def _inputs(seed, row_layout):
    rng = np.random.default_rng(seed)
    pool = np.array([np.nan, -0.0, 0.0, 1.0, -1.0, 2.0, -np.inf], np.float32)
    data = rng.choice(pool, (8, 8)).astype(np.float32)
    if row_layout:
        idx = np.broadcast_to(rng.integers(-8, 8, (16, 1)), (16, 8)).copy()
    else:
        idx = rng.integers(-8, 8, (16, 8))
    upd = rng.choice(pool, (16, 8)).astype(np.float32)
    return data, idx.astype(np.int32), upd


SPECS = [P("a", "b"), P("b", None), P(None, "b"), P(("a", "b"), None)]


ELEMENT_FACES = [("se", {}), ("seu", {}), ("seu", {"use_init_val": False})]


@jax.jit
def _element_faces(args):
    """The three faces, each on its own `args`, in one program. One function object for every
    test, so that the row and the element index layouts (the same shapes and shardings, the
    indices traced) share one compile per mesh and spec."""
    return [call(face, *a, **dict(kw)) for (face, kw), a in zip(ELEMENT_FACES, args, strict=True)]


@pytest.mark.parametrize("spec", SPECS, ids=str)
@pytest.mark.parametrize("row_layout", [True, False], ids=["rows", "elements"])
def test_elements_faces_sharded(mesh, spec, row_layout):
    # the three faces on one input: each eagerly (its own program, as a sharded call is), and
    # all three under one jit (one program: the compiles are this test's run time), each call
    # on parameters of its own
    data, idx, upd = _inputs(5, row_layout)
    put = [jax.device_put(a, NamedSharding(mesh, spec)) for a in (data, idx, upd)]
    for (face, kw), out in zip(ELEMENT_FACES, _element_faces([put] * 3), strict=True):
        expected = oracle(face, data, idx, upd, kw)
        plain = call(face, data, idx, upd, **dict(kw))
        assert_bits(plain, expected, f"{face} {kw} plain")
        assert_bits(call(face, *put, **dict(kw)), plain, f"{face} {kw} eager")
        assert_bits(out, plain, f"{face} {kw} jit")


@pytest.mark.parametrize("spec", [P("a", "b"), P("b", None), P(None, "b")], ids=str)
def test_nd_faces_sharded(mesh, spec):
    data, _, _ = _inputs(6, False)
    rng = np.random.default_rng(7)
    idx = rng.integers(-8, 8, (16, 1)).astype(np.int32)
    upd = rng.choice(np.array([np.nan, -0.0, 0.0, 1.0], np.float32), (16, 8))
    put_data = jax.device_put(data, NamedSharding(mesh, spec))
    put_upd = jax.device_put(upd, NamedSharding(mesh, spec))
    put_idx = jax.device_put(idx, NamedSharding(mesh, P(spec[0], None)))
    # both faces under one jit (one program), each call on parameters of its own
    jitted = jax.jit(lambda args: [call(face, *a) for face, a in zip(ND_FACES, args,
                                                                     strict=True)])
    for face, out in zip(ND_FACES, jitted([(put_data, put_idx, put_upd)] * 2), strict=True):
        plain = call(face, data, idx, upd)
        assert_bits(plain, oracle(face, data, idx, upd, {}), f"{face} plain")
        assert_bits(out, plain, f"{face} jit")


ND_FACES = ("snd", "sndu")


# (data, indices, updates) specs; the second and third keep every update on its target's
# device (lowering/scatter/blocks.py: no collective), the third with the data replicated
GRADIENT_LAYOUTS = [(P("a", "b"),) * 3, (P(None, "b"),) * 3, (P(), P(None, "b"), P(None, "b"))]


def _gradient_inputs(row_layout):
    data, idx, upd = _inputs(8, row_layout)
    return np.nan_to_num(data, nan=3.0), idx, np.nan_to_num(upd, nan=3.0)


def _grads(d, i, u):
    return jax.grad(lambda d, u: call("seu", d, i, u).sum(), argnums=(0, 1))(d, u)


@functools.cache
def _plain_gradient(row_layout):
    """The unsharded gradient, once per index layout for every mesh and layout below: the
    indices concrete (closed over, as an eager call has them), one jitted program where the
    eager gradient dispatched each operation around the scatter's program on its own."""
    data, idx, upd = _gradient_inputs(row_layout)
    return tuple(np.asarray(g) for g in jax.jit(lambda d, u: _grads(d, idx, u))(data, upd))


@pytest.mark.parametrize("specs", GRADIENT_LAYOUTS, ids=str)
@pytest.mark.parametrize("row_layout", [True, False], ids=["rows", "elements"])
def test_sharded_gradient(mesh, specs, row_layout):
    put = [jax.device_put(a, NamedSharding(mesh, s))
           for a, s in zip(_gradient_inputs(row_layout), specs, strict=True)]
    sharded = jax.jit(_grads)(*put)
    for a, b in zip(sharded, _plain_gradient(row_layout), strict=True):
        assert_bits(a, b)


NEGATIVE_NAN = np.array(0xFFC00001, np.uint32).view(np.float32)  # sign bit set, payload 1


@pytest.mark.parametrize("spec", [P("a", "b"), P(("a", "b"), None)], ids=str)
def test_untouched_negative_nan_keeps_its_bits(mesh, spec):
    # docs/semantics.md §8.3: a target no update reaches keeps data bit for bit; a sharded
    # float max runs on integer keys, which hold a NaN without its sign
    rng = np.random.default_rng(11)
    data = rng.choice(np.array([1.0, -0.0, 2.0], np.float32), (8, 8))
    data[1::2] = NEGATIVE_NAN  # odd rows: no update reaches them
    data[0, 3] = NEGATIVE_NAN  # and one touched NaN, which every face keeps a NaN
    data[2, 5] = 1e-40  # a subnormal sends the unsharded call through the keys too
    upd = rng.choice(np.array([0.5, -1.0, 3.0], np.float32), (16, 8))
    rows = rng.integers(0, 4, (16, 1)) * 2
    cases = []  # per face: indices and their spec, on the same data and updates
    for face in FACES:
        idx = (np.broadcast_to(rows, (16, 8)) if face in ("se", "seu") else rows)
        cases.append((face, idx.astype(np.int32), spec if face in ("se", "seu")
                      else P(spec[0], None)))
    put_data = jax.device_put(data, NamedSharding(mesh, spec))
    put_upd = jax.device_put(upd, NamedSharding(mesh, spec))
    put_idx = [jax.device_put(idx, NamedSharding(mesh, s)) for _, idx, s in cases]
    # the four faces under one jit (one program, each call on parameters of its own), and
    # each eagerly on its own
    jitted = jax.jit(lambda args: [call(face, *a) for (face, _, _), a in zip(cases, args,
                                                                            strict=True)])
    traced = jitted([(put_data, i, put_upd) for i in put_idx])
    for (face, idx, _), put, jit_out in zip(cases, put_idx, traced, strict=True):
        expected = oracle(face, data, idx, upd, {})
        for context, out in (("plain", call(face, data, idx, upd)),
                             ("eager", call(face, put_data, put, put_upd)),
                             ("jit", jit_out)):
            out = np.asarray(out)
            np.testing.assert_array_equal(out[1::2].view(np.uint32),
                                          data[1::2].view(np.uint32), err_msg=f"{face} {context}")
            assert_bits(out, expected, f"{face} {context}")


FACES = ("se", "seu", "snd", "sndu")


@pytest.mark.parametrize("specs", [(P(None, "b"),) * 3, (P(), P(None, "b"), P(None, "b")),
                                   (P(None, "b"), P(), P())], ids=str)
@pytest.mark.parametrize("face,kw", [("se", {}), ("seu", {}), ("seu", {"use_init_val": False})],
                         ids=["se", "seu", "seu-noinit"])
def test_updates_on_their_targets_device_move_nothing(specs, face, kw):
    """Explicit axes, sharded along the axis the scatter keeps (the columns of a scatter along
    axis 0), any of the three replicated: each device scatters into its own block, the
    unsharded answer bit for bit with no collective in the program."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    data, idx, upd = _inputs(12, False)
    plain = call(face, data, idx, upd, **dict(kw))
    put = [jax.device_put(a, NamedSharding(mesh, s))
           for a, s in zip((data, idx, upd), specs, strict=True)]
    jitted = jax.jit(lambda d, i, u: call(face, d, i, u, **dict(kw)))
    compiled = jitted.lower(*put).compile()  # one compile: run and read
    assert_bits(compiled(*put), plain, "jit")
    text = compiled.as_text()
    assert not collectives.moved(text), [c.kind for c in collectives.moved(text)]


# Sharded along the axis that orders the updates (lowering/scatter/across.py), Explicit axes:
# (data, indices, updates) specs of a scatter along axis 0. Replicated updates with data
# sharded along the scatter axis scatter into each device's block.
ORDER_LAYOUTS = [(P("b"),) * 3, (P(), P("b"), P("b")), (P(("a", "b")),) * 3,
                 (P("a"), P("b"), P("b")), (P(None, "a"), P("b"), P("b")), (P("b"), P(), P()),
                 (P(), P(), P("b"))]
ORDER_DTYPES = (np.float32, np.float16, jnp.bfloat16, np.int32, np.bool_)


def _order_inputs(seed, dtype):
    """A scatter along axis 0 whose every target is reached from several devices' blocks, with
    NaN, -inf, both zeros and subnormals (or small integers) everywhere."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        data, upd = rng.random((8, 4)) < 0.2, rng.random((32, 4)) < 0.2
    elif np.issubdtype(dtype, np.integer):
        data, upd = rng.integers(-4, 4, (8, 4)), rng.integers(-4, 4, (32, 4))
    else:
        pool = np.array([np.nan, -0.0, 0.0, 1.0, -1.0, 2.0, -np.inf, 1e-40, -1e-40], np.float64)
        data, upd = rng.choice(pool, (8, 4)), rng.choice(pool, (32, 4))
    idx = rng.integers(-8, 8, (32, 4)).astype(np.int32)
    idx[:, 3] = np.repeat(np.arange(4), 8) % 2  # column 3: two targets, from every device
    return np.asarray(data).astype(dtype), idx, np.asarray(upd).astype(dtype)


def _runs_that_need_the_order():
    """Column 0 and 1 (4 devices, 2 rows each, all to row 0): the fold restarts at device 1's
    NaN, so 5 on device 0 is lost and 3 on device 2 wins (SEU-12 gives 3, without the order
    5); zeros of both signs on devices 1 and 3 (the earliest, -0, for ScatterNDUpdate-15; the
    last, +0, for SEU-12; +0 for ONNX)."""
    nan, inf = np.nan, np.inf
    upd = np.array([[5, -0.0], [-inf, -inf], [nan, -0.0], [1, -inf],
                    [3, -inf], [-inf, -inf], [-inf, 0.0], [-inf, -inf]], np.float32)
    data = np.full((8, 2), 7, np.float32)
    data[0] = -1
    return data, np.zeros((8, 2), np.int32), upd


def _order_calls(specs, cases):
    """Each (face, kw, args) of `cases` laid out on `specs`, all in one jitted program: the
    unsharded answer bit for bit, and the oracle's."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    put = [[jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(args, specs, strict=True)]
           for _, _, args in cases]
    jitted = jax.jit(lambda all_args: [call(face, *a, **dict(kw)) for (face, kw, _), a in
                                       zip(cases, all_args, strict=True)])
    for (face, kw, args), out in zip(cases, jitted(put), strict=True):
        plain = call(face, *args, **dict(kw))
        context = f"{face} {kw} {args[0].dtype} {specs}"
        assert_bits(plain, oracle(face, *args, kw), context + " plain")
        assert_bits(out, plain, context)


@pytest.mark.parametrize("specs", ORDER_LAYOUTS, ids=str)
def test_sharded_along_the_order_axis(specs):
    """The elements faces on float32 (random, and the runs whose answer needs the devices'
    order) on each layout."""
    cases = [(face, kw, _order_inputs(i, np.float32)) for i, (face, kw) in
             enumerate(ELEMENT_FACES)]
    _order_calls(specs, cases + [(face, kw, _runs_that_need_the_order())
                                 for face, kw in ELEMENT_FACES])


def test_sharded_along_the_order_axis_every_dtype():
    """16-bit floats (their keys hold the zero codes too), integers and bool (one max)."""
    cases = [(face, kw, _order_inputs(10 + i, dtype)) for i, (dtype, (face, kw)) in
             enumerate((d, f) for d in ORDER_DTYPES[1:] for f in ELEMENT_FACES)]
    _order_calls((P("b"),) * 3, cases)


@pytest.mark.parametrize("specs,moves", [((P("b"),) * 3, {"se": 1, "seu": 2}),
                                         ((P("b"), P(), P()), {"se": 0, "seu": 0}),
                                         ((P(), P(), P("b")), {"se": 1, "seu": 2})], ids=str)
@pytest.mark.parametrize("face,kw", ELEMENT_FACES, ids=["se", "seu", "seu-noinit"])
def test_what_the_order_axis_moves(specs, moves, face, kw):
    """One all-reduce of output-sized keys for the ONNX maximum, two (the last NaN's device,
    then the keys) for SEU-12, none with replicated updates."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    put = [jax.device_put(a, NamedSharding(mesh, s))
           for a, s in zip(_order_inputs(0, np.float32), specs, strict=True)]
    text = jax.jit(lambda d, i, u: call(face, d, i, u, **dict(kw))).lower(*put) \
        .compile().as_text()
    kinds = [c.kind for c in collectives.moved(text)]
    assert kinds == ["all-reduce"] * moves[face], kinds


def test_runs_that_need_the_order_give_the_folds():
    """The hand-made runs against the values the contract's folds give (docs/semantics.md
    §8.3), on 4 devices along the scatter axis."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    data, idx, upd = _runs_that_need_the_order()
    put = [jax.device_put(a, NamedSharding(mesh, P("b"))) for a in (idx, upd)]
    want = {"se": [np.nan, 0.0], "seu": [3.0, 0.0]}
    for face, got in (("se", call("se", data, *put)), ("seu", call("seu", data, *put))):
        assert_bits(np.asarray(got)[0], np.array(want[face], np.float32), face)
        assert_bits(np.asarray(got)[1:], data[1:], face)
    nd = call("sndu", data, jax.device_put(np.zeros((8, 1), np.int32),
                                            NamedSharding(mesh, P("b"))), put[1])
    assert_bits(np.asarray(nd)[0], np.array([5.0, -0.0], np.float32), "sndu")


@pytest.mark.parametrize("specs", [(P(), P("b", None), P("b", None)),
                                   (P("b"), P("b", None), P("b", None)),
                                   (P(), P(), P("b", None))], ids=str)
def test_nd_faces_sharded_along_the_index_rows(specs):
    """ScatterND / ScatterNDUpdate-15 with the index tuples and updates sharded along their
    rows: one all-reduce of output-sized keys, the unsharded answer bit for bit (the zero
    codes give ScatterNDUpdate-15's earliest zero whichever device holds it)."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    rng = np.random.default_rng(21)
    pool = np.array([np.nan, -0.0, 0.0, 1.0, -np.inf, 1e-40], np.float32)
    data = rng.choice(pool, (8, 4, 2))
    idx = np.stack([rng.integers(-8, 8, 32), rng.integers(0, 2, 32)], -1).astype(np.int32)
    upd = rng.choice(pool, (32, 2))
    put = [jax.device_put(a, NamedSharding(mesh, s))
           for a, s in zip((data, idx, upd), specs, strict=True)]
    for face in ND_FACES:
        compiled = jax.jit(lambda d, i, u, face=face: call(face, d, i, u)).lower(*put).compile()
        plain = call(face, data, idx, upd)
        assert_bits(plain, oracle(face, data, idx, upd, {}), face)
        assert_bits(compiled(*put), plain, face)
        assert [c.kind for c in collectives.moved(compiled.as_text())] == ["all-reduce"], face


@pytest.mark.parametrize("specs", [(P("b"),) * 3, (P(), P("b"), P("b")), (P("b"), P(), P()),
                                   (P("a", "b"),) * 3], ids=str)
def test_sharded_gradients_keep_zero_signs(specs):
    """Gradients along the scatter axis (and on the partitioner's layout P("a", "b")) with a
    cotangent that holds -0: the unsharded gradient bit for bit (a float gather the partitioner
    split over devices added the parts, and -0 + 0 gave +0). The three faces in one program."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    data, idx, upd = _gradient_inputs(False)
    g = np.random.default_rng(3).standard_normal((8, 8)).astype(np.float32)
    g[::3] = -0.0

    def grads(d, i, u):
        return [jax.vjp(lambda d, u, face=face, kw=kw: call(face, d, i, u, **dict(kw)),
                        d, u)[1](g) for face, kw in ELEMENT_FACES]

    put = [jax.device_put(a, NamedSharding(mesh, s))
           for a, s in zip((data, idx, upd), specs, strict=True)]
    for (face, kw), got, want in zip(ELEMENT_FACES, jax.jit(grads)(*put), grads(data, idx, upd),
                                     strict=True):
        for a, b in zip(got, want, strict=True):
            assert_bits(a, b, f"{face} {kw}")
