"""XLA's scatter with a combiner of our own, bound through JAX's private scatter primitive.

`jax.lax` exposes scatters with fixed combiners only (add, min, max, ...). SegmentMax's rule and
the bit-reading max scatters (:mod:`jaxmax._src.lowering.scatter.combiner`) need their own, so
they bind the primitive that takes its combiner as a jaxpr, the way JAX's own `lax.scatter_max`
does: ``jaxpr, consts = lax._reduction_jaxpr(combine, aval)`` then ``scatter_max_p.bind(...,
update_jaxpr=jaxpr, update_consts=consts, ...)`` (on jax 0.10 the first is the traced jaxpr; on
0.12, where a jaxpr carries its constants, the same object with them; the primitive lowers
either with ``update_consts`` as its constants).

`available` is the one place that decides, once per process, whether this works here: it runs
a combiner no public scatter has on a few values and compares every element with the answer
worked out by hand. Every caller asks it and keeps a public form with the same results for a
JAX whose internals moved or behave differently; tests set `USE` to False to run those forms.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import fresh_thread

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


#: None: `available` probes; False forces every caller's public form (tests set it, then clear
#: JAX's caches, since the form is chosen while tracing); True skips the probe.
USE: bool | None = None


def available() -> bool:
    """Whether the private combiner scatter binds and computes as `bind` uses it, on this JAX
    (decided once, by `_works`, unless `USE` says)."""
    return _works() if USE is None else USE


def _skip_nan_max(current, update):
    return lax.select(update != update, current, lax.max(current, update))


@functools.cache
def _works() -> bool:
    """The probe: a scatter whose combiner skips NaN updates (no public scatter has it), with a
    target hit twice and one out of range, evaluated (not only traced) and compared with the
    result worked out by hand. Any failure of the private API, or a different result, is
    False: its callers then take their public forms."""
    if not _PRIVATE:
        return False
    operand = np.array([0.0, -np.inf, 5.0], np.float32)
    index = np.array([[0], [0], [1], [3], [1]], np.int32)
    values = np.array([np.nan, 2.0, np.nan, 9.0, -1.0], np.float32)
    want = np.array([2.0, -1.0, 5.0], np.float32)
    try:  # not in the caller's trace or mesh context
        got = fresh_thread.run(lambda: np.asarray(bind(
            _skip_nan_max, jnp.asarray(operand), jnp.asarray(index), jnp.asarray(values),
            NUMBERS_1D)))
    except Exception:  # noqa: BLE001 - any failure of a private API means: do not use it
        return False
    return got.dtype == want.dtype and got.tobytes() == want.tobytes()
