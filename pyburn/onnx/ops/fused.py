"""Operators that only pyburn's own passes create (domain "pyburn"), never found in files."""

from __future__ import annotations

from ..._tensor import Tensor
from ...nn import functional as F
from ..registry import onnx_op


@onnx_op("Linear", domain="pyburn")
def linear(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``x @ weight + bias`` (weight stored as (in, out)): ONNX's MatMul followed by Add, which
    the code generator writes as an `nn.Linear` layer. `F.linear` of the weight's transposed
    view: one backend call where the device offers the "linear" capability."""
    return F.linear(x, weight.mT, bias)
