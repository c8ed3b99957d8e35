"""MaxPool-8/-14, ONNX MaxPool and GlobalMaxPool against the runtimes and a NumPy oracle.

Seeded configurations over ranks 3-5, dtypes, dilations, auto_pad and rounding modes, with NaN
and -inf in float data. For each, the oracle of ``tests/pool_oracle.py`` must match the runtime
(so the oracle is confirmed independently) and jaxmax must match the oracle, values and
indices, exactly:

* OpenVINO's reference kernels (``Node.evaluate`` of ``opset8``/``opset14.max_pool``), i32 and
  i64 indices, every ``axis``;
* onnxruntime, ``Y`` and ``Indices``, ``storage_order`` 0 and 1, on the configurations free of
  its documented deviations (NaN data, pads >= kernel, windows with no input element, SAME with
  a kernel smaller than the stride; see docs/semantics.md), which are excluded here;
* PyTorch ``max_pool{1,2,3}d(return_indices=True)`` against MaxPool-14 with ``axis=2`` (the
  indices PyTorch returns count within a plane) and ``ceil_torch``, on NaN-free data.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pool_oracle
import pytest
from helpers import assert_same, lowest
from jit_batch import jit_each

from jaxmax import onnx
from jaxmax import openvino as ov


def _data(rng, shape, dtype, specials):
    if np.dtype(dtype).kind == "u":
        x = rng.integers(0, 6, shape)
    else:
        x = rng.integers(-5, 6, shape)  # small integers: plenty of ties
    x = x.astype(dtype)
    if specials and np.dtype(dtype).kind == "f":
        u = rng.random(shape)
        x[u < 0.08] = np.nan
        x[(u >= 0.08) & (u < 0.16)] = -np.inf
    return x


def _config(rng, max_pad=3):
    n_sp = int(rng.integers(1, 4))
    spatial = tuple(int(v) for v in rng.integers(1, 8, n_sp))
    kernel = [int(v) for v in rng.integers(1, 4, n_sp)]
    strides = [int(v) for v in rng.integers(1, 4, n_sp)]
    dilations = [int(v) for v in rng.integers(1, 3, n_sp)]
    pads = [(int(a), int(b)) for a, b in rng.integers(0, max_pad + 1, (n_sp, 2))]
    return spatial, kernel, strides, dilations, pads


def _fits(spatial, kernel, dilations, pads):
    return all((k - 1) * d + 1 <= n + lo + hi
               for n, k, d, (lo, hi) in zip(spatial, kernel, dilations, pads, strict=True))


def _same(actual, expected, label=""):
    np.testing.assert_array_equal(np.asarray(actual), expected, err_msg=label)


def _check_batch(calls, wants, labels):
    """Each call's outputs (values, indices) against its expected pair, the calls compiled as
    their eager calls compile (tests/jit_batch.py: the input checks of an eager call aside,
    which these seeded configurations pass)."""
    for got, want, label in zip(jit_each(calls, as_eager=True), wants, labels, strict=True):
        _same(got[0], want[0], label)
        _same(got[1], want[1], label)


# --------------------------------------------------------------------------------------------
# OpenVINO MaxPool-8 / MaxPool-14
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_openvino_max_pool_8_and_14(seed):
    pytest.importorskip("openvino")
    import ov_reference as ovr  # after the skip: its own import errors are failures
    o8 = pytest.importorskip("openvino.opset8")
    o14 = pytest.importorskip("openvino.opset14")
    rng = np.random.default_rng(100 + seed)
    calls, wants, labels = [], [], []
    while len(calls) < 40:
        spatial, kernel, strides, dilations, pads = _config(rng)
        dtype = [np.float32, np.float16, np.int32, np.int8, np.uint8][int(rng.integers(5))]
        auto_pad = ["explicit", "valid", "same_upper", "same_lower"][int(rng.integers(4))]
        rounding = ["floor", "ceil", "ceil_torch"][int(rng.integers(3))]
        opset = 14 if rounding == "ceil_torch" or rng.integers(2) else 8
        shape = (2, 3) + spatial
        axis = int(rng.integers(-len(shape), len(shape)))
        index_type = ["i32", "i64"][int(rng.integers(2))]
        eff = pool_oracle.resolve_pads(spatial, kernel, strides, dilations, pads, auto_pad)
        if not _fits(spatial, kernel, dilations, eff):
            continue
        x = _data(rng, shape, dtype, specials=True)
        want = pool_oracle.openvino(x, kernel, strides, pads, dilations, rounding, auto_pad, axis)
        mod = o14 if opset == 14 else o8
        node = partial(mod.max_pool, strides=strides, dilations=dilations,
                       pads_begin=[p[0] for p in pads], pads_end=[p[1] for p in pads],
                       kernel_shape=kernel, rounding_type=rounding,
                       auto_pad=None if auto_pad == "explicit" else auto_pad,
                       index_element_type=index_type, axis=axis)
        runtime = ovr.evaluate(node, x)
        # the oracle agrees with OpenVINO's reference kernel (float16: OpenVINO computes
        # lowest(T) as -inf; jaxmax keeps float16's lowest, -65504)
        _same(np.where(np.isneginf(runtime[0]), lowest(dtype), runtime[0])
              if dtype == np.float16 else runtime[0], want[0])
        _same(runtime[1], want[1])
        calls.append((partial(
            ov.max_pool, kernel=kernel, strides=strides, pads_begin=[p[0] for p in pads],
            pads_end=[p[1] for p in pads], dilations=dilations, rounding_type=rounding,
            auto_pad=auto_pad, axis=axis, index_element_type=index_type, opset=opset), (x,)))
        wants.append(want)
        labels.append(f"MaxPool-{opset} {shape} {np.dtype(dtype)} k{kernel} s{strides} "
                      f"d{dilations} pads {pads} {auto_pad} {rounding} axis {axis} {index_type}")
    _check_batch(calls, wants, labels)


# --------------------------------------------------------------------------------------------
# ONNX MaxPool against onnxruntime
# --------------------------------------------------------------------------------------------

def _ort_max_pool(x, attrs):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
            np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}[x.dtype]
    node = helper.make_node("MaxPool", ["X"], ["Y", "I"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", elem, x.shape)],
                              [helper.make_tensor_value_info("Y", elem, None),
                               helper.make_tensor_value_info("I", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"X": x})


@pytest.mark.parametrize("seed", range(4))
def test_onnx_max_pool_against_onnxruntime(seed):
    rng = np.random.default_rng(200 + seed)
    calls, wants, labels = [], [], []
    while len(calls) < 35:
        spatial, kernel, strides, dilations, pads = _config(rng, max_pad=2)
        # onnxruntime deviations excluded: pads >= kernel are rejected
        if any(p >= k for (lo, hi), k in zip(pads, kernel, strict=True) for p in (lo, hi)):
            continue
        if not _fits(spatial, kernel, dilations, pads):
            continue
        dtype = [np.float32, np.float64, np.int8, np.uint8][int(rng.integers(4))]
        shape = (2, 2) + spatial
        x = _data(rng, shape, dtype, specials=False)  # NaN: onnxruntime's rule is path-dependent
        onnx_pads = [p[0] for p in pads] + [p[1] for p in pads]
        attrs = dict(kernel_shape=kernel, strides=strides, dilations=dilations, pads=onnx_pads,
                     ceil_mode=int(rng.integers(2)), storage_order=int(rng.integers(2)))
        want = pool_oracle.onnx(x, kernel, strides, onnx_pads, dilations, attrs["ceil_mode"],
                                storage_order=attrs["storage_order"])
        if (want[1] < 0).any():
            continue  # a window with no input element: onnxruntime's sentinel differs
        y, i = _ort_max_pool(x, attrs)
        _same(y, want[0])
        _same(i, want[1])
        calls.append((partial(onnx.max_pool, return_indices=True, **attrs), (x,)))
        wants.append(want)
        labels.append(f"{shape} {np.dtype(dtype)} {attrs}")
    _check_batch(calls, wants, labels)


@pytest.mark.parametrize("seed", range(2))
def test_onnx_max_pool_nan_empty_windows_and_same_against_the_oracle(seed):
    """The cases onnxruntime does not settle (NaN, windows with no input element, pads >=
    kernel, SAME) against the oracle of the documented rules."""
    rng = np.random.default_rng(300 + seed)
    calls, wants, labels = [], [], []
    while len(calls) < 40:
        spatial, kernel, strides, dilations, pads = _config(rng, max_pad=4)
        auto_pad = ["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"][int(rng.integers(4))]
        if auto_pad != "NOTSET":
            pads = [(0, 0)] * len(spatial)
        eff = pool_oracle.resolve_pads(spatial, kernel, strides, dilations, pads,
                                       auto_pad.lower())
        if not _fits(spatial, kernel, dilations, eff):
            continue
        x = _data(rng, (1, 2, *spatial), np.float32, specials=True)
        onnx_pads = [p[0] for p in pads] + [p[1] for p in pads]
        ceil_mode, order = int(rng.integers(2)), int(rng.integers(2))
        want = pool_oracle.onnx(x, kernel, strides, onnx_pads, dilations, ceil_mode, auto_pad,
                                order)
        calls.append((partial(onnx.max_pool, kernel_shape=kernel, strides=strides,
                              dilations=dilations, pads=onnx_pads, ceil_mode=ceil_mode,
                              storage_order=order, auto_pad=auto_pad, return_indices=True),
                      (x,)))
        wants.append(want)
        labels.append(f"{x.shape} k{kernel} s{strides} d{dilations} pads {onnx_pads} "
                      f"ceil_mode {ceil_mode} storage_order {order} {auto_pad}")
    _check_batch(calls, wants, labels)


# --------------------------------------------------------------------------------------------
# PyTorch: MaxPool-14 with axis=2 and ceil_torch is max_pool{1,2,3}d(return_indices=True)
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(2))
def test_max_pool_14_is_pytorch(seed):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(400 + seed)
    calls, wants, labels = [], [], []
    while len(calls) < 40:
        spatial, kernel, strides, dilations, pads = _config(rng, max_pad=2)
        pad = [lo for lo, _ in pads]
        # PyTorch: symmetric pads at most half the kernel
        if any(p > k // 2 for p, k in zip(pad, kernel, strict=True)):
            continue
        if not _fits(spatial, kernel, dilations, [(p, p) for p in pad]):
            continue
        ceil = bool(rng.integers(2))
        x = _data(rng, (2, 3, *spatial), np.float32, specials=False)
        pool = getattr(torch.nn.functional, f"max_pool{len(spatial)}d")
        y, i = pool(torch.from_numpy(x), kernel, strides, pad, dilations, ceil_mode=ceil,
                    return_indices=True)
        if torch.isinf(y).any():
            continue  # a dilated window with no input element: -inf in PyTorch, lowest(T) here
        calls.append((partial(ov.max_pool, kernel=kernel, strides=strides, pads_begin=pad,
                              pads_end=pad, dilations=dilations,
                              rounding_type="ceil_torch" if ceil else "floor", axis=2,
                              opset=14), (x,)))
        wants.append((y.numpy(), i.numpy()))
        labels.append(f"{x.shape} k{kernel} s{strides} d{dilations} pad {pad} ceil {ceil}")
    _check_batch(calls, wants, labels)


# --------------------------------------------------------------------------------------------
# GlobalMaxPool against onnxruntime
# --------------------------------------------------------------------------------------------

def test_global_max_pool_against_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    rng = np.random.default_rng(500)
    for shape in [(2, 3, 5), (1, 4, 3, 6), (2, 2, 3, 4, 2)]:
        x = rng.standard_normal(shape).astype(np.float32)
        node = helper.make_node("GlobalMaxPool", ["X"], ["Y"])
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)],
                                  ir_version=10)
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        _same(onnx.global_max_pool(x), session.run(None, {"X": x})[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8])
def test_lowest_rule_windows_every_axis_like_max_pool_1(dtype):
    """pool_oracle.lowest_rule (lax.reduce_window layout: N and C windowed with 1) agrees with
    pool_oracle.max_pool_1 on explicit pads; with padding taps the windows keep their size."""
    rng = np.random.default_rng(3)
    x = _data(rng, (2, 3, 7, 6), np.dtype(dtype), specials=True)
    cases = [((3, 2), (2, 1), ((1, 2), (0, 1))),
             ((2, 2), (3, 2), ((2, 0), (1, 1)))]  # a window in the padding only
    for kernel, strides, pads in cases:
        want = pool_oracle.max_pool_1(x, kernel, strides, [p[0] for p in pads],
                                      [p[1] for p in pads])
        got = pool_oracle.lowest_rule(x, (1, 1) + kernel, (1, 1) + strides,
                                      ((0, 0), (0, 0)) + pads)
        assert_same(got, want, f"{kernel} {strides} {pads}")
    _, each = pool_oracle.windows((5,), (3,), (2,), (1,), ((1, 1),), "floor", padding_taps=True)
    assert each == [((0,), [None, (0,), (1,)]), ((1,), [(1,), (2,), (3,)]),
                    ((2,), [(3,), (4,), None])]
