"""The ONNX MaxPool winner search on the unrolled taps, against the NumPy loop oracle
(tests/pool_oracle.py), exactly: ONNX Indices and the gradient on the windows a faster search
is most likely to get wrong (benchmarks/RESULTS.md, "Round 6: ONNX MaxPool with Indices on
NaN data", measured such searches).

* NaN windows, with NaN of both signs and other payloads than the values' own NaN, and ``+inf``
  before the first NaN (a search that looks for "above every number" in a NaN window must not
  stop at a ``+inf``);
* windows whose value is ``-inf``, with padding before their first input element, and windows
  with no input element at all (dilations, pads at or above the kernel);
* ``+inf``, ``-FLT_MAX``, signed zeros (the first zero wins, whichever its sign);
* subnormals, which XLA's CPU compare may tie with zero (docs/semantics.md §9.3): the index
  must be the oracle's on the data as the platform compares it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pool_oracle
import pytest
from helpers import pool_form

from jaxmax import onnx as jonnx


@pytest.fixture(autouse=True, scope="module")
def _unrolled():
    """The unrolled taps' search (these small inputs would take the compact form)."""
    with pool_form(compact=False):
        yield


def _nan(bits: int) -> np.float32:
    return np.array(bits, np.uint32).view(np.float32)[()]


#: NaN of three payloads (the quiet NaN, its negative, a signalling NaN), infinities, the
#: float32 extremes, signed zeros, and a few ordinary numbers (ties)
SPECIALS = [np.float32(np.nan), _nan(0xFFC00000), _nan(0x7F800001), np.float32(np.inf),
            np.float32(-np.inf), np.finfo(np.float32).max, np.finfo(np.float32).min,
            np.float32(0.0), np.float32(-0.0), np.float32(-1.0), np.float32(2.0)]

# (name, input shape, kernel, strides, dilations, ONNX pads)
GEOMETRIES = [
    ("k3_s2_p1", (2, 3, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),
    ("k2x3_s1x2_asymmetric", (1, 2, 7, 10), (2, 3), (1, 2), (1, 1), (0, 2, 1, 0)),
    ("k3_d3_s2_empty_windows", (1, 2, 7, 7), (3, 3), (2, 2), (3, 3), (5, 5, 5, 5)),
    ("1d_k2_d4_p6_empty_windows", (2, 2, 13), (2,), (1,), (4,), (6, 6)),
]
IDS = [g[0] for g in GEOMETRIES]


def _data(shape, seed, pool):
    rng = np.random.default_rng(seed)
    x = np.asarray(pool, np.float32)[rng.integers(0, len(pool), size=shape)]
    # a run of -inf so that whole windows (with their padding) hold nothing else
    x[..., : x.shape[-1] // 2] = np.where(rng.random(x[..., : x.shape[-1] // 2].shape) < 0.7,
                                          -np.inf, x[..., : x.shape[-1] // 2])
    return x


def _call(x, kernel, strides, dilations, pads):
    return jonnx.max_pool(x, kernel_shape=list(kernel), strides=list(strides),
                          dilations=list(dilations), pads=list(pads), return_indices=True)


def _oracle(x, kernel, strides, dilations, pads):
    values, indices = pool_oracle.onnx(x, list(kernel), list(strides), list(pads),
                                       list(dilations))
    return values, indices.astype(np.int32)  # int64 in 64-bit mode only


def _grad_oracle(x, indices):
    grad = np.zeros(x.size, np.float32)
    np.add.at(grad, indices[indices >= 0], 1.0)
    return grad.reshape(x.shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=IDS)
def test_indices_and_gradient_on_every_kind_of_window(geometry, dtype):
    _, shape, kernel, strides, dilations, pads = geometry
    # the gradient jitted, one compile for both seeds: outside jit, jax.grad compiled the
    # forward pass and each piece of its transpose as programs of their own (the same
    # operations; 22-31 compiles a test before)
    grad_of = jax.jit(jax.grad(lambda v: jonnx.max_pool(
        v, kernel_shape=list(kernel), strides=list(strides), dilations=list(dilations),
        pads=list(pads)).astype(jnp.float32).sum()))
    for seed in (0, 1):
        with np.errstate(over="ignore", invalid="ignore"):  # FLT_MAX is inf in 16 bits
            x = _data(shape, seed, SPECIALS).astype(dtype)
        want_values, want_indices = _oracle(x, kernel, strides, dilations, pads)
        values, indices = jax.jit(_call, static_argnums=(1, 2, 3, 4))(
            x, kernel, strides, dilations, pads)
        np.testing.assert_array_equal(np.asarray(indices), want_indices)
        np.testing.assert_array_equal(np.asarray(values).astype(np.float32),  # NaN equal
                                      want_values.astype(np.float32))
        # every zero value carries the sign of the element its index names
        got = np.asarray(values).astype(np.float32)
        named = x.reshape(-1).astype(np.float32)[np.maximum(np.asarray(indices), 0)]
        zero = (got == 0) & (np.asarray(indices) >= 0)
        np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(named[zero]))
        grad = grad_of(x)
        np.testing.assert_array_equal(np.asarray(grad).astype(np.float32),
                                      _grad_oracle(x, want_indices))


def _flushed(x):
    """`x` as a compare on this platform sees it: subnormals as zeros of their sign when XLA
    flushes them (docs/semantics.md §9.3)."""
    tiny = np.full(8, jnp.finfo(x.dtype).smallest_subnormal, x.dtype)
    if bool(np.asarray(jax.jit(lambda v: v > 0)(tiny)).all()):
        return x
    wide = x.astype(np.float32)
    subnormal = (wide != 0) & (np.abs(wide) < jnp.finfo(x.dtype).smallest_normal)
    return np.where(subnormal, np.copysign(np.float32(0), wide), wide).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_subnormal_maxima(dtype):
    finfo = jnp.finfo(dtype)
    tiny, normal = float(finfo.smallest_subnormal), float(finfo.smallest_normal)
    pool = [0.0, -0.0, tiny, -tiny, 3 * tiny, normal, -normal, float(np.nan)]
    geometry = (2, 3, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)
    for seed in (2, 3, 4):
        rng = np.random.default_rng(seed)
        x = np.asarray(pool, np.float32)[rng.integers(0, len(pool), size=geometry[0])]
        x = x.astype(dtype)
        _, want = _oracle(_flushed(x), *geometry[1:])
        _, indices = _call(x, *geometry[1:])
        np.testing.assert_array_equal(np.asarray(indices), want)
