"""The vectorised ReduceMax oracles (for inputs too large for loops) agree with the loop oracles
on data with NaN, -inf and +inf, for every float dtype and every set of axes."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
import reduce_oracle
from helpers import assert_same, special_floats


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_vectorised_oracles_agree_with_the_loop_oracles(dtype):
    rng = np.random.default_rng(5)
    x = special_floats(rng, (3, 4, 5), dtype)
    for r in range(1, 4):
        for axes in itertools.combinations(range(3), r):
            assert_same(reduce_oracle.openvino_reduce_max_wide(x, axes),
                        reduce_oracle.openvino_reduce_max(x, axes), f"{axes}")
            assert_same(reduce_oracle.onnx_reduce_max_wide(x, axes),
                        reduce_oracle.onnx_reduce_max(x, axes, keepdims=0), f"{axes}")
