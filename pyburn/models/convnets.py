"""What torchvision's image classifiers in the zoo (`resnet`, `mobilenet`, `squeezenet`) share:
the ImageNet preprocessing their published weights expect, the check of their input, the
convolution + batch norm stack they are built of (and the squeeze-excitation and stochastic
depth of the later ones), and the shape of their registry entries.

ImageNet's 1,000 class names are not shipped with pyburn (nothing here may be downloaded, and
no installed package carries them), so the entries have no labels: a user of the ImageNet
weights maps output indices to the names they have; one who fine-tunes passes ``num_classes``
(and ``strict=False`` to `create`, so that the new head keeps its random weights).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..nn.containers import Sequential
from ..nn.conv import Conv2d
from ..nn.module import Module
from ..nn.normalization import BatchNorm2d
from ..ops.math_ops import where
from ..ops.random_tensors import rand
from .registry import ModelEntry, Preprocessing, register

#: torchvision's ImageNet recipe: shorter side to 256, the middle 224 x 224, then each channel
#: standardised with ImageNet's mean and standard deviation (of pixels in [0, 1])
IMAGENET = Preprocessing(resize=256, crop=224, mean=(0.485, 0.456, 0.406),
                         std=(0.229, 0.224, 0.225))


def check_images(images: Tensor, model: str) -> None:
    """Raise unless `images` is a tensor of RGB images, (N, 3, H, W)."""
    if not isinstance(images, Tensor):
        raise ArgumentError(f"{model} takes a tensor of images, got {type(images).__name__}")
    if images.ndim != 4 or images.shape[1] != 3:
        raise ShapeError(f"{model} takes RGB images of shape (N, 3, H, W), got {images.shape}")


def conv_bn(in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
            groups: int = 1, activation: Module | None = None, eps: float = 1e-5,
            momentum: float = 0.1, device: Any = None, dtype: Any = None) -> Sequential:
    """``Sequential(conv, batch norm[, activation])``, torchvision's keys ``0.weight``,
    ``1.running_mean``, ...: a convolution without bias (the batch norm right after it
    subtracts each channel's mean, which would cancel a bias), padded by ``(k - 1) // 2`` so
    that only the stride changes the size. `eps` and `momentum` are the batch norm's
    (MobileNetV3's weights were trained with 0.001 and 0.01).

    >>> import pyburn
    >>> from pyburn.nn import ReLU6
    >>> block = conv_bn(3, 8, 3, stride=2, activation=ReLU6(), device="flex")
    >>> block(pyburn.zeros(1, 3, 8, 8, device="flex")).shape, list(block.state_dict())[:2]
    ((1, 8, 4, 4), ['0.weight', '1.weight'])
    """
    layers: list[Module] = [
        Conv2d(in_channels, out_channels, kernel_size, stride, (kernel_size - 1) // 2,
               groups=groups, bias=False, device=device, dtype=dtype),
        BatchNorm2d(out_channels, eps, momentum, device=device, dtype=dtype)]
    if activation is not None:
        layers.append(activation)
    return Sequential(*layers)


class SqueezeExcitation(Module):
    """Squeeze-and-excitation (Hu et al., 2018): each channel of the input scaled by a gate in
    [0, 1] computed from every channel's mean, ``x * gate(fc2(activation(fc1(mean(x)))))``,
    ``fc1`` and ``fc2`` 1x1 convolutions with bias (torchvision's keys) through
    `squeeze_channels`. MobileNetV3 gates with a hard sigmoid after a ReLU, EfficientNet with a
    sigmoid after a SiLU.

    >>> import pyburn
    >>> from pyburn.nn import ReLU, Sigmoid
    >>> se = SqueezeExcitation(8, 2, ReLU(), Sigmoid(), device="flex")
    >>> se(pyburn.zeros(1, 8, 3, 3, device="flex")).shape, list(se.state_dict())
    ((1, 8, 3, 3), ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias'])
    """

    def __init__(self, channels: int, squeeze_channels: int, activation: Module, gate: Module,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        self.fc1 = Conv2d(channels, squeeze_channels, 1, device=device, dtype=dtype)
        self.fc2 = Conv2d(squeeze_channels, channels, 1, device=device, dtype=dtype)
        self.activation = activation
        self.gate = gate

    def forward(self, x: Tensor) -> Tensor:
        """`x` (N, C, H, W) with each channel scaled by its gate."""
        squeezed = x.mean((2, 3), keepdim=True)
        return x * self.gate(self.fc2(self.activation(self.fc1(squeezed))))


class StochasticDepth(Module):
    """Stochastic depth (Huang et al., "Deep Networks with Stochastic Depth", 2016) of a
    residual branch: in training, each sample's whole branch output is zeroed with probability
    `p` and the others are scaled by ``1 / (1 - p)`` (torchvision's "row" mode); in eval mode,
    the identity. It holds no weights.

    >>> import pyburn
    >>> drop = StochasticDepth(0.5)
    >>> sorted({row[0] for row in drop(pyburn.ones(64, 2, device="flex")).tolist()})
    [0.0, 2.0]
    >>> drop.eval()(pyburn.ones(2, 2, device="flex")).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """

    def __init__(self, p: float):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ArgumentError(f"StochasticDepth: p must be a probability in [0, 1], got {p!r}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        """`x` with whole samples (dim 0) dropped in training mode."""
        if not self.training or self.p == 0.0:
            return x
        if self.p == 1.0:
            return x * 0.0
        keep = rand((x.shape[0],) + (1,) * (x.ndim - 1), dtype=x.dtype, device=x.device)
        return where(keep >= self.p, x * (1.0 / (1.0 - self.p)), 0.0)

    def extra_repr(self) -> str:
        return f"p={self.p}, mode=row"


def register_classifier(name: str, build: Callable[..., Module], description: str,
                        preprocessing: Preprocessing = IMAGENET) -> None:
    """Register `build` as `name`: an ImageNet classifier whose weights are torchvision's
    (their keys are the model's own, so no remapping), with ImageNet's preprocessing unless
    the weights were evaluated with another."""
    register(ModelEntry(name, build, "image-classification", description,
                        weights_from="torchvision", preprocessing=preprocessing))
