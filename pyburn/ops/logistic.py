"""The logistic function as ``pyburn.sigmoid`` and ``Tensor.sigmoid``: one backend call
where the backend offers the "activation" capability, `math_ops`' composite elsewhere.

It sits above both, since the capability layer's own rules are written with `math_ops`.

>>> import pyburn
>>> pyburn.tensor([0.0], device="flex").sigmoid().tolist()
[0.5]
"""

from __future__ import annotations

from .._tensor import Tensor, install
from ..dtypes import default_float
from .capability import ACTIVATION, activation, offered
from .math_ops import sigmoid_composite


def sigmoid(x: Tensor) -> Tensor:
    """The logistic function 1 / (1 + exp(-x)), accurate in relative terms for large
    negative x; an integer tensor is cast to the default float dtype first."""
    x = x if x.dtype.is_floating_point else x.cast(default_float)
    if offered(ACTIVATION, x):
        return activation(x, "sigmoid")
    return sigmoid_composite(x)


install({"sigmoid": sigmoid})
