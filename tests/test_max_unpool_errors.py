"""ONNX MaxUnpool's bad arguments: the contract's error, its prefix and the argument named
(docs/semantics.md §2)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxmax import onnx

_UNPOOL = "^ONNX MaxUnpool: "
_X2 = np.ones((1, 2, 2, 2), np.float32)
_I2 = np.array([[[[0, 1], [2, 3]], [[16, 17], [18, 19]]]])


@pytest.mark.parametrize("call,error,words", [
    (lambda: onnx.max_unpool(_X2, _I2, kernel_shape=[2, 2], strides=[2, 2], opset=8),
     ValueError, "opset"),
    (lambda: onnx.max_unpool(_X2[0, 0], _I2[0, 0], kernel_shape=[2], strides=[2]), ValueError,
     "rank"),
    (lambda: onnx.max_unpool(_X2, _I2, kernel_shape=[2], strides=[2, 2]), ValueError,
     "`kernel_shape`"),
    (lambda: onnx.max_unpool(_X2, _I2, kernel_shape=[0, 2], strides=[2, 2]), ValueError,
     "`kernel_shape`"),
    (lambda: onnx.max_unpool(_X2, _I2, kernel_shape=[2, 2], strides=[0, 2]), ValueError,
     "`strides`"),
    (lambda: onnx.max_unpool(_X2, _I2, kernel_shape=[2, 2], pads=[-1, 0, 0, 0]), ValueError,
     "`pads`"),
    (lambda: onnx.max_unpool(_X2, _I2, kernel_shape=[2, 2], pads=[9, 0, 9, 0]), ValueError,
     "`pads`"),
    (lambda: onnx.max_unpool(_X2, _I2, [1, 2, 4], kernel_shape=[2, 2], strides=[2, 2]),
     ValueError, "`output_shape`"),
    (lambda: onnx.max_unpool(_X2, _I2, [1, 2, 4, -4], kernel_shape=[2, 2], strides=[2, 2]),
     ValueError, "`output_shape`"),
    (lambda: onnx.max_unpool(_X2, _I2, [2, 2, 4, 4], kernel_shape=[2, 2], strides=[2, 2]),
     ValueError, "batch and channel"),
    (lambda: onnx.max_unpool(_X2, _I2, [1, 3, 4, 4], kernel_shape=[2, 2], strides=[2, 2]),
     ValueError, "batch and channel"),
    (lambda: onnx.max_unpool(_X2, _I2, [1, 2, 3, 3], kernel_shape=[2, 2], strides=[2, 2]),
     ValueError, "fewer elements"),
    (lambda: onnx.max_unpool(_X2, _I2 + 30, kernel_shape=[2, 2], strides=[2, 2]), ValueError,
     "`I`.*outside"),
    (lambda: onnx.max_unpool(_X2, -_I2 - 1, kernel_shape=[2, 2], strides=[2, 2]), ValueError,
     "`I`.*outside"),
    (lambda: onnx.max_unpool(_X2, _I2.astype(np.float32), kernel_shape=[2, 2], strides=[2, 2]),
     TypeError, "`I`"),
    (lambda: onnx.max_unpool(_X2, _I2[..., :1], kernel_shape=[2, 2], strides=[2, 2]),
     ValueError, "`I`"),
    (lambda: onnx.max_unpool(_X2.astype(np.int32), _I2, kernel_shape=[2, 2], strides=[2, 2]),
     TypeError, "`X` dtype"),
    (lambda: onnx.max_unpool(_X2 > 0, _I2, kernel_shape=[2, 2], strides=[2, 2]), TypeError,
     "`X` dtype"),
    (lambda: onnx.max_unpool(_X2.astype(jax.numpy.bfloat16), _I2, kernel_shape=[2, 2],
                             strides=[2, 2], opset=11), TypeError, "`X` dtype"),
    (lambda: onnx.max_unpool(_X2, _I2, [1, 2, 2**40, 2**40], kernel_shape=[2, 2],
                             strides=[2, 2]), ValueError, "`I` can name|2\\*\\*60"),
    (lambda: jax.jit(lambda s: onnx.max_unpool(_X2, _I2, s, kernel_shape=[2, 2],
                                               strides=[2, 2]))(np.array([1, 2, 4, 4])),
     TypeError, "static"),
])
def test_max_unpool_bad_arguments(call, error, words):
    with pytest.raises(error, match=_UNPOOL + ".*" + words):
        call()
