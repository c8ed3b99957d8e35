"""Child process of ``python -m jaxmax check``: compile and run a saved OpenVINO model on the
CPU plugin, so that a crash of the plugin (it writes outside its buffers on some scatter
indices, docs/semantics.md §8.4) ends this process, not ``check``.

Run as a script (``python ov_child.py DIR``), never imported: it imports only NumPy and
OpenVINO, so that it starts without JAX. DIR holds ``model.xml`` (+ ``.bin``) and
``feeds.npz`` (``arr_0``, ``arr_1``, ... in the model's input order); the outputs are written to
``DIR/results.npz`` in the same way. A runtime error is printed on stderr, exit status 1.
"""

import sys
from pathlib import Path

try:  # a crash here is reported by the parent; a core file would only litter the directory
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
except (ImportError, ValueError, OSError):  # no such limit on this platform
    pass

import numpy as np  # noqa: E402 (after the core limit)
import openvino as ov  # type: ignore[import-untyped]  # noqa: E402


def main(directory: str) -> int:
    where = Path(directory)
    try:
        core = ov.Core()
        compiled = core.compile_model(core.read_model(str(where / "model.xml")), "CPU",
                                      {"INFERENCE_PRECISION_HINT": "f32"})
        with np.load(where / "feeds.npz") as data:
            feeds = [data[f"arr_{k}"] for k in range(len(data.files))]
        results = compiled(feeds)
        np.savez(where / "results.npz", *[np.asarray(results[k]) for k in range(len(results))])
    except Exception as err:  # noqa: BLE001 (the runtime's message, for the parent's line)
        print(" ".join(str(err).split())[:300], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
