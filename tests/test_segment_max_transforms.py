"""The JAX transformation contract of ``jaxmax.openvino.segment_max`` (SegmentMax-16; the
contract is listed in tests/test_transforms.py).

Oracles: tests/segment_oracle.py (NumPy loops, never jaxmax), jax.ops.segment_max's own tie
rule (asserted concretely) and cotangents computed by hand.
"""

from __future__ import annotations

from functools import partial

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from helpers import assert_same, special_floats, unique_values
from jax.test_util import check_grads
from segment_oracle import segment_max, segment_max_grad
from transform_helpers import GRAD_MODES, loop, prims, retrace_check, vjp

from jaxmax import openvino as ov

NAN = np.nan
INF = np.inf


SEGMENT_IDS = np.array([0, 0, 0, 2, 2, 3, 5, 5, 5, 5])  # empty segments 1 and 4


# --------------------------------------------------------------------------------------------
# jit equals eager (and the NumPy oracle)
# --------------------------------------------------------------------------------------------


# num_segments 4 drops the rows of id 5, 8 pads with empty segments
JIT_CASES = [(4, "ZERO", np.float32), (8, "LOWEST", np.float32), (6, "LOWEST", np.float32),
             (8, "ZERO", np.int32)]


class TestSegmentMaxJitEqualsEager(chex.TestCase):
    """Every case runs twice, eagerly and under jax.jit (chex variants), and must give exactly
    the oracle's answer both times."""

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.parameters(*JIT_CASES)
    def test_ov_segment_max(self, num_segments, fill_mode, dtype):
        rng = np.random.default_rng(13)
        if dtype == np.float32:
            data = special_floats(rng, (10, 3))
            data[0:3, 0] = NAN  # segment 0, feature 0: all NaN -> lowest(T)
            data[3:5, 1] = -INF  # segment 2, feature 1: all -inf -> lowest(T)
        else:
            data = rng.integers(-50, 50, (10, 3)).astype(dtype)
            data[5] = -7  # a negative real maximum survives fill ZERO
        if fill_mode == "ZERO":  # ids closed over
            got = self.variant(lambda d: ov.segment_max(d, SEGMENT_IDS, num_segments,
                                                        fill_mode=fill_mode))(data)
        else:  # ids traced (under jit), num_segments and fill_mode through static_argnames
            got = self.variant(ov.segment_max, static_argnames=("num_segments", "fill_mode"))(
                data, SEGMENT_IDS, num_segments=num_segments, fill_mode=fill_mode)
        assert_same(got, segment_max(data, SEGMENT_IDS, num_segments, fill_mode))


def test_ov_segment_max_jit_closed_over_numpy_ids():
    """Concrete NumPy ids closed over by a jitted function are concrete, not traced
    (docs/semantics.md: static means "Python values or concrete NumPy/JAX arrays"):
    num_segments=None is inferred from them and unsorted ones are rejected, exactly as in an
    eager call."""
    data = special_floats(np.random.default_rng(14), (10, 3))
    expected = segment_max(data, SEGMENT_IDS, None, "ZERO")
    assert_same(ov.segment_max(data, SEGMENT_IDS, fill_mode="ZERO"), expected)
    assert_same(jax.jit(lambda d: ov.segment_max(d, SEGMENT_IDS, fill_mode="ZERO"))(data),
                expected)
    unsorted = SEGMENT_IDS[::-1].copy()
    with pytest.raises(ValueError, match="sorted"):
        ov.segment_max(data, unsorted, 6, fill_mode="ZERO")
    with pytest.raises(ValueError, match="sorted"):
        jax.jit(lambda d: ov.segment_max(d, unsorted, 6, fill_mode="ZERO"))(data)


# --------------------------------------------------------------------------------------------
# vmap equals a Python loop of eager calls
# --------------------------------------------------------------------------------------------


