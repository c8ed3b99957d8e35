"""OpenVINO AdaptiveMaxPool-8 against the NumPy loop oracle (tests/adaptive_unpool_oracle.py),
the OpenVINO CPU plugin (i32 indices, f32 inference precision) and PyTorch's
``adaptive_max_pool{1,2,3}d(return_indices=True)``.

Exact comparisons: values bit for bit (NaN equal, the sign of zero checked), indices equal,
dtypes equal. Several hundred seeded configurations: ranks 3-5, output lengths that divide the
input or not, larger than it, zero; NaN, ±inf, ±0 and ties; every dtype.
"""

from __future__ import annotations

import itertools

import jax
import ml_dtypes
import numpy as np
import pytest
from adaptive_unpool_oracle import adaptive_max_pool as oracle
from helpers import x64_for
from jit_batch import jit_each

from jaxmax import openvino as ov


def assert_exact(actual, expected, context=""):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{context}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{context}: shape {actual.shape} != {expected.shape}"
    if actual.dtype.kind == "f" or actual.dtype == ml_dtypes.bfloat16:
        a64, e64 = actual.astype(np.float64), expected.astype(np.float64)
        np.testing.assert_array_equal(a64, e64, err_msg=context)
        np.testing.assert_array_equal(np.signbit(a64), np.signbit(e64), err_msg=context + " sign")
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=context)


def tricky(rng, shape, dtype):
    """Small integers (many ties) with NaN, ±inf and ±0 sprinkled in (floats)."""
    x = rng.integers(-4, 5, size=shape).astype(np.float64)
    if np.dtype(dtype).kind == "f" or dtype == ml_dtypes.bfloat16:
        r = rng.random(shape)
        x[r < 0.08] = np.nan
        x[(r >= 0.08) & (r < 0.12)] = -np.inf
        x[(r >= 0.12) & (r < 0.15)] = np.inf
        x[(r >= 0.15) & (r < 0.25)] = -0.0
        return x.astype(dtype)
    if np.dtype(dtype).kind == "u":
        x = np.abs(x)
    return x.astype(dtype)


def pooled_each(xs_outs, index_element_type="i32"):
    """``ov.adaptive_max_pool(x, out, index_element_type=...)`` of each (x, out): every call
    traced as its eager call is (the same form) into one program compiled with the fast options
    those eager calls compile with (tests/jit_batch.py): one compile for a loop of cases
    instead of one per case."""
    return jit_each([(lambda v, out=out: ov.adaptive_max_pool(
        v, out, index_element_type=index_element_type), (x,)) for x, out in xs_outs],
        as_eager=True)


def random_config(rng):
    rank = int(rng.integers(3, 6))
    spatial = tuple(int(v) for v in rng.integers(1, {3: 12, 4: 8, 5: 5}[rank], size=rank - 2))
    kind = rng.integers(0, 4)
    out = []
    for n in spatial:
        if kind == 0:  # divides
            divisors = [d for d in range(1, n + 1) if n % d == 0]
            out.append(int(rng.choice(divisors)))
        elif kind == 1:  # larger than the input
            out.append(int(rng.integers(n, n + 4)))
        else:
            out.append(int(rng.integers(1, n + 2)))
    batch = tuple(int(v) for v in rng.integers(1, 3, size=2))
    return batch + spatial, tuple(out)


DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.int8, np.uint8]


@pytest.mark.parametrize("seed", range(4))
def test_against_oracle_random(seed):
    rng = np.random.default_rng(seed)
    cases = []
    for trial in range(15):
        shape, out = random_config(rng)
        dtype = DTYPES[(seed * 15 + trial) % len(DTYPES)]
        cases.append((tricky(rng, shape, dtype), out))
    for (x, out), (values, indices) in zip(cases, pooled_each(cases), strict=True):
        shape, dtype = x.shape, x.dtype
        want_v, want_i = oracle(x, out, np.int32)
        assert_exact(values, want_v, f"{shape}->{out} {np.dtype(dtype)}")
        assert_exact(indices, want_i, f"{shape}->{out} {np.dtype(dtype)} indices")


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint64, np.int16, np.uint32])
def test_64_bit_and_other_dtypes(dtype):
    rng = np.random.default_rng(3)
    with x64_for(dtype, np.int64):
        for shape, out in [((2, 3, 7, 5), (3, 2)), ((1, 2, 9), (4,)), ((1, 1, 3, 4, 5), (2, 3, 4))]:
            x = tricky(rng, shape, dtype)
            values, indices = ov.adaptive_max_pool(x, out)
            want_v, want_i = oracle(x, out, np.int64)
            assert_exact(values, want_v)
            assert_exact(indices, want_i.astype(indices.dtype))


