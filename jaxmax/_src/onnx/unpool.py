"""ONNX MaxUnpool (since-versions 9, 11, 22): the version (:mod:`jaxmax._src.onnx.versions`),
spec attribute names -> validation -> lowering."""

from __future__ import annotations

import math

import jax
import numpy as np

from jaxmax._src import sizes, validation
from jaxmax._src.lowering import unpool as lowering
from jaxmax._src.onnx import versions
from jaxmax._src.onnx.pool import checked_x
from jaxmax._src.types import Data, Int, Ints

_OP = "ONNX MaxUnpool"
_INDEX_TYPES = (np.dtype(np.int64), np.dtype(np.int32))


def max_unpool(X: Data, I: Data, output_shape: Ints | None = None, *,  # noqa: E741 (spec name)
               kernel_shape: Ints, pads: Ints | None = None, strides: Ints | None = None,
               opset: Int = 22) -> jax.Array:
    """ONNX ``MaxUnpool`` (since-versions 9, 11 and 22, selected by `opset`): the partial
    inverse of MaxPool.

    The output is zero-filled (``+0.0``), then ``Y.flat[I] = X`` in ``X``'s row-major order: an
    index that repeats keeps the last writer's value, deterministically (as onnxruntime and
    ``onnx.reference``; PyTorch's winner varies with its threads). ``I`` has ``X``'s shape and
    is flat over the whole output ``(N, C, D1, ...)``, plane offsets included (MaxPool's
    ``Indices``). Without `output_shape` the output's spatial size per axis is
    ``(X_d - 1) * strides_d - (pads_begin_d + pads_end_d) + kernel_shape_d``. With it (pads are
    then not used for the shape), ``I`` indexes the given shape, as onnxruntime and PyTorch do:
    its length must be ``X``'s rank, its N and C ``X``'s, and its number of elements at least
    the inferred shape's. (The ONNX node test ``test_maxunpool_export_with_output_shape``
    expects the reference implementation's top-left copy of the inferred block instead;
    onnx#2398, onnxruntime excludes that case as invalid.)

    Args:
      X: ``(N, C, D1, ..., Dn)`` data, n >= 1: float16, float32, float64, and bfloat16 from
        opset 22.
      I: flat output indices of ``X``'s shape, int64 (int32 accepted: it is what int64 is
        without ``jax_enable_x64``).
      output_shape: the full output shape ``(N, C, *spatial)``, or None. Static: a sequence of
        ints or a concrete integer array, as the graph's constant.
      kernel_shape: kernel per spatial axis, each >= 1 (required). Static.
      pads: ``[x1_begin, x2_begin, ..., x1_end, x2_end]``, each >= 0; default zeros. Static.
      strides: per spatial axis, each >= 1; default 1. Static.
      opset: the model's ONNX opset (>= 9); the largest since-version <= `opset` applies.
        Static.

    Returns:
      ``Y`` of ``X``'s dtype and the output shape.

    Raises:
      TypeError: an `X` dtype the version does not allow (bool included), `I` not int64/int32,
        a non-integer or traced attribute or `output_shape`.
      ValueError: `opset` < 9, `X` rank < 3, `I` not of ``X``'s shape, attribute lengths,
        kernel or stride < 1, negative pads, pads that make the inferred shape negative,
        `output_shape` of the wrong length, with a negative entry, with N or C other than
        ``X``'s, or smaller than the inferred shape; concrete `I` outside ``[0, size)``; an
        output too large for the index type (int32 without ``jax_enable_x64``) or of 2**60
        elements or more; concrete 64-bit input that 32 bits cannot hold while
        ``jax_enable_x64`` is off.

    jit contract: `output_shape`, `kernel_shape`, `pads`, `strides` and `opset` must be static;
    `X` and `I` may be traced. Traced indices outside ``[0, size)`` cannot be checked: they are
    dropped (never wrapped). Under ``jax.grad`` the cotangent of ``X`` is the output cotangent
    at ``I``, 0 for an element overwritten by a later duplicate or dropped.

    Performance: when the kernel does not exceed the stride and every index lies in its own
    pooling window (as MaxPool makes them), checked at run time, the output is assembled
    densely in one pass; otherwise a deterministic scatter is used.

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> X = np.array([[[[5., 6.], [7., 8.]]]], np.float32)
    >>> I = np.array([[[[5, 7], [13, 15]]]])
    >>> onnx.max_unpool(X, I, kernel_shape=[2, 2], strides=[2, 2])[0, 0]
    Array([[0., 0., 0., 0.],
           [0., 5., 0., 6.],
           [0., 0., 0., 0.],
           [0., 7., 0., 8.]], dtype=float32)
    """
    opset_, version = versions.TABLE.select(_OP, "MaxUnpool", opset)
    X = checked_x(_OP, X, "MaxUnpool", version, opset_)
    n_spatial = X.ndim - 2
    kernel = validation.int_tuple(_OP, "kernel_shape", kernel_shape, n_spatial)
    strides_ = validation.int_tuple(_OP, "strides", 1 if strides is None else strides, n_spatial)
    pads_ = validation.int_tuple(_OP, "pads", (0,) * (2 * n_spatial) if pads is None else pads,
                                 2 * n_spatial)
    for name, values in (("kernel_shape", kernel), ("strides", strides_)):
        if min(values) < 1:
            raise ValueError(f"{_OP}: `{name}` values must be >= 1, got {list(values)}")
    if min(pads_) < 0:
        raise ValueError(f"{_OP}: `pads` must be >= 0, got {list(pads_)}")
    inferred = tuple(X.shape[:2]) + tuple(
        (X.shape[2 + d] - 1) * strides_[d] - (pads_[d] + pads_[n_spatial + d]) + kernel[d]
        for d in range(n_spatial))
    if min(inferred[2:]) < 0:
        raise ValueError(f"{_OP}: `pads` {list(pads_)} make the inferred output shape "
                         f"{inferred} negative")
    if output_shape is None:
        out_shape = inferred
    else:
        given = validation.static_int_array(_OP, "output_shape", output_shape)
        if given.ndim != 1 or given.shape[0] != X.ndim:
            raise ValueError(f"{_OP}: `output_shape` must list {X.ndim} extents (X's rank), got "
                             f"{given.tolist()}")
        out_shape = tuple(int(v) for v in given)
        if min(out_shape) < 0:
            raise ValueError(f"{_OP}: `output_shape` values must be >= 0, got {list(out_shape)}")
        if out_shape[:2] != tuple(X.shape[:2]):
            raise ValueError(f"{_OP}: `output_shape` must keep X's batch and channel extents "
                             f"{tuple(X.shape[:2])}, got {list(out_shape[:2])}")
        sizes.checked_elements(_OP, "the output", out_shape)
        if math.prod(out_shape) < math.prod(inferred):
            raise ValueError(
                f"{_OP}: `output_shape` {list(out_shape)} has fewer elements than the inferred "
                f"output shape {list(inferred)} (as onnxruntime requires)")
    size = sizes.checked_elements(_OP, "the output", out_shape)
    I_host = validation.host_data(_OP, I, "I")
    if not (isinstance(I_host, (np.ndarray, jax.Array)) and I_host.dtype in _INDEX_TYPES):
        raise TypeError(f"{_OP}: `I` must be an int64 (or int32) array, got "
                        f"{getattr(I_host, 'dtype', type(I_host).__name__)}")
    if tuple(I_host.shape) != tuple(X.shape):
        raise ValueError(f"{_OP}: `I` must have X's shape {tuple(X.shape)}, got "
                         f"{tuple(I_host.shape)}")
    stored = np.dtype(jax.dtypes.canonicalize_dtype(I_host.dtype))
    if size - 1 > np.iinfo(stored).max:
        raise ValueError(
            f"{_OP}: the output has {size} elements, more than {stored} indices `I` can name; "
            f"enable 64-bit mode with jax.config.update('jax_enable_x64', True)")
    concrete = validation.known_value(I_host)
    if concrete is not None and concrete.size:
        low, high = int(concrete.min()), int(concrete.max())
        if low < 0 or high >= size:
            bad = low if low < 0 else high
            raise ValueError(f"{_OP}: `I` holds index {bad} outside [0, {size}) (the output "
                             f"{out_shape} has {size} elements)")
    indices = validation.on_device(I_host)
    out = lowering.max_unpool(X, indices, out_shape, kernel, strides_, tuple(pads_[:n_spatial]))
    return sizes.settled(out, size * X.dtype.itemsize)
