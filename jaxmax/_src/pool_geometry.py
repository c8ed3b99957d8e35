"""The window sweep of a pooling call: checked, in full rank, ready for the lowering.

Both faces (OpenVINO MaxPool-1/-8/-14, ONNX MaxPool) turn their attributes into per-axis
kernel, stride, dilation and (begin, end) pads, then call :func:`sweep`, which checks that the
dilated kernel fits the padded input, lowers strides that are larger than they need to be,
applies the face's rounding rule, bounds every array the call builds, and returns the window,
strides, padding and dilation over every axis of ``(N, C, *spatial)``.
"""

from __future__ import annotations

from typing import NamedTuple

from jaxmax._src import shapes, sizes


class Sweep(NamedTuple):
    window: tuple[int, ...]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    dilation: tuple[int, ...]
    largest_bytes: int  # of the padded input (or the input rounded up to whole strides)


def sweep(op: str, kernel_name: str, shape: tuple[int, ...], itemsize: int,
          kernel: tuple[int, ...], strides: tuple[int, ...], dilations: tuple[int, ...],
          pads: tuple[tuple[int, int], ...], rounding: str) -> Sweep:
    """The sweep giving the output lengths of `rounding` (see ``shapes.pooled_length``)."""
    spatial = tuple(shape[2:])
    reach = tuple(shapes.dilated(k, d) for k, d in zip(kernel, dilations, strict=True))
    for i, (size, k, dk, (lo, hi)) in enumerate(zip(spatial, kernel, reach, pads, strict=True)):
        if dk > size + lo + hi:
            what = f"`{kernel_name}` {k}" + (f" dilated to {dk}" if dk != k else "")
            raise ValueError(f"{op}: {what} is larger than the padded input {size + lo + hi} "
                             f"(size {size} + pads {lo} + {hi}) on spatial axis {i}")
    strides = shapes.effective_strides(spatial, reach, strides, pads, rounding != "floor")
    axes = list(zip(spatial, kernel, strides, dilations, pads, strict=True))
    out = tuple(shapes.pooled_length(size, k, s, d, lo, hi, rounding)
                for size, k, s, d, (lo, hi) in axes)
    padding = tuple(shapes.sweep_padding(size, k, s, d, lo, n)
                    for (size, k, s, d, (lo, _)), n in zip(axes, out, strict=True))
    lead = tuple(shape[:2])
    sizes.checked_elements(op, "the output", lead + out)
    # The padded extent, and the input rounded up to whole strides (a gradient's phase layout).
    extent = lead + tuple(max(n + lo + hi, -(-n // s) * s)
                          for n, s, (lo, hi) in zip(spatial, strides, padding, strict=True))
    largest = sizes.checked_elements(op, "the padded input", extent)
    return Sweep((1, 1) + kernel, (1, 1) + strides, ((0, 0), (0, 0)) + padding,
                 (1, 1) + dilations, largest * itemsize)
