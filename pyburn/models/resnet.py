"""ResNet (He et al., "Deep Residual Learning for Image Recognition", 2015) in torchvision's
layout, so that torchvision's ``.pth`` and ``.safetensors`` weights load with their own keys:
``conv1``, ``bn1``, ``layer1`` ... ``layer4`` (blocks ``layerK.I``, each with ``conv1``,
``bn1``, ... and a ``downsample.0`` / ``downsample.1`` projection where the shape changes) and
``fc``.

As in torchvision (its "v1.5"), a `Bottleneck` that halves the size strides in its 3x3
convolution, not in the first 1x1 one as the paper does; the published weights were trained so.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from ..nn import functional as F
from ..nn.containers import Sequential
from ..nn.conv import Conv2d
from ..nn.linear import Linear
from ..nn.module import Module
from ..nn.normalization import BatchNorm2d
from .convnets import check_images, conv_bn, register_classifier


def _downsample(in_channels: int, out_channels: int, stride: int, device: Any,
                dtype: Any) -> Sequential | None:
    """The shortcut's projection (a strided 1x1 convolution and a batch norm) where the block
    changes the size or the channel count; None (the identity) elsewhere."""
    if stride == 1 and in_channels == out_channels:
        return None
    return conv_bn(in_channels, out_channels, 1, stride, device=device, dtype=dtype)


class _Block(Module, ABC):
    """A residual block: ``relu(residual(x) + shortcut(x))``. `expansion` is how many times
    `channels` its output has."""

    expansion: int
    downsample: Sequential | None

    @abstractmethod
    def residual(self, x: Tensor) -> Tensor:
        """The block's own path, before the sum."""

    def forward(self, x: Tensor) -> Tensor:
        """The block's output: its residual path plus its shortcut, through a ReLU."""
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(self.residual(x) + shortcut)


class BasicBlock(_Block):
    """Two 3x3 convolutions with batch norm (ResNet-18 and -34); the first one strides.

    >>> import pyburn
    >>> block = BasicBlock(8, 16, stride=2, device="flex")
    >>> block(pyburn.zeros(1, 8, 6, 6, device="flex")).shape
    (1, 16, 3, 3)
    """

    expansion = 1

    def __init__(self, in_channels: int, channels: int, stride: int = 1, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.conv1 = Conv2d(in_channels, channels, 3, stride, 1, bias=False, device=device,
                            dtype=dtype)
        self.bn1 = BatchNorm2d(channels, device=device, dtype=dtype)
        self.conv2 = Conv2d(channels, channels, 3, 1, 1, bias=False, device=device, dtype=dtype)
        self.bn2 = BatchNorm2d(channels, device=device, dtype=dtype)
        self.downsample = _downsample(in_channels, channels, stride, device, dtype)

    def residual(self, x: Tensor) -> Tensor:
        """conv 3x3 - bn - relu - conv 3x3 - bn."""
        return self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))


