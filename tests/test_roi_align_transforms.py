"""RoiAlign under transforms and XLA:CPU: the two arithmetic guards (each switched off must
change the bits), sampling_ratio=0 with traced ROIs (the switch and the windowed branch), jit,
vmap, grad (X and rois), no retrace, and sharded inputs on 8 CPU devices."""

from __future__ import annotations

import functools

import jax
import jax.test_util
import numpy as np
import pytest
import roi_align_oracle as oracle
from helpers import assert_same
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from test_sharding import check_sharded, shard

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering.roi import align, samples


def _data(seed, shape=(2, 4, 12, 13)):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(np.float32), rng


def _rois(rng, count, height, width, small=1.0, big=14.0):
    size = np.exp(rng.uniform(np.log(small), np.log(big), (count, 2)))
    x1 = rng.uniform(-3, width, count)
    y1 = rng.uniform(-3, height, count)
    return np.stack([x1, y1, x1 + size[:, 0], y1 + size[:, 1]], 1).astype(np.float32)


def _bits(a):
    return np.asarray(a).view(np.uint32)


# ------------------------------------------------------------------------ the two guards

def _guard_case(face):
    x, rng = _data(3, (1, 8, 20, 20))
    rois = _rois(rng, 64, 20, 20, 2.0, 19.0)
    batch = np.zeros(64, np.int64)
    if face == "onnx":
        call = lambda: onnx.roi_align(x, rois, batch, mode="avg", output_height=7,  # noqa: E731
                                      output_width=7, sampling_ratio=2, spatial_scale=0.9)
        expected = oracle.roi_align(x, rois, batch, mode="avg", pooled=(7, 7),
                                    sampling_ratio=2, spatial_scale=0.9)
    else:
        call = lambda: ov.roi_align(x, rois, batch, pooled_h=7, pooled_w=7,  # noqa: E731
                                    sampling_ratio=3, spatial_scale=0.9, mode="avg")
        expected = oracle.roi_align(x, rois, batch, face="openvino", mode="avg", pooled=(7, 7),
                                    sampling_ratio=3, spatial_scale=0.9, how="asymmetric")
    return call, expected


@functools.cache
def _guarded(face):
    """The guarded call's bits and the oracle's, once per face (both guards' tests compare
    the same call with the same oracle; the guarded program would be compiled again after the
    first test clears the caches)."""
    call, expected = _guard_case(face)
    return call, _bits(call()), _bits(expected)


@pytest.mark.parametrize("face", ["onnx", "openvino"])
@pytest.mark.parametrize("guard", ["division", "fma"])
def test_each_guard_is_needed(face, guard, monkeypatch):
    """With the guard, bit-exact with the oracle; without it, XLA's rewrite changes bits."""
    call, guarded, expected = _guarded(face)
    np.testing.assert_array_equal(guarded, expected)
    jax.clear_caches()
    monkeypatch.setitem(samples.GUARDS, guard, False)
    try:
        unguarded = _bits(call())
    finally:
        jax.clear_caches()
    assert (unguarded != expected).sum() > 0, f"{guard} guard made no difference"


# ----------------------------------------------------------- sampling_ratio=0 under jit

def _adaptive_case(big):
    x, rng = _data(11, (2, 3, 6, 7))
    rois = _rois(rng, 40, 6, 7, 0.3, big)  # more than a block of the sorted loop
    return x, rois, rng.integers(0, 2, 40)


@functools.cache
def _adaptive():
    """Both faces in both modes, one plain jitted program (the ROIs are traced, so the switch
    and all its branches are compiled), called for the three ROI scales."""
    def calls(x, r, b):
        return {(face, mode): onnx.roi_align(x, r, b, mode=mode, output_height=2,
                                             output_width=3, sampling_ratio=0,
                                             spatial_scale=0.5)
                if face == "onnx" else
                ov.roi_align(x, r, b, pooled_h=2, pooled_w=3, sampling_ratio=0,
                             spatial_scale=0.5, mode=mode, aligned_mode="half_pixel")
                for face in ("onnx", "openvino") for mode in ("avg", "max")}
    return jax.jit(calls)


