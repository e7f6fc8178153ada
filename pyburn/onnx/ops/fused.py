"""Operators that only pyburn's own passes create (domain "pyburn"), never found in files."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._tensor import Tensor, recording, remembered
from ...nn import functional as F
from ...ops import capability
from ..registry import onnx_op
from .conv import _check_channels, _conv, _spatial_rank, conv
from .normalization import batch_normalization
from .spatial import Geometry, geometry


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
    # what the checks and capabilities decided for these shapes, dtypes and device
    key = (x.shape, w.shape, x.dtype, w.dtype, x.device, b is None or (b.shape, b.dtype))
    plan = memo.get("plan")
    if plan is None or plan[0] != key:
        plan = memo["plan"] = (key, _plan(x, w, b, spec, auto_pad, dilations, group, pads,
                                          strides))
    geometry, together = plan[1]
    if geometry is None:
        y = _conv(x, w, b, auto_pad, dilations, group, pads, strides, "FusedConv")
    else:
        y = capability.conv(x, w, geometry.strides, geometry.pads, geometry.dilations, group,
                            b, spec if together else None)
    return y if together or spec is None else activate(y, spec)


def _plan(x: Tensor, w: Tensor, b: Tensor | None, spec: tuple | None, auto_pad: str,
          dilations: list[int] | None, group: int, pads: list[int] | None,
          strides: list[int] | None) -> tuple[Geometry | None, bool]:
    """How `fused_conv` runs tensors like these: the checked geometry where the backend's
    convolution takes the bias too (None: through `_conv`, which handles the rest), and
    whether it writes the activation as well."""
    fits = [x, w] + ([] if b is None else [b])
    if not (capability.offered(capability.CONV, *fits)
            and (b is None or capability.offered(capability.CONV_BIAS, *fits))):
        return None, False
    _spatial_rank(x, w, "FusedConv")
    _check_channels(x, w, b, group, "FusedConv")
    found = geometry("FusedConv", x.shape[2:], w.shape[2:], strides, dilations, pads, auto_pad)
    return found, spec is not None and capability.offered(capability.CONV_ACTIVATION, *fits)


def activate(y: Tensor, spec: tuple) -> Tensor:
    """The activation `spec` (``("clip", lo, hi)`` or ``(name,)``) of y, as its own op."""
    name, *bounds = spec
    if name == "clip":
        return y.clamp(*bounds)
    function: Callable[[Tensor], Tensor] = getattr(F, name)
    return function(y)


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
