"""ONNX RoiAlign and OpenVINO ROIAlign values: the hard cases of docs/semantics.md §12.6 (A*
and V*), expected values written from the contract text, and seeded sweeps against the NumPy
oracle tests/roi_align_oracle.py, compared bit for bit (zero signs included)."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
import roi_align_oracle as oracle
from helpers import assert_same
from jit_batch import jit_each

from jaxmax import onnx
from jaxmax import openvino as ov

X4 = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
X4P = X4 + 1
B0 = np.array([0])
F32_LOWEST = np.float32(np.finfo(np.float32).min)


def _box(*v, dtype=np.float32):
    return np.array([v], dtype)


def _onnx(x, rois, batch=B0, *, ctm="output_half_pixel", opset=16, out=(2, 2), **kw):
    if opset < 16:
        ctm = None
    return np.asarray(onnx.roi_align(x, rois, batch, output_height=out[0], output_width=out[1],
                                     coordinate_transformation_mode=ctm, opset=opset, **kw))


def _ov(x, rois, batch=B0, *, out=(2, 2), sr=2, scale=1.0, mode="max", **kw):
    return np.asarray(ov.roi_align(x, rois, batch, pooled_h=out[0], pooled_w=out[1],
                                   sampling_ratio=sr, spatial_scale=scale, mode=mode, **kw))


def _bits_equal(actual, expected, context=""):
    """Exact values and zero signs (NaN equal to NaN)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert_same(actual, expected, context)
    zeros = (expected == 0)
    np.testing.assert_array_equal(np.signbit(actual[zeros]), np.signbit(expected[zeros]),
                                  err_msg=f"{context}: zero signs")


# ------------------------------------------------------------------ ONNX hard cases (A*)

def test_a1_samples_on_pixels():
    got = _onnx(X4P, _box(0, 0, 4, 4), mode="max", sampling_ratio=1)
    _bits_equal(got[0, 0], np.array([[6, 8], [14, 16]], np.float32))


def test_a2_interpolate_then_max():
    got = _onnx(X4, _box(0, 0, 3, 3), mode="max", sampling_ratio=2)
    _bits_equal(got[0, 0], np.array([[5.625, 7.125], [11.625, 13.125]], np.float32))


def test_a2c_weighted_corners():
    got = _onnx(X4, _box(0, 0, 3, 3), mode="max", sampling_ratio=2,
                max_sampling="weighted_corners")
    _bits_equal(got[0, 0], np.array([[3.828125, 4.59375], [7.109375, 7.65625]], np.float32))


def test_a3_negative_features():
    got = _onnx(-X4 - 1, _box(0, 0, 3, 3), mode="max", sampling_ratio=2)
    _bits_equal(got[0, 0], np.array([[-2.875, -4.375], [-8.875, -10.375]], np.float32))


@pytest.mark.parametrize("where", [(3, 3), (1, 1)])
def test_a5_nan_propagates(where):
    x = X4P.copy()
    x[0, 0][where] = np.nan
    got = _onnx(x, _box(0, 0, 4, 4), out=(1, 1), mode="max", sampling_ratio=2)
    assert np.isnan(got).all()


def test_a6_nan_at_a_zero_weight_corner():
    x = X4P.copy()
    x[0, 0, 1, 2] = np.nan
    got = _onnx(x, _box(0, 0, 4, 4), mode="max", sampling_ratio=1)
    _bits_equal(got[0, 0], np.array([[np.nan, 8], [14, 16]], np.float32))


@pytest.mark.parametrize("mode, expected", [("max", 36.0), ("avg", 9.0)])
def test_a7_nan_at_origin_does_not_leak(mode, expected):
    x = (np.arange(36, dtype=np.float32) + 1).reshape(1, 1, 6, 6)
    x[0, 0, 0, 0] = np.nan
    got = _onnx(x, _box(4, 4, 12, 12), out=(1, 1), mode=mode, sampling_ratio=2)
    _bits_equal(got.reshape(()), np.float32(expected))


