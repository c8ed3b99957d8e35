"""Max-scatter against the runtimes: onnxruntime, onnx.reference, OpenVINO ``Node.evaluate`` and
the CPU plugin (f32 inference precision), torch ``scatter_reduce(amax)``.

Random cases are drawn so that each comparison leaves out exactly the inputs on which that
runtime deviates (``docs/semantics.md §8.4``), named where the draw is made; then the table of
§8.4 itself is reproduced: each runtime's own output on each disagreement case, next to
jaxmax's."""

from __future__ import annotations

import numpy as np
import pytest
from scatter_cases import call
from test_scatter import assert_bits

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
ov_reference = pytest.importorskip("ov_reference")
import openvino.opset12 as ov12  # noqa: E402
import openvino.opset15 as ov15  # noqa: E402
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

NAN = np.nan


def onnx_model(op, data, indices, updates, axis=None):
    attrs = {"reduction": "max"}
    if axis is not None:
        attrs["axis"] = axis
    node = helper.make_node(op, ["d", "i", "u"], ["y"], **attrs)
    tt = helper.np_dtype_to_tensor_dtype

    def vi(name, a):
        return helper.make_tensor_value_info(name, tt(a.dtype), a.shape)

    graph = helper.make_graph([node], "g", [vi("d", data), vi("i", indices), vi("u", updates)],
                              [vi("y", data)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def run_ort(op, data, indices, updates, axis=None):
    model = onnx_model(op, data, indices, updates, axis)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"d": data, "i": indices, "u": updates})[0]


def run_ref(op, data, indices, updates, axis=None):
    model = onnx_model(op, data, indices, updates, axis)
    return ReferenceEvaluator(model).run(None, {"d": data, "i": indices, "u": updates})[0]


class seu_node:
    """ScatterElementsUpdate-12 with `axis` as a Constant input (``Node.evaluate`` reads every
    input from the tensors it is given, the axis included)."""

    def __init__(self, axis, use_init_val=True):
        self.axis, self.use_init_val = axis, use_init_val

    def __call__(self, d, i, u, a):
        return ov12.scatter_elements_update(d, i, u, a, reduction="max",
                                            use_init_val=self.use_init_val)


def sndu_node(d, i, u):
    return ov15.scatter_nd_update(d, i, u, reduction="max")


def run_ov(runner, factory, data, indices, updates):
    extra = ((ov_reference.Const(np.array(factory.axis, np.int64)),)
             if isinstance(factory, seu_node) else ())
    return runner(factory, data, indices, updates, *extra)[0]


def draw(rng, shape, *, nan, neg_zero, neg_inf=True, dtype=np.float32):
    """Values with many ties; NaN, -0 and -inf only when allowed (the named deviations)."""
    pool = [-2.0, -1.0, 0.0, 1.0, 2.0, np.inf]
    pool += [NAN] * nan + [-0.0] * neg_zero + [-np.inf] * neg_inf
    return rng.choice(np.array(pool), size=shape).astype(dtype)


def elements_draw(rng, rank=2):
    data_shape = tuple(int(n) for n in rng.integers(1, 4, rank))
    axis = int(rng.integers(0, rank))
    shape = tuple(int(rng.integers(0, 6)) if d == axis else int(rng.integers(1, n + 1))
                  for d, n in enumerate(data_shape))
    return data_shape, axis, rng.integers(-data_shape[axis], data_shape[axis], shape)


def nd_draw(rng, rank=2, k_min=1):
    data_shape = tuple(int(n) for n in rng.integers(1, 4, rank))
    k = int(rng.integers(k_min, rank + 1))
    lead = (int(rng.integers(1, 6)),)
    cols = [rng.integers(-data_shape[j], data_shape[j], lead + (1,)) for j in range(k)]
    indices = np.concatenate(cols, -1) if k else np.zeros(lead + (0,), np.int64)
    return data_shape, indices, lead + data_shape[k:]


SEEDS = range(6)


