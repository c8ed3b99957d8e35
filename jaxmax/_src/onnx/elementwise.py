"""ONNX Max (since-versions 1, 6, 8, 12, 13): the version (:mod:`jaxmax._src.onnx.versions`),
type and shape checks -> lowering."""

from __future__ import annotations

import jax
import numpy as np

from jaxmax._src import sizes, validation
from jaxmax._src.lowering import elementwise
from jaxmax._src.onnx import versions
from jaxmax._src.types import Data, Int

_OP = "ONNX Max"

def _checked_inputs(inputs: tuple, version: int, opset: int) -> list[jax.Array]:
    if not inputs:
        raise ValueError(f"{_OP}: `inputs` must hold at least one array (Max takes 1 to "
                         f"2**31 - 1 inputs), got none")
    arrays = [validation.as_data(_OP, x, f"inputs[{i}]") for i, x in enumerate(inputs)]
    for i, x in enumerate(arrays):
        versions.TABLE.check_dtype(_OP, f"inputs[{i}]", x, "Max", version, opset)
    if len({x.dtype for x in arrays}) > 1:  # (dtype.name costs ~4 us: only on the error path)
        raise TypeError(f"{_OP}: every input must have the same dtype (Max's one type T), got "
                        f"{[x.dtype.name for x in arrays]}")
    shapes = [tuple(x.shape) for x in arrays]
    if version < versions.TABLE.added_in("Max", "broadcasting"):
        if len(set(shapes)) > 1:
            raise ValueError(f"{_OP}: Max-{version} (opset {opset}) needs inputs of one shape "
                             f"(NumPy broadcasting starts at opset 8), got shapes {shapes}")
    else:
        try:
            out_shape = np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"{_OP}: the shapes of `inputs` do not broadcast (NumPy rules): "
                             f"{shapes}") from None
        sizes.checked_elements(_OP, "the output", out_shape)
    return arrays


def max(*inputs: Data, opset: Int = 13) -> jax.Array:  # noqa: A001 (the spec's name)
    """ONNX ``Max``, since-versions 1, 6, 8, 12 and 13, selected by `opset`: the elementwise
    maximum of every input.

    The IEEE-754 maximum (``jnp.maximum``): NaN propagates, and ``max(-0.0, +0.0)`` is ``+0.0``
    in either order. With several inputs the maximum is folded left to right. Max-1 and Max-6
    need inputs of one shape; from Max-8 they broadcast NumPy-style. Max-1's legacy
    ``consumed_inputs`` attribute is ignored (it only described in-place buffer reuse).

    Args:
      *inputs: one or more arrays of a single dtype the selected version allows: float16,
        float32, float64 (all versions), every integer type (12+), bfloat16 (13+).
      opset: the model's ONNX opset (>= 1); the largest since-version <= `opset` applies. Static.

    Returns:
      A ``jax.Array`` of the inputs' dtype and their broadcast shape.

    Raises:
      TypeError: a dtype the selected version does not allow (bool included), inputs of
        different dtypes, data that is not an array of numbers, a non-integer or traced
        `opset`.
      ValueError: no input, `opset` < 1, shapes that differ (Max-1/-6) or do not broadcast
        (Max-8+), a ragged list, concrete 64-bit data whose values 32 bits cannot hold while
        ``jax_enable_x64`` is off.

    jit contract: `opset` must be static; the inputs may be traced. Gradient: that of the
    ``jnp.maximum`` fold: the cotangent goes to the larger argument, and a tie splits it evenly
    between the two arguments of that step (so with three tied inputs the last one gets 1/2 and
    the first two 1/4 each).

    >>> import numpy as np
    >>> from jaxmax import onnx
    >>> onnx.max(np.array([1, np.nan, -0.0], np.float32), np.array([3, 0, 0.0], np.float32))
    Array([ 3., nan,  0.], dtype=float32)
    """
    opset_ = (opset if type(opset) is int and -2**63 <= opset < 2**63  # the common case, fast
              else validation.static_int(_OP, "opset", opset))
    if opset_ < 1:
        raise ValueError(f"{_OP}: `opset` must be >= 1, got {opset_}")
    version = versions.TABLE.since_version("Max", opset_)
    arrays = _checked_inputs(inputs, version, opset_)
    return elementwise.ieee_maximum(*arrays)
