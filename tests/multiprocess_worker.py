"""One process of a multi-process JAX job that runs the operator table (tests/multiprocess_cases.py)
on global arrays and compares every result, bit for bit, with the unsharded single-device one.

Started by tests/multiprocess.py as ``python multiprocess_worker.py PROCESS_ID PROCESSES PORT
DEVICES [references=FILE] SUITE...`` (FILE: the one-device references `save_references` wrote,
computed once by the test for all its processes instead of once in each). Each suite prints
one ``RESULT {json}`` line per check; every process runs the same checks in the same order
(they meet in the same collectives) and prints the same rows, each with its own verdict on the
blocks of the outputs it holds.

Suites (`run_suite`):

* ``quick-2x2``, ``quick-4x1``: the (case, layout) lists tests/test_multiprocess.py checks,
  under ``jax.jit``, the mesh's axis type alternating Explicit / Auto; then the eager calls.
* ``full``: every case on every layout, on Auto and on Explicit meshes, and every case eagerly.

Each jitted check builds its inputs with ``jax.make_array_from_callback`` over a mesh of every
device of the job, computes the outputs (and the gradient) in one program and compares every
block of them this process holds with the same block of the case jitted on the NumPy inputs on
one device (`differences`: no gather, so no program compiled beyond the two).
"""

from __future__ import annotations

import json
import sys
import time
import traceback


def _bits(a):
    import numpy as np

    a = np.asarray(a)
    if a.dtype.kind == "f":
        return a.view(np.dtype(f"u{a.dtype.itemsize}"))
    return a


def _leaf_differences(k: int, g, w) -> str | None:
    import numpy as np

    if g.shape != w.shape or g.dtype != w.dtype:
        return f"output {k}: {g.dtype}{g.shape}, expected {w.dtype}{w.shape}"
    bad = np.flatnonzero(_bits(g).ravel() != _bits(w).ravel())
    if bad.size:
        i = bad[0]
        return (f"output {k}: {bad.size} of {g.size} elements differ in bits, first at "
                f"{np.unravel_index(i, g.shape)}: got {g.ravel()[i]!r}, "
                f"expected {w.ravel()[i]!r}")
    return None


def differences(got, want) -> str | None:
    """None when `got` (a pytree of arrays, global ones laid over the job's processes included)
    and `want` (of NumPy or one-device arrays) are equal bit for bit, else a sentence.

    A global array is checked where this process holds it: every shard on a local device (each
    replica too) against the same block of `want`, with no collective and no program compiled.
    Every block of a global array lives on some process, so the job's processes between them
    check every element (tests/test_multiprocess.py fails a row that any process fails)."""
    import jax
    import numpy as np

    got_leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
    if len(got_leaves) != len(want_leaves):
        return f"{len(got_leaves)} outputs, expected {len(want_leaves)}"
    for k, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        w = np.asarray(w)
        if not isinstance(g, jax.Array):
            message = _leaf_differences(k, np.asarray(g), w)
        elif g.shape != w.shape or g.dtype != w.dtype:
            message = f"output {k}: {g.dtype}{g.shape}, expected {w.dtype}{w.shape}"
        else:
            message = None
            for shard in g.addressable_shards:
                message = _leaf_differences(k, np.asarray(shard.data), w[shard.index])
                if message is not None:
                    message = f"{message} (within the block {shard.index} of device " \
                              f"{shard.device.id})"
                    break
        if message is not None:
            return message
    return None


def weights(shape):
    """The fixed cotangent the gradient checks contract the first output with: normal values
    (their products and sums round, so a sum taken in another order shows), a fifth -0.0."""
    import numpy as np

    rng = np.random.default_rng(2026)
    w = rng.standard_normal(shape).astype(np.float32)
    w[rng.random(shape) < 0.2] = -0.0
    return w


def evaluate(case, args):
    """The case's outputs on `args`, and the gradient when the case asks for it."""
    import jax
    import jax.numpy as jnp

    out = case.fn(*args)
    if not case.grad:
        return out

    def loss(x):
        first = jax.tree.leaves(case.fn(x, *args[1:]))[0]
        return jnp.sum(first * weights(first.shape))

    return out, jax.grad(loss)(args[0])