def test_integers_beyond_float32_are_exact():
    """16777217 and 16777216 are one float32: integers are compared as integers here."""
    x = np.array([[[16777216, 16777217, 16777216]]], np.int32)
    values, indices = ov.adaptive_max_pool(x, [1], index_element_type="i32")
    assert values.tolist() == [[[16777217]]] and indices.tolist() == [[[1]]]


def test_nan_wins_only_first():
    nan = np.nan
    x = np.array([[[[1, 2], [nan, 9]]]], np.float32)  # the reference kernel would give 2
    v, i = ov.adaptive_max_pool(x, [1, 1], index_element_type="i32")
    assert v.tolist() == [[[[9.0]]]] and i.tolist() == [[[[3]]]]
    x = np.array([[[nan, 5, 7]]], np.float32)
    v, i = ov.adaptive_max_pool(x, [1], index_element_type="i32")
    assert np.isnan(v[0, 0, 0]) and int(i[0, 0, 0]) == 0
    x = np.array([[[-0.0, 0.0, -0.0, 0.0]]], np.float32)
    v, i = ov.adaptive_max_pool(x, [2], index_element_type="i32")
    assert np.signbit(np.asarray(v)).tolist() == [[[True, True]]] and i.tolist() == [[[0, 2]]]


def test_windows_exact_integer_arithmetic():
    """Large lengths where float window bounds would round: windows straight from integers."""
    x = np.arange(1000, dtype=np.float32)[None, None, ::-1].copy()
    values, indices = ov.adaptive_max_pool(x, [7], index_element_type="i32")
    starts = [(i * 1000) // 7 for i in range(7)]
    assert indices.tolist() == [[starts]]


def test_large_windows():
    """Windows whose largest lengths multiply to more than the unrolled fold takes (small
    inputs: the compact form)."""
    rng = np.random.default_rng(5)
    for shape, out in [((2, 2, 20, 17), (1, 1)), ((1, 2, 30, 9), (4, 2)), ((1, 1, 9, 10, 11),
                                                                          (1, 2, 1))]:
        x = tricky(rng, shape, np.float32)
        values, indices = ov.adaptive_max_pool(x, out, index_element_type="i32")
        want_v, want_i = oracle(x, out, np.int32)
        assert_exact(values, want_v)
        assert_exact(indices, want_i)


@pytest.mark.parametrize("shape,out", [((0, 3, 4, 4), (2, 2)), ((2, 0, 4), (3,)),
                                       ((1, 2, 4, 4), (0, 2)), ((1, 1, 0, 3), (0, 1))])
def test_empty(shape, out):
    values, indices = ov.adaptive_max_pool(np.zeros(shape, np.float32), out,
                                           index_element_type="i32")
    assert values.shape == indices.shape == shape[:2] + out
    assert values.dtype == np.float32 and indices.dtype == np.int32


def test_output_shape_forms():
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    a = ov.adaptive_max_pool(x, (2, 3), index_element_type="i32")
    for form in ([2, 3], np.array([2, 3]), jax.numpy.array([2, 3], np.int32)):
        b = ov.adaptive_max_pool(x, form, index_element_type="i32")
        assert_exact(a[0], b[0])
        assert_exact(a[1], b[1])


def test_i64_without_x64_is_int32_with_warning():
    x = np.ones((1, 1, 4), np.float32)
    if jax.config.jax_enable_x64:
        pytest.skip("64-bit mode on")  # pragma: no cover
    with pytest.warns(UserWarning, match="AdaptiveMaxPool-8"):
        _, indices = ov.adaptive_max_pool(x, [2])
    assert indices.dtype == np.int32


def test_every_small_geometry_1d_2d():
    """Every (L, O) with L, O <= 6 in 1-D, against the oracle, with ties and NaN."""
    rng = np.random.default_rng(11)
    cases = [(tricky(rng, (1, 2, length), np.float32), (outputs,))
             for length, outputs in itertools.product(range(1, 7), range(1, 7))]
    for (x, (outputs,)), (v, i) in zip(cases, pooled_each(cases), strict=True):
        length = x.shape[-1]
        wv, wi = oracle(x, [outputs], np.int32)
        assert_exact(v, wv, f"{length}->{outputs}")
        assert_exact(i, wi, f"{length}->{outputs}")


# --------------------------------------------------------------------------------------------
# The OpenVINO CPU plugin (Node.evaluate does not run AdaptiveMaxPool-8; the plugin cannot
# compile i64 indices) and PyTorch
# --------------------------------------------------------------------------------------------


def _openvino(x, out):
    openvino = pytest.importorskip("openvino")
    from openvino import opset8

    param = opset8.parameter(list(x.shape), x.dtype)
    node = opset8.adaptive_max_pool(param, np.array(out, np.int64), index_element_type="i32")
    model = openvino.Model(node.outputs(), [param])
    compiled = openvino.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled([x])
    return result[compiled.output(0)], result[compiled.output(1)]


@pytest.mark.parametrize("seed", range(2))
def test_against_openvino_cpu_plugin(seed):
    """Ties, ±0, ±inf, NaN (at any position), O dividing L or not, O > L: equal bit for bit.
    Integer data: only values that float32 holds exactly (the plugin computes integers in f32;
    beyond 2**24 its answer differs, see test_integers_beyond_float32_are_exact)."""
    rng = np.random.default_rng(300 + seed)
    cases = []
    for trial in range(12):
        shape, out = random_config(rng)
        dtype = [np.float32, np.int32, np.float16, np.uint8][trial % 4]
        cases.append((tricky(rng, shape, dtype), out))
    for (x, out), (values, indices) in zip(cases, pooled_each(cases), strict=True):
        shape, dtype = x.shape, x.dtype
        want_v, want_i = _openvino(x, out)
        ctx = f"{shape}->{out} {np.dtype(dtype)}"
        assert_exact(values, want_v.astype(x.dtype), ctx)
        assert_exact(indices, want_i, ctx + " indices")


def test_openvino_integer_f32_deviation_excluded():
    """The documented deviation: the plugin's f32 computation of integers ties 2**24 and
    2**24 + 1 (its answer names the first); jaxmax compares the integers."""
    x = np.array([[[16777216, 16777217]]], np.int32)
    _, want_i = _openvino(x, [1])
    assert want_i.tolist() == [[[0]]]
    assert ov.adaptive_max_pool(x, [1], index_element_type="i32")[1].tolist() == [[[1]]]


@pytest.mark.parametrize("rank", [3, 4, 5])
def test_against_torch(rank):
    torch = pytest.importorskip("torch")
    fn = {3: torch.nn.functional.adaptive_max_pool1d, 4: torch.nn.functional.adaptive_max_pool2d,
          5: torch.nn.functional.adaptive_max_pool3d}[rank]
    rng = np.random.default_rng(400 + rank)
    cases = []
    for _ in range(8):
        shape, out = random_config(rng)
        while len(shape) != rank:
            shape, out = random_config(rng)
        x = rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float32)  # NaN-free
        x[rng.random(shape) < 0.3] = 1.0  # ties: torch keeps the first too
        cases.append((x, out))
    got = pooled_each(cases, "i64" if jax.config.jax_enable_x64 else "i32")
    for (x, out), (values, indices) in zip(cases, got, strict=True):
        shape = x.shape
        tv, ti = fn(torch.from_numpy(x), list(out), return_indices=True)
        assert_exact(values, tv.numpy(), f"{shape}->{out}")
        np.testing.assert_array_equal(np.asarray(indices), ti.numpy(), f"{shape}->{out}")


