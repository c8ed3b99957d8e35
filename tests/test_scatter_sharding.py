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


def _mesh(axis_type):
    return jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)


@functools.cache
def _plain(face, kw, *arrays):
    """The unsharded eager call of `face` and the oracle's answer on `arrays` (kept as bytes,
    shapes and dtypes: hashable), checked against each other once for every test that reads
    them: (plain answer, oracle answer)."""
    args = [np.frombuffer(b, d).reshape(s) for b, s, d in arrays]
    plain = call(face, *args, **dict(kw))
    expected = oracle(face, *args, dict(kw))
    assert_bits(plain, expected, f"{face} {dict(kw)} plain")
    return np.asarray(plain), expected


def _key(*arrays):
    return tuple((a.tobytes(), a.shape, a.dtype) for a in map(np.asarray, arrays))


def plain_and_oracle(face, kw, *arrays):
    """`_plain` on NumPy arrays."""
    return _plain(face, tuple(sorted(dict(kw).items())), *_key(*arrays))


@functools.cache
def _element_faces_jitted(axis_type, row_layout):
    """The three faces on every spec of `SPECS`, each call on parameters of its own, in one
    jitted program per mesh: {spec: [output per face]}. The indices are traced, so the row and
    the element index layouts (the same shapes and shardings) run one compiled program."""
    mesh = _mesh(axis_type)
    data, idx, upd = _inputs(5, row_layout)
    put = {str(spec): [jax.device_put(a, NamedSharding(mesh, spec)) for a in (data, idx, upd)]
           for spec in SPECS}
    return _element_faces_program(put)


@jax.jit
def _element_faces_program(put):
    return {spec: [call(face, *a, **dict(kw)) for face, kw in ELEMENT_FACES]
            for spec, a in put.items()}


@pytest.mark.parametrize("spec", SPECS, ids=str)
@pytest.mark.parametrize("row_layout", [True, False], ids=["rows", "elements"])
def test_elements_faces_sharded(mesh, spec, row_layout):
    # the three faces on one input: each eagerly (its own program, as a sharded call is), and
    # under jit (every spec of the mesh in one program, `_element_faces_jitted`)
    data, idx, upd = _inputs(5, row_layout)
    put = [jax.device_put(a, NamedSharding(mesh, spec)) for a in (data, idx, upd)]
    axis_type = mesh.axis_types[0]
    jitted = _element_faces_jitted(axis_type, row_layout)[str(spec)]
    for (face, kw), out in zip(ELEMENT_FACES, jitted, strict=True):
        plain, _ = plain_and_oracle(face, kw, data, idx, upd)
        assert_bits(call(face, *put, **dict(kw)), plain, f"{face} {kw} {spec} eager")
        assert_bits(out, plain, f"{face} {kw} {spec} jit")


ND_SPECS = [P("a", "b"), P("b", None), P(None, "b")]


def _nd_inputs():
    data, _, _ = _inputs(6, False)
    rng = np.random.default_rng(7)
    idx = rng.integers(-8, 8, (16, 1)).astype(np.int32)
    upd = rng.choice(np.array([np.nan, -0.0, 0.0, 1.0], np.float32), (16, 8))
    return data, idx, upd


@functools.cache
def _nd_faces_jitted(axis_type):
    """Both faces on every spec of `ND_SPECS` in one jitted program per mesh, each call on
    parameters of its own: {spec: [output per face]}."""
    mesh = _mesh(axis_type)
    data, idx, upd = _nd_inputs()
    put = {str(spec): (jax.device_put(data, NamedSharding(mesh, spec)),
                       jax.device_put(idx, NamedSharding(mesh, P(spec[0], None))),
                       jax.device_put(upd, NamedSharding(mesh, spec))) for spec in ND_SPECS}
    return jax.jit(lambda put: {spec: [call(face, *a) for face in ND_FACES]
                                for spec, a in put.items()})(put)


