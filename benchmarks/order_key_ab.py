"""The one comparison key (``order.compare_key``) against the two it replaced, side by side in
one process, on every row whose program the choice changes: ArgMax's small-input pairs, its
fold in blocks over an axis before the last, its lane fold (float32 over ``8 * c`` lanes), and
MaxPool's compact form of (value, index) pairs.

The keys (equal values, see `order.compare_key`):

* ``monotone``: the monotone bits with the ``-0.0`` fix as a subtraction, NaN found by
  ``x != x`` (the rows above used it);
* ``kept``: ``order.compare_key``, the sign and magnitude bits, NaN a magnitude above
  infinity's, selected by ``lax.select``. The other last-axis folds used it with ``jnp.where``
  (``bits_compare_key``), which compiled to the same HLO on (1, 25200), (2048, 1001),
  (16, 50257), bfloat16 (256, 1000) and (40000, 12) (checked when it was removed).

Each row is compiled with its former key ("before") and with the kept one, and the two
executables are timed in interleaved rounds; the table gives the medians of wall and process
CPU time (XLA's threads included) and the ratios kept / before. Both results are checked equal.

Run: ``PYTHONPATH=$PWD python benchmarks/order_key_ab.py [--rounds 21] [--only SUBSTRING]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def monotone_key(x: Any, *, nan_order: str) -> Any:
    """The former ``compare_key``: ``m - (m >> (width - 1))`` of the monotone bits, NaN by
    ``x != x``."""
    import numpy as np
    from jax import lax

    from jaxmax._src import dtypes
    from jaxmax._src.lowering import order

    if not dtypes.is_floating(x.dtype):
        return order.key(x, descending=True, nan_order=nan_order)
    m = order.monotone_bits(x)
    m = m - (m >> (8 * m.dtype.itemsize - 1))
    info = np.iinfo(m.dtype)
    nan_key = lax.full_like(m, info.max if nan_order == "first" else info.min)
    return lax.select(x != x, nan_key, m)


def rows() -> list[tuple[str, str, Callable[..., Any], Any]]:
    """(label, former key, function, input)."""
    import jax.numpy as jnp
    import numpy as np

    from jaxmax import onnx
    from jaxmax import openvino as ov

    rng = np.random.default_rng(0)

    def data(shape: tuple[int, ...], dtype: Any = np.float32) -> Any:
        return jnp.asarray(rng.standard_normal(shape).astype(np.float32)).astype(dtype)

    def arg_max(axis: int) -> Callable[..., Any]:
        return lambda x: onnx.arg_max(x, axis=axis, keepdims=0)

    def pool(x: Any) -> Any:
        return ov.max_pool(x, kernel=(3, 3), strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1),
                           opset=8, index_element_type="i32")

    m = "monotone"
    return [
        ("ArgMax pairs (64, 100) axis 1", m, arg_max(1), data((64, 100))),
        ("ArgMax pairs (8, 21, 8, 8) axis 1", m, arg_max(1), data((8, 21, 8, 8))),
        ("ArgMax blocked (4, 256, 64, 64) axis 1", m, arg_max(1), data((4, 256, 64, 64))),
        ("ArgMax blocked (2, 1000, 512) axis 1", m, arg_max(1), data((2, 1000, 512))),
        ("ArgMax blocked bf16 (2, 1000, 512) axis 1", m, arg_max(1),
         data((2, 1000, 512), jnp.bfloat16)),
        ("ArgMax lane fold (256, 1000) axis 1", m, arg_max(1), data((256, 1000))),
        ("ArgMax lane fold (4096, 64) axis 1", m, arg_max(1), data((4096, 64))),
        ("MaxPool-8 compact pairs (1, 3, 13, 13)", m, pool, data((1, 3, 13, 13))),
        ("MaxPool-8 compact pairs (2, 4, 20, 20)", m, pool, data((2, 4, 20, 20))),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    import jax
    import numpy as np

    from jaxmax._src.lowering import order

    kept = order.compare_key
    former = {"monotone": monotone_key}
    print("| row | former key | former ms | kept ms | kept / former | CPU kept / former |\n"
          "|---|---|---|---|---|---|")
    for label, before, fn, x in rows():
        if args.only not in label:
            continue
        compiled = {}
        for name, key in (("former", former[before]), ("kept", kept)):
            order.compare_key = key
            jax.clear_caches()
            try:
                compiled[name] = jax.jit(fn).lower(x).compile()
            finally:
                order.compare_key = kept
        jax.clear_caches()
        if _plain(compiled["former"].as_text()) == _plain(compiled["kept"].as_text()):
            print(f"| {label} | {before} | same compiled program | | | |", flush=True)
            continue
        outs = {k: jax.tree.map(np.asarray, c(x)) for k, c in compiled.items()}
        assert all(np.array_equal(a, b) for a, b in zip(
            jax.tree.leaves(outs["former"]), jax.tree.leaves(outs["kept"]), strict=True)), label
        t0 = time.perf_counter()
        jax.block_until_ready(compiled["kept"](x))
        reps = max(1, int(0.02 / max(1e-6, time.perf_counter() - t0)))
        names = ("former", "kept")
        wall: dict[str, list[float]] = {k: [] for k in names}
        cpu: dict[str, list[float]] = {k: [] for k in names}
        for r in range(args.rounds):
            for k in (names if r % 2 == 0 else names[::-1]):
                t0, c0 = time.perf_counter(), time.process_time()
                for _ in range(reps):
                    jax.block_until_ready(compiled[k](x))
                wall[k].append((time.perf_counter() - t0) / reps * 1e3)
                cpu[k].append((time.process_time() - c0) / reps * 1e3)
        a, b = (statistics.median(wall[k]) for k in names)
        ca, cb = (statistics.median(cpu[k]) for k in names)
        print(f"| {label} | {before} | {a:.4f} | {b:.4f} | {b / a:.3f} | {cb / ca:.3f} |",
              flush=True)
    return 0


def _plain(hlo: str) -> str:
    """Compiled HLO text without its names, metadata and numbering (equal programs compare
    equal)."""
    import re

    hlo = re.sub(r", metadata=\{[^}]*\}", "", hlo)
    hlo = re.sub(r"HloModule \S+", "HloModule", hlo)
    return re.sub(r"\.\d+\b", "", hlo)


if __name__ == "__main__":
    sys.exit(main())
