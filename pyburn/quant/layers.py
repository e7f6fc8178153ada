"""The quantized layers: `QuantizedLinear`, `QuantizedConv1d` and `QuantizedConv2d`, each with
the float layer's inputs and outputs, its weight as a `QTensor` and its bias in float.

The weight is held as buffers, so ``state_dict``, ``to(device)`` and `pyburn.store` work as
for any layer: ``weight_data`` (int32 packed words), ``weight_scale`` and, where the scheme
has one, ``weight_zero_point``. Activations are quantized per the layer's `activations`:

- None (weight only): the input stays float;
- "dynamic": at each call the input is quantized to uint8 with a scale and zero point from its
  own range (ONNX's DynamicQuantizeLinear) and dequantized again;
- "static": the same with the scale and zero point fixed by calibration (buffers
  ``input_scale``, ``input_zero_point``).

Then the weight multiplies the (de)quantized input in float32 through `pyburn.quant.kernels`,
which read the packed words and dequantize them as they go (cpu and wgpu have their own
kernels; the tensor-op composite runs elsewhere; a 2-d convolution with numeric padding takes
the kernels' im2col product, others the float convolution of the dequantized weight). Both
factors are exactly integers times a scale, so each product is what an integer kernel
computes before it rescales; the sums differ from an int32 accumulation by float32 rounding
only.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .._tensor import Tensor
from ..errors import ArgumentError
from ..nn import functional as F
from ..nn.conv import Conv1d, Conv2d, ConvSettings, _ConvNd
from ..nn.linear import Linear
from ..nn.module import Module
from ..nn.parameter import Parameter
from ..ops.creation import ones, tensor, zeros
from ..tape import no_grad
from . import kernels
from .packing import words_per_row
from .scheme import ACTIVATIONS, INT8_SYMMETRIC_PER_CHANNEL, QuantScheme
from .tensor import QTensor, fake_quantize, fake_quantize_dynamic

__all__ = ["ACTIVATION_MODES", "QUANTIZED", "QuantizedConv1d", "QuantizedConv2d",
           "QuantizedLayer", "QuantizedLinear"]

#: how a quantized layer treats its input (see the module docstring)
ACTIVATION_MODES = (None, "dynamic", "static")


def check_mode(where: str, scheme: Any, activations: Any) -> None:
    """Refuse a `scheme` that is no `QuantScheme` and an `activations` mode not in
    `ACTIVATION_MODES`, naming `where`."""
    if not isinstance(scheme, QuantScheme):
        raise ArgumentError(f"{where}: scheme must be a QuantScheme (e.g. "
                            f"pyburn.quant.INT8_SYMMETRIC_PER_CHANNEL), got {scheme!r}")
    if activations not in ACTIVATION_MODES:
        raise ArgumentError(f"{where}: activations must be None, 'dynamic' or 'static', got "
                            f"{activations!r}")


class QuantizedLayer(Module):
    """What the quantized layers share: the weight as buffers, the float bias, and the
    quantization of the input. Subclasses set `weight_shape` and call `_init_state`."""

    #: the float layer type this one replaces
    replaces: ClassVar[type[Module]]
    weight_shape: tuple[int, ...]
    scheme: QuantScheme
    activations: str | None
    # the registered state (`_init_state`)
    weight_data: Tensor
    weight_scale: Tensor
    weight_zero_point: Tensor | None
    bias: Parameter | None
    input_scale: Tensor
    input_zero_point: Tensor

    def _init_state(self, weight_shape: tuple[int, ...], bias: bool, scheme: QuantScheme,
                    activations: str | None, device: Any) -> None:
        check_mode(type(self).__name__, scheme, activations)
        self.weight_shape = weight_shape
        self.scheme = scheme
        self.activations = activations
        n, k = weight_shape[0], math.prod(weight_shape[1:])
        dims = scheme.scale_shape(n, k)
        self.register_buffer("weight_data", zeros((n, words_per_row(k, scheme.bits)),
                                                  dtype="int32", device=device))
        self.register_buffer("weight_scale", ones(dims, dtype="float32", device=device))
        self.register_buffer("weight_zero_point", zeros(dims, dtype="int32", device=device)
                             if scheme.has_zero_point else None)
        self.register_parameter("bias", Parameter(zeros(n, device=device)) if bias else None)
        if activations == "static":
            self.register_buffer("input_scale", ones((), dtype="float32", device=device))
            self.register_buffer("input_zero_point", zeros((), dtype="int32", device=device))

    # ---- the weight ------------------------------------------------------------------------
    @property
    def weight(self) -> QTensor:
        """The quantized weight (a view of the buffers)."""
        return QTensor(self.weight_data, self.weight_scale, self.weight_zero_point,
                       self.scheme, self.weight_shape)

    def set_weight(self, weight: QTensor) -> None:
        """Hold `weight` (of this layer's weight shape and scheme) from now on."""
        if not isinstance(weight, QTensor) or weight.shape != self.weight_shape or \
                weight.scheme != self.scheme:
            got = (f"shape {weight.shape}, {weight.scheme.describe()}"
                   if isinstance(weight, QTensor) else type(weight).__name__)
            raise ArgumentError(f"{type(self).__name__} holds a weight of shape "
                                f"{self.weight_shape} quantized {self.scheme.describe()}, got "
                                f"{got}")
        self.weight_data = weight.data.to(self.weight_data.device)
        self.weight_scale = weight.scale.to(self.weight_data.device)
        if weight.zero_point is not None:
            self.weight_zero_point = weight.zero_point.to(self.weight_data.device)

    # ---- the input -------------------------------------------------------------------------
    def set_input_range(self, rmin: float, rmax: float) -> None:
        """Fix the input's scale and zero point (static activations) from its calibrated
        range [rmin, rmax]."""
        if self.activations != "static":
            raise ArgumentError(f"{type(self).__name__}: only a layer with static activations "
                                f"has an input range (this one: {self.activations!r})")
        scales, zeros_ = ACTIVATIONS.qparams([rmin], [rmax])
        assert zeros_ is not None
        device = self.weight_data.device
        self.input_scale = tensor(scales[0], dtype="float32", device=device)
        self.input_zero_point = tensor(zeros_[0], dtype="int32", device=device)

    def quantize_input(self, x: Tensor) -> Tensor:
        """`x` as an integer kernel would see it (see the module docstring)."""
        if self.activations == "dynamic":
            return fake_quantize_dynamic(x)
        if self.activations == "static":
            return fake_quantize(x, self.input_scale, self.input_zero_point)
        return x

    # ---- from a float layer ----------------------------------------------------------------
    @classmethod
    def like(cls, layer: Any, scheme: QuantScheme, activations: str | None = None
             ) -> QuantizedLayer:
        """A layer of `layer`'s configuration and device holding zeros (to load a state
        dict into)."""
        raise NotImplementedError

    @classmethod
    def from_float(cls, layer: Any, scheme: QuantScheme = INT8_SYMMETRIC_PER_CHANNEL,
                   activations: str | None = None,
                   input_range: tuple[float, float] | None = None) -> QuantizedLayer:
        """`layer` (a `replaces` instance) quantized by `scheme`; its bias Parameter is kept
        as it is. Static activations need the calibrated `input_range`."""
        if type(layer) is not cls.replaces:
            raise ArgumentError(f"{cls.__name__}.from_float takes a {cls.replaces.__name__}, "
                                f"got {type(layer).__name__}")
        if (activations == "static") != (input_range is not None):
            raise ArgumentError(f"{cls.__name__}.from_float: an input_range is given exactly "
                                f"when activations='static' (got activations={activations!r}, "
                                f"input_range={input_range!r})")
        new = cls.like(layer, scheme, activations)
        new.set_weight(QTensor.quantize(layer.weight, scheme))
        new.bias = layer.bias
        if input_range is not None:
            new.set_input_range(*input_range)
        new.train(layer.training)
        return new

    def dequantized(self) -> Module:
        """The float layer this one stands for (a `replaces` instance on this layer's
        device), its weight the dequantized values, its bias this layer's Parameter; the
        input's quantization is dropped. How a model shipped with quantized weights runs
        in float (`pyburn.quant.dequantize`)."""
        layer = self._float_like()
        with no_grad():
            layer.weight.assign_(self.weight.dequantize())
        layer.bias = self.bias
        layer.train(self.training)
        return layer

    def _float_like(self) -> Any:
        """A float layer of this layer's configuration and device."""
        raise NotImplementedError

    def _quant_repr(self) -> str:
        return f"scheme={self.scheme.describe()}, activations={self.activations}"


class QuantizedLinear(QuantizedLayer):
    """`pyburn.nn.Linear` with a quantized weight: (..., in_features) -> (..., out_features).

    >>> import pyburn
    >>> from pyburn.quant import QuantizedLinear
    >>> layer = QuantizedLinear.from_float(pyburn.nn.Linear(3, 2, device="flex"))
    >>> layer(pyburn.ones(5, 3, device="flex")).shape
    (5, 2)
    """

    replaces = Linear

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 scheme: QuantScheme = INT8_SYMMETRIC_PER_CHANNEL,
                 activations: str | None = None, device: Any = None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self._init_state((out_features, in_features), bias, scheme, activations, device)

    @classmethod
    def like(cls, layer: Any, scheme: QuantScheme, activations: str | None = None
             ) -> QuantizedLinear:
        """A `QuantizedLinear` of `layer`'s sizes and device, holding zeros."""
        return cls(layer.in_features, layer.out_features, layer.bias is not None, scheme,
                   activations, device=layer.weight.device)

    def _float_like(self) -> Linear:
        return Linear(self.in_features, self.out_features, self.bias is not None,
                      device=self.weight_data.device)

    def merge_delta(self, delta: Tensor) -> QuantizedLinear:
        """A new layer holding ``W + delta`` quantized by this layer's scheme, with this
        layer's bias and input quantization: how `pyburn.nn.lora.merge` folds an adapter
        into a quantized base (QLoRA). Each merged weight is within half a step of the float
        sum."""
        merged = type(self)(self.in_features, self.out_features, self.bias is not None,
                            self.scheme, self.activations, device=self.weight_data.device)
        merged.set_weight(QTensor.quantize(self.weight.dequantize() + delta.detach(),
                                           self.scheme))
        merged.bias = self.bias
        if self.activations == "static":
            merged.input_scale, merged.input_zero_point = self.input_scale, self.input_zero_point
        merged.train(self.training)
        return merged

    def forward(self, input: Tensor) -> Tensor:
        """``input @ weight.T + bias`` with the weight dequantized."""
        w = self.weight
        return kernels.linear_weight_only(self.quantize_input(input), w.data, w.scale,
                                          w.zero_point, k=w.cols, bias=self.bias, **w.layout)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, {self._quant_repr()}")


class _QuantizedConvNd(QuantizedLayer, ConvSettings):
    """A convolution over `nd` spatial dims with a quantized weight, with the arguments of
    `pyburn.nn.Conv2d` (its weight [O, I / groups, *kernel] quantized as
    [O, I / groups * prod(kernel)])."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros",
                 scheme: QuantScheme = INT8_SYMMETRIC_PER_CHANNEL,
                 activations: str | None = None, device: Any = None):
        super().__init__()
        self.set_settings(in_channels, out_channels, kernel_size, stride, padding, dilation,
                          groups, padding_mode)
        self._init_state((out_channels, in_channels // groups) + self.kernel_size, bias, scheme,
                         activations, device)

    @classmethod
    def like(cls, layer: Any, scheme: QuantScheme, activations: str | None = None
             ) -> _QuantizedConvNd:
        """A quantized convolution of `layer`'s settings and device, holding zeros."""
        return cls(layer.in_channels, layer.out_channels, layer.kernel_size, layer.stride,
                   layer.padding, layer.dilation, layer.groups, layer.bias is not None,
                   layer.padding_mode, scheme, activations, device=layer.weight.device)

    def _float_like(self) -> Module:
        conv: Any = self.replaces  # Conv1d or Conv2d, which take the settings
        return conv(self.in_channels, self.out_channels, self.kernel_size, self.stride,
                    self.padding, self.dilation, self.groups, self.bias is not None,
                    self.padding_mode, device=self.weight_data.device)

    def forward(self, input: Tensor) -> Tensor:
        """The convolution of `input` (N, C_in, *spatial) or (C_in, *spatial) with the
        weight dequantized."""
        x = self.quantize_input(input)
        padding: tuple[int, ...] | str | int = self.padding
        if self.padding_mode != "zeros":
            # the float layer's padding arithmetic (it reads the same settings)
            pads = _ConvNd._explicit_pads(self)  # type: ignore[arg-type]
            x, padding = F.pad(x, pads, mode=self.padding_mode), 0
        w = self.weight
        if self.nd == 2 and not isinstance(padding, str) and x.ndim in (3, 4):
            batch = x if x.ndim == 4 else x.unsqueeze(0)
            y = kernels.conv2d_weight_only(
                batch, w.data, w.scale, w.zero_point, weight_shape=w.shape, stride=self.stride,
                padding=padding, dilation=self.dilation, groups=self.groups, bias=self.bias,
                **w.layout)
            return y if x.ndim == 4 else y.squeeze(0)
        conv = F.conv1d if self.nd == 1 else F.conv2d
        return conv(x, w.dequantize(), self.bias, self.stride, padding, self.dilation,
                    self.groups)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")
        if self.dilation != (1,) * self.nd:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return f"{text}, bias={self.bias is not None}, {self._quant_repr()}"


class QuantizedConv1d(_QuantizedConvNd):
    """`pyburn.nn.Conv1d` with a quantized weight: (N, C_in, L) -> (N, C_out, L_out)."""

    nd = 1
    replaces = Conv1d


class QuantizedConv2d(_QuantizedConvNd):
    """`pyburn.nn.Conv2d` with a quantized weight: (N, C_in, H, W) -> (N, C_out, H_out,
    W_out)."""

    nd = 2
    replaces = Conv2d


#: the quantized layer of each float layer type (exact types: a subclass may change forward)
QUANTIZED: dict[type[Module], type[QuantizedLayer]] = {
    layer.replaces: layer for layer in (QuantizedLinear, QuantizedConv1d, QuantizedConv2d)}
