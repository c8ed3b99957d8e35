"""AdaptiveMaxPool-8's bad arguments: the contract's error, its prefix and the argument named
(docs/semantics.md §2)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxmax import openvino as ov

_AMP = "^AdaptiveMaxPool-8: "
_X4 = np.zeros((1, 2, 4, 4), np.float32)


@pytest.mark.parametrize("call,error,words", [
    (lambda: ov.adaptive_max_pool(_X4, [2, 2], opset=7), ValueError, "opset"),
    (lambda: ov.adaptive_max_pool(np.zeros((2, 4), np.float32), [2]), ValueError, "`data`"),
    (lambda: ov.adaptive_max_pool(np.zeros((1,) * 6, np.float32), [1] * 4), ValueError,
     "`data`"),
    (lambda: ov.adaptive_max_pool(_X4, [2, 2, 2]), ValueError, "`output_shape`"),
    (lambda: ov.adaptive_max_pool(_X4, [2, -1]), ValueError, "`output_shape`"),
    (lambda: ov.adaptive_max_pool(_X4, [2.0, 2.0]), TypeError, "`output_shape`"),
    (lambda: ov.adaptive_max_pool(_X4, [[2, 2]]), ValueError, "`output_shape`"),
    (lambda: ov.adaptive_max_pool(_X4, [2, 2], index_element_type="i16"), ValueError,
     "`index_element_type`"),
    (lambda: ov.adaptive_max_pool(_X4, [2, 2], index_element_type=3), TypeError,
     "`index_element_type`"),
    (lambda: ov.adaptive_max_pool(_X4 > 0, [2, 2]), TypeError, "bool"),
    (lambda: ov.adaptive_max_pool(_X4.astype(np.complex64), [2, 2]), TypeError, "`data`"),
    (lambda: ov.adaptive_max_pool(np.zeros((1, 1, 0, 3), np.float32), [2, 1]), ValueError,
     "length 0"),
    (lambda: ov.adaptive_max_pool(_X4, [2**62, 2**3]), ValueError, "2\\*\\*60"),
    (lambda: jax.jit(lambda o: ov.adaptive_max_pool(_X4, o))(np.array([2, 2])), TypeError,
     "static"),
])
def test_adaptive_max_pool_bad_arguments(call, error, words):
    with pytest.raises(error, match=_AMP + ".*" + words):
        call()
