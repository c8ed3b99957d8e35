"""OpenVINO Maximum-1: auto_broadcast, type agreement and shape rules -> lowering."""

from __future__ import annotations

import jax
import numpy as np

from jaxmax._src import sizes, validation
from jaxmax._src.lowering import elementwise
from jaxmax._src.types import Data, Int

_MAXIMUM = "Maximum-1"
# OpenVINO's attribute parser also reads "explicit" as "none"
_AUTO_BROADCAST = ("none", "explicit", "numpy", "pdpd")


def _pdpd_compatible(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> bool:
    """PaddlePaddle broadcasting with the default ``axis = -1``, i.e. ``rank(a) - rank(b)``:
    `b` (of rank <= rank(a)) is laid over the trailing axes of `a`, and each of its extents is
    1 or `a`'s. Only `b` is broadcast; the result has `a`'s shape."""
    offset = len(a_shape) - len(b_shape)
    if offset < 0:
        return False
    return all(d in (1, a_shape[offset + i]) for i, d in enumerate(b_shape))


def _out_shape(rule: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> tuple[int, ...]:
    op = _MAXIMUM
    if rule == "none":
        if a_shape != b_shape:
            raise ValueError(f"{op}: with auto_broadcast 'none' `a` and `b` must have one shape, "
                             f"got {a_shape} and {b_shape}")
        return a_shape
    if rule == "pdpd":
        if not _pdpd_compatible(a_shape, b_shape):
            raise ValueError(
                f"{op}: with auto_broadcast 'pdpd' the shape of `b` {b_shape} must match the "
                f"trailing axes of `a` {a_shape} (rank(b) <= rank(a), each extent of `b` 1 "
                f"or `a`'s)")
        return a_shape
    try:
        return tuple(np.broadcast_shapes(a_shape, b_shape))
    except ValueError:
        raise ValueError(f"{op}: the shapes of `a` {a_shape} and `b` {b_shape} do not broadcast "
                         f"(auto_broadcast 'numpy')") from None


def maximum(a: Data, b: Data, *, auto_broadcast: str = "numpy", opset: Int = 1) -> jax.Array:
    """OpenVINO ``Maximum-1``: ``a < b ? b : a`` elementwise, as OpenVINO's reference.

    A NaN in `a` wins (the comparison is false), a NaN in `b` loses to `a`, and a tie keeps `a`:
    ``maximum(-0.0, +0.0)`` is ``-0.0``, ``maximum(+0.0, -0.0)`` is ``+0.0``. This is not
    ``jnp.maximum`` (IEEE: NaN always wins, ``+0.0`` beats ``-0.0``). Integers are exact.

    Args:
      a: array of any real or integer dtype.
      b: array of `a`'s dtype.
      auto_broadcast: ``"numpy"`` (the default: NumPy broadcasting), ``"none"`` (or
        ``"explicit"``: one shape) or ``"pdpd"`` (PaddlePaddle, ``axis = -1``: `b` is laid over
        the trailing axes of `a`, each extent of `b` 1 or `a`'s; the result has `a`'s shape),
        any case. Static.
      opset: the model's OpenVINO opset (>= 1; Maximum-1 is current in all of them). Static.

    Returns:
      A ``jax.Array`` of the inputs' dtype and their broadcast shape.

    Raises:
      TypeError: bool or complex data, `a` and `b` of different dtypes, data that is not an
        array of numbers, a non-string `auto_broadcast`, a non-integer or traced `opset`.
      ValueError: `opset` < 1, an unknown `auto_broadcast`, shapes the rule does not accept, a
        ragged list, concrete 64-bit data whose values 32 bits cannot hold while
        ``jax_enable_x64`` is off.

    jit contract: `auto_broadcast` and `opset` must be static; `a` and `b` may be traced.
    Gradient: the select rule: the cotangent goes to `b` where ``a < b`` and to `a` everywhere
    else (ties and NaN included); a broadcast argument sums it.

    >>> import numpy as np
    >>> from jaxmax import openvino as ov
    >>> ov.maximum(np.array([np.nan, 1, -0.0], np.float32), np.array([1, np.nan, 0.0], np.float32))
    Array([nan,  1., -0.], dtype=float32)
    """
    op = _MAXIMUM
    opset_ = (opset if type(opset) is int and -2**63 <= opset < 2**63  # the common case, fast
              else validation.static_int(op, "opset", opset))
    if opset_ < 1:
        raise ValueError(f"{op}: `opset` must be >= 1, got {opset_}")
    rule = validation.choice(op, "auto_broadcast", auto_broadcast, _AUTO_BROADCAST)
    rule = "none" if rule == "explicit" else rule
    a = validation.numeric_data(op, a, "a")
    b = validation.numeric_data(op, b, "b")
    if a.dtype != b.dtype:
        raise TypeError(f"{op}: `a` and `b` must have the same element type, got {a.dtype} and "
                        f"{b.dtype}")
    out_shape = _out_shape(rule, tuple(a.shape), tuple(b.shape))
    sizes.checked_elements(op, "the output", out_shape)
    return elementwise.select_maximum(a, b)
