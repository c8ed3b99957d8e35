"""The weighted-corner max (``max_sampling="weighted_corners"``, onnxruntime's max mode):
the element each sample keeps of its four weighted corners, and where the gradient goes.

docs/semantics.md §12.3 and §12.6: per sample the first NaN among ``t1..t4``, else the largest,
``+0`` over ``-0``, the first of equal values; the cotangent goes to that corner alone. The
expected element is found by a NumPy loop over the corners written from that text (never the
lowering's keys), and compared bit for bit (NaN payloads and signs, zero signs)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import roi_align_oracle as oracle

from jaxmax import onnx
from jaxmax._src.lowering.roi import samples

NAN = np.float32(np.nan)
#: NaNs of both signs and several payloads: the kept one must be the first, bit for bit
NANS = np.array([0x7FC00000, 0xFFC00000, 0x7FC00123, 0xFF800001], np.uint32).view(np.float32)
SPECIALS = np.concatenate([NANS, np.array([np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5,
                                           np.finfo(np.float32).max, np.finfo(np.float32).tiny],
                                          np.float32)])


def _winner(values) -> int:
    """The index the contract keeps among `values` (in order): the first NaN; else the first
    value greater than every earlier one (``+0`` greater than ``-0``)."""
    best = 0
    for i, v in enumerate(values):
        if np.isnan(values[best]):
            break
        if np.isnan(v):
            best = i
            break
        if v > values[best] or (v == 0 == values[best]
                                and np.signbit(values[best]) and not np.signbit(v)):
            best = i
    return best


def _corner_sets(rng, count):
    """(4, count) float32 corners: every pair of specials in every position, and seeded draws
    with many ties."""
    picks = [rng.choice(SPECIALS, size=(4, count // 2)),
             rng.integers(-2, 3, (4, count - count // 2)).astype(np.float32)]
    t = np.concatenate(picks, axis=1)
    zeros = t == 0
    t[zeros] = rng.choice(np.array([0.0, -0.0], np.float32), size=zeros.sum())
    return t


def test_corner_max_keeps_the_first_nan_else_the_first_largest():
    rng = np.random.default_rng(43)
    t = _corner_sets(rng, 4000)
    got = np.asarray(jax.jit(samples.corner_max)(*t))
    want = np.array([t[_winner(t[:, j]), j] for j in range(t.shape[1])])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_corner_max_gradient_goes_to_the_kept_corner_only():
    rng = np.random.default_rng(44)
    t = _corner_sets(rng, 2000)
    ct = rng.standard_normal(t.shape[1]).astype(np.float32)

    def total(t1, t2, t3, t4):
        return jnp.sum(ct * samples.corner_max(t1, t2, t3, t4))

    got = np.stack(jax.jit(jax.grad(total, argnums=(0, 1, 2, 3)))(*t))
    want = np.zeros_like(t)
    for j in range(t.shape[1]):
        want[_winner(t[:, j]), j] = ct[j]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("sr", [0, 2])
def test_weighted_corners_with_ties_zeros_and_nans_against_the_oracle(sr):
    """Integer features (ties among the corners), both zeros, infinities and NaNs of both
    signs, through roi_align: the oracle's values; NaN where the oracle has NaN."""
    rng = np.random.default_rng([45, sr])
    x = rng.integers(-2, 3, (2, 3, 9, 8)).astype(np.float32)
    zeros = x == 0
    x[zeros] = rng.choice(np.array([0.0, -0.0], np.float32), size=zeros.sum())
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, flat.size // 10, replace=False)
    flat[picks] = rng.choice(SPECIALS[:6], picks.size)
    size = rng.uniform(0.3, 12, (20, 2))
    xy = rng.uniform(-4, 9, (20, 2))
    rois = np.concatenate([xy, xy + size], 1).astype(np.float32)
    batch = rng.integers(0, 2, 20)
    got = np.asarray(jax.jit(lambda x, r, b: onnx.roi_align(
        x, r, b, mode="max", output_height=3, output_width=2, sampling_ratio=sr,
        spatial_scale=0.5, max_sampling="weighted_corners"))(x, rois, batch))
    want = oracle.roi_align(x, rois, batch, mode="max", pooled=(3, 2), sampling_ratio=sr,
                            spatial_scale=0.5, corners=True)
    assert np.isnan(want).any() and (want == 0).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(got[finite].view(np.uint32), want[finite].view(np.uint32))
