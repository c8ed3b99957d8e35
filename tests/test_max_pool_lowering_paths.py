"""The lowering paths of MaxPool (both faces), against the NumPy loop oracles
(tests/pool_oracle.py), exactly, under jit, vmap and grad:

* the value as one scan of the taps (a compare and select per tap, first maximum kept: the
  runtimes' loop), with no NaN check and no redo: ties, signed zeros, NaN, -inf, +inf, lowest(T);
* the interior / border split on strided (phased) axes as well as stride-1 and dilated ones:
  sizes that are and are not multiples of the stride, pads on one or both sides;
* windows of more than 16 taps (3-D k3: 27): the value in one scan, or, strided and on an
  input of more than `pool_stages.CHUNK_BYTES`, in two stages over chunks of planes (W first,
  then D and H, which must keep the one-stage scan's bits, zero signs included); the
  derivative through two stages (the inner axes first), whose composition must give the
  one-stage winners;
* MaxPool-8 indices and ONNX Indices on those paths.

The gradient oracle is the scatter of each window's cotangent to the oracle's index (the first
maximal element; none when the OpenVINO value is lowest(T) or the ONNX window is empty), which
is the rule docs/semantics.md states.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pool_oracle
import pool_oracle_planes
import pytest
from helpers import assert_same, pool_form

from jaxmax import onnx as jonnx
from jaxmax import openvino as jov


@pytest.fixture(autouse=True, scope="module")
def _unrolled():
    """The paths above are the unrolled taps': these inputs are small enough for the compact
    form (tests/test_max_pool_forms.py), which is forced off here (the form is chosen while
    tracing, so JAX's caches are cleared on the way in and out)."""
    with pool_form(compact=False):
        yield

LOW = np.finfo(np.float32).min

# (name, input shape, kernel, strides, dilations, pads_begin, pads_end)
PATHS = [
    ("3d_k3_s2_p1_phased_and_not", (1, 2, 7, 8, 5), (3, 3, 3), (2, 2, 2), (1, 1, 1),
     (1, 1, 1), (1, 1, 1)),
    ("3d_k3_s1_pads_one_side", (1, 1, 4, 5, 4), (3, 3, 3), (1, 1, 1), (1, 1, 1),
     (1, 0, 1), (0, 1, 1)),
    ("2d_k3_s1_p1", (2, 3, 6, 7), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),
    ("2d_k3_s2_p1_stem", (2, 2, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    ("2d_k3_d2_s1_p1", (2, 2, 9, 8), (3, 3), (1, 1), (2, 2), (1, 1), (1, 1)),
    ("2d_k3_d2_s2_p2", (1, 2, 10, 9), (3, 3), (2, 2), (2, 2), (2, 2), (2, 1)),
    # two padded output rows per side of a dilated axis: one slab each, padded taps
    ("2d_k3_d2_s1_p2_slab", (1, 2, 9, 10), (3, 3), (1, 1), (2, 2), (2, 2), (2, 2)),
    ("2d_k5_s1_p2_25_taps", (1, 2, 7, 8), (5, 5), (1, 1), (1, 1), (2, 2), (2, 2)),
]
IDS = [p[0] for p in PATHS]
# the paths also run under vmap and forward mode (the rest: jit and reverse mode only, to keep
# the file's compile time down)
TRANSFORMED = {"3d_k3_s2_p1_phased_and_not", "2d_k3_s1_p1", "2d_k3_d2_s1_p1"}


def _data(shape, seed, specials=True):
    """Values from a small set (many ties), with -0.0 next to 0.0; with `specials`, NaN, -inf,
    +inf and lowest(T) too."""
    rng = np.random.default_rng(seed)
    pool = [-2.0, -1.0, -0.0, 0.0, 1.0, 3.0]
    if specials:
        pool += [np.nan, -np.inf, np.inf, LOW]
    x = np.array(pool, np.float32)[rng.integers(0, len(pool), size=shape)]
    return x


def _ov(x, kernel, strides, dil, pb, pe, indices):
    if indices:
        return jov.max_pool(x, kernel=kernel, strides=strides, dilations=dil, pads_begin=pb,
                            pads_end=pe, opset=8, index_element_type="i32")
    if dil == (1,) * len(kernel):
        return jov.max_pool(x, kernel=kernel, strides=strides, pads_begin=pb, pads_end=pe)
    return jov.max_pool(x, kernel=kernel, strides=strides, dilations=dil, pads_begin=pb,
                        pads_end=pe, opset=8)[0]


def _onnx(x, kernel, strides, dil, pb, pe, indices):
    return jonnx.max_pool(x, kernel_shape=list(kernel), strides=list(strides),
                          dilations=list(dil), pads=list(pb) + list(pe), return_indices=indices)


def _ov_oracle(x, kernel, strides, dil, pb, pe):
    values, indices = pool_oracle.openvino(x, kernel, strides, list(zip(pb, pe, strict=True)),
                                           list(dil))
    return values, indices.astype(np.int32)


def _onnx_oracle(x, kernel, strides, dil, pb, pe):
    values, indices = pool_oracle.onnx(x, list(kernel), list(strides), list(pb) + list(pe),
                                       list(dil))
    return values, indices.astype(np.int32)  # int64 in 64-bit mode only


def _ov_oracle_vectorised(x, kernel, strides, dil, pb, pe):
    """`_ov_oracle` with the scan vectorised over planes (tests/pool_oracle_planes.py), for the
    inputs above `pool_stages.CHUNK_BYTES`, where the loop oracle took seconds."""
    values, indices = pool_oracle_planes.openvino(x, kernel, strides,
                                               list(zip(pb, pe, strict=True)), dil)
    return values, indices.astype(np.int32)


def _onnx_oracle_vectorised(x, kernel, strides, dil, pb, pe):
    """`_onnx_oracle` vectorised the same way."""
    values, indices = pool_oracle_planes.onnx(x, kernel, strides, list(pb) + list(pe), dil)
    return values, indices.astype(np.int32)


def test_vectorised_oracles_equal_the_loop_oracles():
    """The vectorised oracles used on the large inputs below give the loop oracles' values and
    indices, bit for bit (zero signs, NaN), on every path's data and on windows in padding
    only (ONNX: -inf and index -1)."""
    cases = [(name, _data(shape, 30 + i), geometry)
             for i, (name, shape, *geometry) in enumerate(PATHS)]
    cases.append(("padding_only_windows", _data((1, 3, 3), 40),
                  [(2,), (1,), (1,), (3,), (3,)]))
    for name, x, geometry in cases:
        for loop, vectorised in [(_ov_oracle, _ov_oracle_vectorised),
                                 (_onnx_oracle, _onnx_oracle_vectorised)]:
            (want_v, want_i), (got_v, got_i) = loop(x, *geometry), vectorised(x, *geometry)
            assert_same(got_v, want_v, f"{name} {vectorised.__name__} values")
            assert_same(got_i, want_i, f"{name} {vectorised.__name__} indices")


def _grad_oracle(x, ct, values, indices, raised_passes_none):
    """Each window's cotangent added at its index; none where the window has no winner."""
    grad = np.zeros(x.size, np.float64)
    ok = indices >= 0
    if raised_passes_none:
        ok &= values > LOW
    np.add.at(grad, indices[ok].astype(np.int64), ct[ok].astype(np.float64))
    return grad.reshape(x.shape).astype(np.float32)


#: Per face: the call, its oracle, and the seeds of the data (the second input under vmap has
#: no special values on OpenVINO, where the first one's already meet every rule).
FACES = {"openvino": (_ov, _ov_oracle, (1, 2), False), "onnx": (_onnx, _onnx_oracle, (3, 4), True)}


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_values_and_indices_jit_and_vmap(path, face):
    call, oracle, (seed, seed_2), specials_2 = FACES[face]
    _, shape, *geometry = path
    x = _data(shape, seed)
    want_v, want_i = oracle(x, *geometry)
    transformed = path[0] in TRANSFORMED
    # vmap over a leading batch of two inputs
    xs = np.stack([x, _data(shape, seed_2, specials=specials_2)]) if transformed else None

    # The three programs (values and indices; the values alone; their vmap) traced into one
    # jitted call: one compilation instead of three (each is a jitted lowering already, so the
    # separate calls ran the same computations; 15-20% less compile CPU time measured here)
    def programs(v, vs):
        alone = call(v, *geometry, False) if face == "openvino" else None
        batched = jax.vmap(lambda u: call(u, *geometry, True))(vs) if transformed else None
        return call(v, *geometry, True), alone, batched

    (got_v, got_i), alone, batched = jax.jit(programs)(x, xs)
    assert_same(got_v, want_v, "values")
    assert_same(got_i, want_i, "indices")
    if face == "openvino":  # MaxPool-1 (or -8 without its indices read): another program
        assert_same(alone, want_v, "values alone")
    if not transformed:
        return
    bv, bi = (np.asarray(a) for a in batched)  # NumPy: indexing compiled a slice each
    for b in range(2):
        wv, wi = oracle(xs[b], *geometry)
        assert_same(bv[b], wv, f"vmap values {b}")
        assert_same(bi[b], wi, f"vmap indices {b}")


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_openvino_gradient_jit_and_vmap(path):
    """Reverse mode (jit) and forward mode, ties, NaN, -inf and lowest(T) in the data: each
    window's cotangent goes to the oracle's first maximal element, none from a raised window."""
    _, shape, kernel, strides, dil, pb, pe = path
    x = _data(shape, 5)
    want_v, want_i = _ov_oracle(x, kernel, strides, dil, pb, pe)
    ct = np.random.default_rng(6).integers(1, 9, size=want_v.shape).astype(np.float32)

    def f(v):
        return _ov(v, kernel, strides, dil, pb, pe, False)

    grad = jax.grad(lambda v: (f(v) * ct).sum())
    transformed = path[0] in TRANSFORMED
    # forward mode and vmap of the gradient on the paths in TRANSFORMED: a tangent, and a batch
    # of two inputs
    t = np.random.default_rng(7).integers(1, 9, size=shape).astype(np.float32)
    xs = np.stack([x, _data(shape, 8)]) if transformed else None

    # The gradient, the jvp and the vmapped gradient traced into one jitted call: one
    # compilation (outside jit, jax.jvp and vmap(grad) compiled their own programs, vmap(grad)
    # two: the batched forward pass and its transpose; the same computations)
    def programs(v, dv, vs):
        if not transformed:
            return grad(v), None, None
        return grad(v), jax.jvp(f, (v,), (dv,))[1], jax.vmap(grad)(vs)

    got, tangent, grads = jax.jit(programs)(x, t, xs)
    grads = None if grads is None else np.asarray(grads)  # NumPy: indexing compiled a slice
    assert_same(got, _grad_oracle(x, ct, want_v, want_i, True), "grad")
    if not transformed:
        return
    # forward mode: the tangent of each output is the input tangent at its winner
    want_t = np.where(want_v > LOW, t.reshape(-1)[want_i], 0).astype(np.float32)
    assert_same(tangent, want_t, "jvp")
    for b in range(2):
        wv, wi = _ov_oracle(xs[b], kernel, strides, dil, pb, pe)
        assert_same(grads[b], _grad_oracle(xs[b], ct, wv, wi, True), f"vmap grad {b}")


@pytest.mark.parametrize("path", [p for p in PATHS if p[0] in TRANSFORMED],
                         ids=sorted(TRANSFORMED, key=IDS.index))
def test_onnx_gradient(path):
    """The ONNX face on data without NaN: each window's cotangent to its first maximum."""
    _, shape, kernel, strides, dil, pb, pe = path
    x = _data(shape, 9, specials=False)
    want_v, want_i = _onnx_oracle(x, kernel, strides, dil, pb, pe)
    ct = np.random.default_rng(10).integers(1, 9, size=want_v.shape).astype(np.float32)
    got = jax.jit(jax.grad(lambda v: (_onnx(v, kernel, strides, dil, pb, pe, False) * ct)
                           .sum()))(x)
    assert_same(got, _grad_oracle(x, ct, want_v, want_i, False), "grad")


def _values_and_oracle(face, x, kernel, strides, dil, pb, pe):
    """The face's pooled values of `x` and its oracle's (vectorised for a large `x`)."""
    large = x.size > 1 << 16
    if face == "openvino":
        oracle = _ov_oracle_vectorised if large else _ov_oracle
        return (_ov(x, kernel, strides, dil, pb, pe, False),
                oracle(x, kernel, strides, dil, pb, pe)[0])
    oracle = _onnx_oracle_vectorised if large else _onnx_oracle
    return (_onnx(x, kernel, strides, dil, pb, pe, False),
            oracle(x, kernel, strides, dil, pb, pe)[0])


@pytest.mark.parametrize("face", ["openvino", "onnx"])
def test_first_zero_is_kept(face):
    """Of -0.0 and +0.0 in one window the first is the value, as OpenVINO, onnxruntime and
    PyTorch return it (and the oracles' scans), on every path: interior, border, phased,
    stride 1, dilated, one scan of 27 taps."""
    x = np.zeros((1, 1, 4, 4, 4), np.float32)
    x[..., ::2] = -0.0  # -0 first along W in every pair, +0 first in the shifted windows
    for kernel, strides, dil, pb, pe in [((3, 3, 3), (2, 2, 2), (1, 1, 1), (1,) * 3, (1,) * 3),
                                         ((1, 1, 2), (1, 1, 1), (1, 1, 1), (0,) * 3, (0,) * 3),
                                         ((1, 3, 3), (1, 1, 1), (1, 2, 2), (0, 2, 2),
                                          (0, 2, 2))]:
        got, want = _values_and_oracle(face, x, kernel, strides, dil, pb, pe)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        assert_same(got, want, str(kernel))
    # the 2x1 case by hand: [-0, +0] -> -0, [+0, -0] -> +0
    pair = np.array([-0.0, 0.0, 0.0, -0.0], np.float32).reshape(1, 1, 4)
    got = (_ov if face == "openvino" else _onnx)(pair, (2,), (2,), (1,), (0,), (0,), False)
    assert np.signbit(np.asarray(got)).tolist() == [[[True, False]]]


def test_large_window_value_is_one_scan_and_gradient_two_stages():
    """27 taps, the unrolled form: the jitted value holds no while loop (one scan); its
    gradient does (the first stage of the two-stage derivative kept in memory), and both match
    the oracle on data made of ties only."""
    shape, kernel = (1, 1, 6, 6, 6), (3, 3, 3)
    x = np.random.default_rng(11).integers(0, 2, size=shape).astype(np.float32)

    def f(v):
        return jov.max_pool(v, kernel=kernel, strides=(2,) * 3, pads_begin=(1,) * 3,
                            pads_end=(1,) * 3)

    value_hlo = jax.jit(f).lower(x).as_text()
    assert "while" not in value_hlo
    grad = jax.jit(jax.grad(lambda v: f(v).sum()))
    assert "while" in grad.lower(x).as_text()
    want_v, want_i = _ov_oracle(x, kernel, (2,) * 3, (1,) * 3, (1,) * 3, (1,) * 3)
    assert_same(f(x), want_v)
    ones = np.ones(want_v.shape, np.float32)
    assert_same(grad(x), _grad_oracle(x, ones, want_v, want_i, True))
    assert_same(jnp.asarray(f(x)), want_v)


# More than pool_stages.CHUNK_BYTES (2 MiB): 30 planes of 8x34x66 float32, two chunks of 15
# (the two stages' condition, checked in the test).
CHUNKED = ((3, 10, 8, 34, 66), (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1))


def test_chunked_large_window_against_the_oracle():
    """The loop over chunks of planes, both faces, jit and vmap, values, indices and gradient:
    ties, signed zeros, NaN, -inf, +inf and lowest(T) in the data."""
    from jaxmax._src.lowering.pooling import geometry as pool_geometry
    from jaxmax._src.lowering.pooling import stages as pool_stages

    shape, kernel, strides, dil, pb, pe = CHUNKED
    g = pool_geometry.geometry(shape, (1, 1) + kernel, (1, 1) + strides,
                               ((0, 0), (0, 0)) + tuple(zip(pb, pe, strict=True)))
    assert pool_stages.applies(g, 4)
    x = _data(shape, 21)
    want_v, want_i = _ov_oracle_vectorised(x, kernel, strides, dil, pb, pe)
    got_v, got_i = jax.jit(lambda v: _ov(v, kernel, strides, dil, pb, pe, True))(x)
    assert_same(got_v, want_v, "values")
    assert_same(got_i, want_i, "indices")
    np.testing.assert_array_equal(np.signbit(got_v), np.signbit(want_v))
    onnx_v, onnx_i = _onnx_oracle_vectorised(x, kernel, strides, dil, pb, pe)
    got = jax.jit(lambda v: _onnx(v, kernel, strides, dil, pb, pe, True))(x)
    assert_same(got[0], onnx_v, "Y")
    assert_same(got[1], onnx_i, "Indices")
    # vmap over a batch of two, the second without special values (and no zero sign ties)
    y = np.abs(_data(shape, 22, specials=False)) + np.float32(1)
    batch = np.asarray(jax.vmap(lambda v: _ov(v, kernel, strides, dil, pb, pe, False))(
        np.stack([x, y])))  # NumPy: indexing compiled a slice each
    assert_same(batch[0], want_v, "vmap 0")
    assert_same(batch[1], _ov_oracle_vectorised(y, kernel, strides, dil, pb, pe)[0], "vmap 1")
    ct = np.random.default_rng(23).integers(1, 9, size=want_v.shape).astype(np.float32)
    grad = jax.jit(jax.grad(lambda v: (_ov(v, kernel, strides, dil, pb, pe, False) * ct).sum()))
    assert_same(grad(x), _grad_oracle(x, ct, want_v, want_i, True), "grad")


@pytest.mark.parametrize("chunked", [False, True], ids=["one_stage", "two_stages"])
@pytest.mark.parametrize("face", ["openvino", "onnx"])
def test_two_stages_keep_the_first_zero_in_row_major_order(face, chunked):
    """A window whose maximum is zero: +0.0 in its first W column (a later D row) and -0.0 in
    its second column (its first D row). The first element in row-major window order is the -0.0;
    stages in the order D and H, then W would keep the first column's +0.0, the order W first
    keeps the -0.0. A small input takes the one-stage scan directly."""
    shape = CHUNKED[0] if chunked else (1, 2, 4, 4, 4)
    x = np.full(shape, -5.0, np.float32)
    # output (.., 0, 0, 1) reads D and H rows -1..1 and W rows 1..3 (pads of 1, stride 2): +0
    # at (d=1, h=0, w=1) (its first W column, a later D row), -0 at (d=0, h=0, w=2)
    x[..., 1, 0, 1] = 0.0
    x[..., 0, 0, 2] = -0.0
    kernel, strides, dil, ones = (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1)
    got, want = _values_and_oracle(face, x, kernel, strides, dil, ones, ones)
    assert_same(got, want)
    assert np.signbit(np.asarray(got)[..., 0, 0, 1]).all()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))

