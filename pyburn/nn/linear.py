"""Fully connected layers: `Linear` and `Bilinear`.

Weights keep PyTorch's layout, (out_features, in_features), so PyTorch checkpoints load
unchanged; ``F.linear`` multiplies by the transpose.
"""

from __future__ import annotations

import math
from typing import Any

from .._tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter, empty_parameter


def reset_fan_in_uniform(weight: Parameter, bias: Parameter | None) -> None:
    """PyTorch's default for Linear and convolutions: weight from kaiming_uniform with
    a = sqrt(5) (which is U(-1/sqrt(fan_in), 1/sqrt(fan_in))), bias from U(-b, b) with
    b = 1/sqrt(fan_in) of the weight."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init.calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        init.uniform_(bias, -bound, bound)


class Linear(Module):
    """``y = x @ weight.T + bias`` over the last dim: (..., in_features) -> (...,
    out_features). weight is (out_features, in_features), bias (out_features,).

    >>> import pyburn
    >>> layer = pyburn.nn.Linear(3, 2, device="flex")
    >>> layer(pyburn.ones(5, 3, device="flex")).shape
    (5, 2)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = empty_parameter((out_features, in_features), device, dtype)
        self.register_parameter(
            "bias", empty_parameter((out_features,), device, dtype) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default init (see `reset_fan_in_uniform`)."""
        reset_fan_in_uniform(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """The affine map of the last dim of `input`."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y[..., k] = x1 @ weight[k] @ x2 + bias[k]``: (..., in1), (..., in2) -> (..., out).
    weight is (out_features, in1_features, in2_features); both are initialised from
    U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as in PyTorch."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = empty_parameter((out_features, in1_features, in2_features), device, dtype)
        self.register_parameter(
            "bias", empty_parameter((out_features,), device, dtype) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default init: weight and bias from U(-1/sqrt(in1), 1/sqrt(in1))."""
        bound = 1 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """The bilinear form of the last dims of the two inputs."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
