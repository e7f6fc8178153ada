"""EfficientNet (Tan and Le, "EfficientNet: Rethinking Model Scaling for Convolutional Neural
Networks", 2019) in torchvision's layout, so that torchvision's weights load with their own
keys: ``features.0`` (the stem), ``features.1`` ... ``features.7`` (the seven stages of
`MBConv` blocks, ``features.S.I.block.M.*``), ``features.8`` (the last 1x1 convolution) and
``classifier.1`` (the linear layer, after a dropout at ``classifier.0``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from .._tensor import Tensor
from ..nn.activation import Sigmoid, SiLU
from ..nn.containers import Sequential
from ..nn.dropout import Dropout
from ..nn.linear import Linear
from ..nn.module import Module
from .convnets import (
    IMAGENET,
    SqueezeExcitation,
    check_images,
    conv_bn,
    register_classifier,
)
from .mobilenet import make_divisible
from .mobilenet_v3 import MBConv

#: EfficientNet-B0's stages after the stem (the paper's table 1): (expansion, kernel,
#: first stride, channels, blocks)
STAGES = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
STEM_CHANNELS = 32


class EfficientNet(Module):
    """A strided 3x3 convolution, the seven stages of `MBConv` blocks of `STAGES` (SiLU
    throughout, squeeze-excitation to a quarter of each block's input channels), a 1x1
    convolution to four times the last stage's channels, global average pooling, dropout and a
    linear classifier to `num_classes` scores. Block k of all K is skipped in training with
    probability ``stochastic_depth_prob * k / K`` (stochastic depth); in eval mode, none is.

    `width_mult` and `depth_mult` are the paper's compound-scaling coefficients: every layer's
    channels times `width_mult` (rounded by `make_divisible`), each stage's blocks times
    `depth_mult` (rounded up). The defaults are EfficientNet-B0, the one registered.

    Takes (N, 3, H, W) images, preprocessed as `pyburn.models.convnets.IMAGENET` says for
    torchvision's weights, and gives (N, num_classes) scores (logits).

    >>> import pyburn
    >>> model = EfficientNet(num_classes=5, width_mult=0.25, depth_mult=0.5, device="flex")
    >>> model(pyburn.zeros(2, 3, 32, 32, device="flex")).shape
    (2, 5)
    """

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0,
                 depth_mult: float = 1.0, dropout: float = 0.2,
                 stochastic_depth_prob: float = 0.2, device: Any = None, dtype: Any = None):
        super().__init__()
        channels = make_divisible(STEM_CHANNELS * width_mult)
        layers: list[Module] = [conv_bn(3, channels, 3, 2, activation=SiLU(), device=device,
                                        dtype=dtype)]
        total = sum(math.ceil(blocks * depth_mult) for *_, blocks in STAGES)
        done = 0
        for expansion, kernel_size, first_stride, stage_channels, blocks in STAGES:
            out = make_divisible(stage_channels * width_mult)
            stage = []
            for i in range(math.ceil(blocks * depth_mult)):
                expanded = make_divisible(channels * expansion)
                se = SqueezeExcitation(expanded, max(1, channels // 4), SiLU(), Sigmoid(),
                                       device=device, dtype=dtype)
                stage.append(MBConv(channels, expanded, out, kernel_size,
                                    first_stride if i == 0 else 1, SiLU, se,
                                    stochastic_depth_prob * done / total, device=device,
                                    dtype=dtype))
                channels = out
                done += 1
            layers.append(Sequential(*stage))
        layers.append(conv_bn(channels, 4 * channels, 1, activation=SiLU(), device=device,
                              dtype=dtype))
        self.features = Sequential(*layers)
        self.classifier = Sequential(Dropout(dropout), Linear(4 * channels, num_classes,
                                                              device=device, dtype=dtype))

    def forward(self, images: Tensor) -> Tensor:
        """Class scores (N, num_classes) for images (N, 3, H, W)."""
        check_images(images, type(self).__name__)
        return self.classifier(self.features(images).mean((2, 3)))


def _register() -> None:
    """EfficientNet-B0 in the zoo, for torchvision's weights."""
    register_classifier("efficientnet_b0", EfficientNet, "EfficientNet-B0 (MBConv, "
                        "squeeze-excitation, SiLU), 5.3 M parameters, torchvision's layout",
                        replace(IMAGENET, interpolation="bicubic"))


_register()
