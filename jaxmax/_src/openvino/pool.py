"""OpenVINO MaxPool-1, -8 and -14: spec attribute names -> validation -> lowering."""

from __future__ import annotations

import math
from typing import Literal, overload

import jax
import numpy as np

from jaxmax._src import shapes, sizes, validation
from jaxmax._src.lowering.pooling import max_pool as pool
from jaxmax._src.openvino import versions
from jaxmax._src.types import Data, Int, Ints, OVAutoPad

_ROUNDING = ("floor", "ceil", "ceil_torch")


@overload
def max_pool(data: Data, *, kernel: Ints, strides: Ints, pads_begin: Ints | None = None,
             pads_end: Ints | None = None, rounding_type: str = "floor",
             auto_pad: OVAutoPad = "explicit", dilations: Ints | None = None, axis: Int = 0,
             index_element_type: str | np.dtype | type = "i64",
             opset: Literal[1, 2, 3, 4, 5, 6, 7] = 1) -> jax.Array: ...


@overload
def max_pool(data: Data, *, kernel: Ints, strides: Ints, pads_begin: Ints | None = None,
             pads_end: Ints | None = None, rounding_type: str = "floor",
             auto_pad: OVAutoPad = "explicit", dilations: Ints | None = None, axis: Int = 0,
             index_element_type: str | np.dtype | type = "i64",
             opset: Int = 1) -> tuple[jax.Array, jax.Array]: ...


