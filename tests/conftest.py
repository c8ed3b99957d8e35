"""Test session set-up.

Eight simulated CPU devices are configured before JAX initialises its backend, so that the
sharding tests can lay arrays over a mesh; every other test runs on device 0 as usual.

``-n auto`` (pyproject's addopts) starts one pytest-xdist worker per core, at most
``MAX_WORKERS``, since each worker holds its own JAX, OpenVINO and onnxruntime (1.07 GB peak
resident for ``tests/test_max_pool_values.py`` in one process here).
"""

import os

import jax
import pytest

MAX_WORKERS = 4

jax.config.update("jax_num_cpu_devices", 8)


def pytest_xdist_auto_num_workers(config):
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


@pytest.fixture(scope="session")
def cnn_files(tmp_path_factory):
    """tests/torch_cnn.py's CNN as an ONNX file and an OpenVINO IR, written once per worker for
    tests/test_check_cli.py and tests/test_converted_check.py: (ONNX path, IR .xml path)."""
    pytest.importorskip("torch")
    pytest.importorskip("openvino")
    import torch_cnn

    return torch_cnn.save(tmp_path_factory.mktemp("cnn"))


# tests/data/torchvision/export.py imports torchvision, which this environment does not have (it
# is run by hand elsewhere); --doctest-modules would import it.
collect_ignore_glob = ["data/*"]
