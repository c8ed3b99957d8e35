"""Max-scatter on the GNN anchor (docs/semantics.md §8.7), side by side in one process.

data (1e5, 64) f32, updates (1e6, 64) f32, unsorted row ids, axis 0. Every form is timed in
interleaved rounds; the table gives the median wall time, the median CPU time of the process
(all threads: XLA's and torch's thread pools included), the ratio to torch ``scatter_reduce`` and
to the read floor, and, for the jax forms, the median of three compile times (caches cleared,
``jit(f).lower(...).compile()``).

The read floor is ``jnp.max(u)``: one pass reading `updates` (256 MB), the one input every form
must read whole, with the cheapest combine there is and a scalar output, so that nothing but the
read is timed. ``u.sum(0)`` is shown beside it. For the materialised index array the floor is
``jnp.max(u), jnp.max(idx)`` in one jit: a faithful scatter must read the (1e6, 64) indices too.

Forms: jaxmax ONNX ScatterElements (row path with the index built by ``broadcast_to`` in the jit,
and handed in materialised; the general per-element path), ScatterND's row form (k = 1), the
OpenVINO faces on NaN-free input and on the NaN / -0 input that takes their exact forms; JAX
``maximum(d, segment_max(u, ids))`` (also on the materialised index's first column) and
``d.at[ids].max(u)``; torch ``scatter_reduce(amax)`` with
the expanded index; onnxruntime ScatterElements-18; the OpenVINO CPU plugin's
ScatterElementsUpdate-12.

With ``--data``, a second table instead: every jaxmax form on the data shapes of the cliff rule
(each operator within 1.2x of its clean-data time): clean; NaN in 1 of 10,000 and in 1 of 100
elements of `data` and `updates`; heavy ties (values in {-2, ..., 2}); ReLU-like zeros of both
signs (half of `data` and `updates`, the sign at random); ReLU output itself (``max(x, 0)``:
+0 only). Each cell is the median wall and CPU
time and the ratio of the CPU time to the form's clean time.

With ``--row-forms``, the XLA forms tried for the row path against the read floor: scatter
modes, pre-sorted ids, sorting in the jit, a transposed layout, row chunks, column blocks,
target blocks, an integer scatter of integer input.

With ``--base COMMIT``: ``--data`` gives that table for the commit's tree (exported with ``git
archive`` and imported renamed ``jaxmax_base``) and this tree side by side in one process, each
result of this tree checked equal bit for bit to the base's; ``--compile`` gives the compile
seconds (wall and process CPU, best of ``--rounds``, the trees interleaved, a trivial program
and the plain segment_max beside them) of the same forms at (1000, 64) / (10000, 64) and at the
anchor's shapes. ``--forms``
and ``--shapes`` pick forms and data shapes by name; ``--after-first`` runs this tree's form
before the base's (the run after a large form pays for its freed temporaries).

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/scatter_bench.py [--rounds N]
[--data | --row-forms | --compile] [--base COMMIT]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxmax import onnx
from jaxmax import openvino as ov


def _timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    jax.block_until_ready(out)
    return time.perf_counter() - wall, time.process_time() - cpu


def _interleaved(runs: dict, rounds: int) -> tuple[dict, dict]:
    """Wall and CPU seconds of every call in `runs`, after one untimed call each, sampled in
    turn for `rounds` rounds (a burst of load hits every form alike)."""
    for fn in runs.values():
        _timed(fn)
    wall: dict = {key: [] for key in runs}
    cpu: dict = {key: [] for key in runs}
    for _ in range(rounds):
        for key, fn in runs.items():
            w, c = _timed(fn)
            wall[key].append(w)
            cpu[key].append(c)
    return wall, cpu


def _compile_time(fn, args, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        jax.clear_caches()
        start = time.perf_counter()
        jax.jit(fn).lower(*args).compile()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _se(d, idx, u):
    return onnx.scatter_elements(d, idx, u, reduction="max")


def _se_built(d, ids, u):
    return _se(d, jnp.broadcast_to(ids[:, None], u.shape), u)


def _seu_built(d, ids, u):
    return ov.scatter_elements_update(d, jnp.broadcast_to(ids[:, None], u.shape), u, 0,
                                      reduction="max")


def _snd(d, ids, u):
    return onnx.scatter_nd(d, ids[:, None], u, reduction="max")


def _sndu(d, ids, u):
    return ov.scatter_nd_update(d, ids[:, None], u, reduction="max")


def _segment(d, ids, u):
    return jnp.maximum(d, jax.ops.segment_max(u, ids, num_segments=d.shape[0]))


def _segment_first_column(d, idx, u):
    return jnp.maximum(d, jax.ops.segment_max(u, idx[:, 0], num_segments=d.shape[0]))


def _seu(d, idx, u):
    return ov.scatter_elements_update(d, idx, u, 0, reduction="max")


def _at_max(d, ids, u):
    return d.at[ids].max(u)


def _floor(u):
    return jnp.max(u)


def _floor_sum(u):
    return u.sum(0)


def _floor_with_index(u, idx):
    return jnp.max(u), jnp.max(idx)


def _data_shapes(data, upd, rng) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The cliff rule's data shapes: (data, updates) pairs."""
    def nan_in(x, rate):
        x = x.copy()
        x[rng.random(x.shape) < rate] = np.nan
        return x

    def zeros(x):
        keep = rng.random(x.shape) < 0.5
        sign = np.where(rng.random(x.shape) < 0.5, np.float32(-0.0), np.float32(0.0))
        return np.where(keep & (x > 0), x, sign).astype(np.float32)

    return {
        "clean": (data, upd),
        "NaN 1e-4": (nan_in(data, 1e-4), nan_in(upd, 1e-4)),
        "NaN 1e-2": (nan_in(data, 1e-2), nan_in(upd, 1e-2)),
        "ties": (np.round(np.clip(data, -2, 2)), np.round(np.clip(upd, -2, 2))),
        "+-0 zeros": (zeros(data), zeros(upd)),
        "ReLU (+0)": (np.maximum(data, 0), np.maximum(upd, 0)),
    }


