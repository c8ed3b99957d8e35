"""The box head of a two-stage detector as an ONNX graph, built with onnx.helper (torchvision's
compiled ops do not load beside torch 2.13+cpu; tests/data/torchvision/ holds models torchvision
exported in another environment).

Two FPN levels, features (1, 256, 50, 50) (stride 16) and (1, 256, 25, 25) (stride 32), and R
proposals in an 800x800 image. Each level pools every proposal with RoiAlign avg 7x7 (level 0:
``sampling_ratio`` 2, half_pixel; level 1: ``sampling_ratio`` 0, output_half_pixel at opset
16, half_pixel at 22; the batch indices computed in the graph); a ``Where`` keeps, per
proposal, the level its size assigns it to (torchvision's ``LevelMapper``: sqrt(area) < 224
-> level 0), then the two fully connected layers of the box head (TwoMLPHead) and the class
scores.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

FEATURES = ((1, 256, 50, 50), (1, 256, 25, 25))


def box_head(opset: int, rois: int, hidden: int = 64, classes: int = 5):
    rng = np.random.default_rng(43)
    inits = [
        numpy_helper.from_array((rng.standard_normal((256 * 49, hidden)) * 0.01)
                                .astype(np.float32), "fc6_w"),
        numpy_helper.from_array(np.zeros(hidden, np.float32), "fc6_b"),
        numpy_helper.from_array((rng.standard_normal((hidden, classes)) * 0.1)
                                .astype(np.float32), "cls_w"),
        numpy_helper.from_array(np.zeros(classes, np.float32), "cls_b"),
        numpy_helper.from_array(np.array([224.0 * 224.0], np.float32), "split"),
    ]
    ctm1 = "output_half_pixel" if opset < 22 else "half_pixel"
    nodes = [
        helper.make_node("Shape", ["rois"], ["rshape"], start=0, end=1),
        helper.make_node("ConstantOfShape", ["rshape"], ["batch"],
                         value=helper.make_tensor("z", TensorProto.INT64, [1], [0])),
        helper.make_node("RoiAlign", ["p2", "rois", "batch"], ["pooled0"], name="roi_align_p2",
                         mode="avg", output_height=7, output_width=7, sampling_ratio=2,
                         spatial_scale=1 / 16, coordinate_transformation_mode="half_pixel"),
        helper.make_node("RoiAlign", ["p3", "rois", "batch"], ["pooled1"], name="roi_align_p3",
                         mode="avg", output_height=7, output_width=7, sampling_ratio=0,
                         spatial_scale=1 / 32, coordinate_transformation_mode=ctm1),
        # area of each proposal: (x2 - x1) * (y2 - y1)
        helper.make_node("Split", ["rois"], ["x1", "y1", "x2", "y2"], axis=1, num_outputs=4)
        if opset >= 18 else
        helper.make_node("Split", ["rois"], ["x1", "y1", "x2", "y2"], axis=1),
        helper.make_node("Sub", ["x2", "x1"], ["w"]),
        helper.make_node("Sub", ["y2", "y1"], ["h"]),
        helper.make_node("Mul", ["w", "h"], ["area"]),
        helper.make_node("Less", ["area", "split"], ["small"]),
        helper.make_node("Unsqueeze", ["small", "axis2"], ["small4"]),
        helper.make_node("Where", ["small4", "pooled0", "pooled1"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "fc6_w", "fc6_b"], ["fc6"]),
        helper.make_node("Relu", ["fc6"], ["fc6r"]),
        helper.make_node("Gemm", ["fc6r", "cls_w", "cls_b"], ["scores"]),
    ]
    inits.append(numpy_helper.from_array(np.array([2, 3], np.int64), "axis2"))
    graph = helper.make_graph(
        nodes, "box_head",
        [helper.make_tensor_value_info("p2", TensorProto.FLOAT, FEATURES[0]),
         helper.make_tensor_value_info("p3", TensorProto.FLOAT, FEATURES[1]),
         helper.make_tensor_value_info("rois", TensorProto.FLOAT, [rois, 4])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [rois, classes])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def proposals(count: int, seed: int = 0) -> np.ndarray:
    """Boxes 16-400 px in an 800x800 image (a few partly outside it, as unclipped proposals)."""
    rng = np.random.default_rng(seed)
    wh = rng.uniform(16, 400, (count, 2))
    xy = rng.uniform(-20, 800 - wh + 20)
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)
