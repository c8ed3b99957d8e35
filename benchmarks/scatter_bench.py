"""Max-scatter on the GNN anchor (docs/semantics.md §8.7), side by side in one process.

data (1e5, 64) f32, updates (1e6, 64) f32, unsorted row ids, axis 0. Forms, each timed in
interleaved rounds (median reported) and its jax compile time (caches cleared, lower + compile):

* jaxmax ONNX ScatterElements, row path, indices built by ``broadcast_to`` inside the jit;
* the same with the (1e6, 64) index array handed in (run-time row check);
* the general per-element path (indices that vary along the feature axis);
* jaxmax OpenVINO ScatterElementsUpdate-12 and ScatterNDUpdate-15 (k = 1 row form), NaN-free;
* torch ``scatter_reduce(amax)`` with the expanded index; JAX ``maximum(d, segment_max(u, ids))``
  and ``d.at[ids].max(u)``; onnxruntime ScatterElements-18; OpenVINO CPU ScatterElementsUpdate-12.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/scatter_bench.py [--rounds N] [--rows R]``.
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


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    if isinstance(out, jax.Array):
        jax.block_until_ready(out)
    return time.perf_counter() - start


def _compile_time(fn, *args):
    jax.clear_caches()
    start = time.perf_counter()
    jax.jit(fn).lower(*args).compile()
    return time.perf_counter() - start


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
    d, u, i1, i2, ic = (jax.device_put(a) for a in (data, upd, ids, full, coord))

    def se_rows_built(d, ids, u):
        return onnx.scatter_elements(d, jnp.broadcast_to(ids[:, None], u.shape), u,
                                     reduction="max")

    def se_rows_given(d, idx, u):
        return onnx.scatter_elements(d, idx, u, reduction="max")

    def seu_rows_built(d, ids, u):
        return ov.scatter_elements_update(d, jnp.broadcast_to(ids[:, None], u.shape), u, 0,
                                          reduction="max")

    def sndu_rows(d, ids, u):
        return ov.scatter_nd_update(d, ids[:, None], u, reduction="max")

    def segment(d, ids, u):
        return jnp.maximum(d, jax.ops.segment_max(u, ids, num_segments=d.shape[0]))

    def at_max(d, ids, u):
        return d.at[ids].max(u)

    jax_forms = {
        "jaxmax SE rows (broadcast_to in jit)": (se_rows_built, (d, i1, u)),
        "jaxmax SE rows (materialised index)": (se_rows_given, (d, i2, u)),
        "jaxmax SE general (per element)": (se_rows_given, (d, ic, u)),
        "jaxmax SEU-12 rows (broadcast_to)": (seu_rows_built, (d, i1, u)),
        "jaxmax SNDU-15 row form (k=1)": (sndu_rows, (d, i1, u)),
        "JAX maximum(d, segment_max)": (segment, (d, i1, u)),
        "JAX d.at[ids].max(u)": (at_max, (d, i1, u)),
    }
    compile_s = {name: _compile_time(fn, *a) for name, (fn, a) in jax_forms.items()}
    jitted = {name: (jax.jit(fn), a) for name, (fn, a) in jax_forms.items()}
    runners = {name: (lambda fn=fn, a=a: fn(*a)) for name, (fn, a) in jitted.items()}

    import torch
    td, tu, ti = torch.from_numpy(data), torch.from_numpy(upd), torch.from_numpy(full.astype(
        np.int64))
    runners["torch scatter_reduce(amax)"] = lambda: td.scatter_reduce(0, ti, tu, "amax")

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
        feeds = {"d": data, "i": full.astype(np.int64), "u": upd}
        runners["onnxruntime ScatterElements-18"] = lambda: sess.run(None, feeds)

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
        runners["OpenVINO CPU SEU-12"] = lambda: request.infer([data, full, upd])

    for fn in runners.values():  # warm-up
        _timed(fn)
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(args.rounds):
        for name, fn in runners.items():
            times[name].append(_timed(fn))
    base = statistics.median(times["torch scatter_reduce(amax)"])
    print(f"GNN anchor: data ({n}, {f}) f32, updates ({m}, {f}), unsorted ids, axis 0; "
          f"{args.rounds} interleaved rounds, medians")
    print(f"{'form':42s} {'median ms':>10s} {'x torch':>8s} {'compile s':>10s}")
    for name, ts in times.items():
        med = statistics.median(ts)
        comp = f"{compile_s[name]:10.2f}" if name in compile_s else f"{'':>10s}"
        print(f"{name:42s} {1e3 * med:10.1f} {med / base:8.2f} {comp}")


if __name__ == "__main__":
    main()
