"""Max pooling: the pipeline behind MaxPool (both faces), GlobalMaxPool, and the windows of
AdaptiveMaxPool, in the order the data flows.

1. :mod:`~jaxmax._src.lowering.pooling.max_pool`: the entry. Validates the values rule, builds
   the geometry once, chooses the form (compact, phase-sliced taps, or ``reduce_window``), and
   returns the values, or the values and each window's winner as a flat index.
2. :mod:`~jaxmax._src.lowering.pooling.geometry`: static arithmetic per axis (window, stride,
   padding, dilation, output length), where each kernel tap reads, the phase view, the
   interior and border boxes, the split of a 3-D window in two stages. Builds no array.
3. :mod:`~jaxmax._src.lowering.pooling.taps`: each kernel tap read as a slice of the phase view
   (padding supplied per tap), the box assembly, and the reads of a tangent by phase.
4. :mod:`~jaxmax._src.lowering.pooling.values`: the first maximal tap of each window under a
   values rule, by the scan of :mod:`~jaxmax._src.lowering.pooling.scan` (a compare and
   select per tap), or by :mod:`~jaxmax._src.lowering.pooling.stages` for large 3-D windows
   (two stages over cache-sized chunks).
5. :mod:`~jaxmax._src.lowering.pooling.winners`: which tap won each window (the element that
   gets the cotangent and whose position is the index output).
6. :mod:`~jaxmax._src.lowering.pooling.tangents`: the values with their derivative (a
   ``custom_jvp``: the cotangent goes whole to the winner).

:mod:`~jaxmax._src.lowering.pooling.compact` is the other form of steps 3-5 for windows of
many taps on small inputs: one variadic ``reduce_window``, compiled code independent of the
window.
"""
