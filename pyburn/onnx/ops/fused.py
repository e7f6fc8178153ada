"""Operators that only pyburn's own passes create (domain "pyburn"), never found in files."""

from __future__ import annotations

from ...tensor import Tensor
from ..registry import onnx_op


@onnx_op("Linear", domain="pyburn")
def linear(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``x @ weight + bias`` (weight stored as (in, out)): ONNX's MatMul followed by Add, which
    the code generator writes as an `nn.Linear` layer."""
    return x @ weight + bias