@pytest.mark.parametrize("spec", ND_SPECS, ids=str)
def test_nd_faces_sharded(mesh, spec):
    data, idx, upd = _nd_inputs()
    jitted = _nd_faces_jitted(mesh.axis_types[0])[str(spec)]
    for face, out in zip(ND_FACES, jitted, strict=True):
        plain, _ = plain_and_oracle(face, {}, data, idx, upd)
        assert_bits(out, plain, f"{face} {spec} jit")


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


@functools.cache
def _sharded_gradients(axis_type, row_layout):
    """The gradient on every layout of `GRADIENT_LAYOUTS` in one jitted program per mesh (the
    indices traced: both index layouts run the one compiled program): {layout: gradients}."""
    mesh = _mesh(axis_type)
    put = {str(specs): [jax.device_put(a, NamedSharding(mesh, s))
                        for a, s in zip(_gradient_inputs(row_layout), specs, strict=True)]
           for specs in GRADIENT_LAYOUTS}
    return _all_grads(put)


@jax.jit
def _all_grads(put):
    return {specs: _grads(*a) for specs, a in put.items()}


@pytest.mark.parametrize("specs", GRADIENT_LAYOUTS, ids=str)
@pytest.mark.parametrize("row_layout", [True, False], ids=["rows", "elements"])
def test_sharded_gradient(mesh, specs, row_layout):
    sharded = _sharded_gradients(mesh.axis_types[0], row_layout)[str(specs)]
    for a, b in zip(sharded, _plain_gradient(row_layout), strict=True):
        assert_bits(a, b, f"{specs} {'rows' if row_layout else 'elements'}")


NEGATIVE_NAN = np.array(0xFFC00001, np.uint32).view(np.float32)  # sign bit set, payload 1


NAN_SPECS = [P("a", "b"), P(("a", "b"), None)]


def _nan_cases(spec):
    """docs/semantics.md §8.3: a target no update reaches keeps data bit for bit; a sharded
    float max runs on integer keys, which hold a NaN without its sign. (data, updates, and per
    face: (face, indices, their spec)), on the same data and updates."""
    rng = np.random.default_rng(11)
    data = rng.choice(np.array([1.0, -0.0, 2.0], np.float32), (8, 8))
    data[1::2] = NEGATIVE_NAN  # odd rows: no update reaches them
    data[0, 3] = NEGATIVE_NAN  # and one touched NaN, which every face keeps a NaN
    data[2, 5] = 1e-40  # a subnormal sends the unsharded call through the keys too
    upd = rng.choice(np.array([0.5, -1.0, 3.0], np.float32), (16, 8))
    rows = rng.integers(0, 4, (16, 1)) * 2
    cases = []
    for face in FACES:
        idx = (np.broadcast_to(rows, (16, 8)) if face in ("se", "seu") else rows)
        cases.append((face, idx.astype(np.int32), spec if face in ("se", "seu")
                      else P(spec[0], None)))
    return data, upd, cases


def _nan_put(mesh, spec):
    data, upd, cases = _nan_cases(spec)
    return (jax.device_put(data, NamedSharding(mesh, spec)),
            [jax.device_put(idx, NamedSharding(mesh, s)) for _, idx, s in cases],
            jax.device_put(upd, NamedSharding(mesh, spec)))


@functools.cache
def _nan_jitted(axis_type):
    """The four faces on every spec of `NAN_SPECS` in one jitted program per mesh, each call on
    parameters of its own: {spec: [output per face]}."""
    mesh = _mesh(axis_type)
    put = {str(spec): _nan_put(mesh, spec) for spec in NAN_SPECS}
    return jax.jit(lambda put: {spec: [call(face, d, i, u) for face, i in
                                       zip(FACES, idx, strict=True)]
                                for spec, (d, idx, u) in put.items()})(put)