def test_a8_out_of_image_sample_is_plus_zero():
    got = _onnx(-X4P, _box(2, 2, 10, 10), out=(1, 1), mode="max", sampling_ratio=2)
    _bits_equal(got.reshape(()), np.float32(0.0))


def test_a9_opset_10_is_output_half_pixel():
    x = np.arange(100, dtype=np.float32).reshape(1, 1, 10, 10)
    got = _onnx(x, _box(0, 0, 9, 9), opset=10, mode="avg", sampling_ratio=2)
    _bits_equal(got[0, 0], np.array([[24.75, 29.25], [69.75, 74.25]], np.float32))


def test_a10_opset_16_defaults():
    x = np.arange(100, dtype=np.float32).reshape(1, 1, 10, 10)
    got = np.asarray(onnx.roi_align(x, _box(0, 0, 9, 9), B0, output_height=2, output_width=2,
                                    opset=16))
    expected = oracle.roi_align(x, _box(0, 0, 9, 9), B0, pooled=(2, 2), how="half_pixel")
    _bits_equal(got, expected)
    np.testing.assert_allclose(got[0, 0], [[19.36, 23.85], [64.26, 68.75001]], rtol=1e-6)


@pytest.mark.parametrize("sr, expected", [(0, 0.0), (2, 11.0)])
def test_a11_reversed_roi(sr, expected):
    got = _onnx(X4P, _box(3, 3, 1, 1), ctm="half_pixel", out=(1, 1), mode="max",
                sampling_ratio=sr)
    _bits_equal(got.reshape(()), np.float32(expected))


@pytest.mark.parametrize("sr, expected", [(0, 0.0), (2, 6.0)])
def test_a12_point_roi(sr, expected):
    got = _onnx(X4P, _box(1.5, 1.5, 1.5, 1.5), ctm="half_pixel", mode="max", sampling_ratio=sr)
    _bits_equal(got[0, 0], np.full((2, 2), expected, np.float32))


def test_a21_reversed_along_one_axis():
    got = _onnx(X4P, _box(3, 0, 1, 3), ctm="half_pixel", out=(1, 1), mode="max",
                sampling_ratio=0)
    _bits_equal(got.reshape(()), np.float32(0.0))


@pytest.mark.parametrize("batch", [2, -1])
def test_a13_concrete_bad_batch(batch):
    x = np.concatenate([X4P, X4P + 100])
    with pytest.raises(ValueError, match=r"ONNX RoiAlign: ROI 0 has `batch_indices` "):
        onnx.roi_align(x, _box(0, 0, 4, 4), np.array([batch]))


def test_a14_traced_bad_batch_zeroes_that_roi_only():
    x = np.concatenate([X4P, X4P + 100])
    rois = np.repeat(_box(0, 0, 4, 4), 3, axis=0)
    f = jax.jit(lambda x, r, b: onnx.roi_align(
        x, r, b, mode="max", output_height=2, output_width=2, sampling_ratio=1,
        coordinate_transformation_mode="output_half_pixel"))
    got = np.asarray(f(x, rois, np.array([1, -1, 0])))
    _bits_equal(got[0, 0], np.array([[106, 108], [114, 116]], np.float32))
    _bits_equal(got[1], np.zeros((1, 2, 2), np.float32))
    _bits_equal(got[2, 0], np.array([[6, 8], [14, 16]], np.float32))


def test_a14_traced_nan_roi_zeroes_that_roi_only():
    rois = np.array([[0, 0, 4, 4], [0, np.nan, 4, 4]], np.float32)
    got = np.asarray(jax.jit(lambda r: onnx.roi_align(X4P, r, np.array([0, 0]), mode="max",
                                                      sampling_ratio=1))(rois))
    _bits_equal(got[1], np.zeros((1, 1, 1), np.float32))
    assert got[0, 0, 0, 0] != 0


