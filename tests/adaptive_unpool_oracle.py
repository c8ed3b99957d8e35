"""NumPy loop oracles for AdaptiveMaxPool-8 and ONNX MaxUnpool, written from the spec texts and
docs/semantics.md §7.1-7.2 (independent of jaxmax: plain Python loops over windows and elements)."""

from __future__ import annotations

import itertools

import numpy as np


def adaptive_max_pool(x: np.ndarray, output_shape, index_dtype=np.int64):
    """AdaptiveMaxPool-8: per (n, c) and output position, the window
    ``[floor(i*L/O), ceil((i+1)*L/O))`` per axis, visited in row-major order; the first element
    seeds the result, a later element replaces it only when ``acc < element``."""
    x = np.asarray(x)
    spatial = x.shape[2:]
    out_shape = tuple(int(o) for o in output_shape)
    values = np.zeros(x.shape[:2] + out_shape, x.dtype)
    indices = np.zeros(x.shape[:2] + out_shape, index_dtype)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        plane = x[n, c]
        for pos in itertools.product(*(range(o) for o in out_shape)):
            ranges = []
            for i, size, o in zip(pos, spatial, out_shape, strict=True):
                start = (i * size) // o
                end = -((-(i + 1) * size) // o)
                ranges.append(range(start, end))
            acc = None
            where = None
            for elem in itertools.product(*ranges):
                v = plane[elem]
                if acc is None or acc < v:
                    acc, where = v, elem
            values[(n, c) + pos] = acc
            indices[(n, c) + pos] = np.ravel_multi_index(where, spatial)
    return values, indices


def max_unpool(x: np.ndarray, indices: np.ndarray, out_shape) -> np.ndarray:
    """ONNX MaxUnpool: +0 everywhere, then ``out.flat[I] = X`` in X's row-major order (the last
    writer of a duplicate index wins). `out_shape` is the full output shape."""
    out = np.zeros(int(np.prod(out_shape)), x.dtype)
    flat_x = np.asarray(x).reshape(-1)
    flat_i = np.asarray(indices).reshape(-1)
    for j in range(flat_x.size):
        out[int(flat_i[j])] = flat_x[j]
    return out.reshape(tuple(out_shape))


def max_unpool_grad(indices: np.ndarray, cotangent: np.ndarray) -> np.ndarray:
    """The cotangent of X: the output cotangent at I for the last writer of each index, 0 for an
    element overwritten by a later duplicate."""
    flat_i = np.asarray(indices).reshape(-1)
    g = np.asarray(cotangent).reshape(-1)
    grad = np.zeros(flat_i.size, g.dtype)
    last = {}
    for j, i in enumerate(flat_i):
        last[int(i)] = j
    for i, j in last.items():
        grad[j] = g[i]
    return grad.reshape(np.shape(indices))


def inferred_shape(x_shape, kernel, strides, pads):
    """ONNX MaxUnpool's default output shape: ``(X_d - 1)*s - (pb + pe) + k`` per spatial axis."""
    n = len(kernel)
    return tuple(x_shape[:2]) + tuple(
        (x_shape[2 + d] - 1) * strides[d] - (pads[d] + pads[n + d]) + kernel[d] for d in range(n))
