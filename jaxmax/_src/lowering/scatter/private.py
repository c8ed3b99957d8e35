"""XLA's scatter with a combiner of our own, bound through JAX's private scatter primitive.

`jax.lax` exposes scatters with fixed combiners only (add, min, max, ...). SegmentMax's rule and
the bit-reading max scatters (:mod:`jaxmax._src.lowering.scatter.combiner`) need their own, so
they bind the primitive that takes its combiner as a jaxpr. Its callers probe it once with
`binds` and keep a public form for a JAX whose internals moved or changed.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax

try:  # the scatter primitive that takes its combiner as a jaxpr
    from jax._src import core as _jax_core
    from jax._src.lax import lax as _jax_lax
    from jax._src.lax import slicing as _jax_slicing

    _PRIVATE = True
except ImportError:  # pragma: no cover - a JAX without these internals takes the public form
    _PRIVATE = False

#: A 1-D scatter of scalar updates: `index` of shape (n, 1) into a vector.
NUMBERS_1D = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))


def bind(combine: Callable, operand: jax.Array, index: jax.Array, values: jax.Array,
         numbers: lax.ScatterDimensionNumbers) -> jax.Array:
    """`operand` with each of `values` combined into its target at `index` as
    ``combine(current, update)`` (scalars of `operand`'s dtype), targets outside `operand`
    dropped, with XLA's scatter dimension `numbers`."""
    jaxpr, consts = _jax_lax._reduction_jaxpr(combine, _jax_core.ShapedArray((), operand.dtype))
    return _jax_slicing.scatter_max_p.bind(
        operand, index, values, update_jaxpr=jaxpr, update_consts=consts,
        dimension_numbers=numbers, indices_are_sorted=False, unique_indices=False,
        mode=lax.GatherScatterMode.FILL_OR_DROP)


def binds(scatter: Callable[[jax.Array, jax.Array, jax.Array], jax.Array]) -> bool:
    """Whether `scatter(operand, index, values)`, a caller's use of `bind`, traces on this JAX
    (abstractly, on a float32 vector of 2, an index of shape (1, 1) and one update): any failure
    of a private API means its caller takes its public form."""
    if not _PRIVATE:
        return False
    try:
        jax.eval_shape(scatter, jax.ShapeDtypeStruct((2,), jnp.float32),
                       jax.ShapeDtypeStruct((1, 1), jnp.int32),
                       jax.ShapeDtypeStruct((1,), jnp.float32))
    except Exception:  # noqa: BLE001 - any failure of a private API means: do not use it
        return False
    return True
