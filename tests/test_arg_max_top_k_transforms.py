"""The JAX transformation contract of ONNX ArgMax / TopK and OpenVINO TopK (docs/semantics.md §6.6):
jit equals eager, vmap equals a loop (batch axis first and in the middle), ``check_grads`` on the
TopK values, the TopK gradient is the scatter of the cotangent at the returned indices (ties and
signed zeros follow the index rule), no retrace on a second call, and sharded inputs (Explicit and
Auto meshes, 8 CPU devices, the arg-max/top-k axis itself sharded too) give the unsharded answer
bit for bit.

Oracles: tests/arg_max_oracle.py (NumPy loops) and cotangents scattered by hand.
"""

from __future__ import annotations

import functools
import warnings

import collectives
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from arg_max_oracle import onnx_arg_max, top_k
from helpers import special_floats, unique_values
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from jax.test_util import check_grads
from test_arg_max_top_k_values import assert_bits, draw
from transform_helpers import loop, retrace_check

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering import arg_max as lowering
from jaxmax._src.lowering import top_k as top_k_lowering


@pytest.fixture(autouse=True)
def _quiet_index_warning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*indices, which JAX stores as int32")
        yield


def data(seed, shape, dtype=np.float32):
    return draw(np.random.default_rng(seed), shape, np.dtype(dtype))


OPS = {
    "onnx_arg_max": lambda x: onnx.arg_max(x, axis=1, keepdims=0),
    "onnx_arg_max_last": lambda x: onnx.arg_max(x, axis=-1, select_last_index=1),
    "onnx_top_k": lambda x: onnx.top_k(x, 3, axis=1),
    "onnx_top_k_smallest": lambda x: onnx.top_k(x, 2, axis=0, largest=0),
    "ov_top_k_max": lambda x: ov.top_k(x, 3, axis=1, mode="max", sort="value"),
    "ov_top_k_min_index": lambda x: ov.top_k(x, 2, axis=-1, mode="min", sort="index"),
}

ORACLES = {
    "onnx_arg_max": lambda x: onnx_arg_max(x, 1, False).astype(np.int32),
    "onnx_arg_max_last": lambda x: onnx_arg_max(x, -1, True, True).astype(np.int32),
    "onnx_top_k": lambda x: _i32(top_k(x, 3, 1, face="onnx", descending=True)),
    "onnx_top_k_smallest": lambda x: _i32(top_k(x, 2, 0, face="onnx", descending=False)),
    "ov_top_k_max": lambda x: _i32(top_k(x, 3, 1, face="openvino", descending=True)),
    "ov_top_k_min_index": lambda x: _i32(top_k(x, 2, -1, face="openvino", descending=False,
                                               by_index=True)),
}


def _i32(pair):
    return pair[0], pair[1].astype(np.int32)


def assert_tree_bits(actual, expected, context=""):
    actual, expected = jax.tree.leaves(actual), jax.tree.leaves(expected)
    assert len(actual) == len(expected), context
    for a, e in zip(actual, expected, strict=True):
        assert_bits(a, e, context)


# --------------------------------------------------------------------------------------------
# jit, vmap, retrace
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_jit_equals_eager_and_oracle(name, dtype):
    x = data(1, (4, 5, 6), dtype)
    expected = ORACLES[name](x)
    assert_tree_bits(OPS[name](x), expected, f"{name} eager")
    assert_tree_bits(jax.jit(OPS[name])(x), expected, f"{name} jit")


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("batch_axis", [0, 1])
def test_vmap_equals_loop(name, batch_axis):
    xs = data(2, (3, 4, 5, 6) if batch_axis == 0 else (4, 3, 5, 6))
    got = jax.vmap(OPS[name], in_axes=batch_axis)(xs)
    expected = jax.tree.map(lambda *leaves: np.stack(leaves),
                            *[OPS[name](np.take(xs, i, axis=batch_axis))
                              for i in range(xs.shape[batch_axis])])
    assert_tree_bits(got, expected, name)
    if name == "onnx_arg_max":  # loop() on a single-array op, as the other transform tests do
        assert_bits(got, loop(OPS[name], xs, batch_axis).astype(np.int32))