def data_table(args, data, upd, ids, full, coord) -> None:
    """Every jaxmax form on every data shape, interleaved; ratios to the form's clean time."""
    rng = np.random.default_rng(1)
    shapes = {k: tuple(jax.device_put(a) for a in v)
              for k, v in _data_shapes(data, upd, rng).items()}
    i1, i2, ic = jax.device_put(ids), jax.device_put(full), jax.device_put(coord)
    forms = {
        "SE rows (broadcast_to)": (_se_built, i1),
        "SE rows (materialised index)": (_se, i2),
        "SEU-12 rows (materialised index)": (_seu, i2),
        "SE general": (_se, ic),
        "SND rows (k=1)": (_snd, i1),
        "SEU-12 rows (broadcast_to)": (_seu_built, i1),
        "SNDU-15 rows (k=1)": (_sndu, i1),
    }
    if args.no_general:
        del forms["SE general"]
    jitted = {name: jax.jit(fn) for name, (fn, _) in forms.items()}
    runs = {(f, k): (lambda j=jitted[f], i=forms[f][1], dk=shapes[k]: j(dk[0], i, dk[1]))
            for f in forms for k in shapes}
    wall, cpu = _interleaved(runs, args.rounds)
    print(f"data shapes: data ({data.shape[0]}, {data.shape[1]}) f32, updates "
          f"({upd.shape[0]}, {upd.shape[1]}); {args.rounds} interleaved rounds, medians; "
          "cell: wall ms / CPU ms (CPU x clean)")
    print("| form | " + " | ".join(shapes) + " |")
    print("|---|" + "---:|" * len(shapes))
    for f in forms:
        clean = statistics.median(cpu[(f, "clean")])
        cells = []
        for k in shapes:
            c = statistics.median(cpu[(f, k)])
            cells.append(f"{1e3 * statistics.median(wall[(f, k)]):.0f} / {1e3 * c:.0f} "
                         f"({c / clean:.2f})")
        print(f"| {f} | " + " | ".join(cells) + " |")


