"""What the ONNX ReduceMax test files share (tests/test_reduce_max_onnx_values.py and
tests/test_reduce_max_onnx_runtimes.py): the per-opset dtype table and the data generator.

Imported only after ``pytest.importorskip("onnx")``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import onnx
from helpers import is_float

BF16 = jnp.bfloat16  # the ml_dtypes bfloat16 scalar type, as a NumPy dtype
LATEST_OPSET = onnx.defs.onnx_opset_version()

# The allowed data types per since-version, written down from docs/semantics.md (ONNX
# ReduceMax) and the spec's type constraints. `test_dtype_table_matches_onnx_schemas` checks
# it against onnx.defs.
_BASE = ("float16", "float32", "float64", "int32", "int64", "uint32", "uint64")
ALLOWED = {
    1: frozenset(_BASE),
    11: frozenset(_BASE),
    12: frozenset(_BASE + ("int8", "uint8")),
    13: frozenset(_BASE + ("int8", "uint8", "bfloat16")),
    18: frozenset(_BASE + ("int8", "uint8", "bfloat16")),
    20: frozenset(_BASE + ("int8", "uint8", "bfloat16", "bool")),
}
ALL_DTYPES = ("bool", "int8", "uint8", "int32", "uint32", "int64", "uint64",
              "float16", "bfloat16", "float32", "float64")
NEVER_ALLOWED = ("int16", "uint16", "complex64")  # no ReduceMax version lists these


def version_of(opset: int) -> int:
    """The since-version in force at `opset`: the largest one that is <= opset (ONNX rule)."""
    return max(v for v in ALLOWED if v <= opset)


def np_dtype(name: str) -> np.dtype:
    return np.dtype(BF16) if name == "bfloat16" else np.dtype(name)


def make_data(rng, shape, dtype_name, *, nan=True):
    """Seeded data with ties, extremes and (for floats) NaN / +-inf sprinkled in."""
    dtype = np_dtype(dtype_name)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        return (rng.random(n) < 0.3).reshape(shape)
    if is_float(dtype):
        fi = jnp.finfo(dtype)
        vals = np.where(rng.random(n) < 0.5, rng.integers(-4, 5, n).astype(np.float64),
                        rng.standard_normal(n) * 100.0)
        specials = np.array([np.inf, -np.inf, float(fi.max), float(fi.min), -0.0]
                            + ([np.nan] if nan else []))
        pick = rng.random(n) < 0.15
        vals[pick] = rng.choice(specials, int(pick.sum()))
        return vals.astype(dtype).reshape(shape)
    ii = np.iinfo(dtype)
    small = rng.integers(max(ii.min, -3), 4, n).astype(dtype)
    full = rng.integers(ii.min, ii.max, n, dtype=dtype, endpoint=True)
    extremes = rng.choice(np.array([ii.min, ii.max], dtype), n)
    u = rng.random(n)
    return np.where(u < 0.45, small, np.where(u < 0.9, full, extremes)).astype(dtype).reshape(shape)