@pytest.mark.parametrize("spec", NAN_SPECS, ids=str)
def test_untouched_negative_nan_keeps_its_bits(mesh, spec):
    # each face under jit (`_nan_jitted`: one program per mesh) and eagerly on its own
    data, upd, cases = _nan_cases(spec)
    put_data, put_idx, put_upd = _nan_put(mesh, spec)
    traced = _nan_jitted(mesh.axis_types[0])[str(spec)]
    for (face, idx, _), put, jit_out in zip(cases, put_idx, traced, strict=True):
        plain, expected = plain_and_oracle(face, {}, data, idx, upd)
        for context, out in (("plain", plain),
                             ("eager", call(face, put_data, put, put_upd)),
                             ("jit", jit_out)):
            out = np.asarray(out)
            np.testing.assert_array_equal(out[1::2].view(np.uint32),
                                          data[1::2].view(np.uint32),
                                          err_msg=f"{face} {spec} {context}")
            assert_bits(out, expected, f"{face} {spec} {context}")


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


def _order_cases():
    """{layout id: (specs, [(face, kw, args)])}: the elements faces on float32 (random, and the
    runs whose answer needs the devices' order) on each layout of `ORDER_LAYOUTS`, and the
    16-bit floats, integers and bool on the first."""
    out = {str(specs): (specs, [(face, kw, _order_inputs(i, np.float32))
                                for i, (face, kw) in enumerate(ELEMENT_FACES)]
                        + [(face, kw, _runs_that_need_the_order()) for face, kw in ELEMENT_FACES])
           for specs in ORDER_LAYOUTS}
    out["every dtype"] = ((P("b"),) * 3, [
        (face, kw, _order_inputs(10 + i, dtype)) for i, (dtype, (face, kw)) in
        enumerate((d, f) for d in ORDER_DTYPES[1:] for f in ELEMENT_FACES)])
    return out


# (data, indices, updates) specs -> per face, the all-reduces its program holds
# (`test_what_the_order_axis_moves`)
MOVES = {(P("b"),) * 3: {"se": 1, "seu": 2}, (P("b"), P(), P()): {"se": 0, "seu": 0},
         (P(), P(), P("b")): {"se": 1, "seu": 2}}


def _single(key, specs, index):
    """Whether call `index` of layout `key` (`specs`) in `_order_cases` runs on the program of
    its own that `test_what_the_order_axis_moves` reads (`_one_face_compiled`): the random
    float32 calls on the layouts of `MOVES`."""
    return key != "every dtype" and specs in MOVES and index < len(ELEMENT_FACES)


@functools.cache
def _one_face_compiled(face, kw, specs):
    """`face` (`kw` as sorted items) alone on `specs` over an Explicit mesh, compiled once for
    the float32 shapes of `_order_inputs`: its text is read and the executable runs."""
    mesh = _mesh(AxisType.Explicit)
    put = [jax.device_put(a, NamedSharding(mesh, s))
           for a, s in zip(_order_inputs(0, np.float32), specs, strict=True)]
    return jax.jit(lambda d, i, u: call(face, d, i, u, **dict(kw))).lower(*put).compile()


def _order_put(specs, args):
    mesh = _mesh(AxisType.Explicit)
    return [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(args, specs, strict=True)]


@functools.cache
def _order_jitted():
    """Every call of `_order_cases` on its layout over an Explicit mesh, each call on
    parameters of its own, all in one jitted program but the `_single` ones: {layout id:
    {call index: output}}."""
    groups = {key: (specs, {n: c for n, c in enumerate(cases) if not _single(key, specs, n)})
              for key, (specs, cases) in _order_cases().items()}
    put = {key: {n: _order_put(specs, args) for n, (_, _, args) in cases.items()}
           for key, (specs, cases) in groups.items()}
    return jax.jit(lambda put: {key: {n: call(groups[key][1][n][0], *a,
                                              **dict(groups[key][1][n][1]))
                                      for n, a in calls.items()}
                                for key, calls in put.items()})(put)


def _check_order(key):
    """The calls of layout `key` of `_order_cases`: the unsharded answer bit for bit, and the
    oracle's."""
    specs, cases = _order_cases()[key]
    jitted = _order_jitted()[key]
    for n, (face, kw, args) in enumerate(cases):
        if _single(key, specs, n):
            out = _one_face_compiled(face, tuple(sorted(kw.items())), specs)(
                *_order_put(specs, args))
        else:
            out = jitted[n]
        plain, _ = plain_and_oracle(face, kw, *args)
        assert_bits(out, plain, f"{face} {kw} {args[0].dtype} {specs}")


