"""TopK over long axes, selected by chunk maxima (jaxmax/_src/lowering/top_k_chunked.py), on both
faces, against the NumPy loop oracle of arg_max_oracle.py, at sizes that take that path.

The path must give what one selection over the whole axis gives, so the data stress what it
could get wrong: ties between chunks (equal chunk maxima, a chunk with more copies of the
maximum than the chunks before it), NaN of both signs with payloads, +-0 and subnormals, every
integer key range (int8 keys rank as subnormal float32 bit patterns), ascending and descending
order, index order, an axis before the last, jit, vmap, gradients and sharded inputs.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from arg_max_oracle import top_k
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from jax.test_util import check_grads
from test_arg_max_top_k_transforms import GRADIENT_FACES, assert_gradient_is_scatter
from test_arg_max_top_k_transforms import run_top_k as run
from test_arg_max_top_k_values import assert_bits, draw, dtype_of

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering import top_k_chunked


@pytest.fixture(autouse=True)
def _quiet_index_warning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*indices, which JAX stores as int32")
        yield


# (shape, axis, k): each takes the chunk path (asserted in `_chunked`)
CASES = [((16, 1024), 1, 5), ((2, 2048, 4), 1, 7), ((16384,), 0, 12), ((4, 8, 640), -1, 3),
         ((20, 1000), 1, 1), ((2, 4, 4096), 2, 40)]
DTYPES = ["float32", "float16", "bfloat16", "int8", "uint8", "int16", "uint16", "int32",
          "uint32"]
FACES = [("onnx", True, False), ("onnx", False, False), ("openvino", True, False),
         ("openvino", False, False), ("openvino", True, True), ("openvino", False, True)]


def _chunked(shape, axis, k, dtype=np.float32):
    c = top_k_chunked.chunk_size(shape, axis % len(shape), k, dtype)
    assert c, f"{shape} axis {axis} k {k} does not take the chunk path"
    return c


@functools.partial(jax.jit, static_argnums=(1, 2))
def every_face(x, k, axis):
    """TopK of `x` under every face and mode of FACES, in one program: one compile per
    (shape, dtype, k, axis) instead of one per face (a jitted call inlines the same jitted core
    an eager call runs; jit equals eager is test_axis_before_the_last_and_jit's subject)."""
    return [run(x, k, axis, face, descending, by_index) for face, descending, by_index in FACES]


def check(got, x, k, axis, face, descending, by_index, context="", oracle_rows=None):
    """`got` (values, indices) against the oracle on `x` (or on `oracle_rows`, the distinct
    rows of an `x` whose rows repeat them, broadcast: the oracle treats rows independently)."""
    values, indices = got
    want_v, want_i = top_k(x if oracle_rows is None else oracle_rows, k, axis, face=face,
                           descending=descending, by_index=by_index)
    if oracle_rows is not None:
        want_v = np.broadcast_to(want_v, values.shape)
        want_i = np.broadcast_to(want_i, indices.shape)
    context = f"{context} {face} descending={descending} by_index={by_index}"
    assert_bits(values, want_v, context)
    assert_bits(indices, want_i.astype(np.int32), context)


def check_every_face(x, k, axis, context="", oracle_rows=None):
    for (face, descending, by_index), got in zip(FACES, every_face(x, k, axis), strict=True):
        check(got, x, k, axis, face, descending, by_index, context, oracle_rows)


@pytest.mark.parametrize("dtype", DTYPES)
def test_oracle_heavy_ties_and_specials(dtype):
    """Drawn data: ~45% NaN of both signs (payloads), +-inf, +-0, subnormals and extremes, the
    rest from 0-3 (heavy ties across chunks) and normals."""
    rng = np.random.default_rng(31)
    dt = dtype_of(dtype)
    # the integer keys are one map per width: each integer dtype on every other case, in turn
    # (the signed and unsigned of a width on different halves), the floats on every case
    cases = CASES if dtype.startswith(("float", "bfloat")) else CASES[DTYPES.index(dtype) % 2::2]
    for shape, axis, k in cases:
        _chunked(shape, axis, k, dt)
        x = draw(rng, shape, dt)
        check_every_face(x, k, axis, f"{dtype} {shape} axis {axis} k {k}")


def _tie_rows():
    """Float32 rows of 2048 (chunks of 16 for k=5) that only a correct tie rule gets right."""
    n = 2048
    rows = {"all equal": np.full(n, 1.5, np.float32),
            "zeros of both signs": np.where(np.arange(n) % 3 == 0, -0.0, 0.0).astype(np.float32)}
    one_per_chunk = np.full(n, -1.0, np.float32)
    one_per_chunk[7::16] = 4.0  # every chunk maximum equal, at its eighth element
    rows["equal chunk maxima"] = one_per_chunk
    crowded = np.full(n, -1.0, np.float32)
    crowded[[1000, 1001, 1002, 1003, 1004]] = 9.0  # a late chunk holding all of the top 5
    crowded[[40, 2040]] = 9.0  # and single copies before and after it
    rows["a crowded late chunk"] = crowded
    nan_everywhere = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    nans = np.array([0x7FC00000, 0xFFC00000, 0xFF800001, 0x7F800002], np.uint32).view(np.float32)
    nan_everywhere[5::16] = nans[np.arange(n // 16) % 4]
    rows["a NaN in every chunk"] = nan_everywhere
    tiny = np.float32(ml_dtypes.finfo(np.float32).smallest_subnormal)
    rows["subnormals and zeros"] = np.array([-tiny, 0.0, tiny, -0.0] * (n // 4), np.float32)
    return rows


@pytest.mark.parametrize("name", sorted(_tie_rows()))
def test_ties_between_chunks(name):
    row = _tie_rows()[name][None]
    x = np.repeat(row, 8, axis=0)  # (8, 2048): 16384 elements, the chunk path
    for k in (1, 5, 20):
        _chunked(x.shape, 1, k)
        check_every_face(x, k, 1, f"{name} k {k}", oracle_rows=row)


def test_axis_before_the_last_and_jit():
    """The chunks are taken along an axis before the last, in place; jit equals eager (every
    face's jitted call in one program, `every_face`)."""
    x = draw(np.random.default_rng(32), (3, 1024, 6), np.dtype(np.float32))
    _chunked(x.shape, 1, 4)
    for (face, descending, by_index), jitted in zip(FACES, every_face(x, 4, 1), strict=True):
        eager = run(x, 4, 1, face, descending, by_index)
        check(eager, x, 4, 1, face, descending, by_index, "axis 1")
        for a, e in zip(jitted, eager, strict=True):
            assert_bits(a, e, f"jit {face} {descending} {by_index}")


@pytest.mark.parametrize("batch_axis", [0, 1])
def test_vmap_equals_the_oracle(batch_axis):
    x = draw(np.random.default_rng(33), (3, 2, 8192), np.dtype(np.float32))
    _chunked((2, 8192), 1, 6)

    def fn(v):
        return onnx.top_k(v, 6, axis=-1)

    out = jax.vmap(fn, in_axes=batch_axis)(x)
    for b in range(x.shape[batch_axis]):
        want_v, want_i = top_k(np.take(x, b, axis=batch_axis), 6, -1, face="onnx",
                               descending=True)
        assert_bits(out[0][b], want_v, f"batch {b}")
        assert_bits(out[1][b], want_i.astype(np.int32), f"batch {b}")


@pytest.mark.parametrize("name", sorted(GRADIENT_FACES))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16])
def test_gradient_is_scatter_at_indices(name, dtype):
    """Heavy ties, +-0, NaN and +-inf along an axis before the last: the cotangent goes exactly
    where the oracle's indices say."""
    x = draw(np.random.default_rng(34), (2, 1024, 8), np.dtype(dtype))
    x[0, :, 0] = np.where(np.arange(1024) % 2, 0.0, -0.0)  # zero ties
    _chunked(x.shape, 1, 4, np.dtype(dtype))
    assert_gradient_is_scatter(name, x, 4, 35)


def test_check_grads():
    """Distinct values 0.002 apart (>> the finite-difference step), the selected ones near zero
    (so their rounding does not swamp the finite differences)."""
    ranks = np.random.default_rng(36).permutation(2 * 2048 * 4).reshape(2, 2048, 4)
    x = (ranks * 0.002).astype(np.float32)
    _chunked(x.shape, 1, 3)
    check_grads(lambda v: ov.top_k(v, 3, axis=1, mode="max", sort="value")[0], (-x,), order=1,
                modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)
    check_grads(lambda v: onnx.top_k(v, 3, axis=1, largest=0)[0], (x,), order=1,
                modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)


def _equations(jaxpr):
    """Every equation of `jaxpr` and of the jaxprs inside its equations."""
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _equations(inner)


def test_jaxpr_holds_two_short_top_k_and_no_branch():
    x = jnp.zeros((4, 4096), np.float32)
    eqns = list(_equations(jax.make_jaxpr(lambda v: onnx.top_k(v, 5, axis=1))(x).jaxpr))
    names = [e.primitive.name for e in eqns]
    assert names.count("top_k") == 2 and "cond" not in names
    lengths = [e.invars[0].aval.shape[-1] for e in eqns if e.primitive.name == "top_k"]
    assert lengths == [4096 // 16, 5 * 16], lengths  # chunk maxima, then the chunks' elements


def _names(entry) -> tuple:
    return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)


def _keeps_the_devices(before: tuple, after: tuple) -> bool:
    """The outputs' layout on Explicit axes (lowering/top_k_sharded.py): the top-k axis (1)
    whole, its mesh axes moved to another axis (never replicated: that would all-gather the
    output), every other axis keeping its own mesh axes first."""
    moved = _names(before[1])
    return (_names(after[1]) == ()
            and all(_names(after[i])[:len(_names(before[i]))] == _names(before[i])
                    for i in (0, 2))
            and sorted(sum((_names(e) for e in after), ())) == sorted(
                sum((_names(e) for e in before), ()))
            and all(any(m in _names(after[i]) for i in (0, 2)) for m in moved))


@functools.cache
def _sharded_case():
    """The data of test_sharded_equals_unsharded and the oracle's answer per face, computed
    once for its four meshes (the NumPy loop oracle is the same for every layout)."""
    x = draw(np.random.default_rng(37), (8, 1024, 4), np.dtype(np.float32))
    x[:, ::7, :] = -0.0
    _chunked(x.shape, 1, 5)
    wants = [top_k(x, 5, 1, face=face, descending=descending, by_index=by_index)
             for face, descending, by_index in FACES]
    return x, wants


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto],
                         ids=["explicit", "auto"])
@pytest.mark.parametrize("spec", [P(None, "a", "b"), P("a", "b")])
def test_sharded_equals_unsharded(axis_type, spec):
    """The top-k axis (1) sharded, with NaN, ties and selected -0.0: bit for bit the oracle; on
    an Explicit mesh the outputs keep the sharding of the other axes, the top-k axis whole and
    its mesh axes moved to another axis (`_keeps_the_devices`). Every face in one jitted
    program (`every_face`): an eager call on the sharded array compiles the operator's own
    jitted core on the same sharded input, the program inlined here (jit equals eager is
    test_axis_before_the_last_and_jit's subject)."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    x, wants = _sharded_case()
    xs = jax.device_put(x, NamedSharding(mesh, spec))
    padded = tuple(spec) + (None,) * (3 - len(spec))
    for (face, descending, by_index), (values, indices), (want_v, want_i) in zip(
            FACES, every_face(xs, 5, 1), wants, strict=True):
        context = f"{spec} {axis_type} {face} {descending} {by_index}"
        assert_bits(values, want_v, context)
        assert_bits(indices, want_i.astype(np.int32), context)
        if axis_type == AxisType.Explicit:
            for out in (values, indices):
                got = tuple(out.sharding.spec) + (None,) * (3 - len(out.sharding.spec))
                assert _keeps_the_devices(padded, got), (context, got, padded)


def test_where_one_selection_is_kept():
    """Short axes, small inputs, a large k or 64-bit keys keep one lax.top_k of the axis."""
    f32 = np.float32
    assert top_k_chunked.chunk_size((64, 256), 1, 2, f32) == 0  # axis under 512
    assert top_k_chunked.chunk_size((1, 4096), 1, 10, f32) == 0  # under 16384 elements
    assert top_k_chunked.chunk_size((256, 1000), 1, 20, f32) == 0  # 125 + 160 of 1000
    assert top_k_chunked.chunk_size((64, 1024), 1, 4, np.float64) == 0
    assert top_k_chunked.chunk_size((256, 1000), 1, 5, f32) == 8
