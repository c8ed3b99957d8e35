"""Max-scatter on sharded inputs (8 simulated CPU devices, ``tests/conftest.py``): data, indices
and updates sharded along the scatter axis and along another, on ``Explicit`` and ``Auto``
meshes, eagerly and under ``jit``, equal bit for bit to the unsharded answer and the oracle."""

from __future__ import annotations

import functools

import collectives
import jax
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


@pytest.mark.parametrize("spec", SPECS, ids=str)
@pytest.mark.parametrize("row_layout", [True, False], ids=["rows", "elements"])
def test_elements_faces_sharded(mesh, spec, row_layout):
    # the three faces on one input: each eagerly (its own program, as a sharded call is), and
    # all three under one jit (one program: the compiles are this test's run time), each call
    # on parameters of its own
    data, idx, upd = _inputs(5, row_layout)
    put = [jax.device_put(a, NamedSharding(mesh, spec)) for a in (data, idx, upd)]
    jitted = jax.jit(lambda args: [call(face, *a, **dict(kw))
                                   for (face, kw), a in zip(ELEMENT_FACES, args, strict=True)])
    for (face, kw), out in zip(ELEMENT_FACES, jitted([put] * 3), strict=True):
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
    """The unsharded gradient, once per index layout for every mesh and layout below."""
    return tuple(np.asarray(g) for g in _grads(*_gradient_inputs(row_layout)))


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
