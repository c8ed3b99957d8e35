"""TopK, SegmentMax and the scatters on ``Auto`` mesh axes (jaxmax/_src/auto_partition.py): the
per-device forms chosen once XLA knows the sharding give the one-device answer bit for bit under
``jit``, under ``vmap`` (where the computation runs unwrapped) and through ``grad``; their
collectives are in tests/test_collectives.py, their runs across processes in
tests/test_multiprocess.py."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from multiprocess_cases import tricky

from jaxmax import onnx
from jaxmax import openvino as ov


def _mesh():
    return jax.make_mesh((4,), ("d",), axis_types=(AxisType.Auto,), devices=jax.devices()[:4])


def _bits(a):
    a = np.asarray(a)
    return a.view(np.int32) if a.dtype == np.float32 else a


def _same(got, expected):
    for g, e in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True):
        np.testing.assert_array_equal(_bits(g), _bits(e))


TOP_K = {
    "onnx axis 1": lambda v: onnx.top_k(v, 3, axis=1),
    "onnx last": lambda v: onnx.top_k(v, 2, axis=-1, largest=0),
    "openvino index": lambda v: ov.top_k(v, 4, axis=1, mode="max", sort="index"),
}


@pytest.mark.parametrize("spec", [P("d"), P(None, "d"), P(None, None, None, "d")],
                         ids=["batch", "channels", "W"])
@pytest.mark.parametrize("name", sorted(TOP_K))
def test_top_k_on_auto_axes(name, spec):
    f = TOP_K[name]
    x = tricky(3, (4, 8, 4, 16))
    xs = jax.device_put(x, NamedSharding(_mesh(), spec))
    _same(jax.jit(f)(xs), f(x))

    def loss(v):
        return (f(v)[0] * np.float32(1.5)).sum()
    _same(jax.jit(jax.grad(loss))(xs), jax.grad(loss)(x))
    _same(jax.jit(jax.vmap(f))(xs), jax.vmap(f)(x))


@pytest.mark.parametrize("specs", [(P("d"), P("d")), (P("d"), P()), (P(None, "d"), P())],
                         ids=["rows and ids", "rows", "trailing"])
@pytest.mark.parametrize("fill", ["ZERO", "LOWEST"])
def test_segment_max_on_auto_axes(fill, specs):
    data = tricky(4, (16, 8, 4))
    ids = np.sort(np.random.default_rng(5).integers(0, 12, 16)).astype(np.int32)
    mesh = _mesh()
    placed = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((data, ids), specs,
                                                                         strict=True)]

    def f(d, i):
        return ov.segment_max(d, i, num_segments=12, fill_mode=fill)
    _same(jax.jit(f)(*placed), f(data, ids))

    def loss(d, i):
        return (f(d, i) * np.float32(1.5)).sum()
    _same(jax.jit(jax.grad(loss))(*placed), jax.grad(loss)(data, ids))
    batched = jax.vmap(f, in_axes=(2, None))
    _same(jax.jit(batched)(*placed), batched(data, ids))


SCATTER_ELEMENTS = {
    "onnx axis 0": lambda d, i, u: onnx.scatter_elements(d, i, u, axis=0, reduction="max"),
    "onnx axis 1": lambda d, i, u: onnx.scatter_elements(d, i, u, axis=1, reduction="max"),
    "openvino SEU-12 axis 0": lambda d, i, u: ov.scatter_elements_update(d, i, u, 0,
                                                                         reduction="max"),
    "openvino SEU-12 axis 1 use_init_val False": lambda d, i, u: ov.scatter_elements_update(
        d, i, u, 1, reduction="max", use_init_val=False),
}
SCATTER_ND = {
    "onnx": lambda d, i, u: onnx.scatter_nd(d, i, u, reduction="max"),
    "openvino ScatterNDUpdate-15": lambda d, i, u: ov.scatter_nd_update(d, i, u,
                                                                       reduction="max"),
}


def _scatter_checks(f, arrays, specs):
    """`f` under jit, grad (of the data and of the updates) and vmap (over a leading axis of
    two, the second batch reversed) on an ``Auto`` mesh laid out as `specs`, bit-equal to the
    same calls on one device's arrays."""
    mesh = _mesh()
    placed = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(arrays, specs,
                                                                        strict=True)]
    _same(jax.jit(f)(*placed), f(*arrays))

    def loss(d, i, u):
        out = f(d, i, u)
        return (out * np.arange(out.size, dtype=np.float32).reshape(out.shape)).sum()
    grad = jax.grad(loss, argnums=(0, 2))
    _same(jax.jit(grad)(*placed), grad(*arrays))
    stacked = [np.stack([a, a[::-1]]) for a in arrays]
    placed = [jax.device_put(a, NamedSharding(mesh, P(None, *s))) for a, s in zip(
        stacked, specs, strict=True)]
    _same(jax.jit(jax.vmap(f))(*placed), jax.vmap(f)(*stacked))


