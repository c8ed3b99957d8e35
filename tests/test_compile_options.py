"""The fast-compile options of small eager RoiAlign calls (lowering/compile_options.py): probed
on the installed XLA (jaxlib 0.12 rejects an option jaxlib 0.10 knows), and the fallback with
no option gives the same bits."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import assert_same

from jaxmax import onnx
from jaxmax._src.lowering import compile_options
from jaxmax._src.lowering.roi import align


def test_the_probe_keeps_only_options_xla_accepts():
    got = compile_options.fast_compile()
    assert all(option in compile_options.WANTED for option in ({k: v} for k, v in got.items()))
    assert compile_options.accepted(got)
    assert not compile_options.accepted({"xla_no_such_option_at_all": True})


def _args():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 12, 10)).astype(np.float32)
    rois = np.array([[0.5, 1.0, 7.5, 9.0], [-3.0, 2.0, 20.0, 6.5]], np.float32)
    return x, rois, np.array([0, 0], np.int32)


def _call(x, rois, batch):
    return onnx.roi_align(x, rois, batch, mode="max", output_height=3, output_width=3,
                          sampling_ratio=0, spatial_scale=1.0)


@pytest.mark.parametrize("fallback", [False, True])
def test_small_eager_call_same_bits_with_and_without_options(monkeypatch, fallback):
    jitted = jax.jit(_call)(*_args())  # traced: never the small eager path
    if fallback:  # an XLA that knows none of the options
        monkeypatch.setattr(compile_options, "accepted", lambda options: False)
        compile_options.fast_compile.cache_clear()
        align._align_small.cache_clear()
        assert compile_options.fast_compile() == {}
    try:
        assert_same(np.asarray(_call(*_args())), np.asarray(jitted))
    finally:
        compile_options.fast_compile.cache_clear()
        align._align_small.cache_clear()
