"""What a compiled program moves between devices, read from its text.

`moved(text)` lists the collectives of ``jax.jit(f).lower(...).compile().as_text()`` (the
per-device program XLA's SPMD partitioner wrote): all-gather, all-reduce, all-to-all,
collective-permute and reduce-scatter, their tuple forms (several operands at once) and their
asynchronous ``-start`` forms (the ``-done`` half moves nothing more), each with the bytes of
its result on one device. `measure` lays a case of tests/multiprocess_cases.py over a mesh of
this process's devices and returns the row of the collectives table.

``python tests/collectives.py`` prints the table (Markdown) for every case and layout, as
docs/multi-host.md and benchmarks/RESULTS.md record it; run it with 8 CPU devices as the tests
do (it sets them itself).
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

KINDS = ("all-gather", "all-reduce", "all-to-all", "collective-permute", "reduce-scatter")
_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?P<shape>.+?)\s+"
    r"(?P<kind>" + "|".join(KINDS) + r")(?P<phase>-start|-done)?\(")
_ARRAY = re.compile(r"\b(?P<dtype>pred|[fsu]\d+|bf16|f8\w*)\[(?P<dims>[\d,]*)\]")
_BITS = {"pred": 8, "bf16": 16}


@dataclasses.dataclass(frozen=True)
class Collective:
    kind: str  # all-gather, all-reduce, ... (the -start form counted as its collective)
    nbytes: int  # of its result on one device
    shape: str  # as the program writes it


def _array_bytes(dtype: str, dims: str) -> int:
    bits = _BITS.get(dtype) or int(re.sub(r"\D", "", dtype.split("e")[0]) or 8)
    return math.prod(int(d) for d in dims.split(",") if d) * bits // 8


def moved(text: str) -> list[Collective]:
    """Every collective instruction of compiled program `text`, with its result's bytes."""
    out = []
    for line in text.splitlines():
        m = _INSTRUCTION.match(line)
        if m is None or m["phase"] == "-done":
            continue
        sizes = [_array_bytes(a["dtype"], a["dims"]) for a in _ARRAY.finditer(m["shape"])]
        # -start forms return (operand, result[, contexts]): the result is the largest part
        nbytes = max(sizes, default=0) if m["phase"] else sum(sizes)
        out.append(Collective(m["kind"], nbytes, m["shape"]))
    return out


def nbytes(tree) -> int:
    import jax

    return sum(int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize for a in jax.tree.leaves(tree))


@dataclasses.dataclass(frozen=True)
class Row:
    case: str
    layout: str
    devices: int
    collectives: tuple[Collective, ...]
    input_bytes: int  # every input, global
    output_bytes: int  # every output (values and indices), global
    halo_bytes: int  # rows a window reads across a shard boundary, per device

    @property
    def moved_bytes(self) -> int:
        return sum(c.nbytes for c in self.collectives)

    @property
    def largest(self) -> int:
        return max((c.nbytes for c in self.collectives), default=0)

    @property
    def bound(self) -> int:
        return self.output_bytes + self.halo_bytes


def window_halo(case_name: str, inputs, specs) -> int:
    """Bytes of the halo rows one device needs per window-sharded spatial axis: the window's
    extent beyond one stride (``(k - 1) * dilation - (s - 1)``, at least ``k - 1`` rows from each
    side for a stride-1 window) times one row of the first input."""
    m = re.search(r"\bk(\d+) s(\d+)(?: d(\d+))?", case_name)
    if m is None:
        return 0
    k, d = int(m[1]), int(m[3] or 1)
    x, spec = inputs[0], specs[0]
    if spec is None:
        return 0
    total = 0
    for axis, entry in enumerate(tuple(spec)):
        if entry is not None and axis >= 2:
            row = x.nbytes // x.shape[axis]
            total += 2 * (k - 1) * d * row
    return total


def measure(case, layout: str, devices=None, compiler_options=None) -> Row:
    """The collectives of `case` jitted on its `layout` over `devices` (the first 4 by default),
    values and indices only (no gradient), compiled with XLA's `compiler_options` (its defaults
    when None)."""
    import jax
    from jax.sharding import AxisType, NamedSharding, PartitionSpec

    devices = jax.devices()[:4] if devices is None else devices
    n = len(devices)
    meshes = {"d": jax.make_mesh((n,), ("d",), axis_types=(AxisType.Explicit,), devices=devices),
              "ab": jax.make_mesh((2, n // 2), ("a", "b"), axis_types=(AxisType.Explicit,) * 2,
                                  devices=devices)}
    inputs = case.inputs()
    specs = case.layouts[layout]
    names = {a for s in specs if s is not None for e in s if e is not None
             for a in (e if isinstance(e, tuple) else (e,))}
    mesh = meshes["ab" if names & {"a", "b"} else "d"]
    args = [jax.device_put(x, NamedSharding(mesh, PartitionSpec() if s is None else s))
            for x, s in zip(inputs, specs, strict=True)]
    text = jax.jit(case.fn).lower(*args).compile(compiler_options).as_text()
    out = jax.eval_shape(case.fn, *args)
    return Row(case.name, layout, n, tuple(moved(text)), sum(x.nbytes for x in inputs),
               nbytes(out), window_halo(case.name, inputs, specs))


def _kib(n: int) -> str:
    return f"{n / 1024:.1f}"


def table(rows_and_cases) -> str:
    """Markdown: one line per (row, case) pair, with whether it keeps the rules."""
    lines = ["| operator and form | sharding | collectives | moved per device (KiB) | "
             "largest one (KiB) | output (KiB) | input (KiB) | keeps the rules |",
             "|---|---|---|---|---|---|---|---|"]
    for r, case in rows_and_cases:
        broken = violations(r, case)
        verdict = "yes" if not broken else "no: " + "; ".join(broken)
        kinds: dict[str, int] = {}
        for c in r.collectives:
            kinds[c.kind] = kinds.get(c.kind, 0) + 1
        what = ", ".join(f"{v} {k}" for k, v in kinds.items()) or "none"
        lines.append(f"| {r.case} | {r.layout} | {what} | {_kib(r.moved_bytes)} | "
                     f"{_kib(r.largest)} | {_kib(r.output_bytes)} | {_kib(r.input_bytes)} | "
                     f"{verdict} |")
    return "\n".join(lines)


def violations(row: Row, case) -> list[str]:
    """What `row` breaks of the two rules (empty when it keeps both):

    * the bytes every collective of the program returns on one device add up to at most the
      outputs' bytes (values and indices, whole) plus the halo rows its windows read across
      shard boundaries;
    * no all-gather returns as much as a sharded input holds (an input gathered whole).
    """
    out = []
    if row.moved_bytes > row.bound:
        out.append(f"moves {row.moved_bytes} B per device, more than the outputs' "
                   f"{row.output_bytes} B + halo {row.halo_bytes} B")
    sizes = [x.nbytes for x, s in zip(case.inputs(), case.layouts[row.layout], strict=True)
             if s is not None and any(e is not None for e in s)]
    gathers = [c.nbytes for c in row.collectives if c.kind == "all-gather"]
    if sizes and gathers and max(gathers) >= min(sizes):
        out.append(f"all-gathers {max(gathers)} B, a sharded input of {min(sizes)} B whole")
    return out


if __name__ == "__main__":
    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    from multiprocess_cases import CASES

    print(table((measure(c, layout), c) for c in CASES for layout in c.layouts))
