"""Export torchvision's own detection modules to ONNX, for tests/test_torchvision_heads.py.

torchvision's compiled ops do not load beside the project's torch 2.13.0+cpu wheel, so this
script runs once, by hand, in a separate environment, and its outputs are committed beside it:

    python3.11 -m venv /tmp/tvenv
    /tmp/tvenv/bin/pip install torch==2.14.1 torchvision==0.29.1 onnx onnxscript
    /tmp/tvenv/bin/python tests/data/torchvision/export.py

(torch 2.14.1 / torchvision 0.29.1, the legacy TorchScript exporter, opset 16.) It writes:

- ``faster_rcnn.onnx``: a whole torchvision ``FasterRCNN`` (transform, RPN with its TopK per
  FPN level, NMS, ``MultiScaleRoIAlign`` box pooler with RoiAlign on four levels, TwoMLPHead,
  FastRCNNPredictor, postprocessing) on a small four-stage backbone with an FPN of 8 channels,
  random weights, a 512x512 image. Only the sizes are small; every module is torchvision's.
- ``pooler_sr2.onnx``, ``pooler_sr0.onnx``: torchvision's ``MultiScaleRoIAlign`` (the Faster
  R-CNN box pooler: ``LevelMapper`` picks each proposal's FPN level, one RoiAlign per level,
  results scattered back) on features of strides 4, 8, 16 and 32 of an 800x800 image,
  ``sampling_ratio`` 2 and 0, proposals as an input (R, 4).
- ``roi_pool.onnx``: torchvision's ``RoIPool(7, 1/16)`` (exported as MaxRoiPool).
"""

from collections import OrderedDict
from pathlib import Path

import torch
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.ops import FeaturePyramidNetwork, MultiScaleRoIAlign, RoIPool

HERE = Path(__file__).parent
CHANNELS = 8


class Backbone(torch.nn.Module):
    """Four strided stages (strides 4, 8, 16, 32) and torchvision's FPN: a ResNet-FPN's shape."""

    def __init__(self, c: int = CHANNELS):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, c, 3, 2, 1), torch.nn.ReLU(),
                                        torch.nn.Conv2d(c, c, 3, 2, 1), torch.nn.ReLU())
        self.stages = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Conv2d(c, c, 3, 2, 1), torch.nn.ReLU()) for _ in range(3))
        self.fpn = FeaturePyramidNetwork([c] * 4, c)
        self.out_channels = c

    def forward(self, x):
        x = self.stem(x)
        feats = OrderedDict([("0", x)])
        for i, stage in enumerate(self.stages):
            x = stage(x)
            feats[str(i + 1)] = x
        return self.fpn(feats)


class Pooler(torch.nn.Module):
    def __init__(self, sampling_ratio: int):
        super().__init__()
        self.pool = MultiScaleRoIAlign(["0", "1", "2", "3"], output_size=7,
                                       sampling_ratio=sampling_ratio)

    def forward(self, p2, p3, p4, p5, rois):
        feats = OrderedDict([("0", p2), ("1", p3), ("2", p4), ("3", p5)])
        return self.pool(feats, [rois], [(800, 800)])


class Pool(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = RoIPool(7, 1 / 16)

    def forward(self, x, rois):
        return self.pool(x, rois)


def export(module, args, name, inputs, outputs, dynamic=None):
    torch.onnx.export(module, args, str(HERE / name), opset_version=16, dynamo=False,
                      input_names=inputs, output_names=outputs, dynamic_axes=dynamic)


def main():
    torch.manual_seed(0)
    c = CHANNELS
    anchors = AnchorGenerator(((32,), (64,), (128,), (256,)), ((0.5, 1.0, 2.0),) * 4)
    model = FasterRCNN(
        Backbone(c), num_classes=None, rpn_anchor_generator=anchors,
        box_roi_pool=MultiScaleRoIAlign(["0", "1", "2", "3"], 7, 2),
        box_head=TwoMLPHead(c * 49, 32), box_predictor=FastRCNNPredictor(32, 5),
        min_size=512, max_size=512, rpn_pre_nms_top_n_test=300, rpn_post_nms_top_n_test=300,
        box_score_thresh=0.0, box_detections_per_img=50).eval()
    export(model, ([torch.rand(3, 512, 512)],), "faster_rcnn.onnx", ["image"],
           ["boxes", "labels", "scores"])

    feats = tuple(torch.randn(1, c, 800 // s, 800 // s) for s in (4, 8, 16, 32))
    rois = torch.rand(20, 4) * 400
    rois[:, 2:] += rois[:, :2]
    for sr in (2, 0):
        export(Pooler(sr), feats + (rois,), f"pooler_sr{sr}.onnx", ["p2", "p3", "p4", "p5", "rois"],
               ["pooled"], {"rois": {0: "R"}, "pooled": {0: "R"}})
    export(Pool(), (feats[2], torch.cat([torch.zeros(20, 1), rois], 1)), "roi_pool.onnx",
           ["x", "rois"], ["pooled"], {"rois": {0: "R"}, "pooled": {0: "R"}})


if __name__ == "__main__":
    main()
