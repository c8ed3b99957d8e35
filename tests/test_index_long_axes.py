"""Every index-producing operator numbers an axis of more than 2**31 elements.

With ``jax_enable_x64`` on, the indices of an axis of ``2**31 + 1`` elements are int64 and the
program traces (``jax.eval_shape``: no array is built, so this costs nothing); with it off, each
operator raises its documented ValueError naming the index output. A lowering that kept
positions in int32 raised ``OverflowError`` from deep inside (ArgMax's lane fold did, after
round 6) or refused the axis (``lax.top_k``).

TopK's blocked selection for such axes is also run on small data, with its block length and the
axis threshold lowered, against the NumPy oracle (tests/arg_max_oracle.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from adaptive_unpool_oracle import adaptive_max_pool as adaptive_oracle
from arg_max_oracle import top_k as top_k_oracle
from helpers import assert_same, special_floats

from jaxmax import onnx
from jaxmax import openvino as ov

N = 2**31 + 1

# (operator, input shape, call); each returns its indices last
INDEXED = {
    "ONNX ArgMax, a 1-D axis": ((N,), lambda z: onnx.arg_max(z, keepdims=0)),
    "ONNX ArgMax, the last axis": ((2, N), lambda z: onnx.arg_max(z, axis=1)),
    "ONNX ArgMax, an axis before the last": ((N, 2), lambda z: onnx.arg_max(z, axis=0)),
    "ONNX ArgMax select_last_index": ((N,), lambda z: onnx.arg_max(z, select_last_index=1)),
    "ONNX TopK": ((N,), lambda z: onnx.top_k(z, 3)),
    "ONNX TopK smallest": ((2, N), lambda z: onnx.top_k(z, 2, largest=0)),
    "TopK-11 i64": ((N,), lambda z: ov.top_k(z, 3, axis=0, mode="max", sort="value",
                                             index_element_type="i64")),
    "TopK-11 i64 by index": ((N,), lambda z: ov.top_k(z, 3, axis=0, mode="min", sort="index",
                                                      index_element_type="i64")),
    "MaxPool-8 i64": ((1, 1, N), lambda z: ov.max_pool(z, kernel=[2], strides=[2], opset=8,
                                                       index_element_type="i64")),
    "ONNX MaxPool with Indices": ((1, 1, N), lambda z: onnx.max_pool(
        z, kernel_shape=[2], strides=[2], return_indices=True)),
    "AdaptiveMaxPool-8 i64": ((1, 1, N), lambda z: ov.adaptive_max_pool(
        z, [7], index_element_type="i64")),
    "AdaptiveMaxPool-8 i64, windows that tile": ((2, 3, N), lambda z: ov.adaptive_max_pool(
        z, [3], index_element_type="i64")),
    "AdaptiveMaxPool-8 i64, a 2-D plane": ((1, 1, 2**16, 2**15 + 1), lambda z: (
        ov.adaptive_max_pool(z, [5, 3], index_element_type="i64"))),
}
# operators that number positions internally: no index output, the same two outcomes
POSITIONED = {
    "ONNX Hardmax": ((2, N), lambda z: onnx.hardmax(z)),
    "ONNX Hardmax, an axis before the last": ((N, 2), lambda z: onnx.hardmax(z, axis=0)),
    "ONNX Hardmax-11 coerced": ((2, 2**16, 2**15 + 1),
                                lambda z: onnx.hardmax(z, axis=1, opset=11)),
}


def _last(out):
    return out[-1] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name", list(INDEXED))
def test_int64_indices_with_x64(name):
    shape, call = INDEXED[name]
    with jax.enable_x64(True):
        out = jax.eval_shape(call, jax.ShapeDtypeStruct(shape, jnp.float32))
    assert _last(out).dtype == np.int64, out


@pytest.mark.parametrize("name", list(INDEXED))
def test_the_documented_error_without_x64(name):
    shape, call = INDEXED[name]
    with jax.enable_x64(False), pytest.raises(ValueError, match="more than int32 can count"):
        jax.eval_shape(call, jax.ShapeDtypeStruct(shape, jnp.float32))


@pytest.mark.parametrize("name", list(POSITIONED))
def test_positions_past_int32_with_x64(name):
    shape, call = POSITIONED[name]
    with jax.enable_x64(True):
        out = jax.eval_shape(call, jax.ShapeDtypeStruct(shape, jnp.float32))
    assert out.shape == shape and out.dtype == np.float32


@pytest.mark.parametrize("name", list(POSITIONED))
def test_positions_past_int32_without_x64(name):
    shape, call = POSITIONED[name]
    with jax.enable_x64(False), pytest.raises(ValueError, match="more than int32 can count"):
        jax.eval_shape(call, jax.ShapeDtypeStruct(shape, jnp.float32))


# ONNX TopK has no index order (its sorted=0 leaves the order unspecified)
@pytest.mark.parametrize(("face", "by_index"),
                         [("onnx", False), ("openvino", False), ("openvino", True)])
@pytest.mark.parametrize("descending", [True, False])
def test_blocked_top_k_on_small_data(monkeypatch, face, descending, by_index):
    """The blocked selection with blocks of 16 on axes of 37 and 64: NaN, ties, signed zeros,
    a last block filled out, and k larger than a block."""
    from jaxmax._src.lowering import top_k as lowering

    monkeypatch.setattr(lowering, "LONG_AXIS", 20)
    monkeypatch.setattr(lowering, "LONG_BLOCK", 16)
    jax.clear_caches()  # the thresholds are read when a shape is traced
    rng = np.random.default_rng(int(descending) + 2 * int(by_index))
    for n, k in ((37, 5), (64, 20), (37, 37)):
        x = special_floats(rng, (3, n))
        x[:, ::7] = np.round(x[:, ::7])  # ties
        x[0, 3], x[0, 30], x[1, 9] = -0.0, 0.0, -0.0
        oracle = top_k_oracle(x, k, 1, face=face, descending=descending, by_index=by_index)
        if face == "onnx":
            got = onnx.top_k(x, k, largest=int(descending))
        else:
            got = ov.top_k(x, k, axis=1, mode="max" if descending else "min",
                           sort="index" if by_index else "value", index_element_type="i32")
        np.testing.assert_array_equal(np.asarray(got[1]), oracle[1].astype(got[1].dtype),
                                      err_msg=f"n={n} k={k}")
        np.testing.assert_array_equal(np.asarray(got[0]).view(np.uint32),
                                      oracle[0].view(np.uint32), err_msg=f"n={n} k={k}")
    jax.clear_caches()


def test_adaptive_max_pool_long_plane_form_on_small_data(monkeypatch):
    """AdaptiveMaxPool's form for planes past int32 (per-axis gathers with int64 positions,
    computed from iotas where an axis' taps are too many for a constant), with x64 on and the
    plane threshold and the constant limit lowered: against the NumPy oracle, NaN (first and
    later in a window), ±inf, signed zeros and ties, overlapping and tiling windows; and the
    gradient, each window's cotangent at its index."""
    from jaxmax._src.lowering import adaptive_pool
    from jaxmax._src.lowering.pooling import compact as pool_compact

    monkeypatch.setattr(pool_compact, "NONE", 40)
    monkeypatch.setattr(adaptive_pool, "_CONSTANT_TAPS", 0)
    rng = np.random.default_rng(41)
    with jax.enable_x64(True):
        jax.clear_caches()  # the thresholds are read when a shape is traced
        for shape, out in (((2, 3, 61), (7,)), ((1, 2, 45), (5,)), ((2, 2, 9, 11), (4, 3)),
                           ((1, 2, 6, 7), (6, 7))):
            x = special_floats(rng, shape)
            x.reshape(-1)[::5] = np.round(x.reshape(-1)[::5])  # ties
            x.reshape(-1)[1::9] = -0.0
            x.reshape(-1)[2::9] = 0.0
            values, indices = ov.adaptive_max_pool(x, out, index_element_type="i64")
            want_v, want_i = adaptive_oracle(x, out, np.int64)
            assert_same(values, want_v, f"{shape} -> {out}")
            assert_same(indices, want_i, f"{shape} -> {out} indices")
            clean = np.where(np.isfinite(x), x, np.float32(0.5))
            cot = rng.standard_normal(want_v.shape).astype(np.float32)
            grad = jax.grad(lambda v, out=out, cot=cot: (ov.adaptive_max_pool(
                v, out, index_element_type="i64")[0] * cot).sum())(clean)
            _, clean_i = adaptive_oracle(clean, out, np.int64)
            want = np.zeros((shape[0] * shape[1], int(np.prod(shape[2:]))), np.float32)
            for plane, (ids, c) in enumerate(zip(clean_i.reshape(len(want), -1),
                                                 cot.reshape(len(want), -1), strict=True)):
                np.add.at(want[plane], ids, c)
            np.testing.assert_allclose(np.asarray(grad).reshape(want.shape), want, rtol=1e-6,
                                       err_msg=f"{shape} -> {out} gradient")
    jax.clear_caches()