@pytest.mark.parametrize("seed", SEEDS)
def test_scatter_elements_vs_onnxruntime_and_reference(seed):
    rng = np.random.default_rng(seed)
    for rank in (1, 2, 3):
        data_shape, axis, idx = elements_draw(rng, rank)
        # onnxruntime folds `a > b ? a : b` (NaN order-dependent, the later zero wins) and
        # onnx.reference ScatterElements uses Python max (NaN updates ignored, the earlier
        # zero wins): both deviations excluded by drawing neither NaN nor -0
        data = draw(rng, data_shape, nan=False, neg_zero=False)
        upd = draw(rng, idx.shape, nan=False, neg_zero=False)
        ours = call("se", data, idx, upd, axis=axis)
        assert_bits(ours, run_ort("ScatterElements", data, idx, upd, axis), "ort")
        assert_bits(ours, run_ref("ScatterElements", data, idx, upd, axis), "ref")
        for dtype in (np.int32, np.int64):
            d, u = data_int(rng, data_shape, dtype), data_int(rng, idx.shape, dtype)
            ours = call("se", d, idx, u, axis=axis) if dtype == np.int32 else None
            if ours is not None:
                assert_bits(ours, run_ort("ScatterElements", d, idx, u, axis), "ort int")
                assert_bits(ours, run_ref("ScatterElements", d, idx, u, axis), "ref int")


def data_int(rng, shape, dtype):
    info = np.iinfo(np.int32)
    return rng.choice(np.array([info.min, -3, 0, 5, info.max]), size=shape).astype(dtype)


@pytest.mark.parametrize("seed", SEEDS)
def test_scatter_nd_vs_onnxruntime_and_reference(seed):
    rng = np.random.default_rng(100 + seed)
    for rank in (1, 2, 3):
        data_shape, idx, upd_shape = nd_draw(rng, rank)
        # onnx.reference ScatterND propagates NaN as jaxmax does; its zero rule differs
        # (the later zero wins): -0 excluded for it; onnxruntime: NaN and -0 excluded
        data = draw(rng, data_shape, nan=True, neg_zero=False)
        upd = draw(rng, upd_shape, nan=True, neg_zero=False)
        assert_bits(call("snd", data, idx, upd), run_ref("ScatterND", data, idx, upd), "ref")
        data = draw(rng, data_shape, nan=False, neg_zero=False)
        upd = draw(rng, upd_shape, nan=False, neg_zero=False)
        assert_bits(call("snd", data, idx, upd), run_ort("ScatterND", data, idx, upd), "ort")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("use_init_val", [True, False])
def test_scatter_elements_update_vs_openvino(seed, use_init_val):
    rng = np.random.default_rng(200 + seed)
    for rank in (1, 2, 3):
        data_shape, axis, idx = elements_draw(rng, rank)
        idx = idx.astype(np.int32)
        factory = seu_node(axis, use_init_val)
        # Node.evaluate is the reference fold itself: NaN, -0 and ties all compared
        data = draw(rng, data_shape, nan=True, neg_zero=True)
        upd = draw(rng, idx.shape, nan=True, neg_zero=True)
        ours = call("seu", data, idx, upd, axis=axis, use_init_val=use_init_val)
        assert_bits(ours, run_ov(ov_reference.evaluate, factory, data, idx, upd), "evaluate")
        # the CPU plugin ignores NaN updates and keeps the current value on ties (a zero's
        # sign): NaN and -0 excluded
        data = draw(rng, data_shape, nan=False, neg_zero=False)
        upd = draw(rng, idx.shape, nan=False, neg_zero=False)
        if idx.size:
            ours = call("seu", data, idx, upd, axis=axis, use_init_val=use_init_val)
            assert_bits(ours, run_ov(ov_reference.compile_cpu, factory, data, idx, upd), "cpu")


@pytest.mark.parametrize("seed", SEEDS)
def test_scatter_nd_update_vs_openvino(seed):
    rng = np.random.default_rng(300 + seed)
    for rank in (1, 2, 3):
        # the CPU plugin ignores k = 0 updates: k >= 1 drawn for it; evaluate gets k = 0 too
        data_shape, idx, upd_shape = nd_draw(rng, rank, k_min=0)
        idx = idx.astype(np.int32)
        data = draw(rng, data_shape, nan=True, neg_zero=True)
        upd = draw(rng, upd_shape, nan=True, neg_zero=True)
        ours = call("sndu", data, idx, upd)
        assert_bits(ours, run_ov(ov_reference.evaluate, sndu_node, data, idx, upd), "evaluate")
        if idx.shape[-1]:
            assert_bits(ours, run_ov(ov_reference.compile_cpu, sndu_node, data, idx, upd),
                        "cpu")


