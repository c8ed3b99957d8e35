"""NumPy loop oracles for OpenVINO SegmentMax-16, independent of jaxmax: the values, and the
hand-computed cotangent of its gradient. Written from the spec text and docs/semantics.md.
"""

from __future__ import annotations

import math

import numpy as np
from helpers import is_float, lowest


def segment_max(data, segment_ids, num_segments=None, fill_mode="ZERO") -> np.ndarray:
    """SegmentMax-16 by loops: per segment and feature, max(lowest(T), non-NaN members); an
    empty segment (decided by counting members) gets 0 (ZERO) or lowest(T) (LOWEST). Ids outside
    [0, num_segments) belong to no output segment; num_segments=None means max(id) + 1."""
    data = np.asarray(data)
    ids = [int(i) for i in np.asarray(segment_ids).reshape(-1)]
    if num_segments is None:
        count = max(ids) + 1 if ids else 0
    else:
        count = int(np.asarray(num_segments))
    fill = fill_mode.upper()
    assert fill in ("ZERO", "LOWEST")
    # Python numbers: exact for every float type here (via float64) and for 64-bit integers.
    convert = float if is_float(data.dtype) else int
    low = convert(lowest(data.dtype))
    rows = data.shape[0]
    width = int(np.prod(data.shape[1:], dtype=np.int64))
    wide = data.astype(np.float64) if is_float(data.dtype) else data
    flat = wide.reshape(rows, width).tolist()
    out = np.zeros((count, width), data.dtype)
    for seg in range(count):
        members = [r for r in range(rows) if ids[r] == seg]
        for col in range(width):
            if not members:
                out[seg, col] = 0 if fill == "ZERO" else low
                continue
            acc = low
            for r in members:
                x = flat[r][col]
                if x == x and x > acc:  # NaN (x != x) never wins; -inf never beats lowest
                    acc = x
                elif x == acc == 0 and math.copysign(1.0, x) > 0:  # +0.0 above -0.0 (§3.3)
                    acc = x
            out[seg, col] = acc
    return out.reshape((count,) + data.shape[1:])


def segment_max_grad(data, segment_ids, num_segments, ct) -> np.ndarray:
    """Hand-computed SegmentMax-16 cotangent: per segment and feature, the tied maximal members
    share the cotangent evenly (jax.ops.segment_max's rule); empty segments and segments raised
    to lowest(T) pass none; NaN members get none; dropped ids get none."""
    data = np.asarray(data, np.float64)
    ids = np.asarray(segment_ids)
    g = np.zeros_like(data)
    flat = data.reshape(data.shape[0], -1)
    gflat = g.reshape(data.shape[0], -1)
    ctf = np.asarray(ct, np.float64).reshape(num_segments, -1)
    for j in range(num_segments):
        members = np.nonzero(ids == j)[0]
        for f in range(flat.shape[1]):
            vals = flat[members, f]
            finite = vals[~np.isnan(vals)]
            if finite.size == 0 or finite.max() == -np.inf:
                continue
            hits = members[vals == finite.max()]
            gflat[hits, f] = ctf[j, f] / hits.size
    return g