def max_pool(data: Data, *, kernel: Ints, strides: Ints, pads_begin: Ints | None = None,
             pads_end: Ints | None = None, rounding_type: str = "floor",
             auto_pad: OVAutoPad = "explicit", dilations: Ints | None = None, axis: Int = 0,
             index_element_type: str | np.dtype | type = "i64",
             opset: Int = 1) -> jax.Array | tuple[jax.Array, jax.Array]:
    """OpenVINO ``MaxPool-1``, ``MaxPool-8`` and ``MaxPool-14`` over ``(N, C, *spatial)`` data.

    `opset` is the model's OpenVINO opset and picks the version: 1-7 is MaxPool-1, which returns
    the values; 8-13 is MaxPool-8 and 14 and above MaxPool-14, which return
    ``(values, indices)`` and take `dilations`, `axis` and `index_element_type`; MaxPool-14 adds
    ``rounding_type="ceil_torch"``.

    Each value is ``max(lowest(T), the non-NaN input elements of its window)``: padding is never
    selected, NaN never wins, and a window that sees no input element (in ceil mode it can start
    in or past the end padding) gives ``lowest(T)``. Each index is the flat index
    ``((n * C + c) * D1 + d1) * D2 + ...`` of the window's first maximal element above
    lowest(T) in row-major window order, taken modulo ``prod(shape[axis:])``; a window with no
    such element (only padding, NaN, ``-inf`` or lowest(T)) points at the start of its
    ``(n, c)`` plane, as OpenVINO's reference kernel does.

    Geometry per spatial axis, with the dilated kernel ``dk = (k - 1) * d + 1`` and
    ``ext = D + pb + pe - dk``: ``"floor"`` gives ``ext // s + 1`` windows, ``"ceil"``
    ``ceil(ext / s) + 1`` with no correction for a last window that starts in the padding, and
    ``"ceil_torch"`` ``ceil(ext / s)`` plus one when that last window starts before the end
    padding (PyTorch's ``ceil_mode``). ``auto_pad`` ``"same_upper"``/``"same_lower"`` replace
    the pads by ``max(0, (ceil(D/s) - 1) * s + dk - D)`` in total, the odd element at the
    end/beginning; ``"valid"`` uses zero pads; ``"explicit"`` (or ``None``) uses `pads_begin`/
    `pads_end`. Pads may equal or exceed the kernel.

    Args:
      data: array of rank 3, 4 or 5 and any real or integer dtype (bool is rejected).
      kernel: window size per spatial axis (an int applies to every axis), each >= 1. Static.
      strides: stride per spatial axis, each >= 1. Static.
      pads_begin: pads at the start of each spatial axis, >= 0; default zeros. Static.
      pads_end: pads at the end of each spatial axis, >= 0; default zeros. Static.
      rounding_type: ``"floor"``, ``"ceil"``, or (MaxPool-14) ``"ceil_torch"``; any case, as
        every string attribute. Static.
      auto_pad: ``"explicit"``/``None``, ``"valid"``, ``"same_upper"``, ``"same_lower"`` (any
        case). Static.
      dilations: (MaxPool-8+) dilation per spatial axis, each >= 1; default 1. Static.
      axis: (MaxPool-8+) the first axis the indices count over, in ``[-rank, rank)``. Static.
      index_element_type: (MaxPool-8+) ``"i32"`` or ``"i64"`` (or the NumPy dtype). Without
        ``jax_enable_x64`` i64 indices are int32 (with a warning). Static.
      opset: the model's opset, >= 1. Static.

    Returns:
      MaxPool-1: ``(N, C, *out_spatial)`` values of the data dtype. MaxPool-8/-14:
      ``(values, indices)``.

    Raises:
      TypeError: bool or complex data, a non-integer, traced or non-string attribute.
      ValueError: data rank not 3-5, an attribute with the wrong length, kernel, stride or
        dilation < 1, negative pads, a dilated kernel larger than the padded input, an unknown
        `auto_pad`, `rounding_type` or `index_element_type`, ``"ceil_torch"`` before
        MaxPool-14, `dilations`/`axis`/`index_element_type` given to MaxPool-1, `axis` out of
        range, `opset` < 1, indices whose range does not fit the index type, pads that make
        the padded input or the output 2**60 elements or more, a ragged list, concrete 64-bit
        data whose values 32 bits cannot hold while ``jax_enable_x64`` is off, an integer
        outside int64.
      jax.errors.JaxRuntimeError: an output too large to allocate (eager calls report it here).

    A stride larger than the padded input needs is lowered to one that gives the same windows
    (in floor mode ``D + pb + pe - dk + 1``), so a huge stride costs nothing.

    jit contract: every attribute decides the output shape and must be static (Python values or
    concrete arrays); `data` may be traced. Under ``jax.grad`` (of the values) each window's
    cotangent goes to the element its index names: its first maximal input element in row-major
    window order (as ``lax.reduce_window`` and PyTorch); NaN and ``-inf`` inputs receive none,
    and windows that see only padding (or whose maximum is raised to lowest(T)) pass none. On CPU
    the padding takes part in that order as lowest(T): a window whose maximum is an input
    exactly equal to lowest(T), preceded in the window by padding, passes none either. Dilated
    and 3-D pools are differentiable too (``lax.reduce_window`` has no dilated derivative).

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> ov.max_pool(x, kernel=2, strides=2, pads_begin=1, pads_end=1).shape
    (1, 1, 3, 3)
    >>> ov.max_pool(x, kernel=2, strides=2, pads_begin=0, pads_end=1, rounding_type="ceil")[0, 0]
    Array([[ 5.0000000e+00,  7.0000000e+00, -3.4028235e+38],
           [ 1.3000000e+01,  1.5000000e+01, -3.4028235e+38],
           [-3.4028235e+38, -3.4028235e+38, -3.4028235e+38]], dtype=float32)
    >>> values, indices = ov.max_pool(x, kernel=2, strides=2, dilations=2, axis=2,
    ...                               index_element_type="i32", opset=8)
    >>> values[0, 0], indices[0, 0]
    (Array([[10.]], dtype=float32), Array([[10]], dtype=int32))
    """
    opset_, version = versions.TABLE.select("MaxPool", "MaxPool", opset)
    op = f"MaxPool-{version}"
    data = validation.numeric_data(op, data)
    if data.ndim not in (3, 4, 5):
        raise ValueError(
            f"{op}: `data` must have rank 3, 4 or 5 (N, C, *spatial), got rank {data.ndim}")
    n_spatial = data.ndim - 2
    kernel_ = validation.int_tuple(op, "kernel", kernel, n_spatial)
    strides_ = validation.int_tuple(op, "strides", strides, n_spatial)
    dilations_ = validation.int_tuple(op, "dilations",
                                      1 if dilations is None else dilations, n_spatial)
    axis_ = validation.static_int(op, "axis", axis)
    index_type = validation.index_element_type(op, index_element_type)
    versions.TABLE.require(op, "MaxPool", version, opset_, {
        "dilations": set(dilations_) != {1}, "axis": axis_ != 0,
        "index_element_type": index_type != np.int64})
    pads_begin_ = validation.int_tuple(op, "pads_begin",
                                       0 if pads_begin is None else pads_begin, n_spatial)
    pads_end_ = validation.int_tuple(op, "pads_end", 0 if pads_end is None else pads_end, n_spatial)
    auto_pad_ = ("explicit" if auto_pad is None
                 else validation.choice(op, "auto_pad", auto_pad, shapes.AUTO_PADS))
    rounding_ = validation.choice(op, "rounding_type", rounding_type, _ROUNDING)
    versions.TABLE.require(op, "MaxPool", version, opset_,
                           {"rounding_type 'ceil_torch'": rounding_ == "ceil_torch"})
    for name, values in (("kernel", kernel_), ("strides", strides_), ("dilations", dilations_)):
        if min(values) < 1:
            raise ValueError(f"{op}: `{name}` values must be >= 1, got {list(values)}")
    for name, values in (("pads_begin", pads_begin_), ("pads_end", pads_end_)):
        if min(values) < 0:
            raise ValueError(f"{op}: `{name}` must be >= 0, got {list(values)}")
    sweep = shapes.sweep(op, "kernel", tuple(data.shape), data.dtype.itemsize, kernel_,
                         strides_, dilations_, tuple(zip(pads_begin_, pads_end_, strict=True)),
                         auto_pad_, rounding_)
    index_dtype = None
    if version >= versions.TABLE.added_in("MaxPool", "Indices output"):
        axis_ = validation.axes_tuple(op, "axis", axis_, data.ndim)[0]
        index_dtype = validation.index_dtype(op, "index_element_type", index_type,
                                             math.prod(data.shape[axis_:]))
    out = pool.max_pool(data, sweep.window, sweep.strides, sweep.padding, sweep.dilation,
                        nan="skip", index_dtype=index_dtype,
                        layout=pool.IndexLayout(first_axis=axis_, column_major=False,
                                                no_winner="plane_start"))
    return sizes.settled(out, sweep.largest_bytes)
