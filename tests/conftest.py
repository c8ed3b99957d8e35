"""Test session set-up.

Eight simulated CPU devices are configured before JAX initialises its backend, so that the
sharding tests can lay arrays over a mesh; every other test runs on device 0 as usual.

``-n auto`` (pyproject's addopts) starts one pytest-xdist worker per core, at most
``MAX_WORKERS``, since each worker holds its own JAX, OpenVINO and onnxruntime (1.07 GB peak
resident for ``tests/test_max_pool.py`` in one process here).
"""

import os

import jax

MAX_WORKERS = 4

jax.config.update("jax_num_cpu_devices", 8)


def pytest_xdist_auto_num_workers(config):
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))
