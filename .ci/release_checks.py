"""Release checks that .ci/run calls.

    python .ci/release_checks.py wheel DIST_DIR   # the wheel's contents and the sdist's name
    python .ci/release_checks.py model PATH       # write a small ONNX model of max-family nodes
    python .ci/release_checks.py installed        # the imported jaxmax is the installed wheel
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

# Files the wheel must hold: the typing marker and the tour (its cases and NumPy references are
# the data `python -m jaxmax` runs on).
REQUIRED = ["jaxmax/py.typed", "jaxmax/__main__.py", "jaxmax/_src/tour/runner.py",
            "jaxmax/_src/tour/references.py", "jaxmax/_src/check/cli.py"]
FORBIDDEN_PREFIXES = ("tests/", "benchmarks/", "docs/", "colab/", ".ci/")


def check_wheel(dist: Path) -> None:
    wheels = sorted(dist.glob("jaxmax-*.whl"))
    sdists = sorted(dist.glob("jaxmax-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise SystemExit(f"expected one wheel and one sdist in {dist}, found {wheels + sdists}")
    names = zipfile.ZipFile(wheels[0]).namelist()
    missing = [name for name in REQUIRED if name not in names]
    stray = [name for name in names if name.startswith(FORBIDDEN_PREFIXES)
             or "/tests/" in name or name.endswith((".ipynb", ".pyc"))]
    if missing or stray:
        raise SystemExit(f"{wheels[0].name}: missing {missing}, should not hold {stray}")
    print(f"{wheels[0].name}: {len(names)} files, py.typed and the tour present, "
          f"nothing from tests/ or benchmarks/")


def write_model(path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("MaxPool", ["x"], ["pooled", "indices"], kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
        helper.make_node("ReduceMax", ["pooled", "axes"], ["reduced"], keepdims=0),
        helper.make_node("TopK", ["reduced", "k"], ["values", "top"], axis=1),
        helper.make_node("ArgMax", ["x"], ["arg"], axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "release_check",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 9, 11])],
        [helper.make_tensor_value_info("values", TensorProto.FLOAT, [2, 2]),
         helper.make_tensor_value_info("top", TensorProto.INT64, [2, 2]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, [2, 4, 5, 6]),
         helper.make_tensor_value_info("arg", TensorProto.INT64, [2, 9, 11])],
        [helper.make_tensor("axes", TensorProto.INT64, [2], np.array([2, 3])),
         helper.make_tensor("k", TensorProto.INT64, [1], np.array([2]))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    print(f"{path}: {len(nodes)} max-family nodes, opset 18")


def check_installed() -> None:
    import importlib.metadata

    import jaxmax

    dist = importlib.metadata.distribution("jaxmax")
    where = Path(jaxmax.__file__).resolve()
    if where != Path(str(dist.locate_file("jaxmax/__init__.py"))).resolve():
        raise SystemExit(f"jaxmax imported from {where}, not from the installed wheel")
    if "site-packages" not in where.parts:
        raise SystemExit(f"jaxmax imported from {where}, outside site-packages")
    if dist.version != jaxmax.__version__:
        raise SystemExit(f"metadata {dist.version} != jaxmax.__version__ {jaxmax.__version__}")
    print(f"jaxmax {dist.version} imported from {where.parent}")


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "wheel":
        check_wheel(Path(rest[0]))
    elif command == "model":
        write_model(Path(rest[0]))
    elif command == "installed":
        check_installed()
    else:
        raise SystemExit(f"unknown command {command}")