@pytest.mark.parametrize("seed", SEEDS)
def test_vs_torch_scatter_reduce(seed):
    rng = np.random.default_rng(400 + seed)
    for rank in (1, 2, 3):
        data_shape, axis, idx = elements_draw(rng, rank)
        idx = idx % data_shape[axis]  # torch rejects negative indices
        # torch amax keeps the earlier zero (-0 excluded); NaN propagates as on the ONNX face
        data = draw(rng, data_shape, nan=True, neg_zero=False)
        upd = draw(rng, idx.shape, nan=True, neg_zero=False)
        expected = torch.from_numpy(data).scatter_reduce(
            axis, torch.from_numpy(idx), torch.from_numpy(upd), "amax", include_self=True)
        assert_bits(call("se", data, idx, upd, axis=axis), expected.numpy(), "se")
        # include_self=False against use_init_val=False: torch starts at -inf where jaxmax
        # starts at lowest(T), and propagates NaN where the fold does not: no NaN, no -inf
        data = draw(rng, data_shape, nan=False, neg_zero=False, neg_inf=False)
        upd = draw(rng, idx.shape, nan=False, neg_zero=False, neg_inf=False)
        expected = torch.from_numpy(data).scatter_reduce(
            axis, torch.from_numpy(idx), torch.from_numpy(upd), "amax", include_self=False)
        assert_bits(call("seu", data, idx, upd, axis=axis, use_init_val=False),
                    expected.numpy(), "seu include_self=False")


def _f(*v, dtype=np.float32):
    return np.array(v, dtype)


# docs/semantics.md §8.4, the float rows: (name, data, update list), one target
DISAGREEMENTS = [
    ("NaN then 2", _f(0), _f(NAN, 2)),
    ("2 then NaN", _f(0), _f(2, NAN)),
    ("data NaN, update 1", _f(NAN), _f(1)),
    ("data -0, update +0", _f(-0.0), _f(0.0)),
    ("data +0, update -0", _f(0.0), _f(-0.0)),
    ("f16 65504 then NaN", _f(0, dtype=np.float16), _f(65504, NAN, dtype=np.float16)),
]
# what each runtime returned (the table's columns), and jaxmax's choice per face
OBSERVED = {
    "ort SE": [2, NAN, 1, 0.0, -0.0, NAN],
    "ref SE": [2, 2, NAN, -0.0, 0.0, 65504],
    "ref SND": [NAN, NAN, NAN, 0.0, -0.0, None],
    "evaluate SEU-12": [2, NAN, 1, 0.0, -0.0, NAN],
    "evaluate SNDU-15": [2, 2, NAN, -0.0, 0.0, None],
    "cpu SEU-12": [2, 2, NAN, -0.0, 0.0, 65504],
    "torch": [NAN, NAN, NAN, -0.0, 0.0, NAN],
    "jaxmax se": [NAN, NAN, NAN, 0.0, 0.0, NAN],
    "jaxmax seu": [2, NAN, 1, 0.0, -0.0, NAN],
    "jaxmax sndu": [2, 2, NAN, -0.0, 0.0, 65504],
}


def _runtime_value(column, data, upd):
    idx_e = np.zeros(upd.shape, np.int64)
    idx_nd = np.zeros(upd.shape + (1,), np.int64)
    runners = {
        "ort SE": lambda: run_ort("ScatterElements", data, idx_e, upd, 0),
        "ref SE": lambda: run_ref("ScatterElements", data, idx_e, upd, 0),
        "ref SND": lambda: run_ref("ScatterND", data, idx_nd, upd),
        "evaluate SEU-12": lambda: run_ov(ov_reference.evaluate, seu_node(0), data, idx_e, upd),
        "evaluate SNDU-15": lambda: run_ov(ov_reference.evaluate, sndu_node, data, idx_nd, upd),
        "cpu SEU-12": lambda: run_ov(ov_reference.compile_cpu, seu_node(0), data, idx_e, upd),
        "torch": lambda: torch.from_numpy(data).scatter_reduce(
            0, torch.from_numpy(idx_e), torch.from_numpy(upd), "amax").numpy(),
        "jaxmax se": lambda: call("se", data, idx_e, upd),
        "jaxmax seu": lambda: call("seu", data, idx_e, upd),
        "jaxmax sndu": lambda: call("sndu", data, idx_nd, upd),
    }
    return np.asarray(runners[column]())


@pytest.mark.parametrize("column", sorted(OBSERVED))
def test_the_disagreement_table_is_reproduced(column):
    for (name, data, upd), value in zip(DISAGREEMENTS, OBSERVED[column], strict=True):
        if value is None:
            continue
        got = _runtime_value(column, data, upd)
        assert_bits(got, np.array([value], data.dtype), f"{column}: {name}")