def test_a15_errors():
    with pytest.raises(ValueError, match=r"ONNX RoiAlign: ROI 0 of `rois` holds the non-finite"):
        onnx.roi_align(X4P, _box(0, np.nan, 4, 4), B0)
    with pytest.raises(ValueError, match=r"ONNX RoiAlign: `sampling_ratio` must be >= 0"):
        onnx.roi_align(X4P, _box(0, 0, 4, 4), B0, sampling_ratio=-1)
    with pytest.raises(ValueError, match=r"ONNX RoiAlign: `coordinate_transformation_mode`"):
        onnx.roi_align(X4P, _box(0, 0, 4, 4), B0, coordinate_transformation_mode="asymmetric")
    with pytest.raises(ValueError, match=r"ONNX RoiAlign: `coordinate_transformation_mode`"):
        onnx.roi_align(X4P, _box(0, 0, 4, 4), B0, opset=10,
                       coordinate_transformation_mode="half_pixel")


def test_a16_case_insensitive_mode():
    got = _onnx(X4P, _box(0, 0, 4, 4), mode="MAX", sampling_ratio=1)
    _bits_equal(got[0, 0], np.array([[6, 8], [14, 16]], np.float32))


@pytest.mark.parametrize("dtype, opset", [("float16", 16), ("float64", 16), ("bfloat16", 22)])
def test_a17_dtypes(dtype, opset):
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    with jax.enable_x64(dt == np.float64):
        got = _onnx(X4P.astype(dt), _box(0, 0, 4, 4, dtype=dt), opset=opset, mode="max",
                    sampling_ratio=1)
    _bits_equal(got[0, 0], np.array([[6, 8], [14, 16]], dt))


def test_a17_bf16_before_22_is_a_type_error():
    import ml_dtypes
    with pytest.raises(TypeError, match=r"ONNX RoiAlign: `X` dtype bfloat16 is not allowed"):
        onnx.roi_align(X4P.astype(ml_dtypes.bfloat16),
                       _box(0, 0, 4, 4, dtype=ml_dtypes.bfloat16), B0, opset=16)


@functools.cache
def _gradients():
    """The gradients of A19 and A20 (max, avg) with respect to X4P, one plain jitted program
    (a user's ``jax.grad`` compiles plainly, never with the fast options of small eager
    calls)."""
    def a19(x):
        return onnx.roi_align(x, _box(0, 0, 4, 4), B0, mode="max", output_height=2,
                              output_width=2, sampling_ratio=1,
                              coordinate_transformation_mode="output_half_pixel").sum()

    def a20(x, mode):
        return onnx.roi_align(x, _box(0, 0, 3, 3), B0, mode=mode, sampling_ratio=1,
                              coordinate_transformation_mode="output_half_pixel").sum()

    grads = jax.jit(lambda x: {"a19": jax.grad(a19)(x),
                               **{m: jax.grad(a20)(x, m) for m in ("max", "avg")}})
    return {k: np.asarray(g) for k, g in grads(X4P).items()}


def test_a19_gradient_to_the_winning_samples():
    expected = np.zeros((4, 4), np.float32)
    expected[1::2, 1::2] = 1
    _bits_equal(_gradients()["a19"][0, 0], expected)


@pytest.mark.parametrize("mode", ["max", "avg"])
def test_a20_gradient_to_the_four_corners(mode):
    expected = np.zeros((4, 4), np.float32)
    expected[1:3, 1:3] = 0.25
    _bits_equal(_gradients()[mode][0, 0], expected)


# ------------------------------------------------------------- OpenVINO hard cases (V*)

@pytest.mark.parametrize("opset", [3, 9])
def test_v1_v2(opset):
    _bits_equal(_ov(X4, _box(0, 0, 3, 3), opset=opset)[0, 0],
                np.array([[5.625, 7.125], [11.625, 13.125]], np.float32))
    _bits_equal(_ov(-X4 - 1, _box(0, 0, 3, 3), opset=opset)[0, 0],
                np.array([[-2.875, -4.375], [-8.875, -10.375]], np.float32))


