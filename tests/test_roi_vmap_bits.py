"""``jax.vmap`` of the ROI operators is the per-example jitted call, bit for bit.

Under ``vmap`` with the ROIs batched, a divisor that the lowering keeps unbatched (a pooled
size, a grid count) reaches the division through a broadcast of the batch axis, which XLA:CPU
rewrites into a multiplication by the reciprocal: bin edges moved (MaxRoiPool, ROIPooling) and
RoiAlign's samples were off by an ulp. `bins.opaque_divisor` makes the divisor depend on the
dividend, so it is batched with it. Random ROIs of many sizes (sub-pixel to beyond the map)
and spatial scales with inexact quotients, so that a reciprocal shows: with the divisor
batched apart, every case here differed from its per-example calls (outputs, and the
gradients of RoiAlign).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import assert_same

from jaxmax import onnx
from jaxmax import openvino as ov

EXAMPLES = 3


def _boxes(rng, count: int, side: float) -> np.ndarray:
    """(EXAMPLES, count, 4) corners (x1, y1, x2, y2), sizes 0.5 to 1.5 * side, some outside."""
    size = np.exp(rng.uniform(np.log(0.5), np.log(1.5 * side), (EXAMPLES, count, 2)))
    corner = rng.uniform(-4, side, (EXAMPLES, count, 2))
    return np.concatenate([corner, corner + size], -1).astype(np.float32)


def _images(rng, shape) -> np.ndarray:
    return rng.standard_normal((EXAMPLES,) + shape).astype(np.float32)


def _per_example(f, *args):
    """``f`` jitted, called on each example of the batched `args` (None: shared)."""
    jf = jax.jit(f)
    return [jf(*(a if a is None or s else a[i] for a, s in args)) for i in range(EXAMPLES)]


def _stack(results):
    return jax.tree.map(lambda *leaves: np.stack([np.asarray(v) for v in leaves]), *results)


POOLS = {
    "onnx.max_roi_pool": lambda x, r: onnx.max_roi_pool(x, r, pooled_shape=(3, 7),
                                                        spatial_scale=0.37),
    "openvino.roi_pooling": lambda x, r: ov.roi_pooling(x, r, pooled_h=3, pooled_w=7,
                                                        spatial_scale=0.37),
}


@pytest.mark.parametrize("name", list(POOLS))
@pytest.mark.parametrize("shared_x", [False, True], ids=["x batched", "x shared"])
def test_roi_pooling_vmap_with_batched_rois(name, shared_x):
    rng = np.random.default_rng(11)
    x = _images(rng, (2, 4, 40, 37))
    boxes = _boxes(rng, 40, 40)
    rois = np.concatenate([rng.integers(0, 2, (EXAMPLES, 40, 1)).astype(np.float32), boxes], -1)
    f = POOLS[name]
    if shared_x:
        got = jax.vmap(f, in_axes=(None, 0))(x[0], rois)
        want = _per_example(f, (x[0], True), (rois, False))
    else:
        got = jax.vmap(f)(x, rois)
        want = _per_example(f, (x, False), (rois, False))
    assert_same(got, _stack(want))


ALIGNS = {
    "onnx avg sr 0": lambda x, r, b: onnx.roi_align(
        x, r, b, mode="avg", output_height=2, output_width=3, sampling_ratio=0,
        spatial_scale=0.5),
    "onnx max sr 2": lambda x, r, b: onnx.roi_align(
        x, r, b, mode="max", output_height=2, output_width=3, sampling_ratio=2,
        spatial_scale=0.37),
    "openvino avg sr 2 half_pixel": lambda x, r, b: ov.roi_align(
        x, r, b, pooled_h=3, pooled_w=2, sampling_ratio=2, spatial_scale=0.37, mode="avg",
        aligned_mode="half_pixel"),
}


@pytest.mark.parametrize("name", list(ALIGNS))
def test_roi_align_vmap_with_batched_rois(name):
    rng = np.random.default_rng(12)
    x = _images(rng, (2, 2, 9, 8))
    rois = _boxes(rng, 5, 9)
    batch = rng.integers(0, 2, 5)
    f = ALIGNS[name]
    got = jax.vmap(f, in_axes=(0, 0, None))(x, rois, batch)
    want = _per_example(f, (x, False), (rois, False), (batch, True))
    assert_same(got, _stack(want))


def test_roi_align_vmap_gradients_with_batched_rois():
    rng = np.random.default_rng(13)
    x = _images(rng, (2, 2, 9, 8))
    rois = _boxes(rng, 5, 9)
    batch = rng.integers(0, 2, 5)
    f = ALIGNS["onnx avg sr 0"]

    def loss(x, r):
        return f(x, r, batch).sum()

    grad = jax.grad(loss, (0, 1))
    got = jax.vmap(grad)(x, rois)
    want = _stack(_per_example(grad, (x, False), (rois, False)))
    assert_same(got[0], want[0], "X")
    assert_same(got[1], want[1], "rois")