def _batched_ids():
    # per batch member: sorted ids with empty segments and ids past num_segments (dropped)
    return np.array([
        [0, 0, 1, 1, 1, 3, 3, 4],
        [0, 2, 2, 2, 2, 2, 5, 6],  # 5 and 6 >= num_segments: dropped
        [1, 1, 1, 1, 2, 2, 3, 3],  # segment 0 empty
    ])


def test_ov_segment_max_vmap_data_and_ids():
    fill_mode = "LOWEST"
    rng = np.random.default_rng(31)
    ids = _batched_ids()
    data = special_floats(rng, (3, 8, 2))
    fn = partial(ov.segment_max, num_segments=5, fill_mode=fill_mode)
    batched = jax.vmap(fn)(data, ids)
    looped = np.stack([np.asarray(fn(data[b], ids[b])) for b in range(3)])
    assert_same(batched, looped)
    for b in range(3):
        assert_same(looped[b], segment_max(data[b], ids[b], 5, fill_mode))
    # batch axis in the middle of data (rows, batch, features) and last in ids
    data_mid = np.moveaxis(data, 0, 1)
    ids_last = np.ascontiguousarray(ids.T)
    assert_same(jax.vmap(fn, in_axes=(1, 1))(data_mid, ids_last), looped)
    assert_same(jax.jit(jax.vmap(fn, in_axes=(1, 1)))(data_mid, ids_last), looped)


@pytest.mark.parametrize("in_axis,num_segments", [(0, None), (1, 4), (2, None)])
def test_ov_segment_max_vmap_data_only(in_axis, num_segments):
    rng = np.random.default_rng(37)
    # ids are closed over (concrete), so num_segments may be inferred under vmap
    data = np.moveaxis(special_floats(rng, (5, 10, 3)), 0, in_axis)  # batch of (10, 3)
    fn = partial(ov.segment_max, segment_ids=SEGMENT_IDS, num_segments=num_segments,
                 fill_mode="LOWEST")
    looped = loop(lambda d: fn(d), data, in_axis)
    assert_same(jax.vmap(lambda d: fn(d), in_axes=in_axis)(data), looped)
    assert_same(looped[3], segment_max(np.take(data, 3, axis=in_axis), SEGMENT_IDS,
                                                 num_segments, "LOWEST"))


# --------------------------------------------------------------------------------------------
# check_grads on inputs with unique values
# --------------------------------------------------------------------------------------------


def test_ov_segment_max_check_grads():
    with jax.enable_x64(True):
        data = unique_values(np.random.default_rng(53), (10, 3))

        def several(d):  # exact count, ids dropped (4), empty segments padded (8)
            return tuple(ov.segment_max(d, SEGMENT_IDS, n, fill_mode=f)
                         for n, f in [(6, "LOWEST"), (4, "ZERO"), (8, "ZERO")])

        check_grads(jax.jit(several), (data,), order=1, modes=GRAD_MODES)


# --------------------------------------------------------------------------------------------
# Gradient tie rules against hand-computed cotangents
# --------------------------------------------------------------------------------------------


def test_jax_segment_max_tie_rule_is_even_sharing():
    # What jax.ops.segment_max does with ties, asserted concretely: tied maxima share evenly.
    data = jnp.array([1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 5.0])
    ids = jnp.array([0, 0, 0, 1, 3, 3, 3])
    ct = jnp.array([2.0, 4.0, 8.0, 6.0])
    g = jax.grad(lambda d: (jax.ops.segment_max(d, ids, 4) * ct).sum())(data)
    np.testing.assert_allclose(g, [0, 1, 1, 4, 2, 2, 2], rtol=1e-6)