@pytest.mark.parametrize("gather_all", [True, False])
def test_compact_forms_against_oracle(monkeypatch, gather_all):
    """Both compact forms, forced on every input: every window's taps in one gather
    (`_gathered`, which puts a NaN first element above every number and later NaN below) and
    one gather per axis (`_gathered_by_axis`). Random ranks, lengths and dtypes with NaN, ±inf,
    ±0 and ties, windows that start with NaN, and the lowest integer everywhere."""
    from jaxmax._src.lowering import adaptive_pool
    from jaxmax._src.lowering.pooling import compact as pool_compact

    monkeypatch.setattr(pool_compact, "FORCE", True)
    monkeypatch.setattr(adaptive_pool, "FORCE_GATHER_ALL", gather_all)
    jax.clear_caches()  # the form is chosen while tracing
    rng = np.random.default_rng(23)
    cases = [random_config(rng) for _ in range(24)]
    cases += [((1, 2, 3, 3), (5, 7)), ((2, 1, 14, 14), (5, 3)), ((1, 1, 4, 5, 6), (2, 3, 4))]
    inputs = []
    for trial, (shape, out) in enumerate(cases):
        dtype = DTYPES[trial % len(DTYPES)]
        x = tricky(rng, shape, dtype)
        if trial % 3 == 0 and np.dtype(dtype).kind == "f":
            x.reshape(-1)[::2] = np.nan  # many windows start with NaN
        if trial % 3 == 1 and np.dtype(dtype).kind in "iu":
            x = np.full(shape, np.iinfo(dtype).min, dtype)  # ties with the reduction's init
        inputs.append((x, out))
    for (x, out), (values, indices) in zip(inputs, pooled_each(inputs), strict=True):
        shape, dtype = x.shape, x.dtype
        want_v, want_i = oracle(x, out, np.int32)
        context = f"{shape}->{out} {np.dtype(dtype)} gather_all={gather_all}"
        assert_exact(values, want_v, context)
        assert_exact(indices, want_i, context + " indices")
    jax.clear_caches()


