"""ONNX MaxRoiPool and OpenVINO ROIPooling-1 values against NumPy oracles written from
docs/semantics.md §11.3 (tests/roi_oracle.py): the hard cases M1-M17 and P1-P7, seeded cases
over ROI sizes from sub-pixel to larger than the map with NaN, ±0 (bits compared), ±inf, every
dtype each version allows, the bin-edge division guard, and the errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import roi_oracle as oracle
from helpers import assert_same, x64_for
from jit_batch import jit_each

from jaxmax import onnx
from jaxmax import openvino as ov
from jaxmax._src.lowering.roi import bins as bins_lowering

X4 = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
X2 = np.concatenate([X4, X4 + 100])


def _onnx(x, rois, pooled=(2, 2), scale=1.0, opset=22):
    return np.asarray(onnx.max_roi_pool(x, np.asarray(rois, x.dtype).reshape(-1, 5),
                                        pooled_shape=pooled, spatial_scale=scale, opset=opset))


def _ov(x, rois, pooled=(2, 2), scale=1.0):
    return np.asarray(ov.roi_pooling(x, np.asarray(rois, x.dtype).reshape(-1, 5),
                                     pooled_h=pooled[0], pooled_w=pooled[1],
                                     spatial_scale=scale))


def assert_bits(actual, expected, context=""):
    """Exact, zero signs included (NaN equals NaN); a list `expected` takes `actual`'s dtype."""
    if not isinstance(expected, np.ndarray):
        expected = np.asarray(expected, np.asarray(actual).dtype)
    assert_same(actual, expected, context)
    a, e = np.asarray(actual).astype(np.float64), np.asarray(expected).astype(np.float64)
    np.testing.assert_array_equal(np.signbit(a) & (a == 0), np.signbit(e) & (e == 0),
                                  err_msg=f"{context}: zero signs")


HARD = {  # §11.9 M1-M6, M14: both faces, both ONNX versions
    "M1": (X4, [0, 0, 0, 3, 3], (2, 2), [[5, 7], [13, 15]]),
    "M2": (X4, [0, 3, 3, 1, 1], (2, 2), [[15, 15], [15, 15]]),
    "M3": (X4, [0, 5, 5, 8, 8], (2, 2), [[0, 0], [0, 0]]),
    "M4": (X4, [0, 2, 2, 6, 6], (2, 2), [[15, 0], [0, 0]]),
    "M5": (X4, [0, 2.5, 0.5, 2.5, 2.5], (2, 2), [[11, 11], [15, 15]]),
    "M6": (X4, [0, -0.5, -1.5, 1.5, 1.5], (2, 2), [[0, 2], [8, 10]]),
    "M14": (X4, [0, 0, 0, 1, 1], (3, 3), [[0, 1, 1], [4, 5, 5], [4, 5, 5]]),
}


@pytest.mark.parametrize("name", sorted(HARD))
def test_hard_cases_both_faces(name):
    x, roi, pooled, want = HARD[name]
    want = np.array(want, np.float32)[None, None]
    for opset in (1, 22):
        assert_bits(_onnx(x, roi, pooled, opset=opset), want, f"{name} opset {opset}")
    assert_bits(_ov(x, roi, pooled), want, f"{name} ROIPooling")
    assert_bits(oracle.max_roi_pool(x, np.array([roi], np.float32), 1.0, pooled), want,
                f"{name} oracle")


def test_m7_batch_index_truncates():
    got = _onnx(X2, [[1.9, 0, 0, 3, 3], [-0.5, 0, 0, 3, 3]])
    assert_bits(got[0, 0], [[105, 107], [113, 115]])
    assert_bits(got[1, 0], [[5, 7], [13, 15]])
    assert_bits(_ov(X2, [[1.9, 0, 0, 3, 3], [-0.5, 0, 0, 3, 3]]), got)


def test_m5_rounds_half_away_from_zero():
    assert [bins_lowering.c_round(np.array(v, np.float32)) for v in (2.5, 0.5, -0.5, -1.5,
                                                                     0.49999997)] \
        == [3, 1, -1, -2, 0]


