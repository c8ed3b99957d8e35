"""Region-of-interest operators (RoiAlign / ROIAlign, ROI pooling): spec-agnostic lowerings.

``rois`` checks the ROI rows (concrete: ``ValueError``; traced: a validity mask), ``samples``
holds RoiAlign's sample positions and bilinear weights in both faces' arithmetic orders, and
``align`` pools the samples (avg, interpolated max, weighted corners, OpenVINO's fold), and
``adaptive`` runs ``sampling_ratio=0``'s loop, whose trip count is computed from the ROIs.
"""