@pytest.mark.parametrize("specs", ORDER_LAYOUTS, ids=str)
def test_sharded_along_the_order_axis(specs):
    """The elements faces on float32 (random, and the runs whose answer needs the devices'
    order) on each layout (in one program, `_order_jitted`, but the random calls on the
    layouts of `MOVES`, which run the programs of their own that the next test reads)."""
    _check_order(str(specs))


def test_sharded_along_the_order_axis_every_dtype():
    """16-bit floats (their keys hold the zero codes too), integers and bool (one max)."""
    _check_order("every dtype")


@pytest.mark.parametrize("specs", list(MOVES), ids=str)
@pytest.mark.parametrize("face,kw", ELEMENT_FACES, ids=["se", "seu", "seu-noinit"])
def test_what_the_order_axis_moves(specs, face, kw):
    """One all-reduce of output-sized keys for the ONNX maximum, two (the last NaN's device,
    then the keys) for SEU-12, none with replicated updates."""
    text = _one_face_compiled(face, tuple(sorted(kw.items())), specs).as_text()
    kinds = [c.kind for c in collectives.moved(text)]
    assert kinds == ["all-reduce"] * MOVES[specs][face], kinds


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


ZERO_SIGN_LAYOUTS = [(P("b"),) * 3, (P(), P("b"), P("b")), (P("b"), P(), P()),
                     (P("a", "b"),) * 3]


def _cotangent():
    g = np.random.default_rng(3).standard_normal((8, 8)).astype(np.float32)
    g[::3] = -0.0
    return g


def _face_grads(d, i, u):
    return [jax.vjp(lambda d, u, face=face, kw=kw: call(face, d, i, u, **dict(kw)),
                    d, u)[1](_cotangent()) for face, kw in ELEMENT_FACES]


@functools.cache
def _zero_sign_gradients(axis_type):
    """The three faces' gradients on every layout of `ZERO_SIGN_LAYOUTS` (mesh axes of
    `axis_type`) in one jitted program, and the unsharded ones (the indices concrete, closed
    over, as an eager call has them) in another: ({layout id: gradients}, unsharded
    gradients). The data and updates hold NaN, zeros of both signs, ties and -inf."""
    mesh = _mesh(axis_type)
    data, idx, upd = _inputs(8, False)
    put = {str(specs): [jax.device_put(a, NamedSharding(mesh, s))
                        for a, s in zip((data, idx, upd), specs, strict=True)]
           for specs in ZERO_SIGN_LAYOUTS}
    with jax.set_mesh(mesh):
        sharded = jax.jit(lambda put: {k: _face_grads(*a) for k, a in put.items()})(put)
    plain = jax.jit(lambda d, u: _face_grads(d, idx, u))(data, upd)
    return sharded, plain


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto],
                         ids=["explicit", "auto"])
@pytest.mark.parametrize("specs", ZERO_SIGN_LAYOUTS, ids=str)
def test_sharded_gradients_keep_zero_signs(specs, axis_type):
    """Gradients along the scatter axis (and on the partitioner's layout P("a", "b")) with a
    cotangent that holds -0, on data and updates that hold NaN: the unsharded gradient bit for
    bit, on both kinds of mesh axes (a float gather the partitioner split over devices added
    the parts, and -0 + 0 gave +0; on ``Auto`` axes the backward is planned per device,
    lowering/scatter/auto_derivative.py). Every layout's three faces in one program
    (`_zero_sign_gradients`)."""
    sharded, plain = _zero_sign_gradients(axis_type)
    for (face, kw), got, want in zip(ELEMENT_FACES, sharded[str(specs)], plain, strict=True):
        for a, b in zip(got, want, strict=True):
            assert_bits(a, b, f"{face} {kw} {specs}")
