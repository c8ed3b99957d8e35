"""What the ``Auto``-axes wrapper (jaxmax/_src/auto_partition.py) costs the one-device programs of
AdaptiveMaxPool-8, MaxUnpool and the ceil-mode pools on a host of several devices, where it is
always taken: whether the compiled program is the same (XLA's optimized HLO text with and
without the wrapper, ``auto=False``, module names and metadata aside) and the compile time of
each, side by side, ``jax.clear_caches()`` before each compile, `--rounds` interleaved rounds,
medians. A process with one device takes no wrapper.

With ``--eager``: a new small eager shape every call instead, its time and the process's
resident-memory growth.

Run: ``PYTHONPATH=$PWD python benchmarks/auto_pools_ab.py [--rounds 15] [--eager]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import time
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from jaxmax import onnx  # noqa: E402
from jaxmax import openvino as ov  # noqa: E402
from jaxmax._src.lowering import adaptive_pool, rules, unpool  # noqa: E402

PROGRAMS: dict = {}


def _program(name, args):
    def register(fn):
        PROGRAMS[name] = (fn, args)
        return fn
    return register


_rng = np.random.default_rng(0)
_small = _rng.standard_normal((4, 8, 16, 16)).astype(np.float32)
_resnet = _rng.standard_normal((32, 512, 14, 14)).astype(np.float32)


@_program("AdaptiveMaxPool (4, 8, 16, 16) -> (5, 3)", (_small,))
def _adaptive_small(auto, v):
    return adaptive_pool._adaptive_jit.plain(v, (5, 3), np.dtype(np.int32), auto)


@_program("AdaptiveMaxPool (32, 512, 14, 14) -> (7, 7)", (_resnet,))
def _adaptive_resnet(auto, v):
    return adaptive_pool._adaptive_jit.plain(v, (7, 7), np.dtype(np.int32), auto)


def _unpool_inputs(shape):
    n, c, h, w = shape
    x = _rng.standard_normal(shape).astype(np.float32)
    rows = np.arange(h)[:, None] * 2 + _rng.integers(0, 2, shape)
    cols = np.arange(w)[None, :] * 2 + _rng.integers(0, 2, shape)
    plane = (np.arange(n)[:, None, None, None] * c + np.arange(c)[None, :, None, None])
    return x, (plane * 4 * h * w + rows * 2 * w + cols).astype(np.int32)


@_program("MaxUnpool (4, 8, 8, 8) k2 s2", _unpool_inputs((4, 8, 8, 8)))
def _unpool_small(auto, v, i):
    return unpool._unpool_jit.plain(v, i, (4, 8, 16, 16), (2, 2), (2, 2), (0, 0), auto)


@_program("MaxUnpool (32, 64, 56, 56) k2 s2", _unpool_inputs((32, 64, 56, 56)))
def _unpool_large(auto, v, i):
    return unpool._unpool_jit.plain(v, i, (32, 64, 112, 112), (2, 2), (2, 2), (0, 0), auto)


def _public(fn):
    """A public call whose lowering reads ``rules.several_devices()`` (the pools'): `auto`
    given by replacing that function while tracing."""
    def call(auto, *args):
        several = rules.several_devices
        rules.several_devices = lambda: auto
        try:
            return fn(*args)
        finally:
            rules.several_devices = several
    return call


_image = _rng.standard_normal((4, 8, 16, 16)).astype(np.float32)
_big = _rng.standard_normal((32, 64, 56, 56)).astype(np.float32)
for _name, _fn, _x in (
        ("MaxPool-14 ceil_torch k3 s2 p1 (4, 8, 16, 16)",
         lambda v: ov.max_pool(v, kernel=3, strides=2, pads_begin=1, pads_end=1,
                               rounding_type="ceil_torch", opset=14), _image),
        ("MaxPool-8 ceil k3 s2 p1, indices (4, 8, 16, 16)",
         lambda v: ov.max_pool(v, kernel=3, strides=2, pads_begin=1, pads_end=1,
                               rounding_type="ceil", opset=8), _image),
        ("ONNX MaxPool-22 ceil k3 s2 p1 (4, 8, 16, 16)",
         lambda v: onnx.max_pool(v, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                 ceil_mode=1), _image),
        ("ONNX MaxPool-22 ceil k3 s2 p1, Indices (4, 8, 16, 16)",
         lambda v: onnx.max_pool(v, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                 ceil_mode=1, return_indices=True), _image),
        ("ONNX MaxPool-22 ceil k3 s2 p1 (32, 64, 56, 56)",
         lambda v: onnx.max_pool(v, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                 ceil_mode=1), _big)):
    PROGRAMS[_name] = (_public(_fn), (_x,))


def _text(fn, auto, args) -> str:
    """The optimized program, as a hash of its structure: each instruction named by what it
    is (its opcode, type, attributes and operands', or called computations', own hashes), each
    computation by its instructions' hashes in any order and its root's. Debug information,
    names and the order in which XLA schedules independent instructions (the wrapper's inlined
    program numbers and orders them differently) change nothing; any other change does."""
    text = jax.jit(lambda *a: fn(auto, *a)).lower(*args).compile().as_text()
    text = re.sub(r", (metadata|stack_frame_id|frontend_attributes)=(\{[^}]*\}|\d+)", "", text)
    known: dict[str, str] = {}  # instruction or computation name -> hash
    body: list[str] = []
    root = ""
    entry = ""
    for line in text.splitlines():
        header = re.match(r"(ENTRY )?(%[\w.\-]+) \(", line)
        if header and line.rstrip().endswith("{"):
            body, root, name, is_entry = [], "", header.group(2), bool(header.group(1))
            signature = re.sub(r"([(,] ?)[\w.\-]+: ", r"\1", line[header.end() - 1:])
            continue
        if line.startswith("}") and body is not None:
            digest = hashlib.sha256(
                (signature + root + "|".join(sorted(body))).encode()).hexdigest()
            known[name] = digest
            entry = digest if is_entry else entry
            continue
        m = re.match(r"\s+(ROOT )?(%[\w.\-]+) = (.*)$", line)
        if not m:
            continue
        what = re.sub(r"%[\w.\-]+", lambda r: known.get(r.group(0), r.group(0)), m.group(3))
        digest = hashlib.sha256(what.encode()).hexdigest()
        known[m.group(2)] = digest
        body.append(digest)
        root = digest if m.group(1) else root
    return entry


def _compile(fn, auto, args) -> float:
    start = time.perf_counter()
    jax.jit(lambda *a: fn(auto, *a)).lower(*args).compile()
    return time.perf_counter() - start


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _unpool_small(h):
    x = np.random.default_rng(h).standard_normal((1, 2, h, h)).astype(np.float32)
    plane = np.arange(2)[None, :, None, None] * 4 * h * h
    idx = plane + np.arange(h)[:, None] * 4 * h + np.arange(h)[None, :] * 2
    return x, np.broadcast_to(idx, x.shape).astype(np.int64)


def _ramp(h):
    return np.ones((1, 2, h, h), np.float32) * np.arange(h, dtype=np.float32)


EAGER = {
    "AdaptiveMaxPool (1, 2, h, h) -> (3, 2)": lambda h: ov.adaptive_max_pool(_ramp(h), [3, 2]),
    "ONNX MaxPool-22 ceil k3 s2 p1 (1, 2, h, h)": lambda h: onnx.max_pool(
        _ramp(h), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
    "MaxUnpool k2 s2 (1, 2, h, h)": lambda h: onnx.max_unpool(
        *_unpool_small(h), kernel_shape=[2, 2], strides=[2, 2]),
}


def eager(rounds: int) -> None:
    """A new small eager shape every call (h = 10, 12, ...), with the wrapper and without:
    the first call's time and the process's resident-memory growth, medians."""
    print("| eager call, new shape | unwrapped (s) | wrapped (s) | ratio | "
          "RSS growth unwrapped (MiB) | wrapped (MiB) |")
    print("|---|---|---|---|---|---|")
    for name, op in EAGER.items():
        times: dict[bool, list[float]] = {False: [], True: []}
        grown: dict[bool, list[int]] = {False: [], True: []}
        h = 8
        for _ in range(rounds):
            for auto in (False, True):
                h += 2
                before, start = _rss(), time.perf_counter()
                jax.block_until_ready(_public(op)(auto, h))
                times[auto].append(time.perf_counter() - start)
                grown[auto].append(_rss() - before)
        plain, slow = (statistics.median(times[a]) for a in (False, True))
        mem = [statistics.median(grown[a]) / 2**20 for a in (False, True)]
        print(f"| {name} | {plain:.3f} | {slow:.3f} | {slow / plain:.2f} | {mem[0]:.2f} | "
              f"{mem[1]:.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--eager", action="store_true",
                        help="new small eager shapes instead of the compiled programs")
    options = parser.parse_args()
    rounds = options.rounds
    warnings.simplefilter("ignore")  # int64 indices stored as int32
    if options.eager:
        eager(rounds)
        return
    print("| program | wrapped | same compiled program | unwrapped (s) | wrapped (s) | ratio |")
    print("|---|---|---|---|---|---|")
    for name, (fn, args) in PROGRAMS.items():
        lowered = [jax.jit(lambda *a, auto=auto, fn=fn: fn(auto, *a)).lower(*args).as_text()
                   for auto in (False, True)]
        wrapped = "yes" if lowered[0] != lowered[1] else "no"
        same = _text(fn, False, args) == _text(fn, True, args)
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(rounds):
            for auto in (False, True):
                jax.clear_caches()
                times[auto].append(_compile(fn, auto, args))
        plain, slow = (statistics.median(times[a]) for a in (False, True))
        print(f"| {name} | {wrapped} | {'yes' if same else 'NO'} | {plain:.3f} | {slow:.3f} | "
              f"{slow / plain:.2f} |", flush=True)


if __name__ == "__main__":
    main()
