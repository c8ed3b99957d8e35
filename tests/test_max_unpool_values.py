"""ONNX MaxUnpool (since-versions 9, 11, 22) against the NumPy loop oracle
(tests/adaptive_unpool_oracle.py), the ONNX node cases regenerated from the onnx wheel,
onnxruntime, and ``torch.nn.functional.max_unpool{1,2,3}d`` fed by real MaxPool indices.

Exact comparisons: values bit for bit (the sign of zero checked), dtype and shape.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from adaptive_unpool_oracle import inferred_shape
from adaptive_unpool_oracle import max_unpool as oracle
from helpers import x64_for
from jit_batch import jit_each

from jaxmax import onnx


def assert_exact(actual, expected, context=""):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{context}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{context}: shape {actual.shape} != {expected.shape}"
    a64, e64 = actual.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_array_equal(a64, e64, err_msg=context)
    np.testing.assert_array_equal(np.signbit(a64), np.signbit(e64), err_msg=context + " sign")


def signed_normals(rng, shape, dtype=np.float32):
    """Normals with -0.0, +0.0, ±inf and NaN sprinkled in."""
    x = rng.standard_normal(shape)
    r = rng.random(shape)
    x[r < 0.1] = -0.0
    x[(r >= 0.1) & (r < 0.15)] = 0.0
    x[(r >= 0.15) & (r < 0.18)] = np.nan
    x[(r >= 0.18) & (r < 0.2)] = -np.inf
    return x.astype(dtype)


def random_geometry(rng):
    n_spatial = int(rng.integers(1, 4))
    kernel = tuple(int(v) for v in rng.integers(1, 4, size=n_spatial))
    strides = tuple(int(v) for v in rng.integers(1, 4, size=n_spatial))
    pads = tuple(int(v) for v in rng.integers(0, 2, size=2 * n_spatial))
    pads = tuple(min(p, k - 1) for p, k in zip(pads, kernel + kernel, strict=True))
    x_spatial = tuple(int(v) for v in rng.integers(1, {1: 6, 2: 4, 3: 3}[n_spatial],
                                                   size=n_spatial))
    batch = tuple(int(v) for v in rng.integers(1, 3, size=2))
    return batch + x_spatial, kernel, strides, pads


def _unpool_batch(cases):
    """`onnx.max_unpool` of each (x, indices, kernel, strides, pads[, output_shape]) of `cases`,
    all in one jitted program (one compile, tests/jit_batch.py): X and I traced as the eager
    call's inner jit gets them, so the run-time choice between the dense and the scatter form is
    the same; the eager call's concrete range check is not run (every index drawn here is in
    range; the check is tests/test_max_unpool_errors.py's subject, and the other tests here stay
    eager)."""
    def call(x, i, k, s, p, shape=None):
        return onnx.max_unpool(x, i, shape, kernel_shape=k, strides=s, pads=p)

    return jit_each([(lambda x, i, rest=case[2:]: call(x, i, *rest), case[:2]) for case in cases])


@pytest.mark.parametrize("seed", range(3))
def test_random_duplicates_against_oracle(seed):
    """Random indices anywhere in the output (duplicates, the last writer wins)."""
    rng = np.random.default_rng(seed)
    cases = []
    for trial in range(25):
        x_shape, kernel, strides, pads = random_geometry(rng)
        out_shape = inferred_shape(x_shape, kernel, strides, pads)
        size = int(np.prod(out_shape))
        dtype = [np.float32, np.float16, ml_dtypes.bfloat16][trial % 3]
        x = signed_normals(rng, x_shape, dtype)
        if size == 0:
            continue
        indices = rng.integers(0, max(1, size // 2 if trial % 2 else size), size=x_shape)
        cases.append((x, indices, kernel, strides, pads))
    for (x, indices, kernel, strides, pads), y in zip(cases, _unpool_batch(cases), strict=True):
        out_shape = inferred_shape(x.shape, kernel, strides, pads)
        assert_exact(y, oracle(x, indices, out_shape),
                     f"{x.dtype} {x.shape} k{kernel} s{strides} p{pads}")


@pytest.mark.parametrize("seed", range(2))
def test_own_window_indices_against_oracle(seed):
    """Indices inside their own windows (the dense form), kernel <= stride, with output
    shapes given and not."""
    rng = np.random.default_rng(100 + seed)
    cases = []
    for _ in range(25):
        x_shape, kernel, strides, pads = random_geometry(rng)
        strides = tuple(max(k, s) for k, s in zip(kernel, strides, strict=True))
        out_shape = inferred_shape(x_shape, kernel, strides, pads)
        if 0 in out_shape:
            continue
        x = signed_normals(rng, x_shape)
        n_spatial = len(kernel)
        # each element picks a random in-window, in-output position
        flat = np.zeros(x_shape, np.int64)
        for pos in np.ndindex(*x_shape):
            coords = []
            for d in range(n_spatial):
                lo = pos[2 + d] * strides[d] - pads[d]
                choices = [q for q in range(lo, lo + kernel[d]) if 0 <= q < out_shape[2 + d]]
                coords.append(int(rng.choice(choices)) if choices else 0)
            flat[pos] = np.ravel_multi_index((pos[0], pos[1], *coords), out_shape)
        cases.append((x, flat, kernel, strides, pads))
    for (x, flat, kernel, strides, pads), y in zip(cases, _unpool_batch(cases), strict=True):
        out_shape = inferred_shape(x.shape, kernel, strides, pads)
        assert_exact(y, oracle(x, flat, out_shape), f"{x.shape} k{kernel} s{strides} p{pads}")


def test_duplicates_last_writer():
    x = np.array([[[1.0, 2.0, 3.0, -0.0]]], np.float32)
    i = np.array([[[1, 1, 0, 0]]])
    y = onnx.max_unpool(x, i, kernel_shape=[2], strides=[2])
    assert_exact(y, np.array([[[-0.0, 2.0] + [0.0] * 6]], np.float32))


def test_float64_and_int64_indices():
    rng = np.random.default_rng(7)
    with x64_for(np.float64):
        x = signed_normals(rng, (2, 3, 3, 3), np.float64)
        i = rng.integers(0, 2 * 3 * 6 * 6, size=x.shape)
        y = onnx.max_unpool(x, i, kernel_shape=[2, 2], strides=[2, 2])
        assert_exact(y, oracle(x, i, (2, 3, 6, 6)))


def test_output_shape_given():
    """I indexes the given shape (onnxruntime, PyTorch); N and C kept; bigger than inferred."""
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], np.float32)
    i = np.array([[[[0, 5], [10, 17]]]])
    y = onnx.max_unpool(x, i, (1, 1, 3, 6), kernel_shape=[2, 2], strides=[2, 2])
    assert_exact(y, oracle(x, i, (1, 1, 3, 6)))
    y2 = onnx.max_unpool(x, i, np.array([1, 1, 5, 5]), kernel_shape=[2, 2], strides=[2, 2])
    assert_exact(y2, oracle(x, i, (1, 1, 5, 5)))


def test_traced_out_of_range_dropped_never_wrapped():
    x = np.array([[[1.0, 2.0, 3.0, 4.0]]], np.float32)
    i = np.array([[[-1, 9, 2, 100]]], np.int32)

    @jax.jit
    def f(x, i):
        return onnx.max_unpool(x, i, kernel_shape=[2], strides=[2])

    assert_exact(f(x, i), np.array([[[0, 0, 3.0, 0, 0, 0, 0, 0]]], np.float32))


def test_empty():
    y = onnx.max_unpool(np.zeros((0, 2, 3), np.float32), np.zeros((0, 2, 3), np.int64),
                        kernel_shape=[2], strides=[2])
    assert y.shape == (0, 2, 6)
    y = onnx.max_unpool(np.zeros((1, 2, 0), np.float32), np.zeros((1, 2, 0), np.int64),
                        kernel_shape=[2], strides=[2])
    assert_exact(y, np.zeros((1, 2, 0), np.float32))  # (0 - 1) * 2 + 2 = 0


def test_dense_form_is_taken_for_maxpool_indices():
    """The run-time check picks the dense form for real MaxPool indices (2x2, stride 2)."""
    from jaxmax._src.lowering import unpool

    torch = pytest.importorskip("torch")
    xt = torch.randn(2, 3, 8, 8)
    v, i = torch.nn.functional.max_pool2d(xt, 2, 2, return_indices=True)
    flat = (i + torch.arange(6).reshape(2, 3, 1, 1) * 64).numpy()
    calls = []
    real = unpool._dense

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    unpool._dense = spy
    try:
        y = unpool._unpool_jit.__wrapped__(jnp.asarray(v.numpy()), jnp.asarray(flat),
                                           (2, 3, 8, 8), (2, 2), (2, 2), (0, 0))
    finally:
        unpool._dense = real
    assert calls
    assert_exact(y, oracle(v.numpy(), flat, (2, 3, 8, 8)))


# --------------------------------------------------------------------------------------------
# onnxruntime and PyTorch, fed by real MaxPool indices
# --------------------------------------------------------------------------------------------

def _ort_unpool(x, i, kernel, strides, pads, output_shape, opset):
    ort = pytest.importorskip("onnxruntime")
    import onnx as onnx_pkg
    from onnx import TensorProto, helper

    names = ["X", "I"] + (["S"] if output_shape is not None else [])
    node = helper.make_node("MaxUnpool", names, ["Y"], kernel_shape=list(kernel),
                            strides=list(strides), pads=list(pads))
    elem = onnx_pkg.helper.np_dtype_to_tensor_dtype(x.dtype)
    inputs = [helper.make_tensor_value_info("X", elem, None),
              helper.make_tensor_value_info("I", TensorProto.INT64, None)]
    if output_shape is not None:
        inputs.append(helper.make_tensor_value_info("S", TensorProto.INT64, None))
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("Y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"X": x, "I": i.astype(np.int64)}
    if output_shape is not None:
        feeds["S"] = np.asarray(output_shape, np.int64)
    return sess.run(None, feeds)[0]


def _torch_pool(x, kernel, strides, pads):
    """Values and plane-offset flat indices of PyTorch's MaxPool (symmetric pads)."""
    torch = pytest.importorskip("torch")
    fn = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d,
          3: torch.nn.functional.max_pool3d}[len(kernel)]
    v, i = fn(torch.from_numpy(x), list(kernel), list(strides), list(pads), return_indices=True)
    plane = int(np.prod(x.shape[2:]))
    n, c = x.shape[:2]
    offsets = (np.arange(n * c).reshape((n, c) + (1,) * len(kernel)) * plane)
    return v.numpy(), i.numpy(), i.numpy() + offsets