def test_forms_by_window_reads(monkeypatch):
    """Inputs over 64 KiB whose windows take each form: regular windows (each tap one strided
    slice) the tap fold, the per-window fold up to `WINDOW_READS` reads per plane, the tap fold
    of concatenated runs beyond it, the compact form beyond `RUNS_FOLD_TAPS` taps. Each against
    the oracle (NaN, ±inf, ±0, ties), with its gradient's cotangents summed at the indices; and
    the programs of larger inputs beyond `WINDOW_READS` stay small (the per-window fold's
    program grows with the reads: (16, 128, 28, 28) -> (5, 3) compiled for 3 s)."""
    from jaxmax._src.lowering import adaptive_pool

    taken: list[str] = []

    def spying(name, form):
        def spy(*args, **kwargs):
            taken.append(name)
            return form(*args, **kwargs)
        return spy

    for name in ("_fold", "_per_window", "_runs_fold", "_compact"):
        monkeypatch.setattr(adaptive_pool, name, spying(name, getattr(adaptive_pool, name)))
    jax.clear_caches()
    rng = np.random.default_rng(29)
    cases = [((2, 32, 21, 21), (5, 4), "_fold"), ((2, 64, 14, 14), (5, 3), "_per_window"),
             ((2, 64, 14, 14), (5, 5), "_runs_fold"), ((1, 8, 56, 56), (5, 3), "_compact")]
    for shape, out, form in cases:
        x = tricky(rng, shape, np.float32)
        taken.clear()
        values, indices = ov.adaptive_max_pool(x, out, index_element_type="i32")
        assert taken[:1] == [form], (shape, out, taken)
        want_v, want_i = oracle(x, out, np.int32)
        assert_exact(values, want_v, f"{shape}->{out} {form}")
        assert_exact(indices, want_i, f"{shape}->{out} {form} indices")
        cot = rng.standard_normal(want_v.shape).astype(np.float32)
        # jitted: jax.grad outside jit compiles the forward pass and each piece of its
        # transpose as programs of their own (the same arithmetic, traced the same way), with
        # the fast options (the form is chosen while tracing, by size, not by them)
        grad = jax.jit(jax.grad(lambda v, out=out, cot=cot: (
            ov.adaptive_max_pool(v, out)[0] * cot).sum()))(np.where(np.isnan(x), np.float32(0), x))
        want = np.zeros((shape[0] * shape[1], int(np.prod(shape[2:]))), np.float32)
        _, clean_i = oracle(np.where(np.isnan(x), np.float32(0), x), out, np.int32)
        for plane, (ids, c) in enumerate(zip(clean_i.reshape(len(want), -1),
                                             cot.reshape(len(want), -1), strict=True)):
            np.add.at(want[plane], ids, c)
        np.testing.assert_allclose(np.asarray(grad).reshape(want.shape), want, rtol=1e-6,
                                   err_msg=f"{shape}->{out} {form} gradient")
    jax.clear_caches()
    for shape, out in [((16, 128, 28, 28), (5, 3)), ((32, 256, 20, 20), (7, 7))]:
        assert adaptive_pool._window_reads(shape[2:], out) > adaptive_pool.WINDOW_READS
        lowered = jax.jit(lambda v, out=out: ov.adaptive_max_pool(v, out)).lower(
            jax.ShapeDtypeStruct(shape, np.float32))
        assert len(lowered.as_text().splitlines()) < 600, (shape, out)


