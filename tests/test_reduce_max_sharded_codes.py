"""ReduceMax along axes sharded over Explicit mesh axes: the blocks' results are combined by one
integer all-reduce of the output's size (jaxmax/_src/lowering/reduce_sharded.py), and the result
is the loop oracle's (tests/reduce_oracle.py) bit for bit.

The data make the combination matter: slices whose maximum is a zero of either sign reached in
several blocks (OpenVINO keeps the first zero in row-major order over the reduced axes, which
interleaves the blocks when a minor reduced axis is sharded; ONNX puts +0.0 above -0.0), NaN in
some blocks only, slices of -inf and NaN only (raised to lowest(T) by OpenVINO), and ties. The
compiled program is read too: one all-reduce, of the output's bytes at most.
"""

from __future__ import annotations

import functools

import collectives
import jax
import ml_dtypes
import numpy as np
import pytest
from helpers import assert_same, explicit_mesh
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from reduce_oracle import onnx_reduce_max, openvino_reduce_max, share_grad

from jaxmax import onnx
from jaxmax import openvino as ov

SHAPE = (2, 4, 8, 8)


def _data(seed: int, dtype, *, clean: bool = False) -> np.ndarray:
    """Negative values and a third zeros of both signs (zero maxima), -inf and ties; the second
    image also holds NaN and positive values, and a channel of NaN and -inf only. `clean`: the
    second image like the first (for a reduction over every axis)."""
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([-3, -2, -1.5], np.float32), size=SHAPE)
    u = rng.random(SHAPE)
    x[u < 0.15] = -0.0
    x[(u >= 0.15) & (u < 0.3)] = 0.0
    x[(u >= 0.33) & (u < 0.36)] = -np.inf
    x[0, 2, 5] = np.where(rng.random(8) < 0.5, -0.0, -1.0)  # -0.0 maxima
    if not clean:
        x[1][(u[1] >= 0.3) & (u[1] < 0.33)] = np.nan
        x[1][u[1] >= 0.98] = 2.5
        x[1, 3] = np.where(rng.random((8, 8)) < 0.5, np.nan, -np.inf)
    return x.astype(dtype)


# (axes, the input's spec): a major reduced axis sharded, a minor one (the blocks interleave in
# row-major order), both, and a reduced axis beside a sharded kept one
LAYOUTS = {
    "axes (1, 2), channels sharded": ((1, 2), P(None, "d")),
    "axes (1, 2), H sharded": ((1, 2), P(None, None, "d")),
    "axes (1, 2, 3), H and W sharded": ((1, 2, 3), P(None, None, "a", "b")),
    "axes (3,), H and W sharded": ((3,), P(None, None, "a", "b")),
    "all axes, batch and W sharded": ((0, 1, 2, 3), P("a", None, None, "b")),
}
FACES = {
    "ONNX ReduceMax-18": (lambda x, axes: onnx.reduce_max(x, np.array(axes), keepdims=0),
                          lambda x, axes: onnx_reduce_max(x, axes, keepdims=0), False),
    "ReduceMax-1": (lambda x, axes: ov.reduce_max(x, axes),
                    lambda x, axes: openvino_reduce_max(x, axes), True),
}
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("face", list(FACES))
def test_sharded_reduction_is_the_oracles_bit_for_bit(face, layout, dtype):
    call, oracle, _ = FACES[face]
    axes, spec = LAYOUTS[layout]
    x = _data(len(layout), DTYPES[dtype], clean=len(axes) == 4)
    want = oracle(x, axes)
    xs = jax.device_put(x, NamedSharding(explicit_mesh(spec), spec))
    # one compile: the program that is run is the program that is read
    compiled = jax.jit(lambda v: call(v, axes)).lower(xs).compile()
    got = np.asarray(compiled(xs))
    np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{face} {layout} {dtype}")
    assert np.asarray(want == 0).any()  # zero maxima are checked
    moved = collectives.moved(compiled.as_text())
    count = int(np.prod([SHAPE[a] for a in axes]))
    if FACES[face][2] and count > 2 ** (ml_dtypes.finfo(x.dtype).nmant + 1) // 2:
        # NaN skipped: the zero codes hold 2 ** nmant elements a slice (128 for bfloat16);
        # longer slices keep the partitioned form, which moves more
        assert len(moved) > 1
        return
    assert [c.kind for c in moved] == ["all-reduce"], moved
    assert moved[0].nbytes <= want.nbytes


@functools.cache
def _gradients(layout: str, dtype: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The data and each face's gradient for `layout`, both faces in one jitted program (one
    compile a layout instead of one a face and layout)."""
    axes, spec = LAYOUTS[layout]
    x = _data(len(layout) + 1, DTYPES[dtype])
    ct = _cotangent(axes).astype(DTYPES[dtype])
    xs = jax.device_put(x, NamedSharding(explicit_mesh(spec), spec))

    def both(v):
        return {face: jax.grad(lambda w, c=call: (c(w, axes) * ct).sum())(v)
                for face, (call, _, _) in FACES.items()}

    grads = jax.jit(both)(xs)
    return x, {face: np.asarray(g) for face, g in grads.items()}


def _cotangent(axes) -> np.ndarray:
    """Negative and positive cotangents (a product with the tie mask would give -0.0 off the
    maxima for the negative ones)."""
    out_shape = tuple(n for a, n in enumerate(SHAPE) if a not in axes)
    return ((np.arange(int(np.prod(out_shape))) % 5) - 1.5).astype(np.float32).reshape(out_shape)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("face", list(FACES))
def test_sharded_reduction_gradient_is_shared_by_the_tied_maxima(face, layout, dtype):
    # +0.0 off the maxima (the oracle's zeros), on one device and sharded alike
    _, _, skip_nan = FACES[face]
    axes, _ = LAYOUTS[layout]
    x, grads = _gradients(layout, dtype)
    with np.errstate(divide="ignore"):  # a NaN slice's share, which it never assigns
        want = share_grad(x, axes, _cotangent(axes), skip_nan)
    assert_same(grads[face], want.astype(DTYPES[dtype]), f"{face} {layout} {dtype}")