def _faces(jm) -> dict:
    """The data table's forms written against the package `jm` (this tree or the base)."""
    def se(d, idx, u):
        return jm.onnx.scatter_elements(d, idx, u, reduction="max")

    def seu(d, idx, u):
        return jm.openvino.scatter_elements_update(d, idx, u, 0, reduction="max")

    def built(fn):
        return lambda d, ids, u: fn(d, jnp.broadcast_to(ids[:, None], u.shape), u)

    return {
        "SE rows (broadcast_to)": (built(se), "ids"),
        "SE rows (materialised index)": (se, "full"),
        "SEU-12 rows (materialised index)": (seu, "full"),
        "SE general": (se, "coord"),
        "SND rows (k=1)": (
            lambda d, ids, u: jm.onnx.scatter_nd(d, ids[:, None], u, reduction="max"), "ids"),
        "SEU-12 rows (broadcast_to)": (built(seu), "ids"),
        "SNDU-15 rows (k=1)": (
            lambda d, ids, u: jm.openvino.scatter_nd_update(d, ids[:, None], u, reduction="max"),
            "ids"),
    }


def _export_base(commit: str, into: str) -> None:
    """`commit`'s jaxmax package as ``jaxmax_base`` under `into` (imported beside this tree)."""
    import pathlib
    import re
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "-C", str(root), "archive", commit, "jaxmax"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "x", "-C", into], input=archive, check=True)
    (pathlib.Path(into) / "jaxmax").rename(pathlib.Path(into) / "jaxmax_base")
    for path in (pathlib.Path(into) / "jaxmax_base").rglob("*.py"):
        path.write_text(re.sub(r"\bjaxmax\b", "jaxmax_base", path.read_text()))
    sys.path.insert(0, into)


def data_ab_table(args, data, upd, ids, full, coord) -> None:
    """The data table for `args.base` (imported renamed) and this tree, interleaved in one
    process; each result of this tree checked equal bit for bit to the base's."""
    import importlib
    import tempfile

    import jaxmax

    tmp = tempfile.mkdtemp()
    _export_base(args.base, tmp)
    base = importlib.import_module("jaxmax_base")
    rng = np.random.default_rng(1)
    shapes = {k: tuple(jax.device_put(a) for a in v)
              for k, v in _data_shapes(data, upd, rng).items()
              if not args.shapes or k in args.shapes.split(",")}
    index = {"ids": jax.device_put(ids), "full": jax.device_put(full),
             "coord": jax.device_put(coord)}
    wanted = [f for f in _faces(jaxmax) if not args.forms or any(
        w in f for w in args.forms.split(","))]
    trees = {"before": _faces(base), "after": _faces(jaxmax)}
    if args.after_first:  # the run after a per-element form pays for its freed temporaries
        trees = {"after": trees["after"], "before": trees["before"]}
    jitted = {(t, f): jax.jit(trees[t][f][0]) for t in trees for f in wanted}
    runs = {(t, f, k): (lambda j=jitted[(t, f)], i=index[trees[t][f][1]], dk=shapes[k]:
                        j(dk[0], i, dk[1]))
            for f in wanted for t in trees for k in shapes}
    for f in wanted:
        for k in shapes:
            got, want = (np.asarray(runs[(t, f, k)]()).view(np.uint32) for t in ("after",
                                                                                  "before"))
            nan = np.isnan(np.asarray(runs[("before", f, k)]()))
            assert np.array_equal(got[~nan], want[~nan]) and np.isnan(
                np.asarray(runs[("after", f, k)]())[nan]).all(), (f, k)
    wall, cpu = _interleaved(runs, args.rounds)
    print(f"before ({args.base}) and after in one process, data ({data.shape[0]}, "
          f"{data.shape[1]}) f32, updates ({upd.shape[0]}, {upd.shape[1]}); {args.rounds} "
          "interleaved rounds, medians; results equal bit for bit (NaN: any payload); "
          "cell: wall ms / CPU ms (CPU x the form's time on the first shape)")
    print("| form | " + " | ".join(shapes) + " |")
    print("|---|" + "---:|" * len(shapes))
    for f in wanted:
        for t in trees:
            clean = statistics.median(cpu[(t, f, next(iter(shapes)))])
            cells = []
            for k in shapes:
                c = statistics.median(cpu[(t, f, k)])
                cells.append(f"{1e3 * statistics.median(wall[(t, f, k)]):.0f} / {1e3 * c:.0f} "
                             f"({c / clean:.2f})")
            print(f"| {f}, {t} | " + " | ".join(cells) + " |")


