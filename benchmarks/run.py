#!/usr/bin/env python
"""Side-by-side timings of jaxmax and its competitors; prints one table.

    python benchmarks/run.py                  # full sizes (~200 MB tensors), several minutes
    python benchmarks/run.py --quick          # small sizes, few repeats
    python benchmarks/run.py --only reduce,max_pool --out results.md
    python benchmarks/run.py --backends jax,ort
    python benchmarks/run.py --only segment_max --backends jax --compile   # + compile cost

Groups: reduce, logical_or, max_pool, segment_max, eager, pool_family, elementwise, top_k,
adaptive_unpool, data_shapes, long_window, many_shapes. Columns: the median wall
time of one call (warm-up excluded, JAX results waited for with ``block_until_ready``), its
ratio to the group's read floor (the time to merely read the input once: a jitted flat
``jnp.sum``; for bool and int8 data a NumPy flat ``max`` of the bytes, since XLA's int8 sum
widens to int32 and is far slower than a read; for eager calls one eager call of a cached
jitted ``jnp.sum``), and its ratio to the fastest competitor in the same case (everything that
is not jaxmax and not a floor). A competitor that is not importable, or that rejects the case,
shows "n/a" and a note below the table says why. Cases that ask for it (the reduce group's NaN
cases: NaN data / NaN-free data per jaxmax face; the data_shapes group: each data shape /
clean) get a ratio line below the table, in wall and in process CPU time. With ``--compile``
(always for long_window and many_shapes) each JAX row's compile time and memory is measured
in a child process with a time limit (see benchmarks/README.md).

Each runtime runs in its own worker subprocess (``--worker``) that prints one JSON line per
measurement; workers run one after another, and within a worker the implementations of a case
are sampled in turn (round-robin), so a burst of load hits them alike. Every result is also
digested (shape, weighted sum, NaN count) and compared across implementations of a case: a
"differs" note flags a row whose output is not the same array (cases with NaN data are not
compared: the runtimes' NaN rules differ by design).

The code lives in the ``jaxmax_bench`` package next to this script.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from jaxmax_bench.runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(description=(__doc__ or "").split("\n\n")[0]))