@pytest.mark.parametrize("where, expected", [((3, 3), 14.0), ((1, 1), 16.0)])
def test_v3_nan_never_wins(where, expected):
    x = X4P.copy()
    x[0, 0][where] = np.nan
    _bits_equal(_ov(x, _box(0, 0, 4, 4), out=(1, 1)).reshape(()), np.float32(expected))


@pytest.mark.parametrize("aligned, expected", [
    ("half_pixel_for_nn", [[13.6875, 15.4375], [24.1875, 25.9375]]),
    ("half_pixel", [[15.4375, 17.1875], [25.9375, 27.6875]]),
    ("asymmetric", [[17.1875, 18.9375], [27.6875, 29.4375]]),
])
def test_v4_aligned_modes(aligned, expected):
    x = (np.arange(36, dtype=np.float32) + 1).reshape(1, 1, 6, 6)
    got = _ov(x, _box(2, 2, 9, 9), scale=0.5, aligned_mode=aligned)
    _bits_equal(got[0, 0], np.array(expected, np.float32))


@pytest.mark.parametrize("batch", [-1, 1])
def test_v5_bad_batch(batch):
    with pytest.raises(ValueError, match=r"ROIAlign-9: ROI 0 has `batch_indices` "):
        _ov(X4, _box(0, 0, 3, 3), np.array([batch]))


def test_v6_errors():
    with pytest.raises(ValueError, match=r"ROIAlign-3: `aligned_mode` does not exist"):
        _ov(X4, _box(0, 0, 3, 3), opset=3, aligned_mode="half_pixel")
    with pytest.raises(ValueError, match=r"ROIAlign-9: `spatial_scale` must be > 0"):
        _ov(X4, _box(0, 0, 3, 3), scale=0.0)
    with pytest.raises(ValueError, match=r"ROIAlign: ROIAlign exists from opset 3"):
        _ov(X4, _box(0, 0, 3, 3), opset=2)
    with pytest.raises(ValueError, match=r"ROIAlign-9: `pooled_h` must be >= 1"):
        _ov(X4, _box(0, 0, 3, 3), out=(0, 1))


def test_v7_all_nan_gives_lowest():
    x = np.full((1, 1, 4, 4), np.nan, np.float32)
    _bits_equal(_ov(x, _box(0, 0, 4, 4), out=(1, 1)).reshape(()), F32_LOWEST)


def test_v_ties_keep_the_first_zero():
    """The fold keeps the first of tied maxima: -0 first, then +0, gives -0."""
    x = np.full((1, 1, 4, 4), -1, np.float32)
    x[0, 0, 0, 0], x[0, 0, 0, 2] = -0.0, 0.0
    got = _ov(x, _box(0, 0, 4, 2), out=(1, 1), sr=2)  # samples at (0.5,1), (0.5,3)... pixels
    expected = oracle.roi_align(x, _box(0, 0, 4, 2), B0, face="openvino", mode="max",
                                sampling_ratio=2, how="asymmetric")
    _bits_equal(got, expected)


def test_onnx_avg_of_minus_zeros_is_plus_zero():
    x = np.full((1, 1, 4, 4), -0.0, np.float32)
    got = _onnx(x, _box(0, 0, 4, 4), mode="avg", sampling_ratio=2)
    _bits_equal(got, np.zeros((1, 1, 2, 2), np.float32))


# ------------------------------------------------------------------------ seeded sweeps