def _nan_at(h, w, value=np.nan):
    x = X4.copy()
    x[0, 0, h, w] = value
    return x


def test_m10_m11_m12_onnx_rule():
    assert_bits(_onnx(_nan_at(1, 1), [0, 0, 0, 3, 3])[0, 0], [[np.nan, 7], [13, 15]], "M10")
    assert_bits(_onnx(_nan_at(0, 0), [0, 0, 0, 3, 3])[0, 0], [[np.nan, 7], [13, 15]], "M11")
    x = X4.copy()
    x[0, 0, :2, :2] = -np.inf
    assert_bits(_onnx(x, [0, 0, 0, 3, 3])[0, 0], [[-np.inf, 7], [13, 15]], "M12")


def test_p1_to_p5_reference_fold():
    roi = [0, 0, 0, 3, 3]
    assert np.isnan(_ov(_nan_at(1, 1), roi)[0, 0, 0, 0])  # P1: trailing NaN
    assert _ov(_nan_at(0, 0), roi)[0, 0, 0, 0] == 5  # P2: NaN first, then 1, 4, 5
    x = X4.copy()
    x[0, 0, 0, :2] = [5, np.nan]
    x[0, 0, 1, :2] = -np.inf
    assert _ov(x, roi)[0, 0, 0, 0] == -np.inf  # P3: after the last NaN, no lowest clamp
    x = X4.copy()
    x[0, 0, :2, :2] = -np.inf
    assert _ov(x, roi)[0, 0, 0, 0] == np.finfo(np.float32).min  # P4
    assert _ov(x.astype(np.float16), roi)[0, 0, 0, 0] == np.float16(-65504)
    for first, second, sign in ((0.0, -0.0, True), (-0.0, 0.0, False)):  # P5: the last tie
        x = X4.copy()
        x[0, 0, 0, :2] = [first, second]
        x[0, 0, 1, :2] = -1
        got = _ov(x, roi)[0, 0, 0, 0]
        assert got == 0 and bool(np.signbit(got)) is sign
        assert not np.signbit(_onnx(x, roi)[0, 0, 0, 0])  # ONNX: +0 over -0


def test_m13_float32_bin_edges():
    x = np.zeros((1, 1, 64, 4), np.float32)
    x[0, 0, 57] = 9
    want = np.zeros((1, 1, 7, 1), np.float32)
    want[0, 0, 6, 0] = 9  # ceil(7 * f32(57/7)) = 58: the last bin reaches row 57
    assert_bits(_onnx(x, [0, 0, 0, 3, 56], (7, 1)), want)
    assert_bits(_ov(x, [0, 0, 0, 3, 56], (7, 1)), want)


def _edges_numpy(extents, count, dtype):
    """float32 (float64) arithmetic, NumPy's correctly rounded division: (len(extents), count)
    starts and ends."""
    step = extents.astype(dtype)[:, None] / dtype(count)
    p = np.arange(count, dtype=dtype)[None]
    return np.floor(p * step), np.ceil((p + 1) * step)


def _bin_edges(extents, counts, dtype):
    """{P: (starts, ends)} of the bins of ROIs of every extent in `extents`, for each count P in
    `counts`: one jitted program for all the counts (one compile instead of one per count;
    each count's bins are their own subcomputation, divided by their own constant)."""
    rois = np.zeros((extents.size, 5), dtype)
    rois[:, 4] = extents - 1  # ys = 0, ye = L - 1

    @jax.jit
    def edges(rois, valid):
        return {count: bins_lowering.bins(rois, valid, 1.0, (count, 1), 10**6, 4)
                for count in counts}

    out = edges(jnp.asarray(rois), jnp.ones(extents.size, bool))
    return {count: (np.asarray(b.h_start), np.asarray(b.h_end)) for count, b in out.items()}


EXTENTS = np.arange(1, 601)