@pytest.mark.parametrize("specs", [(P("d"), P("d"), P("d")), (P(None, "d"),) * 3,
                                   (P("d"), P(), P()), (P(), P("d"), P("d")),
                                   (P(None, "d"), P(), P())],
                         ids=["rows, all three", "columns, all three", "data rows",
                              "indices and updates rows", "data columns"])
@pytest.mark.parametrize("name", sorted(SCATTER_ELEMENTS))
def test_scatter_elements_on_auto_axes(name, specs):
    """Every form the planner takes (blocks off the scatter axis, the exchange across it,
    each device's own block of the data), bit-equal to one device with the inputs' NaN,
    signed zeros and ties (tests/multiprocess_cases.py `tricky`) and negative indices."""
    axis = 0 if "axis 0" in name else 1
    rng = np.random.default_rng(7)
    data, updates = tricky(8, (16, 8)), tricky(9, (16, 8))
    indices = rng.integers(-data.shape[axis], data.shape[axis], (16, 8)).astype(np.int32)
    _scatter_checks(SCATTER_ELEMENTS[name], (data, indices, updates), specs)


@pytest.mark.parametrize("specs", [(P("d"), P("d"), P("d")), (P(), P("d"), P("d"))],
                         ids=["rows, all three", "indices and updates rows"])
@pytest.mark.parametrize("name", sorted(SCATTER_ELEMENTS))
def test_scatter_elements_row_constant_indices_on_auto_axes(name, specs):
    """Indices constant off the scatter axis: on one device (concrete indices) the row form
    and its gradient, on the mesh (traced indices) the detected form, blocks or exchanged,
    with the derivative from the output; bit-equal all the same."""
    axis = 0 if "axis 0" in name else 1
    data, updates = tricky(8, (16, 8)), tricky(9, (16, 8))
    ids = np.random.default_rng(3).integers(-data.shape[axis], data.shape[axis], 16)
    ids = ids.astype(np.int32)
    indices = np.broadcast_to(ids[:, None] if axis == 0 else ids[None, :8], (16, 8)).copy()
    _scatter_checks(SCATTER_ELEMENTS[name], (data, indices, updates), specs)


@pytest.mark.parametrize("specs", [(P("d"), P(), P()), (P(None, None, "d"), P(), P(None, "d")),
                                   (P(), P("d"), P("d")), (P("d"), P("d"), P("d"))],
                         ids=["data rows", "data trailing axis", "indices and updates",
                              "all three rows"])
@pytest.mark.parametrize("name", sorted(SCATTER_ND))
def test_scatter_nd_on_auto_axes(name, specs):
    """ScatterND's forms on ``Auto`` axes (blocks of the slice axes, the exchange across the
    index tuples, each device's own rows of the data), bit-equal to one device."""
    rng = np.random.default_rng(11)
    indices = np.stack([rng.integers(-16, 16, 16), rng.integers(-8, 8, 16)],
                       -1).astype(np.int32)
    data, updates = tricky(12, (16, 8, 4)), tricky(13, (16, 4))
    _scatter_checks(SCATTER_ND[name], (data, indices, updates), specs)