@pytest.mark.parametrize("face", ["onnx", "openvino"])
@pytest.mark.parametrize("big", [3.0, 14.0, 400.0])
def test_adaptive_grid_under_jit_with_traced_rois(face, big):
    """Every branch of the switch (grids up to the map's bound, and ROIs much larger than the
    map: the windowed branch, whose window is smaller than the grid) equals the oracle."""
    x, rois, batch = _adaptive_case(big)
    got = _adaptive()(x, rois, batch)
    for mode in ("avg", "max"):
        if face == "onnx":
            expected = oracle.roi_align(x, rois, batch, mode=mode, pooled=(2, 3),
                                        spatial_scale=0.5)
        else:
            expected = oracle.roi_align(x, rois, batch, face="openvino", mode=mode,
                                        pooled=(2, 3), spatial_scale=0.5, how="half_pixel")
        np.testing.assert_array_equal(_bits(got[face, mode]), _bits(expected),
                                      err_msg=f"{face} {mode} big={big}")


def test_windowed_branch_keeps_the_fold_order_of_skipped_zeros():
    """A huge ROI whose first samples are out of the image (+0, skipped by the window) and
    whose in-image samples are -0: OpenVINO's fold keeps the first maximum, the +0."""
    x = np.full((1, 1, 4, 4), -0.0, np.float32)
    rois = np.array([[-500, 0, 3, 3], [0, 0, 3, 3]], np.float32)
    got = ov.roi_align(x, rois, np.array([0, 0]), pooled_h=1, pooled_w=1, sampling_ratio=0,
                       spatial_scale=1.0, mode="max")
    expected = oracle.roi_align(x, rois, np.array([0, 0]), face="openvino", mode="max",
                                how="asymmetric")
    np.testing.assert_array_equal(_bits(got), _bits(expected))
    assert not np.signbit(np.asarray(got)[0]).any() and np.signbit(np.asarray(got)[1]).all()


@pytest.mark.parametrize("block", [None, 1])
def test_onnx_max_of_a_huge_roi_over_negative_data(block, monkeypatch, request):
    """A ROI far larger than the map over negative data: ONNX max is the +0 of its samples out
    of the image (some skipped by the window), a constant, so no data gradient; the other
    ROI's output is a data value, whose gradient is 1 on its bilinear weights. With blocks of
    one ROI too (the loop's blocks, their order and their gradients)."""
    if block is not None:
        monkeypatch.setattr(align, "BLOCK", block)
        jax.clear_caches()
        request.addfinalizer(jax.clear_caches)
    x = -1.0 - np.random.default_rng(12).random((1, 1, 6, 6)).astype(np.float32)
    rois = np.array([[-500, 0.5, 5, 5], [0.5, 0.5, 4.5, 4.5]], np.float32)
    batch = np.array([0, 0])

    def out(x):
        return onnx.roi_align(x, rois, batch, mode="max", output_height=1, output_width=1,
                              sampling_ratio=0)

    expected = oracle.roi_align(x, rois, batch, mode="max", pooled=(1, 1))
    got = out(x)
    np.testing.assert_array_equal(_bits(got), _bits(expected))
    assert np.asarray(got)[0, 0, 0, 0] == 0 and not np.signbit(np.asarray(got)[0]).any()
    grads = jax.jit(jax.grad(lambda x, k: out(x)[k].sum()), static_argnums=1)
    assert not np.asarray(grads(x, 0)).any()
    assert np.asarray(grads(x, 1)).sum() == pytest.approx(1.0)


# ------------------------------------------------------------------- jit, vmap, retrace

def _f(x, r, b):
    return onnx.roi_align(x, r, b, mode="max", output_height=2, output_width=2,
                          sampling_ratio=0, spatial_scale=0.5)


def test_jit_equals_eager_and_no_retrace():
    x, rng = _data(5)
    rois = _rois(rng, 9, 12, 13)
    batch = rng.integers(0, 2, 9)
    traces = []

    def g(x, r, b):
        traces.append(1)
        return _f(x, r, b)

    jg = jax.jit(g)
    assert_same(jg(x, rois, batch), _f(x, rois, batch))
    jg(x + 1, rois + 1, batch)
    assert len(traces) == 1


@pytest.mark.parametrize("batched_rois", [False, True])
def test_vmap_over_a_leading_axis(batched_rois):
    x, rng = _data(6, (3, 2, 3, 9, 8))
    rois = _rois(rng, 5, 9, 8)
    batch = rng.integers(0, 2, 5)
    if batched_rois:
        rois3 = np.stack([rois, rois + 1, rois * 0.5])
        got = jax.vmap(_f, in_axes=(0, 0, None))(x, rois3, batch)
        expected = [_f(x[i], rois3[i], batch) for i in range(3)]
    else:
        got = jax.vmap(_f, in_axes=(0, None, None))(x, rois, batch)
        expected = [_f(x[i], rois, batch) for i in range(3)]
    assert_same(got, np.stack([np.asarray(e) for e in expected]))


