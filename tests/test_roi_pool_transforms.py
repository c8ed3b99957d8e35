"""MaxRoiPool / ROIPooling-1 under the transforms: gradients against the oracle's routing
(M18-M20, P8, seeded with ties, NaN and overlapping bins and ROIs), jit, vmap over a leading
axis of X with shared and batched ROIs, no retrace, and 8-device Explicit/Auto meshes with X
sharded over channels and over the batch and the ROIs sharded: the unsharded answer bit for
bit.

Compiles are what these tests cost: each jitted function below is built once per
(face, pooled shape) (:func:`_jit_grad`) and called with every data set of its shape, and the
oracles of the sharded cases are computed once (:func:`_sharded_case`). The eager calls are the
same program as the jitted ones (each public function runs one inner ``jax.jit`` of the whole
lowering; outside it only the arguments are checked; a small eager call compiles it with the
library's fast-compile options, `compile_options.fast_compile()`: LLVM -O0 and the elemental
emitter, the same HLO passes and SPMD partitioner). Programs whose subject is not XLA's code
generation (the hard cases' gradients, most sharded layouts) use those options too; the
seeded gradients, jit/vmap and one sharded layout per mesh kind keep the default options."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import roi_oracle as oracle
from helpers import assert_same
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering import compile_options

X4 = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)


def _onnx(x, rois, pooled=(2, 2), scale=1.0):
    return onnx.max_roi_pool(x, rois, pooled_shape=pooled, spatial_scale=scale)


def _ov(x, rois, pooled=(2, 2), scale=1.0):
    return ov.roi_pooling(x, rois, pooled_h=pooled[0], pooled_w=pooled[1], spatial_scale=scale)


FACES = {"onnx": _onnx, "fold": _ov}  # the oracle's rule -> the face that follows it


def _grad(f, x, rois, cotangent, **kw):
    return jax.grad(lambda v: jnp.sum(f(v, rois, **kw) * cotangent))(x)


@functools.cache
def _jit_grad(rule, pooled, fast=False):
    """``dL/dX`` of ``L = sum(y * cotangent)``, jitted once per (rule, pooled shape); `fast`:
    with the library's fast-compile options (`compile_options.fast_compile()`: the same HLO,
    only code generation differs, a third of the compile time)."""
    f = FACES[rule]
    options = compile_options.fast_compile() if fast else None
    return jax.jit(lambda v, r, c: _grad(f, v, r, c, pooled=pooled), compiler_options=options)


def test_m18_m19_m20_p8():
    one = np.array([[0, 0, 0, 3, 3]], np.float32)
    ones = np.ones((1, 1, 2, 2), np.float32)
    g = np.asarray(_jit_grad("onnx", (2, 2), True)(X4, one, ones))[0, 0]
    assert_same(g, np.array([[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]],
                            np.float32), "M18")
    g = np.asarray(_jit_grad("onnx", (2, 2), True)(np.ones_like(X4), one, ones))[0, 0]
    assert_same(g, np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]],
                            np.float32), "M19: the first of tied maxima")
    g = np.asarray(_jit_grad("onnx", (3, 3), True)(X4, np.array([[0, 0, 0, 1, 1]], np.float32),
                                             np.ones((1, 1, 3, 3), np.float32)))[0, 0]
    assert (g[0, 0], g[0, 1], g[1, 0], g[1, 1]) == (1, 2, 2, 4) and g.sum() == 9, "M20"
    x = X4.copy()
    x[0, 0, 0, :2] = [0.0, -0.0]
    x[0, 0, 1, :2] = -1
    cot = np.zeros((1, 1, 2, 2), np.float32)
    cot[0, 0, 0, 0] = 1
    g = np.asarray(_jit_grad("fold", (2, 2), True)(x, one, cot))[0, 0]
    assert g[0, 1] == 1 and g.sum() == 1, "P8: the last tied zero"


@pytest.mark.parametrize("rule", ["onnx", "fold"])
def test_seeded_gradients(rule):
    """Three seeded trials, each through the eager grad (JAX splits the inner jit into its
    forward and backward programs; X's and the ROIs' gradient (zero) from one call, so one pair
    of programs) and the jitted one (built once for the three)."""
    rng = np.random.default_rng(8)
    f = FACES[rule]
    jitted = _jit_grad(rule, (3, 2))
    for trial in range(3):
        x = rng.integers(-3, 4, (2, 3, 7, 9)).astype(np.float32)
        u = rng.random(x.shape)
        x[u < 0.05] = np.nan
        x[(u > 0.05) & (u < 0.1)] = -np.inf
        x[(u > 0.1) & (u < 0.2)] = -0.0
        rois = np.array([[0, 0, 0, 8, 6], [1, 1, 1, 5, 5], [1, 1, 1, 5, 5], [0, 3, 2, 4, 3],
                         [1, -4, -3, 20, 20], [0, 6, 5, 2, 1]], np.float32)
        rois[:, 1:] += rng.uniform(-0.4, 0.4, (6, 4)).astype(np.float32)
        cot = rng.integers(1, 5, (6, 3, 3, 2)).astype(np.float32)
        want = oracle.gradient(x, rois, 1.0, (3, 2), cot, rule=rule)
        gx, gr = jax.grad(lambda v, r, c=cot: jnp.sum(f(v, r, pooled=(3, 2)) * c),
                          argnums=(0, 1))(x, rois)
        assert_same(gx, want, f"trial {trial}")
        assert_same(jitted(x, rois, cot), want, f"jit trial {trial}")
        assert_same(gr, np.zeros_like(rois), f"ROIs trial {trial}")


def test_jit_vmap_and_no_retrace():
    """vmap over a leading axis of X (ROIs shared, and batched), both faces in one program,
    against the oracle per image; one jitted program of both faces, traced once for two calls
    with other data, against the oracle too."""
    rng = np.random.default_rng(9)
    x = rng.integers(-5, 6, (3, 2, 4, 6, 5)).astype(np.float32)  # a leading axis of 3
    rois = np.array([[0, 0, 0, 4, 5], [1, 1, 2, 3, 3], [0, 2, 1, 9, 9]], np.float32)
    moved = rois.copy()
    moved[:, 1:] += 1
    batched = np.stack([rois, moved, rois[::-1]])

    def mapped(x, rois, batched):
        return {rule: (jax.vmap(lambda v, f=f: f(v, rois, pooled=(2, 3)))(x),
                       jax.vmap(lambda v, r, f=f: f(v, r, pooled=(2, 3)))(x, batched))
                for rule, f in FACES.items()}

    traces = []

    def both(v, r):
        traces.append(1)
        return {rule: f(v, r, pooled=(2, 3)) for rule, f in FACES.items()}

    got = jax.jit(mapped)(x, rois, batched)
    once = jax.jit(both)
    first, second = once(x[0], rois), once(x[1], moved)
    assert len(traces) == 1
    for rule in FACES:
        want_shared = np.stack([oracle.max_roi_pool(v, rois, 1.0, (2, 3), rule=rule)
                                for v in x])
        want = np.stack([oracle.max_roi_pool(v, r, 1.0, (2, 3), rule=rule)
                         for v, r in zip(x, batched, strict=True)])
        assert_same(got[rule][0], want_shared, f"{rule}: vmap, shared ROIs")
        assert_same(got[rule][1], want, f"{rule}: vmap, batched ROIs")
        assert_same(first[rule], want_shared[0], f"{rule}: jit")
        assert_same(second[rule], oracle.max_roi_pool(x[1], moved, 1.0, (2, 3), rule=rule),
                    f"{rule}: jit, second call")


@functools.cache
def _sharded_case():
    """The data of the sharded cases and their oracles (values and gradient per rule),
    computed once for the twelve layouts."""
    rng = np.random.default_rng(10)
    x = rng.integers(-5, 6, (2, 8, 6, 7)).astype(np.float32)
    x[0, 1, 2, 3] = np.nan
    rois = np.concatenate([np.zeros((8, 1)), rng.uniform(-2, 9, (8, 4))], 1).astype(np.float32)
    rois[::2, 0] = 1
    cot = np.ones((8, 8, 3, 2), np.float32)
    want = {rule: (oracle.max_roi_pool(x, rois, 1.0, (3, 2), rule=rule),
                   oracle.gradient(x, rois, 1.0, (3, 2), cot, rule=rule)) for rule in FACES}
    return x, rois, cot, want


def _values(v, r):
    return {rule: f(v, r, pooled=(3, 2)) for rule, f in FACES.items()}


def _grads(v, r, c):
    return {rule: _grad(f, v, r, c, pooled=(3, 2)) for rule, f in FACES.items()}


#: the layout whose values and gradients are jitted with XLA's default options (as a user's
#: ``jax.jit``); the others run the values eagerly and jit the gradients with the fast-compile
#: options (below)
DEFAULT_OPTIONS_LAYOUT = (P("a", "b"), P(("a", "b")))


@functools.cache
def _fast_grads():
    """`_grads` jitted with `compile_options.fast_compile()`, the options every small eager call
    of the library compiles with (LLVM -O0, the elemental emitter: the same HLO passes, the
    SPMD partitioner's among them, so the same collectives; a third of the compile time)."""
    return jax.jit(_grads, compiler_options=compile_options.fast_compile())


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=str)
@pytest.mark.parametrize("x_spec, r_spec", [(P(None, "b"), P()), (P("a"), P("b")),
                                            (P("a", "b"), P(("a", "b"))),
                                            # on Explicit axes: each device answers the ROIs
                                            # of its images; each its own ROIs
                                            # (lowering/roi_sharded.py)
                                            (P("a"), P()), (P(), P("b")), (P(None, "a"), P("b"))],
                         ids=str)
