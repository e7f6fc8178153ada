"""Convolution layers: `Conv1d`, `Conv2d`, `Conv3d` and the transposed `ConvTranspose1d`,
`ConvTranspose2d`, `ConvTranspose3d`, with PyTorch's arguments, weight layouts and init.

Weights are (out_channels, in_channels / groups, *kernel) for a convolution and
(in_channels, out_channels / groups, *kernel) for a transposed one, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from . import functional as F
from .functional.windows import ntuple
from .linear import reset_fan_in_uniform
from .module import Module
from .parameter import empty_parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class ConvSettings:
    """The settings a convolution layer holds, float or quantized (`pyburn.quant`): `nd`
    spatial dims, channels, and per-dim kernel size, stride, padding and dilation."""

    nd: int
    in_channels: int
    out_channels: int
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...] | str
    dilation: tuple[int, ...]
    groups: int
    padding_mode: str

    def set_settings(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                     padding: Any, dilation: Any, groups: int, padding_mode: str) -> None:
        """Check the settings and hold them, as tuples of `nd` ints."""
        name = type(self).__name__
        if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
            raise ArgumentError(f"{name}: groups must be a positive int, got {groups!r}")
        for what, count in (("in_channels", in_channels), ("out_channels", out_channels)):
            if count % groups:
                raise ArgumentError(f"{name}: {what}={count} is not divisible by "
                                    f"groups={groups}")
        if padding_mode not in _PADDING_MODES:
            raise ArgumentError(f"{name}: padding_mode must be one of {_PADDING_MODES}, got "
                                f"{padding_mode!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = ntuple(kernel_size, self.nd, "kernel_size", name, 1)
        self.stride = ntuple(stride, self.nd, "stride", name, 1)
        self.padding = _padding(padding, self.stride, self.nd, name)
        self.dilation = ntuple(dilation, self.nd, "dilation", name, 1)
        self.groups = groups
        self.padding_mode = padding_mode


class _Conv(Module, ConvSettings):
    """What convolutions and transposed convolutions share: settings, parameters, init and
    repr. `nd` is the number of spatial dims."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, transposed: bool, output_padding: Any,
                 groups: int, bias: bool, padding_mode: str, device: Any, dtype: Any):
        super().__init__()
        self.set_settings(in_channels, out_channels, kernel_size, stride, padding, dilation,
                          groups, padding_mode)
        self.transposed = transposed
        self.output_padding = ntuple(output_padding, self.nd, "output_padding",
                                     type(self).__name__, 0)
        shape = ((in_channels, out_channels // groups) if transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = empty_parameter(shape, device, dtype)
        self.register_parameter(
            "bias", empty_parameter((out_channels,), device, dtype) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default init: kaiming_uniform(a=sqrt(5)) weight, U(+-1/sqrt(fan_in))
        bias."""
        reset_fan_in_uniform(self.weight, self.bias)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * self.nd:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.nd:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self.nd:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


def _padding(padding: Any, stride: tuple[int, ...], nd: int, name: str) -> tuple[int, ...] | str:
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ArgumentError(f"{name}: padding must be an int, {nd} ints, 'valid' or 'same', "
                                f"got {padding!r}")
        if padding == "same" and any(s != 1 for s in stride):
            raise ArgumentError(f"{name}: padding='same' needs stride 1, got {stride}")
        return padding
    return ntuple(padding, nd, "padding", name, 0)


class _ConvNd(_Conv):
    """A convolution over `nd` spatial dims (cross-correlation, as in PyTorch)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def _explicit_pads(self) -> list[int]:
        """The padding as F.pad's flat list (last dim first), for non-zero padding modes."""
        if self.padding == "valid":
            return [0] * (2 * self.nd)
        if self.padding == "same":
            totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pairs = [(t // 2, t - t // 2) for t in totals]
        else:
            pairs = [(p, p) for p in self.padding]
        return [side for pair in reversed(pairs) for side in pair]

    def forward(self, input: Tensor) -> Tensor:
        """The convolution of `input` (N, C_in, *spatial) or (C_in, *spatial)."""
        conv = (F.conv1d, F.conv2d, F.conv3d)[self.nd - 1]
        if self.padding_mode == "zeros":
            return conv(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)
        padded = F.pad(input, self._explicit_pads(), mode=self.padding_mode)
        return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-d convolution: (N, C_in, L) -> (N, C_out, L_out).

    >>> import pyburn
    >>> conv = pyburn.nn.Conv1d(2, 4, kernel_size=3, padding=1, device="flex")
    >>> conv(pyburn.ones(1, 2, 5, device="flex")).shape
    (1, 4, 5)
    """

    nd = 1


class Conv2d(_ConvNd):
    """2-d convolution: (N, C_in, H, W) -> (N, C_out, H_out, W_out); kernel_size, stride,
    padding and dilation are ints or pairs; padding may be 'valid' or 'same'; padding_mode
    is 'zeros', 'reflect', 'replicate' or 'circular'."""

    nd = 2


class Conv3d(_ConvNd):
    """3-d convolution: (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out)."""

    nd = 3


class _ConvTransposeNd(_Conv):
    """A transposed convolution over `nd` spatial dims (the gradient of a convolution with
    respect to its input)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None):
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ArgumentError(f"{name} only supports padding_mode='zeros', got "
                                f"{padding_mode!r}")
        if isinstance(padding, str):
            raise ArgumentError(f"{name}: padding must be an int or ints, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple:
        """The output_padding that gives `output_size` (the spatial sizes, or the full
        shape), checked to be reachable; the configured one when it is None."""
        if output_size is None:
            return self.output_padding
        name, nd = type(self).__name__, self.nd
        sizes = tuple(output_size)
        if len(sizes) > nd:  # a full output shape: keep its spatial part
            sizes = sizes[len(sizes) - nd:]
        if len(sizes) != nd:
            raise ShapeError(f"{name}: output_size must have {nd} spatial sizes (or be a full "
                             f"shape), got {tuple(output_size)}")
        extra = []
        for d in range(nd):
            smallest = ((input.shape[input.ndim - nd + d] - 1) * self.stride[d]
                        - 2 * self.padding[d] + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= sizes[d] <= largest:
                raise ShapeError(f"{name}: output_size {sizes} is not reachable from input "
                                 f"shape {input.shape}: dim {d} must be in [{smallest}, "
                                 f"{largest}]")
            extra.append(sizes[d] - smallest)
        return tuple(extra)

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """The transposed convolution of `input` (N, C_in, *spatial) or (C_in, *spatial);
        `output_size` picks among the output sizes a stride above 1 leaves open."""
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self.nd - 1]
        return conv(input, self.weight, self.bias, self.stride, self.padding,
                    self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution: (N, C_in, L) -> (N, C_out, L_out) with
    ``L_out = (L - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1``."""

    nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution (a learned upsampling): (N, C_in, H, W) ->
    (N, C_out, H_out, W_out).

    >>> import pyburn
    >>> up = pyburn.nn.ConvTranspose2d(4, 2, kernel_size=2, stride=2, device="flex")
    >>> up(pyburn.ones(1, 4, 3, 3, device="flex")).shape
    (1, 2, 6, 6)
    """

    nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-d convolution: (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out)."""

    nd = 3
