"""Lowering forms forced side by side in one process: AdaptiveMaxPool-8's, then MaxPool's, TopK's
and ArgMax's, on the rows that choose among them.

Each row names a shape, an output size and the forms that could compute it (the one the
lowering takes is marked ``*``); each form is called straight from
``jaxmax._src.lowering.adaptive_pool`` under ``jax.jit`` (values and int32 indices), and also:

* compile: process CPU and wall seconds of ``jax.jit(f).lower(spec).compile()`` after
  ``jax.clear_caches()``, best of ``--compiles``, the forms alternated; beside two plain JAX
  formulations compiled the same way (``jnp.max`` and ``jnp.argmax`` of each window's slice,
  stacked: the ``adaptive_unpool`` group's; and values only, ``jnp.max`` of each window axis by
  axis: the ``long_window`` group's);
* memory per new shape: the resident memory the first compile of the form added (MB, the
  executable held) and XLA's temporary buffers;
* run time: wall and process CPU medians of ``--rounds`` interleaved calls on the row's data
  (normal data; ``nan``: 1% NaN), outputs checked equal as bits across the forms.

A ``grad`` row times ``jax.grad`` of the values (times a fixed cotangent) through a derivative:
``fold autodiff`` (the unrolled fold's selects) or ``routed`` (the tangent gathered at the form's
indices, as the lowering's ``_routed``); the forward forms are as their names say (`form`).

The ``OTHER_ROWS`` force the other operators' forms through their modules' switches (set while
tracing, JAX's caches cleared around each): MaxPool's compact form against its unrolled taps
(``pooling.compact.FORCE``) and the compact pairs against the triples (``PAIRS``), TopK's chunk
maxima against one ``lax.top_k`` (``top_k_chunked.CHUNK_MIN_LENGTH``), ArgMax's small-input
pairs against its folds (``arg_max.SMALL_BYTES``).

Run: ``PYTHONPATH=$PWD python benchmarks/forms_ab.py [--only SUBSTRING]
[--compiles 3] [--rounds 21]``; ``--list`` prints the rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

#: (label, shape, output, data, the forms to compare; the first is the one chosen today)
ROWS: list[tuple[str, tuple[int, ...], tuple[int, ...], str, tuple[str, ...]]] = [
    ("head (7, 7)", (32, 512, 14, 14), (7, 7), "normal",
     ("tiled", "fold", "tiled skip", "gathered")),
    ("head (7, 7) NaN", (32, 512, 14, 14), (7, 7), "nan", ("tiled", "fold", "tiled skip")),
    ("head (7, 7) grad", (32, 512, 14, 14), (7, 7), "grad", ("fold autodiff", "tiled routed")),
    ("(15, 15) -> (5, 5) grad", (32, 512, 15, 15), (5, 5), "grad",
     ("tiled routed", "fold autodiff")),
    ("(14, 14) -> (2, 2)", (32, 512, 14, 14), (2, 2), "normal", ("tiled", "tiled skip", "fold")),
    ("(14, 14) -> (2, 2) grad", (32, 512, 14, 14), (2, 2), "grad",
     ("tiled routed", "fold autodiff")),
    ("head (5, 3)", (32, 512, 14, 14), (5, 3), "normal",
     ("per_window", "fold", "gathered", "by_axis")),
    ("head (5, 5)", (32, 512, 14, 14), (5, 5), "normal",
     ("fold", "per_window", "gathered", "by_axis")),
    ("(20, 20) -> (7, 7)", (32, 256, 20, 20), (7, 7), "normal", ("fold", "gathered", "by_axis")),
    ("regular (21, 21) -> (5, 4)", (32, 128, 21, 21), (5, 4), "normal",
     ("fold", "gathered", "by_axis")),
    ("small tiling (2, 64, 56, 56) -> (7, 7)", (2, 64, 56, 56), (7, 7), "normal",
     ("fold", "tiled", "by_axis")),
    ("global (32, 512, 16, 16) -> (1, 1)", (32, 512, 16, 16), (1, 1), "normal",
     ("tiled skip", "tiled", "fold", "gathered")),
    ("global (32, 512, 16, 16) -> (1, 1) NaN", (32, 512, 16, 16), (1, 1), "nan",
     ("tiled skip", "tiled", "gathered", "by_axis")),
    ("global (32, 512, 16, 16) grad", (32, 512, 16, 16), (1, 1), "grad",
     ("tiled skip routed", "by_axis routed")),
    ("global (8, 2048, 7, 7) -> (1, 1)", (8, 2048, 7, 7), (1, 1), "normal",
     ("tiled", "tiled skip", "fold", "by_axis")),
    ("(16, 128, 28, 28) -> (5, 3)", (16, 128, 28, 28), (5, 3), "normal", ("gathered", "by_axis")),
    ("(8, 64, 56, 56) -> (5, 3)", (8, 64, 56, 56), (5, 3), "normal", ("gathered", "by_axis")),
    ("long (8, 64, 224, 224) -> (5, 3)", (8, 64, 224, 224), (5, 3), "normal",
     ("gathered", "by_axis")),
    ("long (8, 64, 224, 224) -> (223, 2)", (8, 64, 224, 224), (223, 2), "normal",
     ("by_axis", "gathered")),
    ("long (1, 1, 100003) -> 7", (1, 1, 100003), (7,), "normal", ("gathered", "by_axis")),
    ("3-D (2, 8, 30, 30, 30) -> (29, 29, 3)", (2, 8, 30, 30, 30), (29, 29, 3), "normal",
     ("by_axis", "gathered")),
    ("small (1, 3, 13, 13) -> (5, 3)", (1, 3, 13, 13), (5, 3), "normal",
     ("gathered", "by_axis", "per_window", "fold")),
    ("small (1, 3, 12, 12) -> (4, 4)", (1, 3, 12, 12), (4, 4), "normal",
     ("gathered", "by_axis", "fold", "tiled")),
]


#: (label, shape, a call taking the switches' forms, {form: {(module, attribute): value}}; the
#: first form is the one chosen today)
OTHER_ROWS: list[tuple[str, tuple[int, ...], str, dict[str, dict[tuple[str, str], Any]]]] = [
    ("MaxPool-8 k7 s1 p3 indices (1, 2, 24, 24)", (1, 2, 24, 24), "max_pool_k7",
     {"compact": {("pooling.compact", "FORCE"): True},
      "unrolled taps": {("pooling.compact", "FORCE"): False}}),
    ("MaxPool-8 k3 s2 p1 indices (1, 3, 13, 13)", (1, 3, 13, 13), "max_pool_k3",
     {"compact pairs": {("pooling.compact", "FORCE"): True, ("pooling.compact", "PAIRS"): True},
      "compact triples": {("pooling.compact", "FORCE"): True,
                          ("pooling.compact", "PAIRS"): False},
      "unrolled taps": {("pooling.compact", "FORCE"): False}}),
    ("ONNX MaxPool Y and Indices k3 s1 p1 (1, 16, 32, 32)", (1, 16, 32, 32), "onnx_pool_k3",
     {"compact triples": {("pooling.compact", "FORCE"): True,
                          ("pooling.compact", "PAIRS"): False},
      "compact pairs": {("pooling.compact", "FORCE"): True, ("pooling.compact", "PAIRS"): True}}),
    ("ONNX TopK k=10 of (32, 32000)", (32, 32000), "top_k_10",
     {"chunk maxima": {}, "one lax.top_k": {("top_k_chunked", "CHUNK_MIN_LENGTH"): 1 << 62}}),
    ("ONNX TopK k=5 of (256, 1000)", (256, 1000), "top_k_5",
     {"chunk maxima": {}, "one lax.top_k": {("top_k_chunked", "CHUNK_MIN_LENGTH"): 1 << 62}}),
    ("ONNX ArgMax (16, 1000) last axis (62.5 KiB)", (16, 1000), "arg_max",
     {"small: key pairs": {}, "lane fold": {("arg_max", "SMALL_BYTES"): 0}}),
]


def other_call(name: str) -> Callable[[Any], Any]:
    """The public call of an `OTHER_ROWS` row."""
    from jaxmax import onnx
    from jaxmax import openvino as ov

    calls: dict[str, Callable[[Any], Any]] = {
        "max_pool_k7": lambda x: ov.max_pool(x, kernel=(7, 7), strides=(1, 1), pads_begin=(3, 3),
                                             pads_end=(3, 3), opset=8, index_element_type="i32"),
        "max_pool_k3": lambda x: ov.max_pool(x, kernel=(3, 3), strides=(2, 2), pads_begin=(1, 1),
                                             pads_end=(1, 1), opset=8, index_element_type="i32"),
        "onnx_pool_k3": lambda x: onnx.max_pool(x, kernel_shape=(3, 3), pads=(1, 1, 1, 1),
                                                return_indices=True),
        "top_k_10": lambda x: onnx.top_k(x, 10, axis=-1),
        "top_k_5": lambda x: onnx.top_k(x, 5, axis=-1),
        "arg_max": lambda x: onnx.arg_max(x, axis=-1, keepdims=0),
    }
    return calls[name]


class Switches:
    """Sets module attributes of ``jaxmax._src.lowering`` for the duration of a ``with`` (and
    clears JAX's caches on the way in and out: the forms are chosen while tracing)."""

    def __init__(self, values: dict[tuple[str, str], Any]):
        self.values = values
        self.saved: dict[tuple[str, str], Any] = {}

    def _module(self, name: str) -> Any:
        import importlib

        return importlib.import_module(f"jaxmax._src.lowering.{name}")

    def __enter__(self) -> Switches:
        import jax

        for (module, attribute), value in self.values.items():
            self.saved[(module, attribute)] = getattr(self._module(module), attribute)
            setattr(self._module(module), attribute, value)
        jax.clear_caches()
        return self

    def __exit__(self, *exc: object) -> None:
        import jax

        for (module, attribute), value in self.saved.items():
            setattr(self._module(module), attribute, value)
        jax.clear_caches()


def form(name: str, out: tuple[int, ...]) -> Callable[[Any], Any]:
    """The form `name` of AdaptiveMaxPool to `out`, values and int32 indices: ``fold`` (every
    tap combination unrolled), ``tiled`` (axis by axis, NaN checked, the fold when found),
    ``tiled skip`` (axis by axis skipping NaN), ``per_window``, ``gathered``, ``by_axis``."""
    import numpy as np

    from jaxmax._src.lowering import adaptive_pool as ap

    i32 = np.dtype(np.int32)
    if name == "fold":
        return lambda x: ap._fold(x, out, i32)
    if name == "tiled":
        return lambda x: ap._tiled_or_fold(x, out, i32)
    if name == "tiled skip":
        return lambda x: ap._tiled(x, out, i32, skip_nan=True)
    if name == "fold autodiff":
        return lambda x: ap._fold(x, out, i32)
    keyword = {"per_window": ap._per_window, "gathered": ap._gathered,
               "by_axis": ap._gathered_by_axis, "by_axis routed": ap._gathered_by_axis,
               "tiled routed": ap._checked_tiled, "tiled skip routed": ap._tiled_routed}
    return lambda x: ap._routed(partial(keyword[name], output_shape=out, index_dtype=i32), x)


def gradient(name: str, out: tuple[int, ...], cot: Any) -> Callable[[Any], Any]:
    """``jax.grad`` of ``sum(values * cot)`` through a form's derivative: ``fold autodiff``
    (the unrolled fold's selects), ``tiled routed`` or ``by_axis routed`` (the tangent gathered
    at the form's indices, as the lowering's ``_routed``)."""
    import jax

    f = form(name, out)
    return jax.grad(lambda x: (f(x)[0] * cot).sum())


def plain(out: tuple[int, ...], with_index: bool) -> Callable[[Any], Any]:
    """AdaptiveMaxPool as a JAX user writes it: the ``adaptive_unpool`` group's ``jnp.max`` and
    ``jnp.argmax`` of each window's slice, stacked (2-D, with indices), or the ``long_window``
    group's values only, ``jnp.max`` of each window axis by axis."""
    from jaxmax_bench import adaptive_unpool, long_window

    if with_index and len(out) == 2:
        return adaptive_unpool._adaptive_plain((out[0], out[1]))()
    return long_window._adaptive_plain(out)()


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(label: str, x: Any, fns: dict[str, Callable[[Any], Any]],
            switches: dict[str, dict[tuple[str, str], Any]], args: argparse.Namespace,
            compare: bool) -> None:
    """Compiles, checks and times `fns` on `x` side by side, one table line per form (the
    first the base of the ratios; names starting with "plain" are compiled only)."""
    import jax
    import numpy as np

    spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
    cpu: dict[str, list[float]] = {f: [] for f in fns}
    wall: dict[str, list[float]] = {f: [] for f in fns}
    mem: dict[str, tuple[float, float]] = {}
    compiled: dict[str, Any] = {}
    for r in range(args.compiles):
        for f in list(fns) if r % 2 == 0 else list(fns)[::-1]:
            with Switches(switches.get(f, {})):
                before = rss_mb()
                t0, c0 = time.perf_counter(), time.process_time()
                compiled[f] = jax.jit(fns[f]).lower(spec).compile()
                cpu[f].append(time.process_time() - c0)
                wall[f].append(time.perf_counter() - t0)
            if f not in mem:
                analysis = compiled[f].memory_analysis()
                temp = getattr(analysis, "temp_size_in_bytes", 0) / 2**20
                mem[f] = (rss_mb() - before, temp)
    timed = [f for f in fns if not f.startswith("plain")]
    outs = {f: jax.tree.leaves(compiled[f](x)) for f in timed}
    for f in timed:
        same = all(np.array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8))
                   for a, b in zip(outs[timed[0]], outs[f], strict=True))
        if not same and compare:
            print(f"<!-- {label}: {f} differs from {timed[0]} -->")
    run: dict[str, list[float]] = {f: [] for f in timed}
    run_cpu: dict[str, list[float]] = {f: [] for f in timed}
    for r in range(args.rounds):
        for f in timed if r % 2 == 0 else timed[::-1]:
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(compiled[f](x))
            run[f].append((time.perf_counter() - t0) * 1e3)
            run_cpu[f].append((time.process_time() - c0) * 1e3)
    base = statistics.median(run[timed[0]])
    for f in fns:
        cells = [f"{min(cpu[f]):.3f}", f"{min(wall[f]):.3f}", f"{mem[f][0]:.1f}",
                 f"{mem[f][1]:.1f}"]
        if f in run:
            med = statistics.median(run[f])
            cells += [f"{med:.2f}", f"{statistics.median(run_cpu[f]):.2f}", f"{med / base:.2f}"]
        else:
            cells += ["", "", ""]
        mark = "*" if f == timed[0] else ""
        print(f"| {label} | {f}{mark} | " + " | ".join(cells) + " |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--compiles", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        for row in ROWS:
            print(row)
        for label, shape, _, switched in OTHER_ROWS:
            print((label, shape, tuple(switched)))
        return 0
    import warnings

    import jax
    import jax.numpy as jnp
    import numpy as np

    warnings.simplefilter("ignore")
    jax.jit(lambda v: v * 2).lower(jnp.zeros(3)).compile()  # first-use costs
    rng = np.random.default_rng(0)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()}")
    print("| row | form | compile CPU s | compile wall s | RSS MB | temp MB | run ms | run CPU ms "
          "| run / first |\n|---|---|---|---|---|---|---|---|---|")
    for label, shape, out, data, forms in ROWS:
        if args.only not in label:
            continue
        x = rng.standard_normal(shape, dtype=np.float32)
        if data == "nan":
            x[rng.random(shape) < 0.01] = np.nan
        if data == "grad":
            cot = jnp.asarray(rng.standard_normal(shape[:2] + out, dtype=np.float32))
            fns = {f: gradient(f, out, cot) for f in forms}
        else:
            fns = {f: form(f, out) for f in forms}
            fns["plain, values only"] = plain(out, False)
            if len(out) == 2:
                fns["plain, with indices"] = plain(out, True)
        measure(label, jnp.asarray(x), fns, {}, args, compare=data != "grad")
    for label, shape, call, switched in OTHER_ROWS:
        if args.only not in label:
            continue
        inputs = jnp.asarray(rng.standard_normal(shape, dtype=np.float32))
        measure(label, inputs, {f: other_call(call) for f in switched}, switched, args,
                compare=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