def test_sharded_exact(axis_type, x_spec, r_spec):
    """The values and the gradients (one jitted program of both faces) of each layout. The
    values of every layout but `DEFAULT_OPTIONS_LAYOUT` are the public eager calls (each a
    small eager call, which the library compiles with its fast-compile options), the gradients
    `_fast_grads`; that layout jits both with the default options (one program each). The
    partitioning is the same under either options: they change only the code generation."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    x, rois, cot, want = _sharded_case()
    xs = jax.device_put(x, NamedSharding(mesh, x_spec))
    rs = jax.device_put(rois, NamedSharding(mesh, r_spec))
    if (x_spec, r_spec) == DEFAULT_OPTIONS_LAYOUT:
        values, grads = jax.jit(_values)(xs, rs), jax.jit(_grads)(xs, rs, cot)
    else:
        values, grads = _values(xs, rs), _fast_grads()(xs, rs, cot)
    for rule in FACES:
        assert_same(values[rule], want[rule][0], f"{rule} values")
        assert_same(grads[rule], want[rule][1], f"{rule} gradient")


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=str)
def test_batch_sharded_keeps_negative_zeros(axis_type):
    """Bins whose maximum is -0.0, the images sharded along the batch: on Auto axes XLA's
    partitioner assembles what each device read with an all-reduce that adds, and ROIPooling
    returned +0.0 there (before its fold keys became integers for any data)."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    rng = np.random.default_rng(12)
    x = -rng.integers(0, 3, (8, 2, 6, 7)).astype(np.float32)
    x[x == 0] = -0.0
    rois = np.concatenate([rng.integers(0, 8, (8, 1)), rng.uniform(-2, 9, (8, 4))],
                          1).astype(np.float32)
    xs = jax.device_put(x, NamedSharding(mesh, P(("a", "b"))))
    got = _values(xs, rois)  # the public eager calls (the same partitioned program: each a
    # small eager call, compiled with the library's fast-compile options)
    for rule in FACES:
        want = oracle.max_roi_pool(x, rois, 1.0, (3, 2), rule=rule)
        assert np.signbit(want).any()
        assert_same(got[rule], want, rule)
