"""What torchvision's image classifiers in the zoo (`resnet`, `mobilenet`, `squeezenet`) share:
the ImageNet preprocessing their published weights expect, the check of their input, the
convolution + batch norm stack they are built of, and the shape of their registry entries.

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
            groups: int = 1, activation: Module | None = None, device: Any = None,
            dtype: Any = None) -> Sequential:
    """``Sequential(conv, batch norm[, activation])``, torchvision's keys ``0.weight``,
    ``1.running_mean``, ...: a convolution without bias (the batch norm right after it
    subtracts each channel's mean, which would cancel a bias), padded by ``(k - 1) // 2`` so
    that only the stride changes the size.

    >>> import pyburn
    >>> from pyburn.nn import ReLU6
    >>> block = conv_bn(3, 8, 3, stride=2, activation=ReLU6(), device="flex")
    >>> block(pyburn.zeros(1, 3, 8, 8, device="flex")).shape, list(block.state_dict())[:2]
    ((1, 8, 4, 4), ['0.weight', '1.weight'])
    """
    layers: list[Module] = [
        Conv2d(in_channels, out_channels, kernel_size, stride, (kernel_size - 1) // 2,
               groups=groups, bias=False, device=device, dtype=dtype),
        BatchNorm2d(out_channels, device=device, dtype=dtype)]
    if activation is not None:
        layers.append(activation)
    return Sequential(*layers)


def register_classifier(name: str, build: Callable[..., Module], description: str) -> None:
    """Register `build` as `name`: an ImageNet classifier whose weights are torchvision's
    (their keys are the model's own, so no remapping), with ImageNet's preprocessing."""
    register(ModelEntry(name, build, "image-classification", description,
                        weights_from="torchvision", preprocessing=IMAGENET))
