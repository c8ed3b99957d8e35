"""ROI pooling lowerings (MaxRoiPool, ROIPooling-1), spec-agnostic. The stages, in data-flow
order:

1. :mod:`.rois`: which image each ROI reads and whether it is valid (concrete ROIs: a
   ValueError naming the ROI and the value; traced ROIs: a mask, an invalid ROI's output
   all ``+0.0``). Written for a batch index in a separate array too (RoiAlign).
2. :mod:`.bins`: MaxRoiPool/ROIPooling bin geometry: C ``round`` corners, float32 bin edges
   (float64 for float64 data), the exact division guard against XLA:CPU's reciprocal rewrite.
3. :mod:`.range_max`: a 2-D sparse table of an image block, four lookups per rectangle.
4. :mod:`.max_pool`: the values rule of each face (ONNX: NaN propagates, ``+0`` over ``-0``;
   OpenVINO: the reference fold) over the bins, per block of channels, and the gradient.
"""
