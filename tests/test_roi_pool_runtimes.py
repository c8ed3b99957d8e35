"""MaxRoiPool / ROIPooling-1 against the runtimes (docs/semantics.md §11.5), each deviation
excluded by name: onnxruntime MaxRoiPool-1 runs the OpenVINO reference fold (so it equals
jaxmax's ROIPooling face on every input, and the ONNX face wherever no bin holds a NaN, only
-inf, or a +-0 tie); the OpenVINO CPU plugin folds from each bin's first element over
exact-integer bins (it equals that NumPy model on every input, and jaxmax where the two rules
agree: distinct finite values with float32 and integer edges equal)."""

from __future__ import annotations

import numpy as np
import pytest
import roi_oracle as oracle
from helpers import assert_same

from jaxmax import onnx
from jaxmax import openvino as ov

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")


def _session(x, rois, pooled, scale):
    from onnx import TensorProto, helper

    node = helper.make_node("MaxRoiPool", ["x", "r"], ["y"], pooled_shape=list(pooled),
                            spatial_scale=scale)
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
        helper.make_tensor_value_info("r", TensorProto.FLOAT, rois.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
    model.ir_version = 8
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _cpu(x, rois, pooled, scale):
    import openvino as ovr
    import openvino.opset2 as o2

    p, q = o2.parameter(list(x.shape), np.float32), o2.parameter(list(rois.shape), np.float32)
    model = ovr.Model([o2.roi_pooling(p, q, list(pooled), scale, "max")], [p, q])
    compiled = ovr.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return compiled([x, rois])[0]


def _case(rng, special):
    x = rng.permutation(2 * 3 * 11 * 13).reshape(2, 3, 11, 13).astype(np.float32) - 200
    if special:
        u = rng.random(x.shape)
        x[u < 0.06] = np.nan
        x[(u > 0.06) & (u < 0.12)] = -np.inf
        x[(u > 0.12) & (u < 0.3)] = -0.0
        x[(u > 0.3) & (u < 0.45)] = 0.0
    count = 12
    x1 = rng.uniform(-3, 14, count)
    y1 = rng.uniform(-3, 12, count)
    size = rng.choice([0.3, 2, 6, 15, 40], (count, 2))
    rois = np.stack([rng.integers(0, 2, count), x1, y1, x1 + size[:, 0], y1 + size[:, 1]], 1)
    return x, rois.astype(np.float32)


@pytest.mark.parametrize("special", [False, True], ids=["distinct", "special"])
def test_onnxruntime(special):
    rng = np.random.default_rng(21 + special)
    for pooled, scale in (((2, 2), 1.0), ((3, 4), 0.5), ((7, 7), 1.0)):
        x, rois = _case(rng, special)
        theirs = _session(x, rois, pooled, scale).run(None, {"x": x, "r": rois})[0]
        # onnxruntime runs the reference fold: ROIPooling-1's contract, on every input
        assert_same(ov.roi_pooling(x, rois, pooled_h=pooled[0], pooled_w=pooled[1],
                                   spatial_scale=scale), theirs, f"{pooled} {scale}")
        ours = np.asarray(onnx.max_roi_pool(x, rois, pooled_shape=pooled, spatial_scale=scale))
        if not special:
            assert_same(ours, theirs)
        else:  # the ONNX rule: exactly the oracle; differs from ORT only where it predicts
            assert_same(ours, oracle.max_roi_pool(x, rois, scale, pooled))
            fold = oracle.max_roi_pool(x, rois, scale, pooled, rule="fold")
            same_fold = (fold == theirs) | (np.isnan(fold) & np.isnan(theirs))
            assert same_fold.all()


@pytest.mark.parametrize("special", [False, True], ids=["distinct", "special"])
def test_openvino_cpu(special):
    rng = np.random.default_rng(31 + special)
    for pooled, scale in (((2, 2), 1.0), ((3, 4), 0.5), ((7, 1), 1.0)):
        x, rois = _case(rng, special)
        if pooled == (7, 1):  # M13-like extents: float32 and integer edges differ
            rois[:, 2], rois[:, 4] = 0, 56
            x = np.concatenate([x] * 6, 2)[:, :, :64]
            x[:, :, 57] = 10_000  # read only by the float32 edges' last bin
        theirs = _cpu(x, rois, pooled, scale)
        cpu_model = oracle.max_roi_pool(x, rois, scale, pooled, rule="fold", exact_edges=True,
                                        seed="first")
        assert_same(theirs, cpu_model, f"CPU model {pooled}")
        ours = np.asarray(ov.roi_pooling(x, rois, pooled_h=pooled[0], pooled_w=pooled[1],
                                         spatial_scale=scale))
        assert_same(ours, oracle.max_roi_pool(x, rois, scale, pooled, rule="fold"))
        same_edges = oracle.max_roi_pool(x, rois, scale, pooled, rule="fold", seed="first")
        if not special:  # distinct values: only the edges can differ
            differ = ~((ours == theirs) | (np.isnan(ours) & np.isnan(theirs)))
            edges = ~((same_edges == cpu_model) | (np.isnan(cpu_model)))
            assert not (differ & ~edges).any()
            if pooled == (7, 1):
                assert differ.any()  # M13: the CPU plugin's integer edges
