"""Side-by-side CPU timings: ``lax.reduce_window`` max pooling vs the phase-sliced form.

Run: ``python benchmarks/pool_phase_bench.py [--reps N] [--quick]``.

For each case it times, under ``jax.jit`` and with the candidates interleaved repetition by
repetition in a shuffled order (so a load spike from other processes hits all of them alike),
each timed call right after an untimed one:

* forward: ``reduce_window`` vs ``pool_phase.max_pool``;
* gradient (forward + backward, ``jax.grad`` of ``vdot(pool(x), ct)``): ``reduce_window``
  (``select_and_scatter_add``) vs ``pool_phase.max_pool`` (``custom_jvp``, transposed by JAX).

Before timing, the phase results (forward and gradient) are checked to equal
``reduce_window``'s exactly.

Medians in milliseconds of wall time and of process CPU time (all threads), and the ratio
``reduce_window / candidate`` (> 1: the candidate is faster), are printed as two tables at the
end. Timings on a shared machine are noisy; compare the ratios from one run, not absolute
numbers across runs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import pool_phase


def _reduce_window(x, window, strides, padding):
    return lax.reduce_window(x, np.array(-np.inf, x.dtype), lax.max, window, strides, padding)


def _case(name, shape, k, s, p, p_end=None):
    nsp = len(shape) - 2
    window = (1, 1) + (k,) * nsp
    strides = (1, 1) + (s,) * nsp
    padding = ((0, 0), (0, 0)) + ((p, p if p_end is None else p_end),) * nsp
    return name, shape, window, strides, padding


CASES = [
    _case("2-D k3 s2 p1 (32,64,112,112)", (32, 64, 112, 112), 3, 2, 1),
    _case("2-D k2 s2 p0 (32,64,112,112)", (32, 64, 112, 112), 2, 2, 0),
    _case("3-D k3 s2 p1 (8,32,32,64,64)", (8, 32, 32, 64, 64), 3, 2, 1),
    _case("2-D k3 s2 p1 small (2,8,14,14)", (2, 8, 14, 14), 3, 2, 1),
    _case("2-D k3 s1 p1 (8,64,56,56)", (8, 64, 56, 56), 3, 1, 1),
    # odd length, ceil mode (end pad extended by 1): the strided-slice path, no phase view
    _case("2-D k3 s2 ceil odd (16,64,111,111)", (16, 64, 111, 111), 3, 2, 0, 1),
]
QUICK = [0, 1, 3]


def _time(fn, *args):
    """(wall ms, process CPU ms) of one call; CPU time (all threads) is less sensitive to
    other processes competing for the cores than wall time."""
    wall, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn(*args))
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3


def _bench(name, shape, window, strides, padding, reps):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal(shape, np.float32))

    def fwd(pool):
        return jax.jit(lambda v: pool(v, window, strides, padding))

    def grad(pool):
        return jax.jit(jax.grad(lambda v, ct: jnp.vdot(pool(v, window, strides, padding), ct)))

    out = fwd(_reduce_window)(x)
    # Small integers: every sum of cotangents is exact, so the gradients can be compared.
    ct = jnp.asarray(rng.integers(-3, 4, out.shape).astype(np.float32))
    fns = {
        "fwd reduce_window": (fwd(_reduce_window), (x,)),
        "fwd phase": (fwd(pool_phase.max_pool), (x,)),
        "grad reduce_window": (grad(_reduce_window), (x, ct)),
        "grad phase (custom_jvp)": (grad(pool_phase.max_pool), (x, ct)),
    }
    # Compile and check that the candidates agree with reduce_window before timing.
    results = {key: jax.block_until_ready(fn(*args)) for key, (fn, args) in fns.items()}
    np.testing.assert_array_equal(results["fwd phase"], results["fwd reduce_window"])
    np.testing.assert_array_equal(results["grad phase (custom_jvp)"], results["grad reduce_window"])
    walls = {key: [] for key in fns}
    cpus = {key: [] for key in fns}
    order = list(fns)
    for _ in range(reps):
        rng.shuffle(order)  # no candidate always runs right after the same neighbour
        for key in order:
            fn, args = fns[key]
            jax.block_until_ready(fn(*args))  # untimed: warm the allocator after a neighbour
            wall, cpu = _time(fn, *args)
            walls[key].append(wall)
            cpus[key].append(cpu)
    return ({key: statistics.median(t) for key, t in walls.items()},
            {key: statistics.median(t) for key, t in cpus.items()})


def _table(rows):
    header = (f"{'case':34s} {'fwd rw':>8s} {'fwd ph':>8s} {'ratio':>6s} | {'grad rw':>8s} "
              f"{'phase':>8s} {'ratio':>6s}")
    print(header)
    print("-" * len(header))
    for name, m in rows:
        frw, fph = m["fwd reduce_window"], m["fwd phase"]
        grw, gph = m["grad reduce_window"], m["grad phase (custom_jvp)"]
        print(f"{name:34s} {frw:8.2f} {fph:8.2f} {frw / fph:6.2f} | {grw:8.2f} "
              f"{gph:8.2f} {grw / gph:6.2f}")



def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="only a few cases")
    args = parser.parse_args()
    cases = [CASES[i] for i in QUICK] if args.quick else CASES
    rows = {"wall": [], "cpu": []}
    for case in cases:
        wall, cpu = _bench(*case, reps=args.reps)
        rows["wall"].append((case[0], wall))
        rows["cpu"].append((case[0], cpu))
        print(case[0], "wall", {k: round(v, 2) for k, v in wall.items()}, flush=True)
    for kind in ("wall", "cpu"):
        print(f"\n{kind}: median ms over {args.reps} interleaved repetitions (jax "
              f"{jax.__version__}, {jax.devices()[0].platform}); ratio = reduce_window / phase")
        _table(rows[kind])


if __name__ == "__main__":
    main()
