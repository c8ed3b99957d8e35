#!/usr/bin/env python
"""Side-by-side timings of the pooling family: values with indices, dilated pooling, and the
dilated gradient, against onnxruntime and PyTorch; prints one table of medians and ratios.

    python benchmarks/pooling_family.py            # ResNet stem (32, 64, 112, 112), ~2 minutes
    python benchmarks/pooling_family.py --quick    # (4, 16, 56, 56)

Cases (float32, CPU): the ResNet stem k3 s2 p1 with indices (jaxmax MaxPool-14 and ONNX MaxPool
with Indices; onnxruntime MaxPool with its Indices output; torch ``max_pool2d(return_indices=
True)``), a dilated k3 d2 s1 p1 forward (jaxmax; onnxruntime), and the dilated gradient of the
sum (jaxmax ``jax.grad``; torch forward + backward). Within a case the implementations are
sampled in turn (``_timing.measure``), so a burst of load hits them alike.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _timing  # noqa: E402


def _jax_cases(x):
    import jax

    from jaxmax import onnx
    from jaxmax import openvino as ov

    xs = jax.device_put(x)
    stem_ov = jax.jit(lambda v: ov.max_pool(v, kernel=3, strides=2, pads_begin=1, pads_end=1,
                                             index_element_type="i32", opset=14))
    stem_onnx = jax.jit(lambda v: onnx.max_pool(v, kernel_shape=[3, 3], strides=[2, 2],
                                                 pads=[1, 1, 1, 1], return_indices=True))
    dilated = jax.jit(lambda v: onnx.max_pool(v, kernel_shape=[3, 3], dilations=[2, 2],
                                              pads=[1, 1, 1, 1]))
    grad = jax.jit(jax.grad(lambda v: ov.max_pool(v, kernel=3, strides=1, dilations=2,
                                                  pads_begin=1, pads_end=1, opset=8)[0].sum()))

    def run(fn):
        return lambda: jax.block_until_ready(fn(xs))

    return {"stem": [("jaxmax.openvino.max_pool opset 14, values + indices", run(stem_ov)),
                     ("jaxmax.onnx.max_pool, Y + Indices", run(stem_onnx))],
            "dilated": [("jaxmax.onnx.max_pool k3 d2", run(dilated))],
            "grad": [("jax.grad of jaxmax max_pool k3 d2", run(grad))]}


def _ort_cases(x):
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return {}

    def session(attrs, outputs):
        node = helper.make_node("MaxPool", ["X"], outputs, **attrs)
        out_info = [helper.make_tensor_value_info(
            name, TensorProto.FLOAT if name == "Y" else TensorProto.INT64, None)
            for name in outputs]
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
            out_info)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)],
                                  ir_version=10)
        s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return lambda: s.run(None, {"X": x})

    stem = session(dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), ["Y", "I"])
    dilated = session(dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 1, 1, 1]), ["Y"])
    return {"stem": [("onnxruntime MaxPool with Indices", stem)],
            "dilated": [("onnxruntime MaxPool k3 d2", dilated)]}


def _torch_cases(x):
    try:
        import torch
    except ImportError:
        return {}
    xt = torch.from_numpy(x)
    xg = xt.clone().requires_grad_(True)

    def stem():
        with torch.no_grad():
            return torch.nn.functional.max_pool2d(xt, 3, 2, 1, return_indices=True)

    def grad():
        xg.grad = None
        torch.nn.functional.max_pool2d(xg, 3, 1, 1, dilation=2).sum().backward()
        return xg.grad

    return {"stem": [("torch max_pool2d(return_indices=True)", stem)],
            "grad": [("torch max_pool2d k3 d2 forward + backward", grad)]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    args = parser.parse_args(argv)
    shape = (4, 16, 56, 56) if args.quick else (32, 64, 112, 112)
    x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    cases: dict[str, list] = {}
    for part in (_jax_cases(x), _ort_cases(x), _torch_cases(x)):
        for name, impls in part.items():
            cases.setdefault(name, []).extend(impls)
    titles = {"stem": f"ResNet stem k3 s2 p1 {shape}, values + indices",
              "dilated": "dilated k3 d2 s1 p1, forward", "grad": "dilated k3 d2 s1 p1, gradient"}
    rows = []
    for name, impls in cases.items():
        results = _timing.measure([run for _, run in impls], warmup=2, min_reps=5, max_reps=9,
                                  budget_s=1.5 if args.quick else 4.0)
        best_other = min((ms for (label, _), (ms, _, _) in zip(impls, results, strict=True)
                          if not label.startswith(("jaxmax", "jax.grad"))), default=None)
        for i, ((label, _), (ms, _, _)) in enumerate(zip(impls, results, strict=True)):
            ratio = f"{ms / best_other:.2f}x" if best_other else ""
            rows.append((titles[name] if i == 0 else "", label, f"{ms:.2f}", ratio))
    widths = [max(len(r[c]) for r in rows + [("case", "implementation", "median ms",
                                              "x best runtime")]) for c in range(4)]
    for row in [("case", "implementation", "median ms", "x best runtime")] + rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
