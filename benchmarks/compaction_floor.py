"""What it costs XLA:CPU to find the flagged entries of an array: the floor under ROIPooling-1's
NaN fix-up, which finds, in each block of 8 channels, the bins holding a NaN.

The anchor's NaN-bearing features (1 in 1,000; `roi_pool_ab.py`'s) flag about 6% of a block's
14,700 bins (300 ROIs x 7 x 7), and the fix-up needs the first of them in order. Each way of
listing them, jitted alone, side by side in one process, medians of `--rounds` calls
(microseconds, wall): ``lax.top_k`` of a score (what the lowering does), ranks by ``cumsum``
and a scatter, ranks by two products with triangular matrices of ones and a scatter, and
``jnp.nonzero(size=...)``; beside a trivial program (the dispatch). Each listing is checked
against NumPy's ``flatnonzero`` first.

    python benchmarks/compaction_floor.py
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def median_us(f, *args, rounds: int) -> float:
    jax.block_until_ready(f(*args))
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e6)


def forms(n: int, k: int) -> dict:
    pad = -(-n // 128) * 128
    within = np.triu(np.ones((128, 128), np.float32))
    rows = pad // 128
    across = np.triu(np.ones((rows, rows), np.float32), 1)

    def scatter(flag, rank):
        at = jnp.where(flag & (rank < k), rank, k)
        return jnp.zeros(k, jnp.int32).at[at].set(lax.iota(jnp.int32, n), mode="drop",
                                                  unique_indices=True)

    def top_k(flag):
        score = jnp.where(flag, (n - lax.iota(jnp.int32, n)).astype(jnp.float32), 0.0)
        return lax.top_k(score, k)[1]

    def cumsum(flag):
        return scatter(flag, jnp.cumsum(flag.astype(jnp.int32)) - 1)

    def products(flag):
        f = jnp.pad(flag, (0, pad - n)).astype(jnp.float32).reshape(rows, 128)
        inside = f @ within
        rank = (inside + (inside[:, -1] @ across)[:, None]).reshape(-1)[:n]
        return scatter(flag, rank.astype(jnp.int32) - 1)

    def nonzero(flag):
        return jnp.nonzero(flag, size=k, fill_value=0)[0]

    return {"lax.top_k (the lowering's)": top_k, "cumsum ranks, scatter": cumsum,
            "triangular products, scatter": products, "jnp.nonzero": nonzero}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--bins", type=int, default=14700)
    parser.add_argument("--share", type=float, default=0.059, help="flagged share of the bins")
    args = parser.parse_args()
    n, k = args.bins, args.bins // 16
    flag = np.random.default_rng(0).random(n) < args.share
    want = np.flatnonzero(flag)[:k]
    trivial = median_us(jax.jit(lambda f: f.astype(jnp.int32) + 1), jnp.asarray(flag),
                        rounds=args.rounds)
    print(f"{n} bins, {int(flag.sum())} flagged, lists of {k}; a trivial program "
          f"{trivial:.1f} us")
    print("| form | median us | less the trivial program |")
    print("|---|---:|---:|")
    for name, f in forms(n, k).items():
        jf = jax.jit(f)
        assert np.array_equal(np.asarray(jf(jnp.asarray(flag)))[:len(want)], want), name
        us = median_us(jf, jnp.asarray(flag), rounds=args.rounds)
        print(f"| {name} | {us:.1f} | {us - trivial:.1f} |")


if __name__ == "__main__":
    main()
