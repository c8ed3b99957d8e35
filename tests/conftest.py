"""Test session set-up.

Eight simulated CPU devices are configured before JAX initialises its backend, so that the
sharding tests can lay arrays over a mesh; every other test runs on device 0 as usual.

``-n auto`` (pyproject's addopts) starts one pytest-xdist worker per core, at most
``MAX_WORKERS``, since each worker holds its own JAX, OpenVINO and onnxruntime (1.07 GB peak
resident for ``tests/test_max_pool_values.py`` in one process here).

Python's cyclic garbage collector is tuned for the suite (`GC_THRESHOLD`, and the heap of the
imports and collected tests frozen once collection ends): tracing and lowering allocate
millions of short-lived objects, and at Python's default thresholds a worker spent about 5% of
its CPU in the collector (34-36 s each, 2026-11-30), most of it in full collections that
scanned every module, test item and cached program again; 8-9 s each with this set-up. It
changes no test's objects or results: only how often the collector runs, and that it no
longer scans what lives for the whole session.
"""

import gc
import os

import jax
import pytest

MAX_WORKERS = 4

#: Allocations between young collections (Python's default is 700) and Python's default ratios
#: for the older generations: a full collection about every 2 million allocations, not 70,000.
GC_THRESHOLD = (20_000, 10, 10)

jax.config.update("jax_num_cpu_devices", 8)
gc.set_threshold(*GC_THRESHOLD)


def pytest_collection_finish(session):
    """Freezes the heap as collection leaves it (the imported modules and the collected tests,
    alive for the whole session) so that later full collections do not scan it."""
    gc.collect()
    gc.freeze()


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
