"""Max-scatter on sharded inputs (8 simulated CPU devices, ``tests/conftest.py``): data, indices
and updates sharded along the scatter axis and along another, on ``Explicit`` and ``Auto``
meshes, eagerly and under ``jit``, equal bit for bit to the unsharded answer and the oracle."""

from __future__ import annotations

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


@pytest.mark.parametrize("spec", SPECS, ids=str)
@pytest.mark.parametrize("face,kw", [("se", {}), ("seu", {}), ("seu", {"use_init_val": False})],
                         ids=["se", "seu", "seu-noinit"])
@pytest.mark.parametrize("row_layout", [True, False], ids=["rows", "elements"])
def test_elements_faces_sharded(mesh, spec, face, kw, row_layout):
    data, idx, upd = _inputs(5, row_layout)
    expected = oracle(face, data, idx, upd, kw)
    plain = call(face, data, idx, upd, **dict(kw))
    assert_bits(plain, expected)
    put = [jax.device_put(a, NamedSharding(mesh, spec)) for a in (data, idx, upd)]
    assert_bits(call(face, *put, **dict(kw)), plain, "eager")
    jitted = jax.jit(lambda d, i, u: call(face, d, i, u, **dict(kw)))
    assert_bits(jitted(*put), plain, "jit")


@pytest.mark.parametrize("spec", [P("a", "b"), P("b", None), P(None, "b")], ids=str)
@pytest.mark.parametrize("face", ["snd", "sndu"])
def test_nd_faces_sharded(mesh, spec, face):
    data, _, _ = _inputs(6, False)
    rng = np.random.default_rng(7)
    idx = rng.integers(-8, 8, (16, 1)).astype(np.int32)
    upd = rng.choice(np.array([np.nan, -0.0, 0.0, 1.0], np.float32), (16, 8))
    plain = call(face, data, idx, upd)
    assert_bits(plain, oracle(face, data, idx, upd, {}))
    put_data = jax.device_put(data, NamedSharding(mesh, spec))
    put_upd = jax.device_put(upd, NamedSharding(mesh, spec))
    put_idx = jax.device_put(idx, NamedSharding(mesh, P(spec[0], None)))
    jitted = jax.jit(lambda d, i, u: call(face, d, i, u))
    assert_bits(jitted(put_data, put_idx, put_upd), plain, "jit")


# (data, indices, updates) specs; the second and third keep every update on its target's
# device (lowering/scatter/blocks.py: no collective), the third with the data replicated
GRADIENT_LAYOUTS = [(P("a", "b"),) * 3, (P(None, "b"),) * 3, (P(), P(None, "b"), P(None, "b"))]


@pytest.mark.parametrize("specs", GRADIENT_LAYOUTS, ids=str)
@pytest.mark.parametrize("row_layout", [True, False], ids=["rows", "elements"])
def test_sharded_gradient(mesh, specs, row_layout):
    data, idx, upd = _inputs(8, row_layout)
    data, upd = np.nan_to_num(data, nan=3.0), np.nan_to_num(upd, nan=3.0)

    def grads(d, i, u):
        return jax.grad(lambda d, u: call("seu", d, i, u).sum(), argnums=(0, 1))(d, u)

    plain = grads(data, idx, upd)
    put = [jax.device_put(a, NamedSharding(mesh, s))
           for a, s in zip((data, idx, upd), specs, strict=True)]
    sharded = jax.jit(grads)(*put)
    for a, b in zip(sharded, plain, strict=True):
        assert_bits(a, b)


NEGATIVE_NAN = np.array(0xFFC00001, np.uint32).view(np.float32)  # sign bit set, payload 1


@pytest.mark.parametrize("spec", [P("a", "b"), P(("a", "b"), None)], ids=str)
@pytest.mark.parametrize("face", ["se", "seu", "snd", "sndu"])
def test_untouched_negative_nan_keeps_its_bits(mesh, spec, face):
    # docs/semantics.md §8.3: a target no update reaches keeps data bit for bit; a sharded
    # float max runs on integer keys, which hold a NaN without its sign
    rng = np.random.default_rng(11)
    data = rng.choice(np.array([1.0, -0.0, 2.0], np.float32), (8, 8))
    data[1::2] = NEGATIVE_NAN  # odd rows: no update reaches them
    data[0, 3] = NEGATIVE_NAN  # and one touched NaN, which every face keeps a NaN
    data[2, 5] = 1e-40  # a subnormal sends the unsharded call through the keys too
    upd = rng.choice(np.array([0.5, -1.0, 3.0], np.float32), (16, 8))
    rows = rng.integers(0, 4, (16, 1)) * 2
    idx = (np.broadcast_to(rows, (16, 8)) if face in ("se", "seu") else rows).astype(np.int32)
    idx_spec = spec if face in ("se", "seu") else P(spec[0], None)
    put = [jax.device_put(a, NamedSharding(mesh, s))
           for a, s in ((data, spec), (idx, idx_spec), (upd, spec))]
    expected = oracle(face, data, idx, upd, {})
    for context, out in (("plain", call(face, data, idx, upd)),
                         ("eager", call(face, *put)),
                         ("jit", jax.jit(lambda d, i, u: call(face, d, i, u))(*put))):
        out = np.asarray(out)
        np.testing.assert_array_equal(out[1::2].view(np.uint32), data[1::2].view(np.uint32),
                                      err_msg=context)
        assert_bits(out, expected, context)


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
    assert_bits(jitted(*put), plain, "jit")
    text = jitted.lower(*put).compile().as_text()
    assert not collectives.moved(text), [c.kind for c in collectives.moved(text)]
