"""RoiAlign against the runtimes (docs/semantics.md §12.5): onnxruntime and onnx.reference
(ONNX face), OpenVINO ``Node.evaluate`` (ROIAlign-3) and the CPU plugin (ROIAlign-9), with every
deviation of the runtimes excluded explicitly, by name:

* WEIGHTED_CORNERS: onnxruntime's and the reference's ``max`` is the largest weighted corner;
  it is compared with ``max_sampling="weighted_corners"``, never with the spec's max.
* ORIGIN_LEAK: every runtime computes an out-of-image sample as ``0 * X[n, c, 0, 0]``; the data
  keep pixel (0, 0) positive and finite, so that this is ``+0.0`` as jaxmax's sample.
* ZERO_FLOOR: OpenVINO's reference and CPU plugin seed max at 0: they are compared with
  ``max(0, jaxmax)``.
* NAN_ORDER: the runtimes' max folds drop or keep NaN by position; NaN data are left to the
  oracle tests (tests/test_roi_align_values.py).
* ONE_AXIS_REVERSED: onnxruntime and the CPU plugin raise on a half_pixel ROI reversed along
  one axis with sampling_ratio 0; the ROIs here are not reversed.
* CPU_FMA: the CPU plugin fuses multiply-adds: compared within ``u*max|X|*(4 + 4*max(H, W))``.
"""

from __future__ import annotations

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx_mod = pytest.importorskip("onnx")
pytest.importorskip("openvino")

import openvino.opset3 as ov3  # noqa: E402
import openvino.opset9 as ov9  # noqa: E402
from helpers import assert_same  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from ov_reference import compile_cpu, evaluate  # noqa: E402

from jaxmax import onnx  # noqa: E402
from jaxmax import openvino as ov  # noqa: E402


def _case(seed, shape=(2, 3, 9, 11), count=20, big=12.0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, shape).astype(np.float32)
    x[:, :, 0, 0] = 1.0  # ORIGIN_LEAK
    x.reshape(-1)[rng.choice(x.size, x.size // 10, replace=False)] = -0.0
    size = np.exp(rng.uniform(np.log(0.3), np.log(big), (count, 2)))
    x1 = rng.uniform(-4, shape[3] + 1, count)
    y1 = rng.uniform(-4, shape[2] + 1, count)
    rois = np.stack([x1, y1, x1 + size[:, 0], y1 + size[:, 1]], 1).astype(np.float32)
    batch = rng.integers(0, shape[0], count).astype(np.int64)
    return x, rois, batch


def _model(opset, **attrs):
    node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("rois", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("batch_indices", TensorProto.INT64, None)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ort(model, feeds):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


ONNX_CASES = [(opset, ctm, sr, mode) for opset, ctm in
              [(10, None), (16, "half_pixel"), (16, "output_half_pixel")]
              for sr in (0, 2) for mode in ("avg", "max")]


@pytest.mark.parametrize("opset, ctm, sr, mode", ONNX_CASES)
def test_onnxruntime_and_reference(opset, ctm, sr, mode):
    x, rois, batch = _case(opset + sr)
    attrs = dict(mode=mode, output_height=3, output_width=2, sampling_ratio=sr,
                 spatial_scale=0.8)
    if ctm is not None:
        attrs["coordinate_transformation_mode"] = ctm
    model = _model(opset, **attrs)
    feeds = {"X": x, "rois": rois, "batch_indices": batch}
    got = onnx.roi_align(x, rois, batch, opset=opset,
                         max_sampling="weighted_corners",  # WEIGHTED_CORNERS
                         **attrs)
    # the runtimes' zero signs are a documented deviation (an out-of-image sample is their
    # 0 * X[0, 0]; weighted corners: docs/semantics.md §12): values only
    assert_same(got, _ort(model, feeds), "onnxruntime", zero_signs=False)
    if opset >= 16:  # the reference reads opset 10 as half_pixel (its bug, §12.5)
        (ref,) = ReferenceEvaluator(model).run(None, feeds)
        assert_same(got, ref, "onnx.reference", zero_signs=False)


def test_weighted_corners_reproduce_onnxruntime_on_the_anchor_shape():
    """A18 at a reduced size: FPN-like features, boxes 16-400 px, scale 1/16, 7x7."""
    rng = np.random.default_rng(18)
    x = rng.standard_normal((1, 16, 50, 50)).astype(np.float32)
    x[:, :, 0, 0] = 1.0  # ORIGIN_LEAK
    wh = rng.uniform(16, 400, (100, 2))
    xy = rng.uniform(0, 800 - wh)
    rois = np.concatenate([xy, xy + wh], 1).astype(np.float32)
    batch = np.zeros(100, np.int64)
    for sr in (2, 0):
        attrs = dict(mode="max", output_height=7, output_width=7, sampling_ratio=sr,
                     spatial_scale=1 / 16)
        want = _ort(_model(16, **attrs), {"X": x, "rois": rois, "batch_indices": batch})
        got = onnx.roi_align(x, rois, batch, opset=16, max_sampling="weighted_corners",
                             **attrs)
        assert_same(got, want, f"sr={sr}")


def _floor0(a):
    a = np.asarray(a)
    return np.where(a > 0, a, np.float32(0))  # ZERO_FLOOR


@pytest.mark.parametrize("sr", [0, 1, 2])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_openvino_evaluate_roialign3(mode, sr):
    x, rois, batch = _case(30 + sr)
    (want,) = evaluate(lambda d, r, b: ov3.roi_align(d, r, b, 3, 2, sr, 0.8, mode),
                       x, rois, batch)
    got = ov.roi_align(x, rois, batch, pooled_h=3, pooled_w=2, sampling_ratio=sr,
                       spatial_scale=0.8, mode=mode, opset=3)
    assert_same(_floor0(got) if mode == "max" else got, want)


@pytest.mark.parametrize("aligned", ["asymmetric", "half_pixel_for_nn", "half_pixel"])
@pytest.mark.parametrize("sr", [0, 2])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_openvino_cpu_roialign9(mode, sr, aligned):
    x, rois, batch = _case(40 + sr)
    (want,) = compile_cpu(
        lambda d, r, b: ov9.roi_align(d, r, b, 3, 2, sr, 0.8, mode, aligned), x, rois, batch)
    got = ov.roi_align(x, rois, batch, pooled_h=3, pooled_w=2, sampling_ratio=sr,
                       spatial_scale=0.8, mode=mode, aligned_mode=aligned)
    got = _floor0(got) if mode == "max" else np.asarray(got)
    u = np.finfo(np.float32).eps / 2
    tol = u * np.abs(x).max() * (4 + 4 * max(x.shape[2:]))  # CPU_FMA
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)
