"""Start a JAX job of several processes on this machine and collect what each one printed.

`launch` runs ``python tests/multiprocess_worker.py`` N times, each a JAX process of a
multi-process job (``jax.distributed.initialize`` on a free localhost port, gloo collectives on
CPU, `devices` CPU devices each), and waits for all of them with one deadline for the run. A
process that fails, or a run that outlives its deadline (a hang: one process waiting in a
collective the others never enter), raises `JobFailed` with every process's output, so that
the test report shows where each one stopped; on a deadline every process is killed first.

The children get a clean environment: no ``XLA_FLAGS`` and no inherited device count (the test
session forces 8 CPU devices in its own process only, tests/conftest.py), ``JAX_PLATFORMS=cpu``,
and ``PYTHONPATH`` with ``tests/`` and the ``jaxmax`` the parent imports first.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

import jaxmax

TESTS = pathlib.Path(__file__).resolve().parent
WORKER = TESTS / "multiprocess_worker.py"


class JobFailed(AssertionError):
    """A process exited with an error, or the run outlived its deadline."""


@dataclasses.dataclass(frozen=True)
class Finished:
    """One process's exit status and everything it wrote."""

    process_id: int
    returncode: int | None  # None: killed at the deadline
    stdout: str
    stderr: str


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the coordinator binds it next)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XLA_", "JAX_", "PYTEST_", "TF_CPP"))}
    package_root = str(pathlib.Path(jaxmax.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root, str(TESTS)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["JAX_PLATFORMS"] = "cpu"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"  # gloo's and the coordinator's info lines
    return env


def _report(finished: list[Finished], why: str) -> str:
    parts = [why]
    for f in finished:
        status = "killed at the deadline" if f.returncode is None else f"exit {f.returncode}"
        parts.append(f"----- process {f.process_id} ({status}) stdout -----\n{f.stdout}"
                     f"----- process {f.process_id} stderr -----\n{f.stderr[-6000:]}")
    return "\n".join(parts)


def launch(processes: int, devices: int, args: list[str], timeout: float = 120.0
           ) -> list[Finished]:
    """Run the worker as `processes` JAX processes of `devices` CPU devices each, with `args`
    after its own (process id, process count, port, devices); every process's output, in
    process order. Raises `JobFailed` (with all output) when any exits non-zero or the run
    takes longer than `timeout` seconds."""
    port = free_port()
    env = _environment()
    with tempfile.TemporaryDirectory(prefix="jaxmax-mp-") as tmp:
        files, procs = [], []
        for i in range(processes):
            out = open(pathlib.Path(tmp, f"{i}.out"), "w+")  # noqa: SIM115 (closed below)
            err = open(pathlib.Path(tmp, f"{i}.err"), "w+")  # noqa: SIM115
            files.append((out, err))
            command = [sys.executable, str(WORKER), str(i), str(processes), str(port),
                       str(devices), *args]
            procs.append(subprocess.Popen(command, stdout=out, stderr=err, env=env,
                                          start_new_session=True))
        deadline = time.monotonic() + timeout
        timed_out = False
        for p in procs:
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
                break
        if timed_out:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            for p in procs:
                p.wait()
        finished = []
        for i, (p, (out, err)) in enumerate(zip(procs, files, strict=True)):
            out.seek(0)
            err.seek(0)
            finished.append(Finished(i, None if timed_out and p.returncode < 0 else p.returncode,
                                     out.read(), err.read()))
            out.close()
            err.close()
    if timed_out:
        raise JobFailed(_report(finished, f"the run of {processes} processes x {devices} "
                                          f"devices outlived its {timeout:.0f} s deadline"))
    if any(f.returncode != 0 for f in finished):
        raise JobFailed(_report(finished, f"a process of {processes} x {devices} failed"))
    return finished