#: counts P with many misplaced edges when the division is not exact (7 and 14: the anchors)
COUNTS = (3, 5, 6, 7, 9, 11, 13, 14, 17, 25, 31)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_division_guard_sweep(dtype):
    """Every L <= 600 with the counts P above: the bin edges equal float32 (float64) arithmetic
    with a correctly rounded division (XLA:CPU's reciprocal rewrite of ``x / P`` is 1 ulp off
    on about half of them, which flips hundreds of ceils: `test_division_guard_is_needed`)."""
    with x64_for(dtype):
        counts = COUNTS if dtype == np.float32 else (7, 14)
        got = _bin_edges(EXTENTS, counts, dtype)
        for count in counts:
            lo, hi = got[count]
            want_lo, want_hi = _edges_numpy(EXTENTS, count, dtype)
            np.testing.assert_array_equal(lo, want_lo, err_msg=f"P={count}")
            np.testing.assert_array_equal(hi, want_hi, err_msg=f"P={count}")


def test_division_guard_is_needed(monkeypatch):
    """Without the guard (a plain division by the broadcast count) the sweep fails: XLA:CPU
    multiplies by the reciprocal (485 misplaced ends at P = 7, 718 at P = 14)."""
    monkeypatch.setattr(bins_lowering, "exact_divide", lambda a, d: a / np.array(d, a.dtype))
    jax.clear_caches()
    try:
        got = _bin_edges(EXTENTS, (7, 14), np.float32)
        bad = {count: int((got[count][1] != _edges_numpy(EXTENTS, count, np.float32)[1]).sum())
               for count in (7, 14)}
    finally:
        jax.clear_caches()
    assert sum(bad.values()) > 100, bad


# ---- seeded cases against the oracles ------------------------------------------------------

def _rois(rng, count, n, height, width, scale):
    """ROIs from sub-pixel to larger than the map, some malformed, some partly outside."""
    size = rng.choice([0.2, 1, 3, 8, 30, 120], count) / scale
    x1 = rng.uniform(-0.3, 1.1, count) * width / scale
    y1 = rng.uniform(-0.3, 1.1, count) * height / scale
    w = size * rng.uniform(0.3, 1.5, count) * rng.choice([1, 1, 1, -1], count)
    h = size * rng.uniform(0.3, 1.5, count)
    batch = rng.integers(0, n, count) + rng.uniform(0, 0.99, count)
    return np.stack([batch, x1, y1, x1 + w, y1 + h], 1)


def _data(rng, shape, dtype, special):
    x = rng.integers(-6, 7, shape).astype(np.float64)  # ties
    if special:
        u = rng.random(shape)
        x[u < 0.05] = np.nan
        x[(u >= 0.05) & (u < 0.1)] = -np.inf
        x[(u >= 0.1) & (u < 0.12)] = np.inf
        x[(u >= 0.12) & (u < 0.3)] = -0.0
        x[(u >= 0.3) & (u < 0.45)] = 0.0
    return x.astype(dtype)


DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


#: (N, C, H, W), pooled, spatial_scale: one compiled program per dtype and configuration
CONFIGS = [((2, 3, 9, 11), (3, 2), 0.5), ((1, 2, 5, 4), (4, 3), 1.0), ((2, 1, 12, 7), (2, 5),
                                                                      1 / 16)]


@pytest.fixture(params=["dense", "tables"])
def program(request, monkeypatch):
    """The program small eager calls take: the dense one (`_values_dense`, what they take by
    default) or the tables' (forced by a `DENSE_ELEMENTS` below every call), which jitted
    and larger calls take; the dense one is checked to be taken when asked for."""
    from jaxmax._src.lowering.roi import max_pool as roi_max_pool
    taken = []
    dense = roi_max_pool._values_dense
    monkeypatch.setattr(roi_max_pool, "_values_dense",
                        lambda *a: taken.append(True) or dense(*a))
    if request.param == "tables":
        monkeypatch.setattr(roi_max_pool, "DENSE_ELEMENTS", -1)
    jax.clear_caches()  # programs traced before the patch would not trace it again
    yield request.param
    jax.clear_caches()
    assert bool(taken) == (request.param == "dense"), f"{request.param}: dense calls {taken}"