def test_no_retrace():
    x = data(3, (4, 5, 6))
    retrace_check(lambda: onnx.top_k(x, 3, axis=1), lambda: onnx.top_k(x + 1, 3, axis=1),
                  lambda: onnx.top_k(x, 2, axis=1))
    retrace_check(lambda: onnx.arg_max(x, axis=1), lambda: onnx.arg_max(-x, axis=1),
                  lambda: onnx.arg_max(x, axis=2))
    retrace_check(lambda: ov.top_k(x, 2, axis=0, mode="max", sort="index"),
                  lambda: ov.top_k(x - 1, 2, axis=0, mode="MAX", sort="INDEX"),
                  lambda: ov.top_k(x, 2, axis=0, mode="min", sort="index"))


def test_jaxpr_holds_the_intended_top_k(monkeypatch):
    """Ascending order: one ``top_k`` of the key. float32 descending over the last axis: the
    plain ``top_k`` and, under a ``cond``, the key's (taken when the data hold NaN or a zero is
    selected), but on inputs of at most ``top_k.SMALL_BYTES`` the key's only; over a moved
    axis: the key's only (computed inside the transpose)."""
    x = data(4, (5, 6))
    ascending = str(jax.make_jaxpr(lambda v: onnx.top_k(v, 3, axis=0, largest=0))(x))
    assert ascending.count("top_k[") == 1 and "cond[" not in ascending
    small = str(jax.make_jaxpr(lambda v: onnx.top_k(v, 3, axis=1))(x))
    assert small.count("top_k[") == 1 and "cond[" not in small
    monkeypatch.setattr(top_k_lowering, "SMALL_BYTES", 0)
    jax.clear_caches()  # the path is chosen while tracing
    descending = str(jax.make_jaxpr(lambda v: onnx.top_k(v, 3, axis=1))(x))
    monkeypatch.undo()
    jax.clear_caches()
    assert descending.count("top_k[") == 2 and descending.count("cond[") == 1
    moved = str(jax.make_jaxpr(lambda v: onnx.top_k(v, 3, axis=0))(x))
    assert moved.count("top_k[") == 1 and "cond[" not in moved
    assert "argmax" not in str(jax.make_jaxpr(lambda v: onnx.arg_max(v, axis=1))(x))


# --------------------------------------------------------------------------------------------
# Gradients of the TopK values
# --------------------------------------------------------------------------------------------

GRAD_OPS = {
    "onnx": lambda x: onnx.top_k(x, 3, axis=1)[0],
    "onnx_smallest": lambda x: onnx.top_k(x, 2, axis=0, largest=0)[0],
    "ov_value": lambda x: ov.top_k(x, 3, axis=-1, mode="max", sort="value")[0],
    "ov_index": lambda x: ov.top_k(x, 2, axis=1, mode="min", sort="index")[0],
}


@pytest.mark.parametrize("name", sorted(GRAD_OPS))
def test_check_grads(name):
    x = unique_values(np.random.default_rng(5), (3, 4, 5)).astype(np.float32)
    check_grads(GRAD_OPS[name], (x,), order=1, modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)


def scatter_at(shape, axis, indices, ct):
    """The cotangent `ct` sent to the elements `indices` names along `axis` (a NumPy loop)."""
    out = np.zeros(shape, ct.dtype)
    moved_out = np.moveaxis(out, axis, -1)
    moved_i = np.moveaxis(indices, axis, -1)
    moved_ct = np.moveaxis(ct, axis, -1)
    for pos in np.ndindex(moved_i.shape[:-1]):
        for j, i in enumerate(moved_i[pos]):
            moved_out[pos + (int(i),)] += moved_ct[pos + (j,)]
    return out


GRADIENT_FACES = {  # name: (face, descending, by_index)
    "onnx": ("onnx", True, False), "onnx_smallest": ("onnx", False, False),
    "ov_max": ("openvino", True, False), "ov_min_index": ("openvino", False, True),
}