def test_ov_segment_max_gradient_ties_hand_example():
    data = np.array([
        [1.0, -INF],    # segment 0
        [3.0, -INF],    # segment 0
        [3.0, NAN],     # segment 0
        [2.0, 4.0],     # segment 2
        [NAN, 4.0],     # segment 2
        [-INF, 4.0],    # segment 2
        [-1.0, NAN],    # segment 3
    ], np.float32)
    ids = np.array([0, 0, 0, 2, 2, 2, 3])
    ct = np.array([[2.0, 3.0], [5.0, 7.0], [11.0, 12.0], [13.0, 17.0], [19.0, 23.0]],
                  np.float32)
    expected = np.array([
        [0, 0],
        [1, 0],      # seg 0 feature 0: 3 and 3 share 2; feature 1 all -inf/NaN: raised, none
        [1, 0],
        [11, 4],     # seg 2 feature 0: 2 wins (NaN, -inf lose); feature 1: three-way tie
        [0, 4],
        [0, 4],
        [13, 0],     # seg 3: -1 wins; NaN gets none; segment 1 and 4 are empty: none
    ], np.float64)
    np.testing.assert_allclose(segment_max_grad(data, ids, 5, ct), expected)
    eager = vjp(lambda d: ov.segment_max(d, ids, 5, fill_mode="ZERO"), data, ct)
    np.testing.assert_allclose(eager, expected, rtol=1e-6)
    jitted = vjp(jax.jit(lambda d: ov.segment_max(d, ids, 5, fill_mode="LOWEST")), data, ct)
    np.testing.assert_allclose(jitted, expected, rtol=1e-6)


def test_ov_segment_max_gradient_random_ties():
    rng = np.random.default_rng(71)
    ids = np.sort(rng.integers(0, 9, 30))
    ids[ids == 4] = 5  # segment 4 empty
    data = rng.integers(-2, 2, (30, 4)).astype(np.float32)
    u = rng.random(data.shape)
    data[u < 0.1] = NAN
    data[u > 0.9] = -INF
    num_segments = 11  # segments 9, 10 empty; ids past it would be dropped
    ct = rng.integers(1, 6, (num_segments, 4)).astype(np.float32)
    got = vjp(jax.jit(lambda d: ov.segment_max(d, ids, num_segments, fill_mode="ZERO")),
               data, ct)
    np.testing.assert_allclose(got, segment_max_grad(data, ids, num_segments, ct), rtol=1e-6)
    # dropped ids (>= num_segments) pass no gradient
    got_small = vjp(lambda d: ov.segment_max(d, ids, 3, fill_mode="LOWEST"), data, ct[:3])
    np.testing.assert_allclose(got_small, segment_max_grad(data, ids, 3, ct[:3]), rtol=1e-6)
    assert not got_small[ids >= 3].any()


# --------------------------------------------------------------------------------------------
# No retrace on a second call
# --------------------------------------------------------------------------------------------


def test_no_retrace_ov_segment_max():
    rng = np.random.default_rng(83)
    x, y = special_floats(rng, (10, 3)), special_floats(rng, (10, 3))
    other_ids = np.array([0, 1, 1, 2, 2, 2, 2, 3, 5, 5])  # same length and max: same shapes
    device_ids = jnp.asarray(other_ids)  # made outside the count: jnp.asarray traces on its own
    retrace_check(lambda: ov.segment_max(x, SEGMENT_IDS, fill_mode="ZERO"),
                   lambda: [ov.segment_max(y, i, n, fill_mode=f)
                            for i, n, f in [(SEGMENT_IDS, None, "ZERO"), (other_ids, 6, "zero"),
                                            (other_ids, np.int64(6), "ZERO"),
                                            (device_ids, np.array(6), "ZERO")]],
                   lambda: ov.segment_max(y, SEGMENT_IDS, 7, fill_mode="ZERO"))


# --------------------------------------------------------------------------------------------
# The jaxpr holds the intended primitive
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_jaxpr_segment_max(dtype):
    data = np.zeros((10, 3), dtype)
    for names in (prims(lambda d: ov.segment_max(d, SEGMENT_IDS, fill_mode="ZERO"), data),
                  prims(lambda d, i: ov.segment_max(d, i, 6, fill_mode="LOWEST"), data,
                         SEGMENT_IDS)):
        assert "scatter-max" in names
