"""Scatter with max: the pipeline behind ONNX ScatterElements / ScatterND (``reduction="max"``)
and OpenVINO ScatterElementsUpdate-12 / ScatterNDUpdate-15, in the order the data flows.

1. :mod:`~jaxmax._src.lowering.scatter.call`: the entry both faces call. Checks the arrays and
   concrete indices (:mod:`~jaxmax._src.lowering.scatter.checks`), recognises a row-constant
   index built in the same trace (:mod:`~jaxmax._src.lowering.scatter.built`), then lowers.
2. :mod:`~jaxmax._src.lowering.scatter.max_scatter`: normalises the indices (negative ones
   counted from the end, out-of-range ones dropped) and chooses the form: rows (one window
   scatter per index row) or elements (one target per update element).
3. :mod:`~jaxmax._src.lowering.scatter.geometry`: XLA's scatter and gather dimension numbers
   for each form, so a rule can scatter any update-shaped array and gather back at the targets.
4. :mod:`~jaxmax._src.lowering.scatter.rules`: the values and gradients of each face's rule
   (IEEE maximum, the ``acc > u`` fold, NaN skipped) as closed forms over those scatters.
5. :mod:`~jaxmax._src.lowering.scatter.combiner`: the floating max scatters whose combiner
   reads the bits (exact orders in one pass over the updates), bound through
   :mod:`~jaxmax._src.lowering.scatter.private` (JAX's private scatter primitive, behind one
   probe with a public fallback; SegmentMax binds it too).

On ``Explicit`` mesh axes two forms run the one-device rule in ``jax.shard_map`` where XLA's
partitioner would move the inputs: :mod:`~jaxmax._src.lowering.scatter.blocks` when every update
stays on its target's device (sharded off the scatter axis), and
:mod:`~jaxmax._src.lowering.scatter.across` when the updates are sharded along the axis that
orders them (each device's partial result, combined in one or two all-reduces of integer keys).
On ``Auto`` mesh axes the same per-device forms (their `plan` functions; and ScatterND's blocks
of the slice axes, and each device's own rows of the data) are chosen once XLA knows the
sharding (:mod:`jaxmax._src.auto_partition`), and the along-axis faces' reverse mode is planned
in the same forms (:mod:`~jaxmax._src.lowering.scatter.auto_derivative`).
"""