def run_top_k(x, k, axis, face, descending, by_index):
    """The public TopK call of one face and mode (int32 indices without 64-bit mode)."""
    if face == "onnx":
        return onnx.top_k(x, k, axis=axis, largest=int(descending))
    return ov.top_k(x, k, axis=axis, mode="max" if descending else "min",
                    sort="index" if by_index else "value")


def assert_gradient_is_scatter(name, x, k, seed):
    """The pullback of the TopK values (`name` of `GRADIENT_FACES`, along axis 1) sends a random
    cotangent exactly to the elements the oracle's indices name."""
    face, descending, by_index = GRADIENT_FACES[name]
    want_i = top_k(x, k, 1, face=face, descending=descending, by_index=by_index)[1]
    ct = np.random.default_rng(seed).standard_normal(want_i.shape).astype(x.dtype)

    @jax.jit  # one program for the forward pass and the pullback (eager vjp compiles each)
    def grad_of(v, cotangent):
        _, pullback = jax.vjp(lambda u: run_top_k(u, k, 1, face, descending, by_index)[0], v)
        return pullback(cotangent)[0]

    grad = grad_of(jnp.asarray(x), jnp.asarray(ct))
    assert_bits(grad, scatter_at(x.shape, 1, want_i, ct), name)


@pytest.mark.parametrize("name", sorted(GRADIENT_FACES))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16])
def test_gradient_is_scatter_at_indices(name, dtype):
    """Heavy ties, +-0, NaN and +-inf: the cotangent goes exactly where the oracle's indices
    say."""
    x = data(6, (3, 7, 4), dtype)
    x[0, :, 0] = [0.0, -0.0, 0.0, -0.0, 1.0, 1.0, -0.0]  # zero ties
    assert_gradient_is_scatter(name, x, 3 if GRADIENT_FACES[name][1] else 4, 7)


def test_grad_through_jit_and_vmap():
    x = unique_values(np.random.default_rng(8), (2, 3, 6)).astype(np.float32)

    def loss(v):
        return jnp.sum(onnx.top_k(v, 2, axis=-1)[0] ** 2)

    expected = jax.grad(loss)(x)
    np.testing.assert_array_equal(jax.jit(jax.grad(loss))(x), expected)
    np.testing.assert_array_equal(jax.vmap(jax.grad(loss))(x[None])[0], expected)


def test_arg_max_is_integer():
    with pytest.raises(TypeError):
        jax.grad(lambda v: onnx.arg_max(v, axis=0, keepdims=0).sum())(np.ones(3, np.float32))


# --------------------------------------------------------------------------------------------
# Sharding: 8 CPU devices, Explicit and Auto meshes, the arg-max/top-k axis sharded too
# --------------------------------------------------------------------------------------------