@pytest.mark.parametrize("shape,out", [
    ((2, 3, 14, 14), (5, 3)),  # two groups per axis, placed by padding
    ((2, 3, 3), (7,)),  # repeated windows: groups of one beside a group whose starts step
    ((2, 2, 10, 10), (7, 3)),  # groups of one and of two on the first axis
    ((1, 2, 7, 9, 11), (3, 4, 5)),  # three axes
    ((2, 3, 5, 12), (12, 5)),  # an output longer than the input
    ((2, 3, 13, 17), (5, 1)),  # one window on the last axis: concatenated, no padding
])
def test_per_window_groups_against_oracle(shape, out):
    """The per-window form forced on windows whose groups (`_window_groups`: one length,
    outputs and starts stepping evenly) take each placement, against the oracle (NaN, ±inf, ±0,
    ties), int32 and int64 indices: each window reads only its own elements, in row-major order."""
    from jaxmax._src.lowering import adaptive_pool

    rng = np.random.default_rng(41)
    for axis, (n, o) in enumerate(zip(shape[2:], out, strict=True)):
        groups = adaptive_pool._window_groups(n, o)
        covered = sorted(g[1] + k * g[2] for g in groups for k in range(g[3]))
        assert covered == list(range(o)), (axis, groups)
        for length, first, out_step, count, start, start_step in groups:
            for k in range(count):
                assert adaptive_pool.windows(n, o)[first + k * out_step] == (
                    start + k * start_step, start + k * start_step + length)
    x = tricky(rng, shape, np.float32)
    for index_dtype in (np.int32, np.int64):
        with x64_for(index_dtype):
            # compiled with the fast options a small eager call of the operator compiles with
            values, indices = jax.jit(lambda v, it=index_dtype: adaptive_pool._per_window(
                v, output_shape=out, index_dtype=np.dtype(it)))(x)
            want_v, want_i = oracle(x, out, index_dtype)
            assert_exact(values, want_v, f"{shape}->{out}")
            assert_exact(indices, want_i, f"{shape}->{out} indices {np.dtype(index_dtype)}")


@pytest.mark.parametrize("shape,out", [((16, 64, 16, 32), (8, 8)), ((16, 64, 16, 32), (1, 2)),
                                       ((4, 16, 8, 32, 32), (4, 8, 16))])
def test_windows_that_tile_a_large_input(shape, out):
    """Inputs of `TILED_MIN_BYTES` or more whose windows tile them are folded axis by axis:
    against the oracle with ties, ±0, ±inf and NaN (up to `_UNROLLED_TAPS` taps the check sends
    such data to the unrolled fold; beyond, (16, 32) -> (1, 2), the stages skip NaN themselves)
    and without NaN (the stages' own answer), 2-D and 3-D, float32 and int32; vmap over both
    kinds of data at once, and the gradient (each cotangent to its window's index)."""
    from jaxmax._src.lowering import adaptive_pool

    rng = np.random.default_rng(17)
    assert (adaptive_pool.tap_count(shape[2:], out) > adaptive_pool._UNROLLED_TAPS) == (
        out == (1, 2))
    assert np.prod(shape) * 4 >= adaptive_pool.TILED_MIN_BYTES
    with_nan = tricky(rng, shape, np.float32)
    clean = np.where(np.isnan(with_nan), np.float32(0.5), with_nan)
    wants = []
    for x in (with_nan, clean, tricky(rng, shape, np.int32)):
        values, indices = ov.adaptive_max_pool(x, out, index_element_type="i32")
        want_v, want_i = oracle(x, out, np.int32)
        assert_exact(values, want_v, f"{shape} {x.dtype}")
        assert_exact(indices, want_i, f"{shape} {x.dtype} indices")
        wants.append((want_v, want_i))
    # the vmapped and the differentiated programs (traced inputs, as an eager vmap or an outer
    # jit traces them: the same forms) compile with the fast options
    v, i = jax.jit(jax.vmap(lambda t: ov.adaptive_max_pool(t, out, index_element_type="i32")))(
        np.stack([with_nan, clean]))
    for k in range(2):
        assert_exact(v[k], wants[k][0], f"vmap {k}")
        assert_exact(i[k], wants[k][1], f"vmap {k} indices")
    # the gradient on the clean input: each window's cotangent at its index
    cot = rng.standard_normal(shape[:2] + out).astype(np.float32)
    g = jax.jit(jax.grad(lambda v: (ov.adaptive_max_pool(v, out)[0] * cot).sum()))(clean)
    want = np.zeros((shape[0], shape[1], int(np.prod(shape[2:]))), np.float32)
    idx = wants[1][1]
    for n, c in np.ndindex(*shape[:2]):
        want[n, c][idx[n, c].reshape(-1)] = cot[n, c].reshape(-1)  # windows do not overlap
    assert_exact(g, want.reshape(shape))