# ------------------------------------------------------------------------------ grad

@pytest.mark.parametrize("sr, block", [(2, None), (0, None), (0, 1)])
def test_grad_matches_finite_differences(sr, block, monkeypatch, request):
    """Both modes, with respect to X and to the ROIs; sr = 0 also with blocks of one ROI: the
    loop over sorted blocks, and its unsorting."""
    if block is not None:
        monkeypatch.setattr(align, "BLOCK", block)
        jax.clear_caches()
        request.addfinalizer(jax.clear_caches)  # no later test reuses a BLOCK=1 program
    x, rng = _data(8, (1, 2, 8, 8))
    rois = np.array([[1.3, 0.7, 5.2, 6.1], [2.1, 2.2, 7.4, 4.9]], np.float32)
    batch = np.array([0, 0])

    def losses(x, r):
        return [onnx.roi_align(x, r, batch, mode=mode, output_height=2, output_width=3,
                               sampling_ratio=sr).sum() for mode in ("avg", "max")]

    with jax.enable_x64(True):
        x64, r64 = x.astype(np.float64), rois.astype(np.float64)
        both = jax.jit(lambda x, r: [jax.value_and_grad(lambda x, r, k=k: losses(x, r)[k],
                                                        argnums=(0, 1))(x, r)
                                     for k in range(2)])
        at = both(x64, r64)
        for k, mode in enumerate(("avg", "max")):
            _check_rev(lambda x, k=k: both(x, r64)[k][0], x64, at[k][0], at[k][1][0],
                       eps=1e-4, what=f"{mode} dX")
            _check_rev(lambda r, k=k: both(x64, r)[k][0], r64, at[k][0], at[k][1][1],
                       eps=1e-5, what=f"{mode} drois")


def _check_rev(f, arg, value, grad, eps, what):
    """``jax.test_util.check_grads(f, (arg,), order=1, modes=["rev"], eps=eps)`` with `f` and
    its value and gradient at `arg` from one plain jitted program (the caller's: the values of
    both modes and their gradients with respect to X and the ROIs; `f` reads its value). The
    same check: check_vjp with the same random tangent and cotangent, tolerances and step; the
    VJP of a scalar ``f`` is the cotangent times the gradient."""
    def f_vjp(a):
        np.testing.assert_array_equal(a, arg)
        return value, lambda ct: (ct * grad,)

    jax.test_util.check_vjp(f, f_vjp, (arg,), eps=eps, err_msg=what)


def _dropped_cases():
    """{(face, mode, sr): (loss, arguments of the valid ROI alone, arguments with the dropped
    and empty ROIs too)} of the test below."""
    x, _ = _data(11, (2, 2, 6, 6))
    good = np.array([[1, 1, 5, 4]], np.float32)
    cases = {}
    for face in ("onnx", "openvino"):
        for mode in ("avg", "max"):
            for sr in (0, 2):
                bad = np.array([[0, 0, 4, 4], [0, np.nan, 4, 4], [2, 2, 2, 2]], np.float32)
                if sr or face == "openvino":  # a fixed grid samples a zero-area ROI at its
                    bad = bad[:2]  # point, and OpenVINO widens it to 1 pixel: a valid ROI

                def loss(x, r, b, face=face, mode=mode, sr=sr):
                    if face == "onnx":
                        y = onnx.roi_align(x, r, b, mode=mode, output_height=2,
                                           output_width=2, sampling_ratio=sr)
                    else:
                        y = ov.roi_align(x, r, b, pooled_h=2, pooled_w=2, sampling_ratio=sr,
                                         spatial_scale=1.0, mode=mode)
                    weights = np.arange(1.0, 1 + y.size, dtype=np.float32).reshape(y.shape)
                    return (y * weights).sum()

                cases[face, mode, sr] = (loss, (x, good, np.array([1])), (
                    x, np.concatenate([good, bad]), np.array([1, 7, 0, 0])[:1 + len(bad)]))
    return cases


def _dropped_loss(x, r, b):
    return onnx.roi_align(x, r, b, mode="avg", output_height=2, output_width=2,
                          sampling_ratio=0).sum()