def meshes(axis_type):
    """The job's meshes: every device on ``"d"``, and 2 x (devices / 2) on ``("a", "b")``."""
    import jax

    n = jax.device_count()
    return {"d": jax.make_mesh((n,), ("d",), axis_types=(axis_type,)),
            "ab": jax.make_mesh((2, n // 2), ("a", "b"), axis_types=(axis_type,) * 2)}


def mesh_of(specs) -> str:
    names = {n for s in specs if s is not None for e in s if e is not None
             for n in (e if isinstance(e, tuple) else (e,))}
    return "ab" if names & {"a", "b"} else "d"


def global_array(x, mesh, spec):
    """`x` as a global array laid out as `spec` over `mesh`; each process supplies its shards
    from its own copy of the NumPy value."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    sharding = NamedSharding(mesh, PartitionSpec() if spec is None else spec)
    return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def _emit(**fields) -> None:
    print("RESULT " + json.dumps(fields, sort_keys=True), flush=True)


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err)[:600]}"


#: At most this many checks share one program (`run_jit`).
BATCH = 16


def _batched(calls: list, run_all, run_one) -> list:
    """``run_all(calls)``: the results of every call from one program; when that raises, each
    call alone (``run_one(call)``, an exception as its result), so that an error is laid at
    the call that raises it."""
    try:
        return list(run_all(calls))
    except Exception:  # noqa: BLE001 (found again call by call below)
        pass
    out = []
    for call in calls:
        try:
            out.append(run_one(call))
        except Exception as err:  # noqa: BLE001 (reported per check)
            out.append(err)
    return out


def references(cases) -> list:
    """The unsharded results: each case under ``jax.jit`` on its NumPy inputs, on one device;
    the cases in one program (their computations independent), each alone should that raise.

    The program is compiled with jaxmax's fast-compile options (LLVM -O0 and the elemental IR
    emitter, jaxmax/_src/lowering/compile_options.py: the same program and bits in a third of
    the compile time); the sharded programs under test keep XLA's defaults. A reference those
    options changed could only make a check fail, never pass one that should fail."""
    import jax

    from jaxmax._src.lowering import compile_options

    options = compile_options.fast_compile()
    inputs = [c.inputs() for c in cases]
    out: list = []
    for first in range(0, len(cases), BATCH):
        out += _batched(
            list(range(first, min(first + BATCH, len(cases)))),
            lambda ks: jax.jit(lambda all_in: [evaluate(cases[k], a) for k, a in zip(
                ks, all_in, strict=True)], compiler_options=options)([inputs[k] for k in ks]),
            lambda k: jax.jit(lambda *a: evaluate(cases[k], a),
                              compiler_options=options)(*inputs[k]))
    return out


def load_references(path: str) -> dict:
    """The references `save_references` wrote: case name -> its output leaves as NumPy arrays,
    or the text of the error its reference raised."""
    import pickle

    with open(path, "rb") as f:
        return pickle.load(f)


def save_references(cases, path: str) -> None:
    """`references` of `cases` (computed in this process) as a file `load_references` reads:
    the test computes them once for every process of its jobs."""
    import pickle

    import jax
    import numpy as np

    out = {}
    for case, ref in zip(cases, references(cases), strict=True):
        out[case.name] = (_error(ref) if isinstance(ref, Exception)
                          else [np.asarray(leaf) for leaf in jax.tree.leaves(ref)])
    with open(path, "wb") as f:
        pickle.dump(out, f)


def run_jit(suite: str, selection, given: dict | None = None) -> None:
    """`selection`: (case, layouts, axis type) triples. The checks (case, layout) of one axis
    type and mesh run in one program, up to `BATCH` of them (one compilation; each case's
    computation is independent of the others'), the gradient included; should that program
    raise, each check runs alone so that the error names its case. `given`: references
    already computed (`load_references`), by case name; the others are computed here."""
    import jax

    given = given or {}
    cases = list({id(c): c for c, _, _ in selection}.values())
    missing = [c for c in cases if c.name not in given]
    expected = dict(zip((id(c) for c in missing), references(missing), strict=True))
    for c in cases:
        if c.name in given:
            ref = given[c.name]
            expected[id(c)] = RuntimeError(ref) if isinstance(ref, str) else ref
    groups: dict[tuple, list[tuple]] = {}
    for case, layouts, axis_type in selection:
        for layout in layouts:
            key = (axis_type, mesh_of(case.layouts[layout]))
            groups.setdefault(key, []).append((case, layout))
    for (axis_type, mesh_name), checks in groups.items():
        mesh = meshes(axis_type)[mesh_name]

        def place(check, mesh=mesh):
            case, layout = check
            return tuple(global_array(x, mesh, s)
                         for x, s in zip(case.inputs(), case.layouts[layout], strict=True))

        def run_all(batch, place=place):
            args = [place(check) for check in batch]
            return jax.jit(lambda all_args: [evaluate(c, a) for (c, _), a in zip(
                batch, all_args, strict=True)])(args)

        def run_one(check, place=place):
            return jax.jit(lambda a, c=check[0]: evaluate(c, a))(place(check))

        for first in range(0, len(checks), BATCH):
            batch = checks[first:first + BATCH]
            for (case, layout), got in zip(batch, _batched(batch, run_all, run_one),
                                           strict=True):
                want = expected[id(case)]
                if isinstance(want, Exception):
                    message = "the unsharded reference raised " + _error(want)
                elif isinstance(got, Exception):
                    message = _error(got)
                else:
                    try:
                        message = differences(got, want)
                    except Exception as err:  # noqa: BLE001
                        message = _error(err)
                _emit(suite=suite, case=case.name, layout=layout, mesh=axis_type.name,
                      ok=message is None, message=message)


def run_eager(suite: str, selection) -> None:
    """`selection`: (case, layout) pairs called eagerly on global arrays (Explicit mesh); then
    the calls that must raise."""
    from jax.sharding import AxisType
    from multiprocess_cases import EAGER_ERRORS

    mesh_by_name = meshes(AxisType.Explicit)
    for case, layout in selection:
        inputs = case.inputs()
        specs = case.layouts[layout]
        mesh = mesh_by_name[mesh_of(specs)]
        try:
            expected = case.fn(*inputs)
            args = [global_array(x, mesh, s) for x, s in zip(inputs, specs, strict=True)]
            message = differences(case.fn(*args), expected)
        except Exception as err:  # noqa: BLE001
            message = _error(err)
        _emit(suite=suite, case=case.name, layout=layout, mesh="Explicit",
              ok=message is None, message=message)
    for name, call, error, needle in EAGER_ERRORS:
        try:
            call(lambda x, spec: global_array(x, mesh_by_name["d"], spec))
            message = f"returned; expected {error.__name__} mentioning {needle!r}"
        except error as err:
            message = None if needle in str(err) else f"message lacks {needle!r}: {err}"
        except Exception as err:  # noqa: BLE001
            message = _error(err)
        _emit(suite=suite, case=name, layout="error", mesh="Explicit", ok=message is None,
              message=message)


def run_tour(suite: str) -> None:
    """The tour (``python -m jaxmax``) on its first two cases: it agrees, and its last line
    names the job's processes and devices."""
    import io

    import jax

    from jaxmax._src.tour import runner as tour

    out = io.StringIO()
    status = tour.run_tour(tour.default_cases()[:2], out=out, repeats=1)
    want = (f"Ran on {jax.process_count()} processes and {jax.device_count()} devices (cpu; "
            f"this is process {jax.process_index()}, with {jax.local_device_count()} of them).")
    last = out.getvalue().rstrip().splitlines()[-1]
    message = None if status == 0 and last == want else f"status {status}, last line {last!r}"
    # each process names itself: report the agreement, the same in every process
    _emit(suite=suite, case="python -m jaxmax (the tour), first two cases", layout="-",
          mesh="-", ok=message is None, message=message and message.replace(
              f"process {jax.process_index()}", "process i"))


def run_suite(name: str, given: dict | None = None) -> None:
    """``quick-2x2``/``quick-4x1``: the lists the test suite checks (tests/multiprocess_cases.py's
    QUICK and EAGER_QUICK); ``full``: every case and layout, Auto and Explicit, and eagerly.
    `given`: the jitted checks' references computed already (`run_jit`)."""
    from jax.sharding import AxisType
    from multiprocess_cases import CASES, EAGER_ONLY, EAGER_QUICK, QUICK, by_name

    types = (AxisType.Explicit, AxisType.Auto)
    if name.startswith("quick-"):
        run_jit(name, [(by_name(c), [layout], types[i % 2])
                       for i, (c, layout) in enumerate(QUICK[name.removeprefix("quick-")])],
                given)
        run_eager(name, [(by_name(c), layout) for c, layout in EAGER_QUICK])
        if name == "quick-2x2":
            run_tour(name)
    elif name == "eager":
        run_eager(name, [(by_name(c), layout) for c, layout in EAGER_QUICK])
    elif name == "full":
        for axis_type in types:
            run_jit(name, [(c, list(c.layouts), axis_type) for c in CASES])
        run_eager(name, [(c, layout) for c in CASES + EAGER_ONLY for layout in c.layouts])
    else:
        raise ValueError(f"unknown suite {name!r}")


def _misbehave(how: str, process_id: int) -> int:
    """``fail-K``: process K exits with status 3; ``hang-K``: process K never ends."""
    which, culprit = how.split("-")
    if process_id != int(culprit):
        print(f"process {process_id} did its part", flush=True)
        return 0
    if which == "fail":
        print(f"process {process_id} was asked to fail", file=sys.stderr, flush=True)
        return 3
    print(f"process {process_id} waits for ever", flush=True)
    while True:
        time.sleep(1)


def main(argv: list[str]) -> int:
    process_id, processes, port, devices = (int(a) for a in argv[:4])
    if argv[4].startswith(("fail-", "hang-")):  # the harness's own tests: no JAX job at all
        return _misbehave(argv[4], process_id)
    import jax

    jax.config.update("jax_num_cpu_devices", devices)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=processes,
                               process_id=process_id)
    print(f"process {jax.process_index()} of {jax.process_count()}: "
          f"{jax.local_device_count()} local devices, {jax.device_count()} in all", flush=True)
    given = {}
    for suite in argv[4:]:
        if suite.startswith("references="):  # a file of save_references: for the next suites
            given = load_references(suite.removeprefix("references="))
            continue
        start = time.perf_counter()
        try:
            run_suite(suite, given)
        except Exception:  # noqa: BLE001 (a failure outside any case: report, fail the process)
            traceback.print_exc()
            return 1
        print(f"suite {suite}: {time.perf_counter() - start:.1f} s", flush=True)
    jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
