"""MaxRoiPool / ROIPooling-1 under the transforms: gradients against the oracle's routing
(M18-M20, P8, seeded with ties, NaN and overlapping bins and ROIs), jit, vmap over a leading
axis of X with shared and batched ROIs, no retrace, and 8-device Explicit/Auto meshes with X
sharded over channels and over the batch and the ROIs sharded: the unsharded answer bit for
bit.

Compiles are what these tests cost, so each program under test is compiled once for every case
it checks: the hard cases' four gradients are one jitted program, the seeded trials are one
batch of images (each ROI reads only its own image), and the gradients of a mesh's six sharded
layouts are one jitted program (each layout its own arguments and subcomputation). Every
program with traced inputs (jit, vmap, grad) compiles as a user's does: plain ``jax.jit``,
never the fast options of the library's small eager calls (they differed once on bfloat16).
Only the public eager calls of the sharded layouts' values are batched as eager calls
(`jit_batch.jit_each` with ``as_eager``), which is how the library compiles them."""

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
from jit_batch import jit_each

from jaxmax import onnx
from jaxmax import openvino as ov

X4 = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)


def _onnx(x, rois, pooled=(2, 2), scale=1.0):
    return onnx.max_roi_pool(x, rois, pooled_shape=pooled, spatial_scale=scale)


def _ov(x, rois, pooled=(2, 2), scale=1.0):
    return ov.roi_pooling(x, rois, pooled_h=pooled[0], pooled_w=pooled[1], spatial_scale=scale)


FACES = {"onnx": _onnx, "fold": _ov}  # the oracle's rule -> the face that follows it


def _grad(f, x, rois, cotangent, **kw):
    return jax.grad(lambda v: jnp.sum(f(v, rois, **kw) * cotangent))(x)


def test_m18_m19_m20_p8():
    """The four gradients, one plain jitted program (each its own subcomputation)."""
    one = np.array([[0, 0, 0, 3, 3]], np.float32)
    ones = np.ones((1, 1, 2, 2), np.float32)
    tied = X4.copy()
    tied[0, 0, 0, :2] = [0.0, -0.0]
    tied[0, 0, 1, :2] = -1
    cot = np.zeros((1, 1, 2, 2), np.float32)
    cot[0, 0, 0, 0] = 1

    @jax.jit
    def grads(x, ones_x, tied, one, ones, small, ones3, cot):
        return (_grad(_onnx, x, one, ones, pooled=(2, 2)),
                _grad(_onnx, ones_x, one, ones, pooled=(2, 2)),
                _grad(_onnx, x, small, ones3, pooled=(3, 3)),
                _grad(_ov, tied, one, cot, pooled=(2, 2)))

    m18, m19, m20, p8 = (np.asarray(g)[0, 0] for g in grads(
        X4, np.ones_like(X4), tied, one, ones, np.array([[0, 0, 0, 1, 1]], np.float32),
        np.ones((1, 1, 3, 3), np.float32), cot))
    assert_same(m18, np.array([[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]],
                              np.float32), "M18")
    assert_same(m19, np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]],
                              np.float32), "M19: the first of tied maxima")
    assert (m20[0, 0], m20[0, 1], m20[1, 0], m20[1, 1]) == (1, 2, 2, 4) and m20.sum() == 9, "M20"
    assert p8[0, 1] == 1 and p8.sum() == 1, "P8: the last tied zero"


def _seeded_trials():
    """Three seeded trials (images 2, ROIs 6 each) laid side by side: trial t's images are
    2t and 2t + 1 and its ROIs name them, so one call computes each trial's gradient on its
    own images (a ROI reads only its image; the oracle works per ROI too). (x, rois, cot,
    trial of each image)."""
    rng = np.random.default_rng(8)
    xs, all_rois, cots = [], [], []
    for trial in range(3):
        x = rng.integers(-3, 4, (2, 3, 7, 9)).astype(np.float32)
        u = rng.random(x.shape)
        x[u < 0.05] = np.nan
        x[(u > 0.05) & (u < 0.1)] = -np.inf
        x[(u > 0.1) & (u < 0.2)] = -0.0
        rois = np.array([[0, 0, 0, 8, 6], [1, 1, 1, 5, 5], [1, 1, 1, 5, 5], [0, 3, 2, 4, 3],
                         [1, -4, -3, 20, 20], [0, 6, 5, 2, 1]], np.float32)
        rois[:, 1:] += rng.uniform(-0.4, 0.4, (6, 4)).astype(np.float32)
        rois[:, 0] += 2 * trial
        cots.append(rng.integers(1, 5, (6, 3, 3, 2)).astype(np.float32))
        xs.append(x)
        all_rois.append(rois)
    return (np.concatenate(xs), np.concatenate(all_rois), np.concatenate(cots),
            np.repeat(np.arange(3), 2))


@functools.cache
def _jit_seeded_grads():
    """Both faces' gradients of the seeded trials, one plain jitted program."""
    return jax.jit(lambda v, r, c: {rule: _grad(f, v, r, c, pooled=(3, 2))
                                    for rule, f in FACES.items()})


