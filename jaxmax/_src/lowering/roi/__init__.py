"""Region-of-interest operators, spec-agnostic: ROI pooling (MaxRoiPool, ROIPooling-1) and
RoiAlign (ONNX RoiAlign, OpenVINO ROIAlign-3/-9). The stages, in data-flow order:

1. :mod:`.rois` (both): which image each ROI reads and whether it is valid (concrete ROIs: a
   ValueError naming the ROI and the value; traced ROIs: a mask, an invalid ROI's output all
   ``+0.0``). The batch index is a separate array (RoiAlign) or a ROI row's first column.
2. ROI pooling: :mod:`.bins`, the bin geometry (C ``round`` corners, float32 bin edges, float64
   for float64 data, the exact division guard against XLA:CPU's reciprocal rewrite);
   :mod:`.range_max`, a 2-D sparse table of an image block, four lookups per rectangle;
   :mod:`.max_pool`, each face's values rule over the bins (ONNX: NaN propagates, ``+0`` over
   ``-0``; OpenVINO: the reference fold), per block of channels, and the gradient.
3. RoiAlign: :mod:`.samples`, the sample positions and bilinear weights in both faces'
   arithmetic orders (with the division and FMA guards); :mod:`.align`, the pooling of the
   samples (avg, interpolated max, weighted corners, OpenVINO's fold); :mod:`.adaptive`,
   ``sampling_ratio=0``'s loop, whose trip count is computed from the ROIs.
"""