def _sweep_data(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=flat.size // 6, replace=False)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32)
    flat[picks] = rng.choice(specials, size=picks.size)
    return x


def _sweep_rois(rng, count, height, width):
    """Sub-pixel to larger than the map, inside, partly outside and reversed."""
    size = rng.choice([0.2, 1.0, 3.0, 8.0, 30.0], size=(count, 2))
    size = size * rng.uniform(0.5, 1.5, (count, 2))
    x1 = rng.uniform(-6, width + 2, count)
    y1 = rng.uniform(-6, height + 2, count)
    rois = np.stack([x1, y1, x1 + size[:, 0], y1 + size[:, 1]], 1)
    flip = rng.random(count) < 0.1
    rois[flip] = rois[flip][:, [2, 3, 0, 1]]
    return rois.astype(np.float32)


ONNX_HOWS = ["half_pixel", "output_half_pixel"]
OV_HOWS = ["asymmetric", "half_pixel_for_nn", "half_pixel"]


@pytest.mark.parametrize("sr", [0, 2])
@pytest.mark.parametrize("face, how", [("onnx", h) for h in ONNX_HOWS]
                         + [("openvino", h) for h in OV_HOWS])
def test_seeded_sweep_against_the_oracle(face, how, sr):
    rng = np.random.default_rng([7, sr, len(how), face == "onnx"])
    x = _sweep_data(rng, (2, 3, 7, 9))
    rois = _sweep_rois(rng, 24, 7, 9)
    batch = rng.integers(0, 2, 24)
    scale = 0.75
    variants = [("avg", False), ("max", False)] + ([("max", True)] if face == "onnx" else [])

    def call(mode, corners):
        if face == "onnx":
            return lambda x, r, b: onnx.roi_align(
                x, r, b, mode=mode, output_height=3, output_width=2, sampling_ratio=sr,
                spatial_scale=scale, coordinate_transformation_mode=how,
                max_sampling="weighted_corners" if corners else "interpolated")
        return lambda x, r, b: ov.roi_align(x, r, b, pooled_h=3, pooled_w=2, sampling_ratio=sr,
                                            spatial_scale=scale, mode=mode, aligned_mode=how)

    # the variants' eager calls, batched as the library compiles them (one program)
    got = jit_each([(call(*v), (x, rois, batch)) for v in variants], as_eager=True)
    for (mode, corners), out in zip(variants, got, strict=True):
        expected = oracle.roi_align(x, rois, batch, face=face, mode=mode, pooled=(3, 2),
                                    sampling_ratio=sr, spatial_scale=scale, how=how,
                                    corners=corners)
        _bits_equal(out, expected, f"{face} {how} {mode} corners={corners} sr={sr}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
@pytest.mark.parametrize("face", ["onnx", "openvino"])
def test_every_floating_dtype_against_the_oracle(face, dtype):
    """16-bit data computed in float32 and rounded once at the end; float64 in float64."""
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    rng = np.random.default_rng([11, len(dtype), face == "onnx"])
    x = _sweep_data(rng, (2, 2, 6, 7)).astype(dt)
    rois = _sweep_rois(rng, 12, 6, 7).astype(dt)
    batch = rng.integers(0, 2, 12)
    configs = [(mode, sr) for mode in ("avg", "max") for sr in (0, 2)]

    def call(mode, sr):
        if face == "onnx":
            return lambda x, r, b: onnx.roi_align(x, r, b, mode=mode, output_height=2,
                                                  output_width=3, sampling_ratio=sr,
                                                  spatial_scale=0.75, opset=22)
        return lambda x, r, b: ov.roi_align(x, r, b, pooled_h=2, pooled_w=3, sampling_ratio=sr,
                                            spatial_scale=0.75, mode=mode,
                                            aligned_mode="half_pixel")

    with jax.enable_x64(dt == np.float64):
        # the four eager calls, batched as the library compiles them (one program)
        got = jit_each([(call(*c), (x, rois, batch)) for c in configs], as_eager=True)
    for (mode, sr), out in zip(configs, got, strict=True):
        expected = oracle.roi_align(x, rois, batch, face=face, mode=mode, pooled=(2, 3),
                                    sampling_ratio=sr, spatial_scale=0.75, how="half_pixel")
        _bits_equal(out, expected, f"{face} {dtype} {mode} sr={sr}")
