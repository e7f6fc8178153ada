"""SqueezeNet (Iandola et al., "SqueezeNet: AlexNet-level accuracy with 50x fewer parameters
and <0.5MB model size", 2016), versions 1.0 (the paper's) and 1.1 (the authors' later one,
2.4 times cheaper), in torchvision's layout: ``features.N`` (the stem convolution at 0, the
`Fire` modules with ``squeeze``, ``expand1x1`` and ``expand3x3``, ReLUs and poolings between
them counted too) and ``classifier.1`` (a 1x1 convolution to the classes, after a dropout).
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError
from ..nn import functional as F
from ..nn.activation import ReLU
from ..nn.containers import Sequential
from ..nn.conv import Conv2d
from ..nn.dropout import Dropout
from ..nn.module import Module
from ..nn.pooling import AdaptiveAvgPool2d, MaxPool2d
from ..ops.movement import cat
from .convnets import check_images, register_classifier

#: where a 3x3 max pooling with stride 2 goes in `VERSIONS`' layer lists
POOL = "pool"
#: per version: the stem convolution's (channels, kernel size), then the layers after it:
#: `POOL` or a Fire module's squeeze channels (it expands to 4 times as many, twice)
VERSIONS: dict[str, tuple[tuple[int, int], tuple[int | str, ...]]] = {
    "1_0": ((96, 7), (POOL, 16, 16, 32, POOL, 32, 48, 48, 64, POOL, 64)),
    "1_1": ((64, 3), (POOL, 16, 16, POOL, 32, 32, POOL, 48, 48, 64, 64)),
}


class Fire(Module):
    """A 1x1 "squeeze" convolution to few channels, then 1x1 and 3x3 "expand" convolutions
    side by side, their outputs concatenated along the channels; ReLU after each.

    >>> import pyburn
    >>> fire = Fire(32, 8, 16, 16, device="flex")
    >>> fire(pyburn.zeros(1, 32, 5, 5, device="flex")).shape
    (1, 32, 5, 5)
    """

    def __init__(self, in_channels: int, squeeze: int, expand1x1: int, expand3x3: int,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        self.squeeze = Conv2d(in_channels, squeeze, 1, device=device, dtype=dtype)
        self.expand1x1 = Conv2d(squeeze, expand1x1, 1, device=device, dtype=dtype)
        self.expand3x3 = Conv2d(squeeze, expand3x3, 3, padding=1, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """Both expansions of the squeezed input, concatenated: (N, e1 + e3, H, W)."""
        x = F.relu(self.squeeze(x))
        return cat([F.relu(self.expand1x1(x)), F.relu(self.expand3x3(x))], 1)


class SqueezeNet(Module):
    """A strided convolution and ReLU, then `Fire` modules with max poolings between them
    (`VERSIONS` lists both versions' layers; the poolings round their sizes up), then dropout,
    a 1x1 convolution to `num_classes` channels, ReLU and global average pooling: the scores
    come out of a convolution, with no linear layer.

    Takes (N, 3, H, W) images, preprocessed as `pyburn.models.convnets.IMAGENET` says for
    torchvision's weights, and gives (N, num_classes) scores (non-negative, after the ReLU).
    Images need at least 21 x 21 pixels for 1.0 and 17 x 17 for 1.1, as in torchvision: below,
    a pooling window has no input to start in.

    >>> import pyburn
    >>> model = SqueezeNet("1_1", num_classes=5, device="flex")
    >>> model(pyburn.zeros(1, 3, 32, 32, device="flex")).shape
    (1, 5)
    """

    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        if version not in VERSIONS:
            raise ArgumentError(f"SqueezeNet has versions {', '.join(map(repr, VERSIONS))}, "
                                f"got {version!r}")
        (channels, kernel_size), plan = VERSIONS[version]
        layers: list[Module] = [Conv2d(3, channels, kernel_size, 2, device=device, dtype=dtype),
                                ReLU()]
        for item in plan:
            if item == POOL:
                layers.append(MaxPool2d(3, 2, ceil_mode=True))
            else:
                squeeze = int(item)
                layers.append(Fire(channels, squeeze, 4 * squeeze, 4 * squeeze, device=device,
                                   dtype=dtype))
                channels = 8 * squeeze
        self.version = version
        self.features = Sequential(*layers)
        self.classifier = Sequential(
            Dropout(dropout), Conv2d(channels, num_classes, 1, device=device, dtype=dtype),
            ReLU(), AdaptiveAvgPool2d((1, 1)))

    def forward(self, images: Tensor) -> Tensor:
        """Class scores (N, num_classes) for images (N, 3, H, W)."""
        check_images(images, type(self).__name__)
        return self.classifier(self.features(images)).flatten(1)


def squeezenet1_0(num_classes: int = 1000, device: Any = None, dtype: Any = None) -> SqueezeNet:
    """SqueezeNet 1.0: a 7x7 stem with 96 channels (1.25 M parameters)."""
    return SqueezeNet("1_0", num_classes, device=device, dtype=dtype)


def squeezenet1_1(num_classes: int = 1000, device: Any = None, dtype: Any = None) -> SqueezeNet:
    """SqueezeNet 1.1: a 3x3 stem with 64 channels and earlier poolings (1.24 M parameters,
    2.4 times fewer operations than 1.0)."""
    return SqueezeNet("1_1", num_classes, device=device, dtype=dtype)


def _register() -> None:
    """SqueezeNet 1.0 and 1.1 in the zoo, for torchvision's weights."""
    register_classifier("squeezenet1_0", squeezenet1_0, "SqueezeNet 1.0 (Fire modules), "
                        "1.25 M parameters, torchvision's layout")
    register_classifier("squeezenet1_1", squeezenet1_1, "SqueezeNet 1.1 (Fire modules, "
                        "cheaper stem), 1.24 M parameters, torchvision's layout")


_register()