def compile_ab_table(args) -> None:
    """Compile seconds of every data-table form, `args.base` and this tree, in one process:
    ``jax.clear_caches(); jit(f).lower(...).compile()``, the best of `args.rounds` rounds with
    the two trees interleaved, wall and process CPU seconds (XLA's compile threads included),
    at (1000, 64) / (10000, 64) and at the anchor's shapes; a trivial program and JAX's
    ``maximum(d, segment_max(u, ids))`` on the same shapes beside them (a loaded machine
    inflates every row alike)."""
    import importlib
    import tempfile

    import jaxmax

    tmp = tempfile.mkdtemp()
    _export_base(args.base, tmp)
    base = importlib.import_module("jaxmax_base")
    trees = {"before": _faces(base), "after": _faces(jaxmax)}
    sizes = {"small": (1000, 10000), "anchor": (args.rows, args.updates)}
    f = args.features
    names = [name for name in _faces(jaxmax)
             if not args.forms or any(w in name for w in args.forms.split(","))]
    programs = {("trivial x*2+1", "", "small"): (lambda x: x * 2 + 1,
                                                 (jax.ShapeDtypeStruct((8, 8), jnp.float32),))}
    for z, (n, m) in sizes.items():
        spec = {"ids": jax.ShapeDtypeStruct((m,), jnp.int32),
                "full": jax.ShapeDtypeStruct((m, f), jnp.int32),
                "coord": jax.ShapeDtypeStruct((m, f), jnp.int32)}
        d, u = jax.ShapeDtypeStruct((n, f), jnp.float32), jax.ShapeDtypeStruct((m, f), jnp.float32)
        programs[("JAX maximum(d, segment_max(u, ids))", "", z)] = (_segment, (d, spec["ids"], u))
        for name in names:
            for t in trees:
                fn, key = trees[t][name]
                programs[(name, t, z)] = (fn, (d, spec[key], u))
    best = {key: (float("inf"), float("inf")) for key in programs}
    for _ in range(args.rounds):
        for key, (fn, specs) in programs.items():
            jax.clear_caches()
            start, start_cpu = time.perf_counter(), time.process_time()
            jax.jit(fn).lower(*specs).compile()
            wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            best[key] = (min(best[key][0], wall), min(best[key][1], cpu))
    print(f"compile s, before ({args.base}) and after, best of {args.rounds} interleaved rounds, "
          "wall (process CPU)")
    print("| form | " + " | ".join(f"{z} {t}" for z in sizes for t in trees) + " |")
    print("|---|" + "---:|" * (len(sizes) * len(trees)))
    print(f"| trivial x*2+1 | {best[('trivial x*2+1', '', 'small')][0]:.3f} "
          f"({best[('trivial x*2+1', '', 'small')][1]:.3f}) |" + " |" * (2 * len(sizes) - 1))
    cells = [best[("JAX maximum(d, segment_max(u, ids))", "", z)] for z in sizes for _ in trees]
    print("| JAX maximum(d, segment_max(u, ids)) | " + " | ".join(
        f"{w:.3f} ({c:.3f})" for w, c in cells) + " |")
    for name in names:
        cells = [best[(name, t, z)] for z in sizes for t in trees]
        print(f"| {name} | " + " | ".join(f"{w:.3f} ({c:.3f})" for w, c in cells) + " |")


