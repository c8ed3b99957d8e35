"""What a compiled program moves between devices, read from its text.

`moved(text)` lists the collectives of ``jax.jit(f).lower(...).compile().as_text()`` (the
per-device program XLA's SPMD partitioner wrote): all-gather, all-reduce, all-to-all,
collective-permute and reduce-scatter, their tuple forms (several operands at once) and their
asynchronous ``-start`` forms (the ``-done`` half moves nothing more), each with the bytes of
its result on one device. `measure` lays a case of tests/multiprocess_cases.py over a mesh of
this process's devices and returns the row of the collectives table.

``python tests/collectives.py`` prints the table (Markdown) for every case and layout, as
docs/multi-host.md and benchmarks/RESULTS.md record it; run it with 8 CPU devices as the tests
do (it sets them itself). ``python tests/collectives.py --grad`` prints the gradients' table
(`measure(..., grad=True)`, judged by `gradient_violations`); ``--auto`` lays the inputs over
``Auto`` mesh axes instead of ``Explicit`` ones.
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
_OP_NAME = re.compile(r'op_name="(?P<name>[^"]*)"')


@dataclasses.dataclass(frozen=True)
class Collective:
    kind: str  # all-gather, all-reduce, ... (the -start form counted as its collective)
    nbytes: int  # of its result on one device
    shape: str  # as the program writes it
    # the JAX operation it was made for (metadata): ``transpose(...)`` in a gradient's backward
    op_name: str = dataclasses.field(default="", compare=False)


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
        op = _OP_NAME.search(line)
        out.append(Collective(m["kind"], nbytes, m["shape"], op["name"] if op else ""))
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
    backward_bytes: int = 0  # a gradient program's backward allowance (`gradient_bound`)

    @property
    def moved_bytes(self) -> int:
        return sum(c.nbytes for c in self.collectives)

    @property
    def largest(self) -> int:
        return max((c.nbytes for c in self.collectives), default=0)

    @property
    def bound(self) -> int:
        return self.output_bytes + self.halo_bytes + self.backward_bytes


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


def placed(case, layout: str, devices, inputs=None, axis_type: str = "Explicit"):
    """The case's inputs laid out as `layout` over a mesh of `devices` (``"d"``, or ``"a"`` x
    ``"b"`` when the layout names those axes) whose axes are `axis_type` (``"Explicit"`` or
    ``"Auto"``); or `inputs`, each laid out as the layout's first input (an input and its
    tangent)."""
    import jax
    from jax.sharding import AxisType, NamedSharding, PartitionSpec

    n = len(devices)
    kind = getattr(AxisType, axis_type)
    meshes = {"d": jax.make_mesh((n,), ("d",), axis_types=(kind,), devices=devices),
              "ab": jax.make_mesh((2, n // 2), ("a", "b"), axis_types=(kind,) * 2,
                                  devices=devices)}
    specs = case.layouts[layout]
    names = {a for s in specs if s is not None for e in s if e is not None
             for a in (e if isinstance(e, tuple) else (e,))}
    mesh = meshes["ab" if names & {"a", "b"} else "d"]
    return [jax.device_put(x, NamedSharding(mesh, PartitionSpec() if s is None else s))
            for x, s in zip(case.inputs() if inputs is None else inputs,
                            specs if inputs is None else specs[:1] * len(inputs),
                            strict=True)]


def gradient(case):
    """``d(sum(first output * weights)) / d(first input)`` of `case` as a function of all its
    inputs: the gradient tests/multiprocess_worker.py checks (its `weights`), alone."""
    import jax
    import jax.numpy as jnp
    from multiprocess_worker import weights

    def fn(x, *rest):
        def loss(v):
            first = jax.tree.leaves(case.fn(v, *rest))[0]
            return jnp.sum(first * weights(first.shape))
        return jax.grad(loss)(x)
    return fn


def measure(case, layout: str, devices=None, compiler_options=None, *, grad: bool = False,
            axis_type: str = "Explicit") -> Row:
    """The collectives of `case` jitted on its `layout` over `devices` (the first 4 by default;
    mesh axes of `axis_type`), compiled with XLA's `compiler_options` (its defaults when None):
    its values and indices, or
    with `grad` its `gradient` alone (a program whose result does not depend on the inputs,
    Hardmax's zero gradient, keeps them as arguments: without any, JAX places it on one device
    and refuses the mesh-sharded result)."""
    import jax

    devices = jax.devices()[:4] if devices is None else devices
    inputs = case.inputs()
    specs = case.layouts[layout]
    args = placed(case, layout, devices, axis_type=axis_type)
    fn = gradient(case) if grad else case.fn
    text = jax.jit(fn, keep_unused=grad).lower(*args).compile(compiler_options).as_text()
    out = jax.eval_shape(case.fn, *args)
    halo = window_halo(case.name, inputs, specs)
    return Row(case.name, layout, len(devices), tuple(moved(text)),
               sum(x.nbytes for x in inputs), nbytes(out), halo,
               gradient_bound(out, halo) if grad else 0)


def gradient_bound(out, halo: int) -> int:
    """The bytes a gradient program's backward may move per device on top of its forward's
    (the outputs and the halo, as `violations` allows a values program).

    The program is ``x -> d(sum(first output * w)) / dx``. Its forward computes what the
    backward needs (at most the values program: the outputs' bytes and the halo rows its
    windows read across shards). Its backward maps the incoming cotangent, which has the first
    output's shape and is laid out as that output, to the input-sized cotangent laid out as the
    input. Each device produces its own block of that result, and it needs from other devices
    at most: the output cotangent (the first output's bytes, whole), the position of every
    output element's winner when the winner lies on another device (one index per output
    element, at JAX's index width: 4 bytes, 8 with ``jax_enable_x64``), and for windows that
    straddle shards the halo rows of partial input cotangents that neighbouring windows write
    (as many rows as the forward's halo). Nothing of the input's size has to move: not the
    input, not the input-sized cotangent, not a partial sum of it (`gradient_violations`).
    """
    import jax
    import numpy as np

    first = jax.tree.leaves(out)[0]
    size = int(np.prod(first.shape))
    index = jax.dtypes.canonicalize_dtype(np.int64).itemsize
    return size * np.dtype(first.dtype).itemsize + size * index + halo


def _kib(n: int) -> str:
    return f"{n / 1024:.1f}"


def table(rows_and_cases, judge=None) -> str:
    """Markdown: one line per (row, case) pair, with whether it keeps the rules (`judge`:
    `violations`, or `gradient_violations` for gradient rows, whose bound and differentiated
    input get columns of their own)."""
    grad = judge is gradient_violations
    judge = judge or violations
    extra = " bound (KiB) | first input (KiB) |" if grad else ""
    lines = ["| operator and form | sharding | collectives | moved per device (KiB) | "
             "largest one (KiB) | output (KiB) | input (KiB) |" + extra + " keeps the rules |",
             "|---|---|---|---|---|---|---|" + "---|" * (2 * grad) + "---|"]
    for r, case in rows_and_cases:
        broken = judge(r, case)
        verdict = "yes" if not broken else "no: " + "; ".join(broken)
        kinds: dict[str, int] = {}
        for c in r.collectives:
            kinds[c.kind] = kinds.get(c.kind, 0) + 1
        what = ", ".join(f"{v} {k}" for k, v in kinds.items()) or "none"
        cells = f" {_kib(r.bound)} | {_kib(case.inputs()[0].nbytes)} |" if grad else ""
        lines.append(f"| {r.case} | {r.layout} | {what} | {_kib(r.moved_bytes)} | "
                     f"{_kib(r.largest)} | {_kib(r.output_bytes)} | {_kib(r.input_bytes)} |"
                     f"{cells} {verdict} |")
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


def _hlo_dtype(dtype) -> str:
    """The name XLA's program text gives NumPy `dtype` (f32, bf16, s32, u8, pred, ...)."""
    import numpy as np

    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "pred"
    if dtype.name == "bfloat16":
        return "bf16"
    return {"f": "f", "i": "s", "u": "u"}[dtype.kind] + str(dtype.itemsize * 8)


def _parts(c: Collective) -> list[tuple[str, int]]:
    """(dtype, elements) of every array `c` returns (and, for -start forms, reads)."""
    return [(a["dtype"], math.prod(int(d) for d in a["dims"].split(",") if d))
            for a in _ARRAY.finditer(c.shape)]


def backward(c: Collective) -> bool:
    """Whether `c` belongs to a gradient's backward (JAX names its operations
    ``transpose(jvp(...))``); the rest is its forward."""
    return "transpose(" in c.op_name


def gradient_violations(row: Row, case) -> list[str]:
    """What gradient `row` (``measure(..., grad=True)``) breaks of the two rules (empty when it
    keeps both):

    * the bytes every collective returns on one device add up to at most `row.bound`: the
      forward's outputs and halo plus the backward's `gradient_bound` (the output cotangent,
      one index per output element, the halo);
    * nothing input-sized moves. When the differentiated (first) input is sharded, no
      collective returns an array of its dtype and element count: the input gathered whole,
      the input-sized cotangent gathered or summed whole, a partial sum of it. And the forward
      all-gathers no other sharded input whole (its dtype and count), as `violations` asks of a
      values program; the backward's arrays of such a size are the output's (a scatter's
      updates and indices have the data's shape) and the bytes bound them.

    Arrays are told apart by dtype and size. So integer keys and positions of the output's
    size (one per output element, the "indices" the bound allows) pass where the input is as
    large, and a cotangent moved as integer bits would pass too (the bytes still bound it).
    Where the output has the first input's shape and dtype (a stride-1 pool, an elementwise
    maximum, a scatter's data) the whole output or output cotangent is flagged alike: each
    device's block of the gradient needs only the outputs its elements win (those of its own
    block and the halo), never all of them.
    """

    out = []
    if row.moved_bytes > row.bound:
        out.append(f"moves {row.moved_bytes} B per device, more than the outputs' "
                   f"{row.output_bytes} B + halo {row.halo_bytes} B + the backward's "
                   f"{row.backward_bytes} B")
    for i, (x, s) in enumerate(zip(case.inputs(), case.layouts[row.layout], strict=True)):
        if s is None or all(e is None for e in s):
            continue
        whole = (_hlo_dtype(x.dtype), x.size)
        for c in row.collectives:
            checked = i == 0 or (c.kind == "all-gather" and not backward(c))
            if checked and whole in _parts(c):
                part = "backward" if backward(c) else "forward"
                shape = c.shape if c.shape.startswith("(") else c.shape.split(" ")[0]
                out.append(f"{part} {c.kind} {shape} is sharded input {i} "
                           "whole" + (" (or its cotangent, or a partial sum of it)" if i == 0
                                      else ""))
    return out


if __name__ == "__main__":
    import sys

    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    from multiprocess_cases import CASES

    kind = "Auto" if "--auto" in sys.argv[1:] else "Explicit"
    if "--grad" in sys.argv[1:]:
        print(table(((measure(c, layout, grad=True, axis_type=kind), c) for c in CASES
                     if c.grad for layout in c.layouts), gradient_violations))
    else:
        print(table((measure(c, layout, axis_type=kind), c) for c in CASES
                    for layout in c.layouts))
