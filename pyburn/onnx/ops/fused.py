"""Operators that only pyburn's own passes create (domain "pyburn"), never found in files."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor, recording, remembered
from ...nn import functional as F
from ..registry import onnx_op
from .conv import activate, conv, planned
from .normalization import batch_normalization


@onnx_op("Linear", domain="pyburn")
def linear(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``x @ weight + bias`` (weight stored as (in, out)): ONNX's MatMul followed by Add, which
    the code generator writes as an `nn.Linear` layer. `F.linear` of the weight's transposed
    view: one backend call where the device offers the "linear" capability."""
    return F.linear(x, weight.mT, bias)


@onnx_op("FusedConv", domain="pyburn")
def fused_conv(x: Tensor, w: Tensor, b: Tensor | None = None, scale: Tensor | None = None,
               shift: Tensor | None = None, mean: Tensor | None = None,
               var: Tensor | None = None, *, auto_pad: str = "NOTSET",
               dilations: list[int] | None = None, group: int = 1,
               kernel_shape: list[int] | None = None, pads: list[int] | None = None,
               strides: list[int] | None = None, epsilon: float = 1e-5,
               activation: str = "", bounds: list[float] | None = None,
               memo: dict[str, Any]) -> Tensor:
    """Conv (attributes as Conv's), then BatchNormalization in inference with `scale`,
    `shift`, `mean` and `var` (when given), then `activation` ("clip" within `bounds`,
    "sigmoid", "silu", "hardsigmoid" or "hardswish"; none when empty): the chain
    `pyburn.onnx.fusion` makes one node. The batch norm is folded into the weights and bias
    (kept in `memo` while the same tensors come in) and the activation written over the
    convolution's output where the device offers "conv_activation"; where the call is
    recorded (a gradient, an export) the three run as the separate nodes would."""
    params = [t for t in (b, scale, shift, mean, var) if t is not None]
    spec = None if not activation else (activation, *(bounds or ()))
    if recording(x, w, *params):
        y = conv(x, w, b, auto_pad=auto_pad, dilations=dilations, group=group,
                 kernel_shape=kernel_shape, pads=pads, strides=strides)
        if scale is not None:
            y = batch_normalization(y, scale, shift, mean, var, epsilon=epsilon)
        return y if spec is None else activate(y, spec)
    if scale is not None:
        # the fusion gives a batch norm's four inputs together
        assert shift is not None and mean is not None and var is not None
        w, b = _folded(memo, w, b, scale, shift, mean, var, epsilon)
    return planned(x, w, b, spec, auto_pad, dilations, group, pads, strides, memo,
                   "FusedConv")


def _folded(memo: dict[str, Any], w: Tensor, b: Tensor | None, scale: Tensor, shift: Tensor,
            mean: Tensor, var: Tensor, epsilon: float) -> tuple[Tensor, Tensor]:
    """The weight and bias of the convolution with the batch norm after it folded in:
    ``w * f`` per output channel and ``(b - mean) * f + shift``, f = ``scale / sqrt(var +
    epsilon)``; computed again only when one of the tensors is another one than last time
    (`remembered`)."""
    def fold() -> tuple[Tensor, Tensor]:
        factor = scale / (var + epsilon).sqrt()
        return (w * factor.reshape((-1,) + (1,) * (w.ndim - 1)),
                (mean.neg() if b is None else b - mean) * factor + shift)

    return remembered(memo, (w, b, scale, shift, mean, var), fold)
