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
``maximum(d, segment_max(u, ids))`` and ``d.at[ids].max(u)``; torch ``scatter_reduce(amax)`` with
the expanded index; onnxruntime ScatterElements-18; the OpenVINO CPU plugin's
ScatterElementsUpdate-12.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/scatter_bench.py [--rounds N]``.
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


def _at_max(d, ids, u):
    return d.at[ids].max(u)


def _floor(u):
    return jnp.max(u)


def _floor_sum(u):
    return u.sum(0)


def _floor_with_index(u, idx):
    return jnp.max(u), jnp.max(idx)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--no-runtimes", action="store_true")
    args = parser.parse_args()
    n, m, f = args.rows, args.updates, args.features
    rng = np.random.default_rng(0)
    data = rng.standard_normal((n, f)).astype(np.float32)
    upd = rng.standard_normal((m, f)).astype(np.float32)
    ids = rng.integers(0, n, m).astype(np.int32)
    full = np.broadcast_to(ids[:, None], (m, f)).copy()
    coord = (full + rng.integers(0, 2, (m, f)).astype(np.int32)) % n  # not row-constant
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
        "SE rows, broadcast_to in jit": (_se_built, (d, i1, u)),
        "SE rows, materialised index": (_se, (d, i2, u)),
        "SE general (per element)": (_se, (d, ic, u)),
        "SND row form (k=1)": (_snd, (d, i1, u)),
        "SEU-12 rows, broadcast_to, NaN-free": (_seu_built, (d, i1, u)),
        "SEU-12 rows, materialised, NaN-free": (
            lambda d, i, u: ov.scatter_elements_update(d, i, u, 0, reduction="max"),
            (d, i2, u)),
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

    for fn in runners.values():  # warm-up
        _timed(fn)
    wall: dict[str, list[float]] = {name: [] for name in runners}
    cpu: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(args.rounds):
        for name, fn in runners.items():
            w, c = _timed(fn)
            wall[name].append(w)
            cpu[name].append(c)
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