@pytest.fixture(params=[AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def axis_type(request):
    return request.param


def sharded_data():
    """(8, 16, 8) float32 with NaN of both signs, +-inf, many ties and selected -0.0s."""
    rng = np.random.default_rng(9)
    x = special_floats(rng, (8, 16, 8), p_nan=0.1, p_ninf=0.1, p_inf=0.05)
    x[np.abs(x) > 5] = np.round(x[np.abs(x) > 5] / 10)  # ties
    x[:, ::3, :] = -0.0  # -0.0 ties with +0.0 and gets selected
    x[:, 1::5, :] = 0.0
    x[1, :, :] = -0.0
    x[2, 4, :] = -np.nan
    return x


LAYOUTS = [  # (mesh shape, names, spec): the op axis is 1 below
    ((8,), ("x",), P(None, "x")),  # the op axis sharded
    ((2, 4), ("a", "b"), P("a", "b")),  # both
    ((2, 4), ("a", "b"), P(None, "a", "b")),  # op axis and the last
]

SHARDED_OPS = {  # name: (function, oracle, op axis, keepdims)
    "onnx_arg_max": (lambda x: onnx.arg_max(x, axis=1),
                     lambda x: onnx_arg_max(x, 1, True).astype(np.int32), 1, True),
    "onnx_arg_max_last_axis": (
        lambda x: onnx.arg_max(x, axis=2, keepdims=0, select_last_index=1),
        lambda x: onnx_arg_max(x, 2, False, True).astype(np.int32), 2, False),
    "onnx_top_k": (lambda x: onnx.top_k(x, 5, axis=1),
                   lambda x: _i32(top_k(x, 5, 1, face="onnx", descending=True)), 1, True),
    "ov_top_k": (lambda x: ov.top_k(x, 6, axis=1, mode="min", sort="index"),
                 lambda x: _i32(top_k(x, 6, 1, face="openvino", descending=False,
                                      by_index=True)), 1, True),
}


def _entry(e):
    return () if e is None else e if isinstance(e, tuple) else (e,)


def _check_sharded(name, spec, mesh, x, axis_type, jitted=None):
    """`name`'s eager call and jitted call on `x` laid out by `spec` against the oracle (and the
    unsharded eager call); `jitted`, when given, is the jitted call's output, computed by the
    caller (`_sharded_jit_outputs`)."""
    xs = jax.device_put(x, NamedSharding(mesh, spec))
    assert len({s.device for s in xs.addressable_shards}) == 8
    fn, oracle, op_axis, keep = SHARDED_OPS[name]
    expected = oracle(x)
    assert_tree_bits(fn(x), expected, f"{name} unsharded")
    for run in (fn, jax.jit(fn) if jitted is None else lambda _: jitted):
        out = run(xs)
        assert_tree_bits(out, expected, f"{name} {spec} {axis_type}")
        if axis_type == AxisType.Explicit:  # the op axis is replicated, the others kept
            full = tuple(spec) + (None,) * (3 - len(spec))
            want = tuple(None if i == op_axis else e for i, e in enumerate(full))
            if "top_k" in name and full[op_axis] is not None:
                # TopK moves the op axis's mesh axes to the first other axis they divide
                # (lowering/top_k_sharded.py): every (8, ., 8) axis divides over 8 devices
                first = 0 if op_axis else 1
                want = tuple(_entry(want[first]) + _entry(full[op_axis]) if i == first else e
                             for i, e in enumerate(want))
                want = tuple(e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in want)
            if not keep:
                want = want[:op_axis] + want[op_axis + 1:]
            for leaf in jax.tree.leaves(out):
                got = tuple(leaf.sharding.spec) + (None,) * (leaf.ndim - len(leaf.sharding.spec))
                assert got == want, (got, want)


def _layout(layout, axis_type):
    mesh_shape, names, spec = LAYOUTS[layout]
    return jax.make_mesh(mesh_shape, names, axis_types=(axis_type,) * len(names)), spec


@functools.cache
def _sharded_jit_outputs(layout, axis_type):
    """Every SHARDED_OPS op jitted on `sharded_data()` laid out by ``LAYOUTS[layout]``, in one
    program per layout and mesh type instead of one per op (each op's eager call on the sharded
    array stays its test's own)."""
    mesh, spec = _layout(layout, axis_type)
    xs = jax.device_put(sharded_data(), NamedSharding(mesh, spec))
    return jax.jit(lambda v: {name: op[0](v) for name, op in SHARDED_OPS.items()})(xs)


@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
@pytest.mark.parametrize("name", sorted(SHARDED_OPS))
def test_sharded_equals_unsharded(name, layout, axis_type):
    """Data with NaN, ties and selected -0.0 (the exact key paths)."""
    mesh, spec = _layout(layout, axis_type)
    _check_sharded(name, spec, mesh, sharded_data(), axis_type,
                   _sharded_jit_outputs(layout, axis_type)[name])


@pytest.fixture
def sized_forms(monkeypatch):
    """The forms chosen by axis and length on these small inputs (``SMALL_BYTES = 0``: ArgMax's
    and TopK's small-input paths are otherwise taken)."""
    monkeypatch.setattr(lowering, "SMALL_BYTES", 0)
    monkeypatch.setattr(top_k_lowering, "SMALL_BYTES", 0)
    jax.clear_caches()  # the form is chosen while tracing
    yield
    jax.clear_caches()


@pytest.mark.parametrize("name", ["onnx_arg_max_last_axis", "onnx_top_k"])
def test_sharded_plain_float_paths(name, axis_type, sized_forms):
    """NaN-free normals: ArgMax's element fold over a last axis of 8 and TopK's plain
    lax.top_k, with the op axis and the last axis sharded, give the unsharded answer too."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    x = np.random.default_rng(10).standard_normal((8, 16, 8)).astype(np.float32)
    _check_sharded(name, P(None, "a", "b"), mesh, x, axis_type)


def test_sharded_arg_max_takes_the_fold(monkeypatch, sized_forms):
    """The (8, 16, 8) arg max over axis 1 above is the fused fold (`_fold_arg_max`): traced
    afresh (the jitted function unwrapped), the fold runs, and the answer is the oracle's."""
    calls = []
    fold = lowering._fold_arg_max
    monkeypatch.setattr(lowering, "_fold_arg_max", lambda *a: calls.append(a) or fold(*a))
    x = sharded_data()
    got = lowering._arg_max_jit.__wrapped__(jnp.asarray(x), axis=1, keepdims=True, last=False,
                                            nan_order="first", index_dtype=np.dtype(np.int32))
    assert len(calls) == 1
    assert_bits(got, onnx_arg_max(x, 1, True).astype(np.int32))


@pytest.mark.parametrize("length", [68, 64, 12])
def test_sharded_lane_and_element_folds(length, axis_type, sized_forms):
    """The float32 arg max over a last axis of 68 (9 runs of 8 lanes, the last overlapping),
    of 64 (8 runs of 8 lanes) and of 12 (element by element) with that axis sharded: normals,
    a NaN after the maximum, an all -0.0/+0.0 row."""
    assert not lowering.lanes(68) and lowering.wide_lanes(68) == 8 and lowering.lanes(64) == 8
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    x = np.random.default_rng(14).standard_normal((8, 4, length)).astype(np.float32)
    _check_sharded("onnx_arg_max_last_axis", P(None, "a", "b"), mesh, x, axis_type)
    x[1, 2, length - 2] = -np.nan
    x[3, 0, length - 1] = np.nan
    x[5, 1, :] = np.where(np.arange(length) % 2, 0.0, -0.0)
    _check_sharded("onnx_arg_max_last_axis", P(None, "a", "b"), mesh, x, axis_type)


def _merge_data():
    """(8, 64, 4) float32 over few values: ties across and within the 8 blocks of the top-k
    axis, NaN of both signs, -0.0 and +0.0 selected."""
    rng = np.random.default_rng(21)
    x = rng.choice(np.array([-2, -1, 0.5, 3], np.float32), size=(8, 64, 4))
    x[rng.random(x.shape) < 0.25] = -0.0
    x[rng.random(x.shape) < 0.1] = 0.0
    x[rng.random(x.shape) < 0.05] = np.nan
    x[rng.random(x.shape) < 0.03] = -np.nan
    x[0] = -0.0  # every element ties
    x[1, :, :] = np.where(np.arange(64)[:, None] % 9 == 4, 3.0, -1.0)  # ties across blocks
    return x


MERGED = {  # name: (function, oracle); each selects at most 8 * 3 candidates of the 64
    "onnx_top_k": (lambda x: onnx.top_k(x, 3, axis=1),
                   lambda x: _i32(top_k(x, 3, 1, face="onnx", descending=True))),
    "onnx_top_k_smallest_unsorted": (
        lambda x: onnx.top_k(x, 2, axis=1, largest=0, sorted=0),
        lambda x: _i32(top_k(x, 2, 1, face="onnx", descending=False))),
    "ov_top_k_min_index": (
        lambda x: ov.top_k(x, 2, axis=1, mode="min", sort="index"),
        lambda x: _i32(top_k(x, 2, 1, face="openvino", descending=False, by_index=True))),
    "ov_top_k_max_value": (
        lambda x: ov.top_k(x, 3, axis=1, mode="max", sort="value"),
        lambda x: _i32(top_k(x, 3, 1, face="openvino", descending=True))),
}


_MERGE_COTANGENT = np.random.default_rng(3).standard_normal((8, 3, 4)).astype(np.float32)


def _values_and_grad(fn):
    """`fn`'s values and indices and the gradient of its values weighted by a fixed cotangent."""
    def run(v):
        out = fn(v)
        weights = _MERGE_COTANGENT[:, :out[0].shape[1]]
        return out, jax.grad(lambda u: jnp.sum(fn(u)[0] * weights))(v)
    return run


@functools.cache
def _unsharded_merge_grads():
    """The unsharded gradient of every MERGED op on `_merge_data()`, in one jitted program (the
    reference of test_top_k_along_its_sharded_axis_merges_candidates, the same for both
    layouts)."""
    x = _merge_data()
    runs = {name: _values_and_grad(fn) for name, (fn, _) in MERGED.items()}
    grads = jax.jit(lambda v: {name: run(v)[1] for name, run in runs.items()})(x)
    return {name: np.asarray(g) for name, g in grads.items()}


@pytest.mark.parametrize("spec", [P(None, "x"), P("x", "x2")], ids=["axis", "both"])
@pytest.mark.parametrize("name", sorted(MERGED))
def test_top_k_along_its_sharded_axis_merges_candidates(name, spec):
    """On Explicit axes, TopK along its sharded axis of 64 (8 blocks of 8, k <= 3) exchanges
    each block's own top candidates with one all-to-all (lowering/top_k_sharded.py) and merges
    them: the oracle's values and indices and the unsharded gradient, bit for bit (ties across
    blocks go to the lower index, NaN and zero signs kept); the output is sharded along the
    batch; nothing is all-gathered (the values' and the gradient's program)."""
    fn, oracle = MERGED[name]
    if spec == P(None, "x"):
        mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    else:  # the batch over "x", the top-k axis over "x2"
        mesh = jax.make_mesh((2, 4), ("x", "x2"), axis_types=(AxisType.Explicit,) * 2)
        spec = P("x", "x2")
    x = _merge_data()
    xs = jax.device_put(x, NamedSharding(mesh, spec))
    compiled = jax.jit(_values_and_grad(fn)).lower(xs).compile()
    (values, indices), grad = compiled(xs)
    assert_tree_bits((values, indices), oracle(x), name)
    assert_bits(grad, _unsharded_merge_grads()[name], f"{name} gradient")
    assert tuple(values.sharding.spec)[:2] == ((tuple(mesh.axis_names) if len(mesh.axis_names)
                                                 > 1 else "x"), None)
    text = compiled.as_text()
    assert "all-to-all" in text and "all-gather" not in text


@pytest.mark.parametrize("length", [256, 264, 65536, 65544])
@pytest.mark.parametrize("last", [False, True])
def test_arg_max_along_its_sharded_axis_combines_narrow_indices(length, last):
    """On Explicit axes ArgMax along its sharded axis combines the blocks' global indices in
    one byte along an axis of at most 256, two up to 65536, the index type past that: ties of
    the maximum in several blocks (at the first and last positions, past 255 and past 65535),
    a NaN maximum, a -0.0/+0.0 tie; the oracle's indices."""
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    rng = np.random.default_rng(length)
    x = rng.uniform(-5, 5, (3, length)).astype(np.float32)
    for p in (0, length // 8 + 3, length - 1, min(300, length - 2), min(70000, length - 3)):
        x[0, p] = 9.0
    x[1, [5, length - 2]] = np.nan
    x[2] = -1.0
    x[2, [length // 2 + 1, length - 1]] = -0.0
    x[2, length // 4] = 0.0
    fn = jax.jit(lambda v: onnx.arg_max(v, axis=1, keepdims=0, select_last_index=int(last)))
    xs = jax.device_put(x, NamedSharding(mesh, P(None, "x")))
    compiled = fn.lower(xs).compile()  # run and read: one compile (a call compiles anew)
    assert_bits(compiled(xs), onnx_arg_max(x, 1, False, last).astype(np.int32))
    wire = "u8" if length <= 256 else "u16" if length <= 65536 else "s32"
    text = compiled.as_text()
    kinds = [c.shape.split("[")[0] for c in collectives.moved(text)]
    assert kinds == ["s32", wire], kinds  # the blocks' best keys, then their indices
