"""Pure integer arithmetic for pooling: SAME pads, output lengths, sweep padding, strides, and
the checked window sweep of a MaxPool call (`sweep`), for both faces.

Nothing here touches arrays. All functions take and return Python ints or tuples of them.
"""

from __future__ import annotations

from typing import NamedTuple

from jaxmax._src import sizes


def effective_strides(spatial: tuple[int, ...], kernel: tuple[int, ...],
                      strides: tuple[int, ...], pads: tuple[tuple[int, int], ...],
                      ceil_mode: bool) -> tuple[int, ...]:
    """`strides` with each stride that is larger than it needs to be lowered, same windows.

    `kernel` is the extent each window spans (the dilated kernel). A stride above the span
    ``D + pb + pe - k`` leaves one window (floor) or two (ceil: at 0
    and at ``s``). Every stride from ``span + 1`` (floor), or from ``max(span, pb + D)`` (ceil:
    the second window then starts past the input and sees padding only), gives the same output
    length and the same window contents, so the stride is lowered to that value. Nothing
    downstream then depends on a stride far beyond the input (a gradient would otherwise lay
    out ``ceil(D / s) * s`` elements per axis, and ceil mode would pad up to ``s``).
    """
    out = []
    for size, k, s, (lo, hi) in zip(spatial, kernel, strides, pads, strict=True):
        span = size + lo + hi - k  # >= 0: the caller has checked k <= D + pb + pe
        if not ceil_mode:
            bound = span + 1
        elif span == 0:
            bound = 1  # one window whatever the stride
        else:
            bound = max(span, lo + size)
        out.append(min(s, bound))
    return tuple(out)


# Pooling with dilations and the rounding rules of MaxPool-8/-14 and ONNX MaxPool -------------

def dilated(kernel: int, dilation: int) -> int:
    """The extent a dilated window spans: ``(k - 1) * d + 1``."""
    return (kernel - 1) * dilation + 1


def same_pads(size: int, kernel: int, stride: int, dilation: int,
              lower: bool) -> tuple[int, int]:
    """SAME padding with the dilated kernel: ``max(0, (ceil(D/s) - 1) * s + dk - D)`` in total
    (clamped at 0 when the kernel is smaller than the stride), the odd element at the end
    (upper) or at the beginning (lower)."""
    total = max(0, (-(-size // stride) - 1) * stride + dilated(kernel, dilation) - size)
    small, big = total // 2, total - total // 2
    return (big, small) if lower else (small, big)


def pooled_length(size: int, kernel: int, stride: int, dilation: int, lo: int, hi: int,
                  rounding: str) -> int:
    """The output length of one spatial axis; the caller has checked ``dk <= D + lo + hi``.

    ``"floor"``: ``ext // s + 1`` with ``ext = D + lo + hi - dk``; ``"ceil"`` (OpenVINO):
    ``ceil(ext / s) + 1``, a last window may start in or past the end padding;
    ``"ceil_torch"`` (MaxPool-14): ``c = ceil(ext / s)``, plus one window when ``c * s`` starts
    before the end padding (``<= D + lo - 1``). ONNX's ``ceil_mode`` is that last rule too: its
    ``ceil(ext / s) + 1`` less one when the last window would start in the end padding is the
    same count.
    """
    ext = size + lo + hi - dilated(kernel, dilation)
    if rounding == "floor":
        return ext // stride + 1
    up = -(-ext // stride)
    if rounding == "ceil":
        return up + 1
    return up + (1 if up * stride <= size + lo - 1 else 0)  # "ceil_torch"


def sweep_padding(size: int, kernel: int, stride: int, dilation: int, lo: int,
                  out: int) -> tuple[int, int]:
    """The (begin, end) padding under which a window sweep gives exactly `out` windows: the end
    pad reaches the last window's end (negative: the unused tail is cropped)."""
    return lo, (out - 1) * stride + dilated(kernel, dilation) - size - lo


#: How the pads of a pooling are given: as numbers, none, or SAME (odd element at the end, or at
#: the beginning). ONNX's ``NOTSET`` is ``"explicit"``.
AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower")


def resolved_pads(auto_pad: str, pads: tuple[tuple[int, int], ...], spatial: tuple[int, ...],
                  kernel: tuple[int, ...], strides: tuple[int, ...],
                  dilations: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """The (begin, end) pads of each spatial axis under `auto_pad` (one of `AUTO_PADS`):
    `pads` as given, zeros, or `same_pads`."""
    if auto_pad == "explicit":
        return pads
    if auto_pad == "valid":
        return ((0, 0),) * len(spatial)
    return tuple(same_pads(size, k, s, d, auto_pad == "same_lower")
                 for size, k, s, d in zip(spatial, kernel, strides, dilations, strict=True))


class Sweep(NamedTuple):
    """The window sweep of a pooling call over every axis of ``(N, C, *spatial)``."""
    window: tuple[int, ...]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    dilation: tuple[int, ...]
    largest_bytes: int  # of the padded input (or the input rounded up to whole strides)


def sweep(op: str, kernel_name: str, shape: tuple[int, ...], itemsize: int,
          kernel: tuple[int, ...], strides: tuple[int, ...], dilations: tuple[int, ...],
          pads: tuple[tuple[int, int], ...], auto_pad: str, rounding: str) -> Sweep:
    """The checked sweep of a pooling call whose per-spatial-axis attributes the face has
    validated: `auto_pad` resolved (`resolved_pads`), the dilated kernel checked against the
    padded input, strides larger than they need to be lowered (`effective_strides`), the output
    lengths of `rounding` (`pooled_length`) as explicit end padding (`sweep_padding`), and every
    array the call builds bounded (``sizes.checked_elements``)."""
    spatial = tuple(shape[2:])
    pads = resolved_pads(auto_pad, pads, spatial, kernel, strides, dilations)
    reach = tuple(dilated(k, d) for k, d in zip(kernel, dilations, strict=True))
    for i, (size, k, dk, (lo, hi)) in enumerate(zip(spatial, kernel, reach, pads, strict=True)):
        if dk > size + lo + hi:
            what = f"`{kernel_name}` {k}" + (f" dilated to {dk}" if dk != k else "")
            raise ValueError(f"{op}: {what} is larger than the padded input {size + lo + hi} "
                             f"(size {size} + pads {lo} + {hi}) on spatial axis {i}")
    strides = effective_strides(spatial, reach, strides, pads, rounding != "floor")
    axes = list(zip(spatial, kernel, strides, dilations, pads, strict=True))
    out = tuple(pooled_length(size, k, s, d, lo, hi, rounding)
                for size, k, s, d, (lo, hi) in axes)
    padding = tuple(sweep_padding(size, k, s, d, lo, n)
                    for (size, k, s, d, (lo, _)), n in zip(axes, out, strict=True))
    lead = tuple(shape[:2])
    sizes.checked_elements(op, "the output", lead + out)
    # The padded extent, and the input rounded up to whole strides (a gradient's phase layout).
    extent = lead + tuple(max(n + lo + hi, -(-n // s) * s)
                          for n, s, (lo, hi) in zip(spatial, strides, padding, strict=True))
    largest = sizes.checked_elements(op, "the padded input", extent)
    return Sweep((1, 1) + kernel, (1, 1) + strides, ((0, 0), (0, 0)) + padding,
                 (1, 1) + dilations, largest * itemsize)
