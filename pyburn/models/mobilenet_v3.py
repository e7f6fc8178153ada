"""MobileNetV3 (Howard et al., "Searching for MobileNetV3", 2019), Small and Large, in
torchvision's layout, so that torchvision's weights load with their own keys: ``features.0``
(the stem), ``features.1`` ... (the blocks, ``features.N.block.M.*``, a squeeze-excitation's
1x1 convolutions at ``block.M.fc1`` / ``block.M.fc2``), the last 1x1 convolution, and
``classifier.0`` / ``classifier.3`` (two linear layers, a hard swish and a dropout between).

`MBConv`, the inverted residual block with optional squeeze-excitation that MobileNetV3 and
EfficientNet (`pyburn.models.efficientnet`) are made of, lives here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._tensor import Tensor
from ..nn.activation import Hardsigmoid, Hardswish, ReLU
from ..nn.containers import Sequential
from ..nn.dropout import Dropout
from ..nn.linear import Linear
from ..nn.module import Module
from .convnets import (
    SqueezeExcitation,
    StochasticDepth,
    check_images,
    conv_bn,
    register_classifier,
)
from .mobilenet import make_divisible

#: a row of the paper's tables 1 and 2: (kernel, expanded channels, output channels,
#: squeeze-excitation, nonlinearity "RE" (ReLU) or "HS" (hard swish), stride)
BlockConfig = tuple[int, int, int, bool, str, int]

#: MobileNetV3-Large's blocks after its 16-channel stem (the paper's table 1)
LARGE: tuple[BlockConfig, ...] = (
    (3, 16, 16, False, "RE", 1), (3, 64, 24, False, "RE", 2), (3, 72, 24, False, "RE", 1),
    (5, 72, 40, True, "RE", 2), (5, 120, 40, True, "RE", 1), (5, 120, 40, True, "RE", 1),
    (3, 240, 80, False, "HS", 2), (3, 200, 80, False, "HS", 1), (3, 184, 80, False, "HS", 1),
    (3, 184, 80, False, "HS", 1), (3, 480, 112, True, "HS", 1), (3, 672, 112, True, "HS", 1),
    (5, 672, 160, True, "HS", 2), (5, 960, 160, True, "HS", 1), (5, 960, 160, True, "HS", 1))
#: MobileNetV3-Small's blocks after its 16-channel stem (the paper's table 2)
SMALL: tuple[BlockConfig, ...] = (
    (3, 16, 16, True, "RE", 2), (3, 72, 24, False, "RE", 2), (3, 88, 24, False, "RE", 1),
    (5, 96, 40, True, "HS", 2), (5, 240, 40, True, "HS", 1), (5, 240, 40, True, "HS", 1),
    (5, 120, 48, True, "HS", 1), (5, 144, 48, True, "HS", 1), (5, 288, 96, True, "HS", 2),
    (5, 576, 96, True, "HS", 1), (5, 576, 96, True, "HS", 1))
STEM_CHANNELS = 16
#: the paper's nonlinearities by their tables' names
NONLINEARITIES: dict[str, Callable[[], Module]] = {"RE": ReLU, "HS": Hardswish}
#: MobileNetV3's batch norm settings (TensorFlow's defaults, which its weights were trained with)
BN_EPS, BN_MOMENTUM = 1e-3, 0.01


class MBConv(Module):
    """The mobile inverted bottleneck: a 1x1 convolution widening to `expanded_channels` (left
    out when that is `in_channels`), a `kernel_size` depthwise convolution (strided), each with
    batch norm and `activation`, an optional squeeze-excitation `squeeze`, then a linear 1x1
    projection with batch norm down to `out_channels`. Where the shape is unchanged the input
    is added back, the block's own path first through stochastic depth with probability
    `drop_p` (EfficientNet's; 0 is none). The layers are ``block.0``, ``block.1``, ... as
    torchvision has them.

    >>> import pyburn
    >>> from pyburn.nn import ReLU
    >>> block = MBConv(8, 16, 8, 3, 1, ReLU, device="flex")
    >>> block(pyburn.zeros(1, 8, 5, 5, device="flex")).shape, block.residual
    ((1, 8, 5, 5), True)
    """

    def __init__(self, in_channels: int, expanded_channels: int, out_channels: int,
                 kernel_size: int, stride: int, activation: Callable[[], Module],
                 squeeze: SqueezeExcitation | None = None, drop_p: float = 0.0,
                 eps: float = 1e-5, momentum: float = 0.1, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        norm: dict[str, Any] = dict(eps=eps, momentum=momentum, device=device, dtype=dtype)
        layers: list[Module] = []
        if expanded_channels != in_channels:
            layers.append(conv_bn(in_channels, expanded_channels, 1, activation=activation(),
                                  **norm))
        layers.append(conv_bn(expanded_channels, expanded_channels, kernel_size, stride,
                              groups=expanded_channels, activation=activation(), **norm))
        if squeeze is not None:
            layers.append(squeeze)
        layers.append(conv_bn(expanded_channels, out_channels, 1, **norm))
        self.block = Sequential(*layers)
        self.stochastic_depth = StochasticDepth(drop_p)
        self.residual = stride == 1 and in_channels == out_channels

    def forward(self, x: Tensor) -> Tensor:
        """The block's output, with its input added where the shapes agree."""
        y = self.block(x)
        return x + self.stochastic_depth(y) if self.residual else y


class MobileNetV3(Module):
    """A strided 3x3 convolution to 16 channels, the `blocks` (rows of `LARGE` or `SMALL`), a
    1x1 convolution to six times the last block's channels (each with batch norm and hard
    swish, as the blocks marked "HS"), global average pooling, then a linear layer to
    `last_channels`, hard swish, dropout and a linear classifier to `num_classes` scores.
    `width_mult` scales every layer's channels, `last_channels` included (rounded by
    `make_divisible`); torchvision publishes 1.0.

    Takes (N, 3, H, W) images, preprocessed as `pyburn.models.convnets.IMAGENET` says for
    torchvision's weights, and gives (N, num_classes) scores (logits).

    >>> import pyburn
    >>> model = MobileNetV3(SMALL, 1024, num_classes=5, width_mult=0.25, device="flex")
    >>> model(pyburn.zeros(2, 3, 32, 32, device="flex")).shape
    (2, 5)
    """

    def __init__(self, blocks: Sequence[BlockConfig], last_channels: int,
                 num_classes: int = 1000, width_mult: float = 1.0, dropout: float = 0.2,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        norm: dict[str, Any] = dict(eps=BN_EPS, momentum=BN_MOMENTUM, device=device,
                                    dtype=dtype)
        channels = make_divisible(STEM_CHANNELS * width_mult)
        layers: list[Module] = [conv_bn(3, channels, 3, 2, activation=Hardswish(), **norm)]
        for kernel_size, expanded, out, squeeze, nonlinearity, stride in blocks:
            expanded = make_divisible(expanded * width_mult)
            out = make_divisible(out * width_mult)
            se = SqueezeExcitation(expanded, make_divisible(expanded // 4), ReLU(), Hardsigmoid(),
                                   device=device, dtype=dtype) if squeeze else None
            layers.append(MBConv(channels, expanded, out, kernel_size, stride,
                                 NONLINEARITIES[nonlinearity], se, **norm))
            channels = out
        layers.append(conv_bn(channels, 6 * channels, 1, activation=Hardswish(), **norm))
        self.features = Sequential(*layers)
        last = make_divisible(last_channels * width_mult)
        self.classifier = Sequential(
            Linear(6 * channels, last, device=device, dtype=dtype), Hardswish(),
            Dropout(dropout), Linear(last, num_classes, device=device, dtype=dtype))

    def forward(self, images: Tensor) -> Tensor:
        """Class scores (N, num_classes) for images (N, 3, H, W)."""
        check_images(images, type(self).__name__)
        return self.classifier(self.features(images).mean((2, 3)))


def mobilenet_v3_large(num_classes: int = 1000, width_mult: float = 1.0, dropout: float = 0.2,
                       device: Any = None, dtype: Any = None) -> MobileNetV3:
    """MobileNetV3-Large: the 15 blocks of `LARGE`, a 1280-wide hidden layer (5.5 M
    parameters)."""
    return MobileNetV3(LARGE, 1280, num_classes, width_mult, dropout, device, dtype)


def mobilenet_v3_small(num_classes: int = 1000, width_mult: float = 1.0, dropout: float = 0.2,
                       device: Any = None, dtype: Any = None) -> MobileNetV3:
    """MobileNetV3-Small: the 11 blocks of `SMALL`, a 1024-wide hidden layer (2.5 M
    parameters)."""
    return MobileNetV3(SMALL, 1024, num_classes, width_mult, dropout, device, dtype)


def _register() -> None:
    """MobileNetV3-Small and -Large in the zoo, for torchvision's weights."""
    register_classifier("mobilenet_v3_small", mobilenet_v3_small, "MobileNetV3-Small "
                        "(squeeze-excitation, hard swish), 2.5 M parameters, torchvision's "
                        "layout")
    register_classifier("mobilenet_v3_large", mobilenet_v3_large, "MobileNetV3-Large "
                        "(squeeze-excitation, hard swish), 5.5 M parameters, torchvision's "
                        "layout")


_register()