@pytest.mark.parametrize("rule", ["onnx", "fold"])
def test_seeded_gradients(rule):
    """Three seeded trials (one batch, `_seeded_trials`) through the eager grad (JAX splits the
    inner jit into its forward and backward programs and runs the custom VJP's backward op by
    op; X's and the ROIs' gradient (zero) from one call) and the jitted one."""
    f = FACES[rule]
    x, rois, cot, trial_of = _seeded_trials()
    want = oracle.gradient(x, rois, 1.0, (3, 2), cot, rule=rule)
    gx, gr = jax.grad(lambda v, r: jnp.sum(f(v, r, pooled=(3, 2)) * cot), argnums=(0, 1))(x, rois)
    jitted = _jit_seeded_grads()(x, rois, cot)[rule]
    for trial in range(3):
        image = trial_of == trial
        assert_same(np.asarray(gx)[image], want[image], f"trial {trial}")
        assert_same(np.asarray(jitted)[image], want[image], f"jit trial {trial}")
    assert_same(gr, np.zeros_like(rois), "ROIs")


def test_jit_vmap_and_no_retrace():
    """vmap over a leading axis of X (ROIs shared, and batched) and the plain call of both
    faces, one jitted program traced once for two calls with other data, against the oracle
    per image."""
    rng = np.random.default_rng(9)
    x = rng.integers(-5, 6, (3, 2, 4, 6, 5)).astype(np.float32)  # a leading axis of 3
    rois = np.array([[0, 0, 0, 4, 5], [1, 1, 2, 3, 3], [0, 2, 1, 9, 9]], np.float32)
    moved = rois.copy()
    moved[:, 1:] += 1
    batched = np.stack([rois, moved, rois[::-1]])
    traces = []

    def mapped(x, rois, batched):
        traces.append(1)
        return {rule: (jax.vmap(lambda v, f=f: f(v, rois, pooled=(2, 3)))(x),
                       jax.vmap(lambda v, r, f=f: f(v, r, pooled=(2, 3)))(x, batched),
                       f(x[0], rois, pooled=(2, 3)))
                for rule, f in FACES.items()}

    once = jax.jit(mapped)
    calls = [(x, rois, batched), (x[::-1] + 1, moved, batched[::-1])]
    got = [once(*args) for args in calls]
    assert len(traces) == 1
    for call, ((data, shared, each), out) in enumerate(zip(calls, got, strict=True)):
        for rule in FACES:
            want_shared = np.stack([oracle.max_roi_pool(v, shared, 1.0, (2, 3), rule=rule)
                                    for v in data])
            want = np.stack([oracle.max_roi_pool(v, r, 1.0, (2, 3), rule=rule)
                             for v, r in zip(data, each, strict=True)])
            assert_same(out[rule][0], want_shared, f"{rule} call {call}: vmap, shared ROIs")
            assert_same(out[rule][1], want, f"{rule} call {call}: vmap, batched ROIs")
            assert_same(out[rule][2], want_shared[0], f"{rule} call {call}: jit")


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


LAYOUTS = [(P(None, "b"), P()), (P("a"), P("b")), (P("a", "b"), P(("a", "b"))),
           # on Explicit axes: each device answers the ROIs of its images; each its own ROIs
           # (lowering/roi_sharded.py)
           (P("a"), P()), (P(), P("b")), (P(None, "a"), P("b"))]

#: the layout whose values are also jitted (a user's ``jax.jit``); the values of every layout
#: are the public eager calls
JIT_VALUES_LAYOUT = (P("a", "b"), P(("a", "b")))


@functools.cache
def _sharded_results(axis_type):
    """{layout: (eager values, gradients, jitted values or None)} on a (2, 4) mesh of
    `axis_type`. The gradients of the six layouts are one plain jitted program (each layout its
    own arguments, cotangent included, so XLA's partitioner places each subcomputation from its
    own inputs alone), with the jitted values of `JIT_VALUES_LAYOUT`; the eager values are the
    public calls batched as the library compiles them (`jit_each` with ``as_eager``: one
    program for the six, the fast options of small eager calls)."""
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(axis_type,) * 2)
    x, rois, cot, _ = _sharded_case()
    args = [(jax.device_put(x, NamedSharding(mesh, x_spec)),
             jax.device_put(rois, NamedSharding(mesh, r_spec))) for x_spec, r_spec in LAYOUTS]
    chosen = LAYOUTS.index(JIT_VALUES_LAYOUT)
    jitted, grads = jax.jit(lambda per: (_values(*per[chosen][:2]), [_grads(*a) for a in per]))(
        [(xs, rs, cot.copy()) for xs, rs in args])
    values = jit_each([(_values, a) for a in args], as_eager=True)
    return {layout: (v, g, jitted if layout == JIT_VALUES_LAYOUT else None)
            for layout, v, g in zip(LAYOUTS, values, grads, strict=True)}


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=str)
@pytest.mark.parametrize("x_spec, r_spec", LAYOUTS, ids=str)
def test_sharded_exact(axis_type, x_spec, r_spec):
    """The values (the public eager calls, and for `JIT_VALUES_LAYOUT` jitted too) and the
    gradients (jitted) of each layout (`_sharded_results`)."""
    _, _, _, want = _sharded_case()
    values, grads, jitted = _sharded_results(axis_type)[x_spec, r_spec]
    for rule in FACES:
        assert_same(values[rule], want[rule][0], f"{rule} values")
        assert_same(grads[rule], want[rule][1], f"{rule} gradient")
        if jitted is not None:
            assert_same(jitted[rule], want[rule][0], f"{rule} jitted values")


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