DROPPED = (_data(9, (2, 2, 6, 6))[0],
           np.array([[0, 0, 4, 4], [0, np.nan, 4, 4], [1, 1, 3, 3]], np.float32),
           np.array([0, 0, 5]))


@functools.cache
def _dropped_grads():
    """Every gradient of the two tests below, one plain jitted program (each its own
    subcomputation on its own arguments): {case: (alone, both)} and DROPPED's (dX, drois)."""
    cases = _dropped_cases()

    @jax.jit
    def grads(args, dropped):
        return ({key: tuple(jax.grad(loss)(*a) for a in args[key])
                 for key, (loss, *_) in cases.items()},
                jax.grad(_dropped_loss, argnums=(0, 1))(*dropped))

    return jax.tree.map(np.asarray, grads({k: tuple(v[1:]) for k, v in cases.items()},
                                          DROPPED))


def test_dropped_rois_pass_no_gradient_and_no_nan():
    gx, gr = _dropped_grads()[1]
    assert np.isfinite(gr).all() and (gr[1:] == 0).all() and (gr[0] != 0).any()
    assert (gx[1] == 0).all()


@pytest.mark.parametrize("face", ["onnx", "openvino"])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("sr", [0, 2])
def test_dropped_and_empty_rois_leave_every_image_gradient_alone(face, mode, sr):
    """Traced invalid ROIs (an image index out of range, a NaN coordinate) read image 0 in the
    lowering, and a zero-area ROI has a grid of 0 under sampling_ratio 0: none may touch the
    data's gradient (docs/semantics.md §12.6: they pass none). The gradient equals the one of
    the valid ROI alone, bit for bit, and holds no NaN (it did: 0/0 sample positions, times a
    zero cotangent). Both gradients come from one plain jitted program (`_dropped_grads`)."""
    alone, both = _dropped_grads()[0][face, mode, sr]
    assert np.isfinite(both).all()
    assert_same(both, alone)


# --------------------------------------------------------------------------- sharding

@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto])
@pytest.mark.parametrize("spec", ["channels", "batch", "rois"])
def test_sharded_inputs_give_the_unsharded_bits(axis_type, spec):
    mesh = jax.make_mesh((8,), ("d",), axis_types=(axis_type,))
    x, rng = _data(10, (8, 16, 10, 10))
    rois = _rois(rng, 16, 10, 10)
    batch = rng.integers(0, 8, 16)
    expected = np.asarray(_f(x, rois, batch))
    xs = shard(x, mesh, P(None, "d") if spec == "channels" else P("d") if spec == "batch"
               else P())
    rs = shard(rois, mesh, P("d")) if spec == "rois" else rois
    bs = shard(batch, mesh, P("d")) if spec == "rois" else batch
    check_sharded(_f, ((xs, rs, bs), (x, rois, batch)), expected)


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto])
@pytest.mark.parametrize("face", ["onnx", "openvino"])
def test_batch_sharded_max_keeps_negative_zeros(axis_type, face):
    """Max of samples that are all -0.0, the images sharded along the batch: on Auto axes XLA's
    partitioner assembles the gathered corners with an all-reduce that adds, which turned every
    -0.0 into +0.0 before the corners were read through their bits. Checked against the NumPy
    oracle of docs/semantics.md §12, zero signs included."""
    mesh = jax.make_mesh((8,), ("d",), axis_types=(axis_type,))
    x = -np.ones((8, 2, 8, 8), np.float32)
    x[:, :, :4, :4] = -0.0
    rois = np.array([[0, 0, 3, 3], [0.5, 0.5, 2.5, 3], [0, 0, 7, 7]], np.float32)
    batch = np.array([0, 5, 7])

    def f(x, r, b):
        if face == "onnx":
            return onnx.roi_align(x, r, b, mode="max", output_height=2, output_width=2,
                                  sampling_ratio=2)
        return ov.roi_align(x, r, b, pooled_h=2, pooled_w=2, sampling_ratio=2,
                            spatial_scale=1.0, mode="max")

    expected = oracle.roi_align(x, rois, batch, face=face, mode="max", pooled=(2, 2),
                                sampling_ratio=2,
                                how="half_pixel" if face == "onnx" else "asymmetric")
    assert np.signbit(expected).any()
    got = jax.jit(f)(shard(x, mesh, P("d")), rois, batch)
    assert_same(np.asarray(got), expected)


