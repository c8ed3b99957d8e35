"""Type aliases for the public signatures.

Static integer arguments are what they are in the docs: a Python int, a sequence of ints, or a
concrete NumPy/JAX integer array; data is any ``jax.typing.ArrayLike`` (nested lists included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

import jax
import numpy as np

#: One int, a sequence of ints, or a concrete integer array (axes, kernel, strides, pads, ...).
Ints: TypeAlias = int | np.integer | Sequence[int] | np.ndarray | jax.Array
#: One integer scalar (an int, a NumPy integer or a 0-d integer array).
Int: TypeAlias = int | np.integer | np.ndarray | jax.Array
#: A flag given as a bool or 0/1.
Flag: TypeAlias = bool | int | np.integer | np.bool_
#: Any nested sequence of numbers or an array (the data arguments).
Data: TypeAlias = jax.typing.ArrayLike | Sequence
#: OpenVINO's MaxPool auto_pad (any case; "explicit" or None use the pads).
OVAutoPad: TypeAlias = Literal["explicit", "valid", "same_upper", "same_lower"] | str | None
