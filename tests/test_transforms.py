"""The JAX transformation contract of every public operator.

For ``jaxmax.openvino.{reduce_max, reduce_logical_or, max_pool, segment_max}`` and
``jaxmax.onnx.reduce_max``:

* ``jax.jit`` gives exactly the eager answer (and the NumPy oracle's), NaN / -inf included;
* ``jax.vmap`` over a leading and over a middle batch axis equals a Python loop of eager calls;
* ``jax.test_util.check_grads`` passes on inputs with unique values;
* the gradient tie rules of docs/semantics.md hold, checked against cotangents computed by hand
  (NumPy loops);
* a second call with the same static arguments and shapes traces nothing;
* the jaxpr holds the intended primitive (``reduce_max``/``reduce_or``, ``reduce_window_max``,
  ``scatter-max``), nested sub-jaxprs included.

The tests are split by operator: tests/test_reduce_max_transforms.py,
test_max_pool_transforms.py, test_max_pool_transforms_v1.py and test_segment_max_transforms.py,
with their helpers in tests/transform_helpers.py and the oracles (written from the
specifications and docs/semantics.md only; they never call jaxmax) in tests/reduce_oracle.py,
pool_oracle.py and segment_oracle.py. This file holds what spans the operators: the jaxpr
collector's own check and a user's jitted wrapper around all of them.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from helpers import special_floats
from jax import lax
from transform_helpers import primitive_names, prims

from jaxmax import onnx
from jaxmax import openvino as ov


def test_primitive_collector_sees_nested_jaxprs():
    x = jnp.ones(3)
    names = prims(lambda v: lax.cond(v[0] > 0, lambda: jnp.sin(v), lambda: jnp.cos(v)), x)
    assert {"sin", "cos", "cond"} <= set(names)
    assert "sin" not in primitive_names(jax.make_jaxpr(jnp.cos)(x))


def test_no_retrace_under_jit_wrapper():
    """A user's jitted wrapper with static_argnames traces once per static-argument set."""
    traces = []

    @partial(jax.jit, static_argnames=("axes", "kernel", "num_segments"))
    def wrapper(x, ids, axes, kernel, num_segments):
        traces.append(1)
        return (ov.reduce_max(x, axes), onnx.reduce_max(x, axes),
                ov.reduce_logical_or(x > 0, axes),
                ov.max_pool(x[None, None], kernel=kernel, strides=1),
                ov.segment_max(x, ids, num_segments, fill_mode="ZERO"))

    rng = np.random.default_rng(89)
    ids = np.array([0, 0, 1, 3])
    wrapper(special_floats(rng, (4, 5)), ids, (1,), (2, 2), 4)
    wrapper(special_floats(rng, (4, 5)), ids + 0, (1,), (2, 2), 4)
    assert len(traces) == 1
    wrapper(special_floats(rng, (4, 5)), ids, (0,), (2, 2), 4)
    assert len(traces) == 2