@pytest.mark.parametrize("seed", range(2))
def test_against_onnxruntime_and_torch_with_maxpool_indices(seed):
    # every jaxmax call of the test in one jitted program (`_unpool_batch` with the output
    # shape bound as a static argument; tests/jit_batch.py)
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(200 + seed)
    trials, calls = [], []
    for trial in range(10):
        n_spatial = trial % 3 + 1
        kernel = tuple(int(v) for v in rng.integers(1, 4, size=n_spatial))
        strides = tuple(int(v) for v in rng.integers(1, 4, size=n_spatial))
        pads = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)
        spatial = tuple(int(v) for v in rng.integers(max(kernel), max(kernel) + 5,
                                                     size=n_spatial))
        x = rng.standard_normal((2, 3) + spatial).astype(np.float32)
        values, plane_idx, flat = _torch_pool(x, kernel, strides, pads)
        values[values < -1] = -0.0
        # the source shape is the output shape: given explicitly (pads then unused)
        out_shape = x.shape
        inferred = inferred_shape(values.shape, kernel, strides, pads + pads)
        if np.prod(out_shape) < np.prod(inferred) or min(inferred[2:]) <= 0:
            continue  # (onnxruntime rejects a non-positive inferred extent even then)
        calls.append((values, flat, kernel, strides, pads + pads, out_shape))
        # the inferred shape (no output_shape) agrees with onnxruntime too
        flat_inferred = None
        if np.prod(inferred) and flat.max() < np.prod(inferred):
            candidate = np.ravel_multi_index(np.unravel_index(flat, out_shape), inferred,
                                             mode="clip")
            if np.array_equal(np.unravel_index(flat, out_shape),
                              np.unravel_index(candidate, inferred)):
                flat_inferred = candidate
                calls.append((values, flat_inferred, kernel, strides, pads + pads, None))
        trials.append((kernel, strides, pads, spatial, values, plane_idx, flat, out_shape,
                       flat_inferred))
    results = iter(_unpool_batch(calls))
    for kernel, strides, pads, spatial, values, plane_idx, flat, out_shape, flat_inferred in (
            trials):
        n_spatial = len(kernel)
        got = next(results)
        ctx = f"k{kernel} s{strides} p{pads} {spatial}"
        assert_exact(got, oracle(values, flat, out_shape), ctx)
        assert_exact(got, _ort_unpool(values, flat, kernel, strides, pads + pads, out_shape, 22),
                     ctx + " onnxruntime")
        unpool_fn = {1: torch.nn.functional.max_unpool1d, 2: torch.nn.functional.max_unpool2d,
                     3: torch.nn.functional.max_unpool3d}[n_spatial]
        ref = unpool_fn(torch.from_numpy(values), torch.from_numpy(plane_idx), list(kernel),
                        list(strides), list(pads), output_size=list(spatial))
        if max(kernel) <= min(strides):  # disjoint windows: no duplicate, torch deterministic
            assert_exact(got, ref.numpy(), ctx + " torch")
        if flat_inferred is not None:
            got2 = next(results)
            assert_exact(got2, _ort_unpool(values, flat_inferred, kernel, strides,
                                           pads + pads, None, 22), ctx + " inferred")
    assert next(results, None) is None


def test_duplicates_against_onnxruntime():
    """onnxruntime keeps the last writer too (torch's winner is not deterministic)."""
    rng = np.random.default_rng(9)
    for _ in range(3):  # onnxruntime's CPU MaxUnpool takes float32 only
        x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
        i = rng.integers(0, 2 * 3 * 64 // 4, size=x.shape)
        got = onnx.max_unpool(x, i, kernel_shape=[2, 2], strides=[2, 2])
        assert_exact(got, _ort_unpool(x, i, [2, 2], [2, 2], [0] * 4, None, 11))