@pytest.mark.parametrize("special", [False, True], ids=["ties", "special"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_seeded_against_oracle(dtype, special, program):
    """Small eager calls of both programs (`program`) against the oracles."""
    rng = np.random.default_rng(11 + special)
    configs = CONFIGS if dtype == np.float32 else CONFIGS[:1]
    with x64_for(dtype):
        for shape, pooled, scale in configs:
            for trial in range(3):
                x = _data(rng, shape, dtype, special)
                rois = _rois(rng, 9, shape[0], shape[2], shape[3], scale).astype(dtype)
                context = f"{np.dtype(dtype).name} {shape} {pooled} trial {trial}"
                want = oracle.max_roi_pool(x, rois, scale, pooled)  # once for both opsets
                if dtype != ml_dtypes.bfloat16 and trial == 0:
                    assert_bits(_onnx(x, rois, pooled, scale, opset=1), want,
                                f"{context} opset 1")
                assert_bits(_onnx(x, rois, pooled, scale), want, context)
                assert_bits(_ov(x, rois, pooled, scale),
                            oracle.max_roi_pool(x, rois, scale, pooled, rule="fold"), context)


def test_rois_traced_invalid_give_zeros_only_there():
    """M9, M17: traced ROIs with a bad batch index or a non-finite value give that ROI all +0
    and leave the others alone."""
    rois = np.array([[-1, 0, 0, 3, 3], [1, 0, 0, 3, 3], [2, 0, 0, 3, 3], [0, np.nan, 0, 3, 3],
                     [np.inf, 0, 0, 1, 1], [0, 0, 0, 1e30, 3]], np.float32)
    both = jax.jit(lambda x, r: (  # one plain program, as a user's jit compiles it
        onnx.max_roi_pool(x, r, pooled_shape=(2, 2)),
        ov.roi_pooling(x, r, pooled_h=2, pooled_w=2, spatial_scale=1.0)))
    for face, got in zip(("MaxRoiPool", "ROIPooling"), both(X2, rois), strict=True):
        got = np.asarray(got)
        for r in (0, 2, 3, 4, 5):
            assert_bits(got[r], np.zeros((1, 2, 2), np.float32), f"{face} ROI {r}")
        assert_bits(got[1, 0], [[105, 107], [113, 115]], face)


@pytest.mark.parametrize("roi, what", [
    ([2, 0, 0, 3, 3], "batch index 2.0"), ([-1, 0, 0, 3, 3], "batch index -1.0"),
    ([0, np.nan, 0, 3, 3], "non-finite value nan"), ([np.inf, 0, 0, 3, 3], "non-finite"),
    ([0, 0, 0, 3e9, 3], "outside the int32 range")])
def test_concrete_invalid_rois_raise(roi, what):
    rois = np.array([[0, 0, 0, 1, 1], roi], np.float32)
    with pytest.raises(ValueError, match=rf"^ONNX MaxRoiPool: ROI 1 .*{what}"):
        onnx.max_roi_pool(X2, rois, pooled_shape=(2, 2))
    with pytest.raises(ValueError, match=rf"^ROIPooling-1: ROI 1 .*{what}"):
        ov.roi_pooling(X2, rois, pooled_h=2, pooled_w=2, spatial_scale=1.0)


def test_errors():
    r = np.array([[0, 0, 0, 3, 3]], np.float32)
    for bad, err, match in [
        (dict(spatial_scale=0.0), ValueError, "spatial_scale"),
        (dict(spatial_scale=np.inf), ValueError, "spatial_scale"),
        (dict(spatial_scale=-1.0), ValueError, "spatial_scale"),
        (dict(pooled_shape=(0, 2)), ValueError, "pooled_shape"),
        (dict(pooled_shape=(2,)), ValueError, "pooled_shape"),
        (dict(opset=0), ValueError, "opset")]:
        kw = {"pooled_shape": (2, 2), **bad}
        with pytest.raises(err, match=f"^ONNX MaxRoiPool: .*{match}"):
            onnx.max_roi_pool(X4, r, **kw)
    with pytest.raises(TypeError, match="^ONNX MaxRoiPool: `X` dtype bfloat16"):
        onnx.max_roi_pool(X4.astype(ml_dtypes.bfloat16), r.astype(ml_dtypes.bfloat16),
                          pooled_shape=(2, 2), opset=21)
    with pytest.raises(TypeError, match="^ONNX MaxRoiPool: `X` dtype int32"):
        onnx.max_roi_pool(X4.astype(np.int32), r.astype(np.int32), pooled_shape=(2, 2))
    with pytest.raises(TypeError, match="^ONNX MaxRoiPool: `rois` dtype float16"):
        onnx.max_roi_pool(X4, r.astype(np.float16), pooled_shape=(2, 2))
    with pytest.raises(ValueError, match=r"^ONNX MaxRoiPool: `rois` must have shape"):
        onnx.max_roi_pool(X4, r[:, :4], pooled_shape=(2, 2))
    with pytest.raises(ValueError, match="^ONNX MaxRoiPool: the data must be 4-D"):
        onnx.max_roi_pool(X4[0], r, pooled_shape=(2, 2))
    with pytest.raises(TypeError, match="^ONNX MaxRoiPool: `spatial_scale` must be static"):
        jax.jit(lambda s: onnx.max_roi_pool(X4, r, pooled_shape=(2, 2), spatial_scale=s))(1.0)
    with pytest.raises(TypeError, match="^ONNX MaxRoiPool: `pooled_shape` must be static"):
        jax.jit(lambda p: onnx.max_roi_pool(X4, r, pooled_shape=p))(jnp.array([2, 2]))
    kw = dict(pooled_h=2, pooled_w=2, spatial_scale=1.0)
    with pytest.raises(ValueError, match="^ROIPooling: ROIPooling exists from opset 2"):
        ov.roi_pooling(X4, r, **kw, opset=1)
    with pytest.raises(NotImplementedError, match="^ROIPooling-1: `method` 'bilinear'"):
        ov.roi_pooling(X4, r, **kw, method="BILINEAR")
    with pytest.raises(ValueError, match="^ROIPooling-1: `method`"):
        ov.roi_pooling(X4, r, **kw, method="avg")
    with pytest.raises(ValueError, match="^ROIPooling-1: `pooled_h`"):
        ov.roi_pooling(X4, r, pooled_h=0, pooled_w=2, spatial_scale=1.0)
    with pytest.raises(ValueError, match="^ROIPooling-1: `spatial_scale`"):
        ov.roi_pooling(X4, r, pooled_h=2, pooled_w=2, spatial_scale=0.0)
    with pytest.raises(TypeError, match="^ROIPooling-1: `input` must have a floating dtype"):
        ov.roi_pooling(X4.astype(np.int32), r.astype(np.int32), **kw)
    with pytest.raises(TypeError, match="^ROIPooling-1: `pooled_w` must be static"):
        jax.jit(lambda p: ov.roi_pooling(X4, r, pooled_h=2, pooled_w=p,
                                         spatial_scale=1.0))(2)


def test_m15_other_dtypes_and_empty():
    faces = [lambda x, r: onnx.max_roi_pool(x, r, pooled_shape=(2, 2), opset=22),
             lambda x, r: ov.roi_pooling(x, r, pooled_h=2, pooled_w=2, spatial_scale=1.0)]
    for dtype in (np.float16, np.float64, ml_dtypes.bfloat16):
        with x64_for(dtype):  # both faces' eager calls, batched as the library compiles them
            args = (X4.astype(dtype), np.array([[0, 0, 0, 3, 3]], dtype))
            got, got_ov = jit_each([(f, args) for f in faces], as_eager=True)
        name = np.dtype(dtype).name
        assert_bits(got, np.array([[[[5, 7], [13, 15]]]], dtype), f"{name} MaxRoiPool")
        assert_bits(got_ov, got, f"{name} ROIPooling")
    assert _onnx(X4, np.zeros((0, 5), np.float32)).shape == (0, 1, 2, 2)
    assert_bits(_onnx(np.zeros((1, 2, 0, 3), np.float32), [0, 0, 0, 3, 3]),
                np.zeros((1, 2, 2, 2), np.float32))


@pytest.mark.parametrize("integer", [False, True], ids=["float32", "integer"])
def test_nan_chunks_and_rows_against_numpy(monkeypatch, integer):
    """The OpenVINO fix-up's chunks (``lax.top_k`` of `_first_scores`: the first `k` set flags
    at or past `lo`, in order) and positions (`_row_column`) against NumPy, on the float32
    forms and on the integer forms that counts or maps beyond ``FLOAT32_EXACT`` take (forced
    here by a small threshold)."""
    from jaxmax._src.lowering.roi import max_pool as roi_max_pool
    if integer:
        monkeypatch.setattr(roi_max_pool, "FLOAT32_EXACT", 100)
    rng = np.random.default_rng(5)
    flags = rng.random(5000) < 0.3
    starts, k = [0, 1, 17, 2500, 4990, 5000], 300
    maps = [(50, 50), (7, 13), (1000, 3)]

    def chunks(f, lo):
        return [jax.lax.top_k(roi_max_pool._first_scores(f, jnp.int32(v)), k) for v in lo]

    # one plain jitted program (the helpers run inside the lowering's traced programs; run
    # eagerly they dispatched op by op, a compile per primitive)
    got, rows = jax.jit(lambda f, ps: (chunks(f, starts), [
        roi_max_pool._row_column(p, width, height)
        for p, (height, width) in zip(ps, maps, strict=True)]))(
        jnp.asarray(flags), [jnp.arange(h * w, dtype=jnp.int32) for h, w in maps])
    for lo, (score, entry) in zip(starts, got, strict=True):
        want = np.flatnonzero(flags & (np.arange(flags.size) >= lo))[:k]
        live = np.asarray(score) > 0
        assert live.sum() == want.size, lo
        assert not live[want.size:].any(), lo
        np.testing.assert_array_equal(np.asarray(entry)[:want.size], want, f"lo {lo}")
    for (height, width), (h, w) in zip(maps, rows, strict=True):
        p = np.arange(height * width, dtype=np.int32)
        np.testing.assert_array_equal(h, p // width, f"{height}x{width}")
        np.testing.assert_array_equal(w, p % width, f"{height}x{width}")


def test_openvino_fold_on_nan_data_with_the_integer_forms(monkeypatch):
    """ROIPooling-1 on NaN data through the integer scores and rows (what counts and maps
    beyond ``FLOAT32_EXACT`` take), against the reference fold written from the spec."""
    from jaxmax._src.lowering.roi import max_pool as roi_max_pool
    monkeypatch.setattr(roi_max_pool, "FLOAT32_EXACT", 8)
    rng = np.random.default_rng(23)
    shape, pooled, scale = CONFIGS[0]
    x = _data(rng, shape, np.float32, special=True)
    rois = _rois(rng, 9, shape[0], shape[2], shape[3], scale).astype(np.float32)
    got = jax.jit(lambda v, r: ov.roi_pooling(v, r, pooled_h=pooled[0], pooled_w=pooled[1],
                                              spatial_scale=scale))(x, rois)
    assert_bits(got, oracle.max_roi_pool(x, rois, scale, pooled, rule="fold"), "integer forms")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_openvino_fold_over_many_nan_chunks(dtype):
    """ROIPooling-1 with most bins holding a NaN, so that the fix-up runs several chunks of
    128 bins per block (a chunk's stale rows, past its count, repeat bins of an earlier chunk
    or none), against the reference fold written from the spec; float64 keys are int64."""
    rng = np.random.default_rng(31)
    shape, pooled, scale = (2, 9, 16, 16), (4, 4), 1.0
    x = _data(rng, shape, np.float64, special=True)
    x[rng.random(shape) < 0.4] = np.nan
    rois = _rois(rng, 60, shape[0], shape[2], shape[3], scale)  # 960 bins, chunks of 128
    with x64_for(dtype):
        x, rois = x.astype(dtype), rois.astype(dtype)
        got = _ov(x, rois, pooled, scale)
    want = oracle.max_roi_pool(x, rois, scale, pooled, rule="fold")
    holding = np.isnan(oracle.max_roi_pool(x, rois, scale, pooled))  # a NaN in the bin
    assert holding[:, :8].any(1).sum() > 2 * 128  # the first block: three chunks or more
    assert_bits(got, want, np.dtype(dtype).name)
