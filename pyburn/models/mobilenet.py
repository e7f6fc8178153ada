"""MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks",
2018) in torchvision's layout, so that torchvision's weights load with their own keys:
``features.0`` (the stem, ``features.0.0`` its convolution and ``features.0.1`` its batch
norm), ``features.1`` ... ``features.17`` (inverted residual blocks, ``features.N.conv.*``),
``features.18`` (the last 1x1 convolution) and ``classifier.1`` (the linear layer, after a
dropout at ``classifier.0``).
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..nn.activation import ReLU6
from ..nn.containers import Sequential
from ..nn.conv import Conv2d
from ..nn.dropout import Dropout
from ..nn.linear import Linear
from ..nn.module import Module
from ..nn.normalization import BatchNorm2d
from .convnets import check_images, conv_bn, register_classifier

#: the paper's table 2 after the stem: (expansion t, channels c, blocks n, first stride s)
STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
          (6, 160, 3, 2), (6, 320, 1, 1))
STEM_CHANNELS = 32
LAST_CHANNELS = 1280


def make_divisible(channels: float, divisor: int = 8) -> int:
    """`channels` rounded to the nearest multiple of `divisor`, at least `divisor`, and
    rounded up one step more where the nearest would lose over 10% (how the reference
    implementation sizes every layer for a width multiplier).

    >>> make_divisible(32 * 0.35), make_divisible(16 * 0.35), make_divisible(1280)
    (16, 8, 1280)
    """
    rounded = max(divisor, int(channels + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * channels else rounded


class InvertedResidual(Module):
    """A 1x1 convolution widening to ``expand_ratio`` times the channels (left out when that
    is 1), a 3x3 depthwise convolution (strided), each with batch norm and ReLU6, then a
    linear 1x1 projection with batch norm down to `out_channels`; the input is added back when
    the shape is unchanged. The layers are ``conv.0``, ``conv.1``, ... as torchvision has them.

    >>> import pyburn
    >>> block = InvertedResidual(8, 8, 1, 6, device="flex")
    >>> block(pyburn.zeros(1, 8, 5, 5, device="flex")).shape, block.residual
    ((1, 8, 5, 5), True)
    """

    def __init__(self, in_channels: int, out_channels: int, stride: int, expand_ratio: int,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        hidden = round(in_channels * expand_ratio)
        layers: list[Module] = []
        if expand_ratio != 1:
            layers.append(conv_bn(in_channels, hidden, 1, activation=ReLU6(), device=device,
                                  dtype=dtype))
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden, activation=ReLU6(),
                           device=device, dtype=dtype),
                   Conv2d(hidden, out_channels, 1, bias=False, device=device, dtype=dtype),
                   BatchNorm2d(out_channels, device=device, dtype=dtype)]
        self.conv = Sequential(*layers)
        self.residual = stride == 1 and in_channels == out_channels

    def forward(self, x: Tensor) -> Tensor:
        """The block's output, with its input added where the shapes agree."""
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(Module):
    """A strided 3x3 convolution, the 17 inverted residual blocks of `STAGES`, a 1x1
    convolution to 1280 channels (each with batch norm and ReLU6), global average pooling,
    dropout and a linear classifier to `num_classes` scores. `width_mult` scales every
    layer's channels (rounded by `make_divisible`) but the last convolution's, which it only
    widens; torchvision publishes 1.0.

    Takes (N, 3, H, W) images, preprocessed as `pyburn.models.convnets.IMAGENET` says for
    torchvision's weights, and gives (N, num_classes) scores (logits).

    >>> import pyburn
    >>> model = MobileNetV2(num_classes=5, width_mult=0.25, device="flex")
    >>> model(pyburn.zeros(2, 3, 32, 32, device="flex")).shape
    (2, 5)
    """

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0, dropout: float = 0.2,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        channels = make_divisible(STEM_CHANNELS * width_mult)
        last = make_divisible(LAST_CHANNELS * max(1.0, width_mult))
        layers: list[Module] = [conv_bn(3, channels, 3, 2, activation=ReLU6(), device=device,
                                        dtype=dtype)]
        for expand_ratio, stage_channels, blocks, first_stride in STAGES:
            out_channels = make_divisible(stage_channels * width_mult)
            for i in range(blocks):
                layers.append(InvertedResidual(channels, out_channels, first_stride if i == 0
                                               else 1, expand_ratio, device=device, dtype=dtype))
                channels = out_channels
        layers.append(conv_bn(channels, last, 1, activation=ReLU6(), device=device, dtype=dtype))
        self.features = Sequential(*layers)
        self.classifier = Sequential(Dropout(dropout),
                                     Linear(last, num_classes, device=device, dtype=dtype))

    def forward(self, images: Tensor) -> Tensor:
        """Class scores (N, num_classes) for images (N, 3, H, W)."""
        check_images(images, type(self).__name__)
        return self.classifier(self.features(images).mean((2, 3)))


def _register() -> None:
    """MobileNetV2 in the zoo, for torchvision's weights."""
    register_classifier("mobilenet_v2", MobileNetV2, "MobileNetV2 (inverted residuals, "
                        "ReLU6), 3.5 M parameters, torchvision's layout")


_register()
