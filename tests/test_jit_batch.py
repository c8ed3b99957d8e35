"""tests/jit_batch.py traces each call of a batch as its eager call would run: the lowerings'
`rules.cross_device_possible` answers what it answers eagerly for that call's arguments (on the
suite's 8 CPU devices: False for NumPy input, True for an array laid over several devices),
not what any traced input gets (True)."""

from __future__ import annotations

import jax
import numpy as np
from helpers import assert_same, explicit_mesh
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from jit_batch import jit_each

from jaxmax._src.lowering import rules


def _seen(record):
    def fn(x):
        record.append(rules.cross_device_possible(x))  # at trace time
        return x + 1
    return fn


def test_each_call_sees_what_its_eager_call_sees():
    assert jax.device_count() > 1  # else every answer is False and this proves nothing
    x = np.arange(8, dtype=np.float32)
    sharded = jax.device_put(x, NamedSharding(explicit_mesh(P("d")), P("d")))
    under_jit: list = []
    jax.jit(_seen(under_jit))(x)
    assert under_jit == [True]  # a plain jit of the same call: the cross-device forms
    seen: list = []
    out = jit_each([(_seen(seen), (x,)), (_seen(seen), (sharded,))])
    assert seen == [False, True]
    assert_same(out[0], x + 1)
    assert_same(out[1], x + 1)