_GRADIENT_CASES = {
    "onnx max sr 2": lambda x, r, b: onnx.roi_align(x, r, b, mode="max", output_height=3,
                                                     output_width=3, sampling_ratio=2),
    "onnx avg sr 0": lambda x, r, b: onnx.roi_align(x, r, b, mode="avg", output_height=2,
                                                     output_width=3, sampling_ratio=0),
    "openvino avg sr 0 half_pixel": lambda x, r, b: ov.roi_align(
        x, r, b, pooled_h=3, pooled_w=2, sampling_ratio=0, spatial_scale=0.5, mode="avg",
        aligned_mode="half_pixel"),
}


@functools.cache
def _sharded_gradients(axis_type):
    """Per case of `_GRADIENT_CASES`: the gradient for X and the ROIs of ``sum(out * w)``
    (w normal: the sums round) on one device, and with X sharded along the batch and along
    the channels over 4 devices."""
    mesh = jax.make_mesh((4,), ("d",), axis_types=(axis_type,), devices=jax.devices()[:4])
    x, rng = _data(21, (4, 8, 16, 16))
    rois = _rois(rng, 12, 16, 16, 1.0, 18.0)
    batch = rng.integers(0, 4, 12).astype(np.int32)
    got = {}
    for name, f in _GRADIENT_CASES.items():
        w = rng.standard_normal(np.shape(f(x, rois, batch))).astype(np.float32)
        grad = jax.jit(jax.grad(lambda x, r, b, w, f=f: (f(x, r, b) * w).sum(), argnums=(0, 1)))
        plain = grad(x, rois, batch, w)
        with jax.set_mesh(mesh):
            sharded = {spec: grad(jax.device_put(x, NamedSharding(mesh, spec)), rois, batch, w)
                       for spec in (P("d"), P(None, "d"))}
        got[name] = plain, sharded
    return got


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto])
@pytest.mark.parametrize("case", list(_GRADIENT_CASES))
def test_sharded_gradients_are_the_unsharded_bits(axis_type, case):
    """The gradient for X with the images sharded along the batch or along the channels, and for
    the ROIs with the images along the batch: the one-device bits, on cotangents whose sums
    round. The four corners of a sample are one gather, whose transpose is one scatter in a
    fixed order; as four gathers their cotangents were summed in an order XLA chose per program,
    and a device holding an image alone gave up to 99 of its 8,192 gradient elements a few ulps
    off (Explicit axes, 2026-12-01). (The ROIs' gradient with the channels sharded sums the
    devices' channels in another order: equal up to rounding, docs/semantics.md §12.6.)"""
    plain, sharded = _sharded_gradients(axis_type)[case]
    for spec, (gx, _) in sharded.items():
        assert np.array_equal(_bits(gx), _bits(plain[0])), (spec, "X")
    assert np.array_equal(_bits(sharded[P("d")][1]), _bits(plain[1])), "rois"


# ------------------------------------------------------------------------- forward mode

#: `_GRADIENT_CASES`' with forward mode (sampling_ratio > 0; 0 is reverse mode only)
_TANGENT_CASES = {name: f for name, f in _GRADIENT_CASES.items() if "sr 0" not in name}


