"""One tour case: an operator call with its independent expectation."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxmax._src.tour.references import Reference


@dataclasses.dataclass(frozen=True)
class Case:
    """One call of one operator with its independent expectation.

    Attributes:
      operator: the public name, e.g. ``"openvino.reduce_max"``.
      spec: the specification and version, e.g. ``"ReduceMax-1"``.
      name: what the case shows.
      data: the input that jit/vmap/grad act on.
      run: ``data -> jax.Array`` (or a tuple of them), the jaxmax call with every other
        argument bound.
      reference: ``data -> Reference``, the NumPy reference for any input of this shape.
      expected: hard-coded expected outputs (from the spec text): one array, or a tuple for
        operators with several outputs; ``None`` uses ``reference(data).outputs``.
      shape: the output shape the spec text states, checked when given.
    """

    operator: str
    spec: str
    name: str
    data: np.ndarray
    run: Callable[[jax.Array], Any]
    reference: Callable[[np.ndarray], Reference]
    expected: np.ndarray | tuple[np.ndarray, ...] | None = None
    shape: tuple[int, ...] | None = None



def unique(shape: tuple[int, ...], seed: int, dtype=np.float32) -> np.ndarray:
    """Distinct values (so gradients have no ties), centred on zero, in a seeded order."""
    size = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(size) - size // 2).astype(dtype).reshape(shape)