def _row_forms(data, upd, ids) -> dict:
    """The row-path forms tried against the read floor: name -> (function, arguments)."""
    from jax import lax

    n = data.shape[0]
    rows = lax.ScatterDimensionNumbers((1,), (0,), (0,))
    drop = lax.GatherScatterMode.FILL_OR_DROP
    order = np.argsort(ids, kind="stable")
    d, u, i = (jax.device_put(a) for a in (data, upd, ids))
    si, su = jax.device_put(ids[order]), jax.device_put(upd[order])
    dt, ut = jax.device_put(data.T.copy()), jax.device_put(upd.T.copy())
    di, ui = jax.device_put(data.view(np.int32)), jax.device_put(upd.view(np.int32))

    def scatter(mode, sorted_=False):
        return lambda d, i, u: lax.scatter_max(d, i[:, None], u, rows, mode=mode,
                                               indices_are_sorted=sorted_)

    def target_blocks(blocks):
        step = -(-n // blocks)

        def body(c, acc, i, u):
            idx = jnp.where((i >= c * step) & (i < (c + 1) * step), i, n)
            return lax.scatter_max(acc, idx[:, None], u, rows, mode=drop)

        return lambda d, i, u: lax.fori_loop(0, blocks, lambda c, acc: body(c, acc, i, u), d)

    def row_chunks(d, i, u, chunks=16):
        size = i.shape[0] // chunks
        return lax.fori_loop(0, chunks, lambda c, acc: lax.scatter_max(
            acc, lax.dynamic_slice_in_dim(i, c * size, size)[:, None],
            lax.dynamic_slice_in_dim(u, c * size, size), rows, mode=drop), d)

    def sorted_in_jit(d, i, u):
        o = jnp.argsort(i)
        return jnp.maximum(d, jax.ops.segment_max(u[o], i[o], num_segments=n,
                                                  indices_are_sorted=True))

    return {
        "read floor jnp.max(u)": (_floor, (u,)),
        "JAX d.at[ids].max(u)": (_at_max, (d, i, u)),
        "JAX maximum(d, segment_max(u, ids))": (_segment, (d, i, u)),
        "lax.scatter_max FILL_OR_DROP": (scatter(drop), (d, i, u)),
        "lax.scatter_max PROMISE_IN_BOUNDS": (
            scatter(lax.GatherScatterMode.PROMISE_IN_BOUNDS), (d, i, u)),
        "lax.scatter_max CLIP": (scatter(lax.GatherScatterMode.CLIP), (d, i, u)),
        "pre-sorted ids and rows, indices_are_sorted": (scatter(drop, True), (d, si, su)),
        "segment_max, pre-sorted, indices_are_sorted": (
            lambda d, i, u: jnp.maximum(d, jax.ops.segment_max(
                u, i, num_segments=n, indices_are_sorted=True)), (d, si, su)),
        "argsort in the jit + sorted segment_max": (sorted_in_jit, (d, i, u)),
        "transposed (F, m) -> (F, n) column scatter": (
            lambda d, i, u: lax.scatter_max(d, i[:, None], u, lax.ScatterDimensionNumbers(
                (0,), (1,), (1,)), mode=drop), (dt, i, ut)),
        "row chunks, 16 (fori_loop)": (row_chunks, (d, i, u)),
        "target blocks, 8 (fori_loop)": (target_blocks(8), (d, i, u)),
        "column blocks of 16": (lambda d, i, u: jnp.concatenate(
            [lax.scatter_max(d[:, k:k + 16], i[:, None], u[:, k:k + 16], rows, mode=drop)
             for k in range(0, d.shape[1], 16)], 1), (d, i, u)),
        "int32 scatter_max of int32 input": (scatter(drop), (di, i, ui)),
        "SE rows, broadcast_to in jit": (_se_built, (d, i, u)),
        "SE rows, broadcast_to, sorted ids": (_se_built, (d, si, u)),
    }


def row_forms_table(args, data, upd, ids) -> None:
    forms = _row_forms(data, upd, ids)
    compile_s = {name: _compile_time(fn, a) for name, (fn, a) in forms.items()}
    jitted = {name: jax.jit(fn) for name, (fn, _) in forms.items()}
    runners = {name: (lambda j=jitted[name], a=a: j(*a)) for name, (_, a) in forms.items()}
    wall, cpu = _interleaved(runners, args.rounds)
    floor = statistics.median(cpu["read floor jnp.max(u)"])
    print("| form | wall ms | CPU ms | x floor (CPU) | compile s |")
    print("|---|---:|---:|---:|---:|")
    for name in runners:
        c = statistics.median(cpu[name])
        print(f"| {name} | {1e3 * statistics.median(wall[name]):.1f} | {1e3 * c:.1f} | "
              f"{c / floor:.2f} | {compile_s[name]:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--no-runtimes", action="store_true")
    parser.add_argument("--data", action="store_true", help="the data-shape table instead")
    parser.add_argument("--row-forms", action="store_true",
                        help="the row-path forms against the read floor instead")
    parser.add_argument("--no-general", action="store_true",
                        help="leave the per-element path out of the data-shape table")
    parser.add_argument("--base", help="with --data or --compile: also this commit's tree, "
                        "imported renamed, side by side")
    parser.add_argument("--compile", action="store_true",
                        help="with --base: the compile-time table of the data table's forms")
    parser.add_argument("--forms", default="", help="comma-separated parts of form names")
    parser.add_argument("--after-first", action="store_true",
                        help="with --data --base: run this tree's form before the base's")
    parser.add_argument("--shapes", default="",
                        help="with --data --base: comma-separated data shapes (the first is "
                        "the ratios' reference)")
    args = parser.parse_args()
    if args.compile:
        compile_ab_table(args)
        return
    n, m, f = args.rows, args.updates, args.features
    rng = np.random.default_rng(0)
    data = rng.standard_normal((n, f)).astype(np.float32)
    upd = rng.standard_normal((m, f)).astype(np.float32)
    ids = rng.integers(0, n, m).astype(np.int32)
    full = np.broadcast_to(ids[:, None], (m, f)).copy()
    coord = (full + rng.integers(0, 2, (m, f)).astype(np.int32)) % n  # not row-constant
    if args.data and args.base:
        data_ab_table(args, data, upd, ids, full, coord)
        return
    if args.data:
        data_table(args, data, upd, ids, full, coord)
        return
    if args.row_forms:
        row_forms_table(args, data, upd, ids)
        return
    # inputs that take the exact forms: a NaN in 1 update row in 1000, -0 in as many, and
    # ReLU-like data (a quarter of it +0) for the ONNX face's zero re-check
    nan_upd, negz_upd = upd.copy(), upd.copy()
    nan_upd[::1000, 3] = np.nan
    negz_upd[::1000, 5] = -0.0
    relu_data = np.maximum(data, 0) * (rng.random((n, f)) < 0.5)
    d, u, i1, i2, ic, un, uz, dz = (jax.device_put(a) for a in (
        data, upd, ids, full, coord, nan_upd, negz_upd, relu_data.astype(np.float32)))

    jax_forms = {
        "read floor jnp.max(u)": (_floor, (u,)),
        "u.sum(0)": (_floor_sum, (u,)),
        "read floor with index: max(u), max(idx)": (_floor_with_index, (u, i2)),
        "JAX maximum(d, segment_max(u, ids))": (_segment, (d, i1, u)),
        "JAX d.at[ids].max(u)": (_at_max, (d, i1, u)),
        "JAX maximum(d, segment_max(u, idx[:, 0])), materialised index": (
            _segment_first_column, (d, i2, u)),
        "SE rows, broadcast_to in jit": (_se_built, (d, i1, u)),
        "SE rows, materialised index": (_se, (d, i2, u)),
        "SE general (per element)": (_se, (d, ic, u)),
        "SND row form (k=1)": (_snd, (d, i1, u)),
        "SEU-12 rows, broadcast_to, NaN-free": (_seu_built, (d, i1, u)),
        "SEU-12 rows, materialised, NaN-free": (_seu, (d, i2, u)),
        "SNDU-15 row form (k=1), NaN-free": (_sndu, (d, i1, u)),
        "SE rows, ReLU data (zeros: re-check)": (_se_built, (dz, i1, u)),
        "SEU-12 rows, NaN updates (fold form)": (_seu_built, (d, i1, un)),
        "SEU-12 rows, -0 updates (fold form)": (_seu_built, (d, i1, uz)),
        "SNDU-15 rows, NaN updates (fold form)": (_sndu, (d, i1, un)),
    }
    compile_s = {name: _compile_time(fn, a) for name, (fn, a) in jax_forms.items()}
    runners = {}
    for name, (fn, a) in jax_forms.items():
        jitted = jax.jit(fn)
        runners[name] = lambda jitted=jitted, a=a: jitted(*a)

    import torch
    full64 = full.astype(np.int64)
    td, tu, ti = torch.from_numpy(data), torch.from_numpy(upd), torch.from_numpy(full64)
    runners["torch scatter_reduce(amax), expanded index"] = (
        lambda: td.scatter_reduce(0, ti, tu, "amax"))

    if not args.no_runtimes:
        import onnxruntime as ort
        from onnx import TensorProto, helper
        node = helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=0,
                                reduction="max")
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("d", TensorProto.FLOAT, [n, f]),
                          helper.make_tensor_value_info("i", TensorProto.INT64, [m, f]),
                          helper.make_tensor_value_info("u", TensorProto.FLOAT, [m, f])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, f])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        feeds = {"d": data, "i": full64, "u": upd}
        runners["onnxruntime ScatterElements-18 (int64 index)"] = lambda: sess.run(None, feeds)

        import openvino as ovr
        import openvino.opset12 as ops
        pd = ops.parameter([n, f], np.float32)
        pi = ops.parameter([m, f], np.int32)
        pu = ops.parameter([m, f], np.float32)
        seu = ops.scatter_elements_update(pd, pi, pu, ops.constant(np.array(0, np.int64)),
                                          reduction="max")
        compiled = ovr.Core().compile_model(ovr.Model([seu], [pd, pi, pu]), "CPU",
                                            {"INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()
        runners["OpenVINO CPU ScatterElementsUpdate-12"] = (
            lambda: request.infer([data, full, upd]))

    wall, cpu = _interleaved(runners, args.rounds)
    torch_ms = statistics.median(wall["torch scatter_reduce(amax), expanded index"])
    floor_ms = statistics.median(wall["read floor jnp.max(u)"])
    print(f"GNN anchor: data ({n}, {f}) f32, updates ({m}, {f}), unsorted ids, axis 0; "
          f"{args.rounds} interleaved rounds, medians")
    print("| form | wall ms | CPU ms | x torch | x floor | compile s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in runners:
        med = statistics.median(wall[name])
        comp = f"{compile_s[name]:.2f}" if name in compile_s else ""
        print(f"| {name} | {1e3 * med:.1f} | {1e3 * statistics.median(cpu[name]):.1f} | "
              f"{med / torch_ms:.2f} | {med / floor_ms:.2f} | {comp} |")


if __name__ == "__main__":
    main()