class Bottleneck(_Block):
    """1x1 down to `channels`, 3x3 (strided), 1x1 up to ``4 * channels``, each with batch norm
    (ResNet-50 and deeper).

    >>> import pyburn
    >>> block = Bottleneck(8, 4, stride=2, device="flex")
    >>> block(pyburn.zeros(1, 8, 6, 6, device="flex")).shape
    (1, 16, 3, 3)
    """

    expansion = 4

    def __init__(self, in_channels: int, channels: int, stride: int = 1, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        out_channels = channels * self.expansion
        self.conv1 = Conv2d(in_channels, channels, 1, bias=False, device=device, dtype=dtype)
        self.bn1 = BatchNorm2d(channels, device=device, dtype=dtype)
        self.conv2 = Conv2d(channels, channels, 3, stride, 1, bias=False, device=device,
                            dtype=dtype)
        self.bn2 = BatchNorm2d(channels, device=device, dtype=dtype)
        self.conv3 = Conv2d(channels, out_channels, 1, bias=False, device=device, dtype=dtype)
        self.bn3 = BatchNorm2d(out_channels, device=device, dtype=dtype)
        self.downsample = _downsample(in_channels, out_channels, stride, device, dtype)

    def residual(self, x: Tensor) -> Tensor:
        """conv 1x1 - bn - relu - conv 3x3 - bn - relu - conv 1x1 - bn."""
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.bn3(self.conv3(x))


class ResNet(Module):
    """A stem (7x7 convolution with stride 2, batch norm, ReLU, 3x3 max pooling with stride 2),
    four stages of `block`s (``layers[k]`` of them, ``width * 2**k`` channels, the first
    block of stages 2 to 4 halving the size), global average pooling and a linear classifier
    ``fc`` to `num_classes` scores. `width` is 64 in every published ResNet; smaller ones make
    small models of the same shape (tests, experiments).

    Takes (N, 3, H, W) images, preprocessed as `pyburn.models.convnets.IMAGENET` says for
    torchvision's weights, and gives (N, num_classes) scores (logits).

    >>> import pyburn
    >>> model = ResNet(BasicBlock, (1, 1, 1, 1), num_classes=5, width=8, device="flex")
    >>> model(pyburn.zeros(2, 3, 32, 32, device="flex")).shape
    (2, 5)
    """

    def __init__(self, block: type[BasicBlock] | type[Bottleneck], layers: Sequence[int],
                 num_classes: int = 1000, width: int = 64, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.conv1 = Conv2d(3, width, 7, 2, 3, bias=False, device=device, dtype=dtype)
        self.bn1 = BatchNorm2d(width, device=device, dtype=dtype)
        in_channels = width
        for stage, blocks in enumerate(layers):
            channels = width * 2 ** stage
            strides = [1 if stage == 0 else 2] + [1] * (blocks - 1)
            stack = []
            for stride in strides:
                stack.append(block(in_channels, channels, stride, device=device, dtype=dtype))
                in_channels = channels * block.expansion
            setattr(self, f"layer{stage + 1}", Sequential(*stack))
        self.fc = Linear(in_channels, num_classes, device=device, dtype=dtype)
        self.stages = len(layers)

    def forward(self, images: Tensor) -> Tensor:
        """Class scores (N, num_classes) for images (N, 3, H, W)."""
        check_images(images, type(self).__name__)
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(images))), 3, 2, 1)
        for stage in range(self.stages):
            x = getattr(self, f"layer{stage + 1}")(x)
        return self.fc(x.mean((2, 3)))


def resnet18(num_classes: int = 1000, width: int = 64, device: Any = None,
             dtype: Any = None) -> ResNet:
    """ResNet-18: `BasicBlock`s, 2, 2, 2, 2 per stage (11.7 M parameters)."""
    return ResNet(BasicBlock, (2, 2, 2, 2), num_classes, width, device, dtype)


def resnet34(num_classes: int = 1000, width: int = 64, device: Any = None,
             dtype: Any = None) -> ResNet:
    """ResNet-34: `BasicBlock`s, 3, 4, 6, 3 per stage (21.8 M parameters)."""
    return ResNet(BasicBlock, (3, 4, 6, 3), num_classes, width, device, dtype)


def resnet50(num_classes: int = 1000, width: int = 64, device: Any = None,
             dtype: Any = None) -> ResNet:
    """ResNet-50: `Bottleneck`s, 3, 4, 6, 3 per stage (25.6 M parameters)."""
    return ResNet(Bottleneck, (3, 4, 6, 3), num_classes, width, device, dtype)


def _register() -> None:
    """ResNet-18, -34 and -50 in the zoo, for torchvision's weights."""
    register_classifier("resnet18", resnet18, "ResNet-18 (basic blocks 2-2-2-2), 11.7 M "
                        "parameters, torchvision's layout")
    register_classifier("resnet34", resnet34, "ResNet-34 (basic blocks 3-4-6-3), 21.8 M "
                        "parameters, torchvision's layout")
    register_classifier("resnet50", resnet50, "ResNet-50 (bottlenecks 3-4-6-3), 25.6 M "
                        "parameters, torchvision's layout")


_register()
