"""PyTorch networks of torchvision's layout (keys, strides, paddings, layer order) for the
zoo's image classifiers: the references of tests/models/test_vision_zoo.py and of
``pyburn bench models``. torchvision itself is not installed (its wheels want another torch),
so they are written here; their state-dict keys are torchvision's, and so pyburn's models'.
This module imports torch: import it only where torch is there.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class TorchBlock(nn.Module):
    """torchvision's BasicBlock, or its Bottleneck (stride in the 3x3 convolution)."""

    def __init__(self, cin: int, planes: int, stride: int, bottleneck: bool):
        super().__init__()
        self.bottleneck = bottleneck
        out = planes * 4 if bottleneck else planes
        if bottleneck:
            self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, out, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(out)
        else:
            self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.downsample: nn.Sequential | None = None
        if stride != 1 or cin != out:
            self.downsample = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False),
                                            nn.BatchNorm2d(out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output: its convolutions plus the (downsampled) input, then ReLU."""
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.bottleneck:
            y = self.bn3(self.conv3(self.relu(y)))
        return self.relu(y + (x if self.downsample is None else self.downsample(x)))


class TorchResNet(nn.Module):
    """torchvision's ResNet: `layers` blocks per stage, stem `width` channels."""

    def __init__(self, bottleneck: bool, layers: tuple[int, ...], num_classes: int,
                 width: int):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = width
        for i, n in enumerate(layers):
            blocks = []
            for j in range(n):
                blocks.append(TorchBlock(cin, width * 2 ** i, 2 if i and not j else 1,
                                         bottleneck))
                cin = width * 2 ** i * (4 if bottleneck else 1)
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores (N, num_classes) of images (N, 3, H, W)."""
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def divisible(v: float, d: int = 8) -> int:
    """torchvision's ``_make_divisible``: `v` rounded to a multiple of `d`, never below 90%."""
    new = max(d, int(v + d / 2) // d * d)
    return new + d if new < 0.9 * v else new


def conv_bn_relu6(cin: int, cout: int, k: int, stride: int = 1,
                  groups: int = 1) -> nn.Sequential:
    """torchvision's Conv2dNormActivation with its defaults for MobileNetV2."""
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups,
                                   bias=False), nn.BatchNorm2d(cout), nn.ReLU6())


class TorchInvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expansion (left out when `t` is 1), depthwise 3x3, 1x1
    projection, and the input added back when the shape allows."""

    def __init__(self, cin: int, cout: int, stride: int, t: int):
        super().__init__()
        hidden = int(round(cin * t))
        self.use_res_connect = stride == 1 and cin == cout
        expand = [conv_bn_relu6(cin, hidden, 1)] if t != 1 else []
        self.conv = nn.Sequential(*expand, conv_bn_relu6(hidden, hidden, 3, stride, hidden),
                                  nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output."""
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class TorchMobileNetV2(nn.Module):
    """torchvision's MobileNetV2, channels scaled by `width_mult`."""

    def __init__(self, num_classes: int, width_mult: float):
        super().__init__()
        cin = divisible(32 * width_mult)
        last = divisible(1280 * max(1.0, width_mult))
        layers = [conv_bn_relu6(3, cin, 3, 2)]
        for t, c, n, s in [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2],
                           [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]:
            for i in range(n):
                layers.append(TorchInvertedResidual(cin, divisible(c * width_mult),
                                                    s if i == 0 else 1, t))
                cin = divisible(c * width_mult)
        layers.append(conv_bn_relu6(cin, last, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores (N, num_classes) of images (N, 3, H, W)."""
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class TorchFire(nn.Module):
    """SqueezeNet's Fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated."""

    def __init__(self, cin: int, s: int, e1: int, e3: int):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, s, 1)
        self.expand1x1 = nn.Conv2d(s, e1, 1)
        self.expand3x3 = nn.Conv2d(s, e3, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The module's output: both expansions' channels."""
        x = torch.relu(self.squeeze(x))
        return torch.cat([torch.relu(self.expand1x1(x)), torch.relu(self.expand3x3(x))], 1)


class TorchSqueezeNet(nn.Module):
    """torchvision's SqueezeNet, `version` "1_0" or "1_1"."""

    def __init__(self, version: str, num_classes: int):
        super().__init__()

        def pool() -> nn.MaxPool2d:
            return nn.MaxPool2d(3, 2, ceil_mode=True)

        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, 7, 2), nn.ReLU(), pool(), TorchFire(96, 16, 64, 64),
                TorchFire(128, 16, 64, 64), TorchFire(128, 32, 128, 128), pool(),
                TorchFire(256, 32, 128, 128), TorchFire(256, 48, 192, 192),
                TorchFire(384, 48, 192, 192), TorchFire(384, 64, 256, 256), pool(),
                TorchFire(512, 64, 256, 256))
        else:
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, 3, 2), nn.ReLU(), pool(), TorchFire(64, 16, 64, 64),
                TorchFire(128, 16, 64, 64), pool(), TorchFire(128, 32, 128, 128),
                TorchFire(256, 32, 128, 128), pool(), TorchFire(256, 48, 192, 192),
                TorchFire(384, 48, 192, 192), TorchFire(384, 64, 256, 256),
                TorchFire(512, 64, 256, 256))
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(512, num_classes, 1),
                                        nn.ReLU(), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores (N, num_classes) of images (N, 3, H, W)."""
        return torch.flatten(self.classifier(self.features(x)), 1)


#: each zoo model's network: `REFERENCES[name](num_classes, **config)`, config as the zoo's
REFERENCES: dict[str, Callable[..., nn.Module]] = {
    "resnet18": lambda c, width=64: TorchResNet(False, (2, 2, 2, 2), c, width),
    "resnet34": lambda c, width=64: TorchResNet(False, (3, 4, 6, 3), c, width),
    "resnet50": lambda c, width=64: TorchResNet(True, (3, 4, 6, 3), c, width),
    "mobilenet_v2": lambda c, width_mult=1.0: TorchMobileNetV2(c, width_mult),
    "squeezenet1_0": lambda c: TorchSqueezeNet("1_0", c),
    "squeezenet1_1": lambda c: TorchSqueezeNet("1_1", c),
}