@functools.cache
def _sharded_tangents(axis_type):
    """Per case of `_TANGENT_CASES`: ``jax.jvp`` (tangents for X and the ROIs, normal values;
    and for X alone) on unsharded arrays (on this host of 8 devices that is the planned call
    with no plan: the lowering's own jvp), and with X sharded along the batch and along the
    channels, and with the ROIs sharded, over 4 devices."""
    mesh = jax.make_mesh((4,), ("d",), axis_types=(axis_type,), devices=jax.devices()[:4])
    x, rng = _data(31, (4, 8, 16, 16))
    rois = _rois(rng, 12, 16, 16, 1.0, 18.0)
    batch = rng.integers(0, 4, 12).astype(np.int32)
    tx = rng.standard_normal(x.shape).astype(np.float32)
    tr = rng.standard_normal(rois.shape).astype(np.float32)
    got = {}
    for name, f in _TANGENT_CASES.items():
        both = jax.jit(lambda x, r, tx, tr, f=f: jax.jvp(lambda v, w: f(v, w, batch), (x, r),
                                                         (tx, tr))[1])
        alone = jax.jit(lambda x, tx, f=f: jax.jvp(lambda v: f(v, rois, batch), (x,),
                                                   (tx,))[1])
        plain = both(x, rois, tx, tr), alone(x, tx)
        with jax.set_mesh(mesh):
            def put(a, spec):
                return jax.device_put(a, NamedSharding(mesh, spec))
            sharded = {layout: (both(put(x, s), put(rois, q), put(tx, s), put(tr, q)),
                                alone(put(x, s), put(tx, s)))
                       for layout, s, q in (("batch", P("d"), P()),
                                            ("channels", P(None, "d"), P()),
                                            ("rois", P(), P("d")))}
        got[name] = plain, sharded
    return got


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto])
@pytest.mark.parametrize("case", list(_TANGENT_CASES))
def test_forward_mode_works_sharded_and_gives_the_unsharded_bits(axis_type, case):
    """``jax.jvp`` with sampling_ratio > 0 on a host of several devices: on Auto axes it raised
    JAX's "can't apply forward-mode autodiff (jvp) to a custom_vjp function" for every jitted
    call, sharded or not (the planned call had reverse mode only); its tangent is now a linear
    call planned as the values are. X's tangent is the unsharded bits with X sharded along the
    batch or the channels and with the ROIs sharded. The ROIs' term of the tangent is the
    derivative of the sample positions, whose products each device's program may fuse in its own
    way (JAX 0.12's differs from one device's with the ROIs sharded, JAX 0.10's with the
    channels): up to rounding (docs/semantics.md §12.6), so only computed here, and finite."""
    (both, alone), sharded = _sharded_tangents(axis_type)[case]
    assert np.isfinite(both).all() and np.isfinite(alone).all()
    for layout, (got_both, got_alone) in sharded.items():
        assert np.array_equal(_bits(got_alone), _bits(alone)), (layout, "X alone")
        assert np.isfinite(np.asarray(got_both)).all(), (layout, "X and ROIs")


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto])
@pytest.mark.parametrize("face", ["onnx", "openvino"])
def test_forward_mode_keeps_negative_zero_tangents(axis_type, face):
    """Max mode, X's tangent all -0.0, ROIs inside their images: each output's tangent is its
    sample's four corner weights times -0.0, -0.0 (docs/semantics.md §12.6; no term of the
    ROIs, whose tangent is not asked for). With the images sharded along the batch the devices'
    tangents were summed as floats from +0.0 (Explicit axes: every one read +0.0); the owner's
    bits are now summed as integers."""
    mesh = jax.make_mesh((4,), ("d",), axis_types=(axis_type,), devices=jax.devices()[:4])
    x, rng = _data(33, (4, 3, 10, 10))
    rois = np.array([[0, 0, 4, 4], [1, 1, 8, 6], [2.5, 0.5, 9, 9], [0, 3, 5, 8]], np.float32)
    batch = np.array([0, 2, 3, 1], np.int32)

    def f(v):
        if face == "onnx":
            return onnx.roi_align(v, rois, batch, mode="max", output_height=2, output_width=2,
                                  sampling_ratio=2)
        return ov.roi_align(v, rois, batch, pooled_h=2, pooled_w=2, sampling_ratio=2,
                            spatial_scale=1.0, mode="max")

    tangent = jax.jit(lambda v, t: jax.jvp(f, (v,), (t,))[1])
    t = np.full(x.shape, -0.0, np.float32)
    expected = np.full((4, 3, 2, 2), -0.0, np.float32)
    assert_same(np.asarray(tangent(x, t)), expected)
    with jax.set_mesh(mesh):
        got = tangent(*(jax.device_put(a, NamedSharding(mesh, P("d"))) for a in (x, t)))
    assert_same(np.asarray(got), expected)


def test_forward_mode_with_sampling_ratio_zero_is_reverse_only():
    """sampling_ratio = 0 visits its samples in a run-time loop whose derivative is a
    ``jax.custom_vjp``: reverse mode only, on one device as on several (docs/semantics.md
    §12.6); ``jax.jvp`` raises JAX's TypeError, never a wrong tangent."""
    x, rng = _data(35, (2, 2, 8, 8))
    rois = _rois(rng, 3, 8, 8)
    batch = np.array([0, 1, 1], np.int32)
    with pytest.raises(TypeError, match="custom_vjp"):
        jax.jit(lambda v: jax.jvp(lambda w: _f(w, rois, batch), (v,), (v,))[1])(x)
