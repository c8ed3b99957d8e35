"""The vocabulary of the benchmark: sizes, seeded inputs, and the Case/Impl records.

A group module (``reduce``, ``max_pool``, ...) turns a `Sizes` into a list of `Case`; each case
names one input set and lists its implementations (`Impl`), each with the runtime (backend) it
needs and a `Build` that, given the case's inputs (`Ctx`), returns a zero-argument call to time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

# Row roles: jaxmax rows; competitors (the 'x best' reference); the read floor of a floor case
# (the 'x floor' reference); info rows (shown with 'x floor' only).
JAXMAX, COMPETITOR, FLOOR, INFO = "jaxmax", "competitor", "floor", "info"


@dataclasses.dataclass(frozen=True)
class Sizes:
    reduce: tuple[int, ...]
    pool2d: tuple[int, ...]
    pool3d: tuple[int, ...]
    seg_rows: int
    seg_cols: int
    seg_count: int


FULL = Sizes(reduce=(64, 256, 56, 56), pool2d=(32, 64, 112, 112), pool3d=(8, 32, 32, 64, 64),
             seg_rows=2_000_000, seg_cols=32, seg_count=20_000)
QUICK = Sizes(reduce=(16, 64, 28, 28), pool2d=(4, 16, 56, 56), pool3d=(2, 8, 16, 32, 32),
              seg_rows=100_000, seg_cols=32, seg_count=1_000)

# (warm-up calls, min samples, max samples, seconds per implementation of a case after which
# min samples suffice). One more untimed call follows the warm-up (it sizes the timing loop);
# a call slower than SLOW_CALL_S needs only 3 samples.
FULL_REPS = (1, 5, 9, 1.5)
QUICK_REPS = (1, 3, 5, 0.3)


def sizes(quick: bool) -> Sizes:
    return QUICK if quick else FULL


def reps(quick: bool) -> tuple[int, int, int, float]:
    return QUICK_REPS if quick else FULL_REPS


# ----------------------------------------------------------------------------------------------
# Inputs: NumPy arrays, generated identically (seeded) in every worker.

# The data-shape axis: every input set `key` also exists as ``key@shape`` for these shapes, so a
# fast path that only clean data takes cannot hide a slow one (`with_data_shape`).
DATA_SHAPES = {
    "clean": "clean",
    "empty": "empty segments (a tenth of the ids left out; segment inputs only)",
    "nan4": "NaN, 1 in 10,000 elements",
    "nan2": "NaN, 1 in 100 elements",
    "ties": "heavy ties (values from {-1, 0, 1})",
    "zeros": "signed zeros (non-positive data, 20% of it +0.0 or -0.0)",
}


def make_inputs(key: str, sz: Sizes) -> dict[str, np.ndarray]:
    if "@" in key:
        base, shape = key.split("@")
        return with_data_shape(make_inputs(base, sz), shape, np.random.default_rng(_seed(key)))
    rng = np.random.default_rng(_seed(key))
    if key == "f32":
        return {"x": rng.standard_normal(sz.reduce, dtype=np.float32)}
    if key == "f32nan":
        x = rng.standard_normal(sz.reduce, dtype=np.float32)
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size, max(1, flat.size // 1000))] = np.nan  # ~0.1% NaN
        return {"x": x}
    if key == "bf16":
        import ml_dtypes

        return {"x": rng.standard_normal(sz.reduce, dtype=np.float32).astype(ml_dtypes.bfloat16)}
    if key == "i8":
        return {"x": rng.integers(-128, 128, sz.reduce, dtype=np.int8)}
    if key == "bool":
        # sparse True (~0.1%): the per-slice results are data dependent
        return {"x": rng.integers(0, 1000, sz.reduce, dtype=np.uint16) == 0}
    if key == "bool_false":
        # all False: an any() over everything cannot stop at the first True (np.any does)
        return {"x": np.zeros(sz.reduce, np.bool_)}
    if key == "pool2d":
        return {"x": rng.standard_normal(sz.pool2d, dtype=np.float32)}
    if key == "pool3d":
        return {"x": rng.standard_normal(sz.pool3d, dtype=np.float32)}
    if key == "seg":
        ids = np.sort(rng.integers(0, sz.seg_count, sz.seg_rows)).astype(np.int32)
        return {"x": rng.standard_normal((sz.seg_rows, sz.seg_cols), dtype=np.float32),
                "ids": ids,
                "lengths": np.bincount(ids, minlength=sz.seg_count).astype(np.int64)}
    # ---- ROI pooling (MaxRoiPool / ROIPooling-1) inputs: begin ----
    if key == "roi_pool":  # the detection anchor: features and 300 ROIs (benchmarks/RESULTS.md)
        count = 300 if sz.pool2d[0] >= 32 else 100
        wh = rng.uniform(16, 400, (count, 2))
        xy = rng.uniform(0, 800 - wh)
        rois = np.concatenate([np.zeros((count, 1)), xy, xy + wh], 1).astype(np.float32)
        features = (1, 256 if sz.pool2d[0] >= 32 else 64, 50, 50)
        return {"x": rng.standard_normal(features, dtype=np.float32), "rois": rois}
    # ---- ROI pooling inputs: end ----
    if key.startswith("shape:"):  # "shape:1x8x64x64": seeded float32 of that shape
        return {"x": rng.standard_normal(tuple(map(int, key[6:].split("x"))), dtype=np.float32)}
    if key == "small":
        return {"x": rng.standard_normal((8, 8), dtype=np.float32),
                "ids": np.array([0, 0, 1, 1, 1, 2, 3, 3], np.int32)}
    raise KeyError(key)


def with_data_shape(arrays: dict[str, np.ndarray], shape: str,
                    rng: np.random.Generator) -> dict[str, np.ndarray]:
    """`arrays` (their float ``x``, and for segment inputs the ``ids``) turned into `shape`, a
    key of `DATA_SHAPES`."""
    out = dict(arrays)
    x = out["x"].copy()
    if shape == "empty":
        ids = out["ids"]
        count = int(ids.max()) + 1
        keep = np.sort(rng.permutation(count)[: count - count // 10])
        out["ids"] = np.sort(rng.choice(keep, ids.size)).astype(ids.dtype)
        out["lengths"] = np.bincount(out["ids"], minlength=count).astype(np.int64)
    elif shape in ("nan4", "nan2"):
        flat = x.reshape(-1)
        flat[rng.random(flat.size, dtype=np.float32) < (1e-4 if shape == "nan4" else 1e-2)] = \
            np.nan
    elif shape == "ties":
        x = rng.integers(-1, 2, x.shape).astype(x.dtype)
    elif shape == "zeros":
        x = -np.abs(x)
        r = rng.random(x.shape, dtype=np.float32)
        x[r < 0.1] = 0.0
        x[(r >= 0.1) & (r < 0.2)] = -0.0
    elif shape != "clean":
        raise KeyError(shape)
    out["x"] = x
    return out


def _seed(key: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(key))


class Ctx:
    """One input set, with per-runtime conversions cached (built outside the timed region)."""

    def __init__(self, key: str, sz: Sizes):
        self.key = key
        self.sz = sz
        self.arrays = make_inputs(key, sz)
        self._jax: dict[str, Any] = {}
        self._torch: dict[str, Any] = {}

    def np(self, name: str = "x") -> np.ndarray:
        return self.arrays[name]

    def jax(self, name: str = "x") -> Any:
        if name not in self._jax:
            import jax

            self._jax[name] = jax.block_until_ready(jax.device_put(self.arrays[name]))
        return self._jax[name]

    def torch(self, name: str = "x") -> Any:
        if name not in self._torch:
            import torch

            a = self.arrays[name]
            if a.dtype.kind not in "biuf":  # bfloat16: reinterpret the bits
                t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
            else:
                t = torch.from_numpy(a)
            self._torch[name] = t
        return self._torch[name]


# ----------------------------------------------------------------------------------------------
# Cases

Build = Callable[[Ctx], Callable[[], Any]]


@dataclasses.dataclass
class Impl:
    label: str
    backend: str
    build: Build
    role: str = COMPETITOR
    inputs: str | None = None  # another input set than the case's (e.g. NaN-free next to NaN)


@dataclasses.dataclass(frozen=True)
class Ratio:
    """A reported ratio of two rows of one case: `title` = time(`num`) / time(`den`)."""

    title: str
    num: str  # Impl label
    den: str  # Impl label


@dataclasses.dataclass
class Case:
    group: str
    name: str
    inputs: str
    impls: list[Impl]
    floor: str  # name of the floor case whose FLOOR row is the read floor
    check: bool = True  # compare result digests across impls
    ratios: list[Ratio] = dataclasses.field(default_factory=list)
    compile_first: bool = False  # measure JAX rows' compile cost (in a child) before timing


def floor_case(group: str, name: str, inputs: str, impls: list[Impl]) -> Case:
    """A case that only holds a read floor (its own floor)."""
    return Case(group, name, inputs, impls, name)


def shape_label(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def axes_label(axes: tuple[int, ...], ndim: int) -> str:
    return "all" if tuple(axes) == tuple(range(ndim)) else str(tuple(axes)).replace(",)", ")")
