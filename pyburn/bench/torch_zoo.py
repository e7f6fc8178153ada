"""PyTorch networks of torchvision's layout (keys, strides, paddings, layer order) for the
zoo's image classifiers: the references of tests/models/test_vision_zoo.py and of
``pyburn bench models``. torchvision itself is not installed (its wheels want another torch),
so they are written here; their state-dict keys are torchvision's, and so pyburn's models'.
This module imports torch: import it only where torch is there.
"""

from __future__ import annotations

import math
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


def conv_norm_act(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
                  act: nn.Module | None = None, eps: float = 1e-5) -> nn.Sequential:
    """torchvision's Conv2dNormActivation: convolution without bias, batch norm (`eps`), and
    `act` unless None."""
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups,
                                   bias=False), nn.BatchNorm2d(cout, eps=eps),
                         *([] if act is None else [act]))


def conv_bn_relu6(cin: int, cout: int, k: int, stride: int = 1,
                  groups: int = 1) -> nn.Sequential:
    """torchvision's Conv2dNormActivation with its defaults for MobileNetV2."""
    return conv_norm_act(cin, cout, k, stride, groups, nn.ReLU6())


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


class TorchSqueezeExcitation(nn.Module):
    """torchvision's SqueezeExcitation: channel means, 1x1 convolutions ``fc1`` and ``fc2``
    (with bias), the input scaled by the resulting gate."""

    def __init__(self, channels: int, squeezed: int, act: nn.Module, gate: nn.Module):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)
        self.activation = act
        self.scale_activation = gate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """`x` scaled per channel."""
        scale = self.fc2(self.activation(self.fc1(self.avgpool(x))))
        return x * self.scale_activation(scale)


class TorchMobileNetV3Block(nn.Module):
    """torchvision's MobileNetV3 InvertedResidual: 1x1 expansion (unless `hidden` is `cin`),
    depthwise `k` x `k`, squeeze-excitation (`se`), 1x1 projection, batch norms with eps 1e-3."""

    def __init__(self, cin: int, k: int, hidden: int, cout: int, se: bool, hs: bool,
                 stride: int):
        super().__init__()

        def act() -> nn.Module:
            return nn.Hardswish() if hs else nn.ReLU()

        layers: list[nn.Module] = []
        if hidden != cin:
            layers.append(conv_norm_act(cin, hidden, 1, act=act(), eps=1e-3))
        layers.append(conv_norm_act(hidden, hidden, k, stride, hidden, act(), 1e-3))
        if se:
            layers.append(TorchSqueezeExcitation(hidden, divisible(hidden // 4), nn.ReLU(),
                                                 nn.Hardsigmoid()))
        layers.append(conv_norm_act(hidden, cout, 1, eps=1e-3))
        self.block = nn.Sequential(*layers)
        self.use_res_connect = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output."""
        return x + self.block(x) if self.use_res_connect else self.block(x)


class TorchMobileNetV3(nn.Module):
    """torchvision's MobileNetV3, "large" or "small", channels scaled by `width_mult`."""

    def __init__(self, arch: str, num_classes: int, width_mult: float):
        super().__init__()
        # (kernel, expanded, out, squeeze-excitation, hard swish, stride), per the paper
        if arch == "large":
            rows = [(3, 16, 16, 0, 0, 1), (3, 64, 24, 0, 0, 2), (3, 72, 24, 0, 0, 1),
                    (5, 72, 40, 1, 0, 2), (5, 120, 40, 1, 0, 1), (5, 120, 40, 1, 0, 1),
                    (3, 240, 80, 0, 1, 2), (3, 200, 80, 0, 1, 1), (3, 184, 80, 0, 1, 1),
                    (3, 184, 80, 0, 1, 1), (3, 480, 112, 1, 1, 1), (3, 672, 112, 1, 1, 1),
                    (5, 672, 160, 1, 1, 2), (5, 960, 160, 1, 1, 1), (5, 960, 160, 1, 1, 1)]
            last = divisible(1280 * width_mult)
        else:
            rows = [(3, 16, 16, 1, 0, 2), (3, 72, 24, 0, 0, 2), (3, 88, 24, 0, 0, 1),
                    (5, 96, 40, 1, 1, 2), (5, 240, 40, 1, 1, 1), (5, 240, 40, 1, 1, 1),
                    (5, 120, 48, 1, 1, 1), (5, 144, 48, 1, 1, 1), (5, 288, 96, 1, 1, 2),
                    (5, 576, 96, 1, 1, 1), (5, 576, 96, 1, 1, 1)]
            last = divisible(1024 * width_mult)
        cin = divisible(16 * width_mult)
        layers = [conv_norm_act(3, cin, 3, 2, act=nn.Hardswish(), eps=1e-3)]
        for k, hidden, cout, se, hs, stride in rows:
            cout = divisible(cout * width_mult)
            layers.append(TorchMobileNetV3Block(cin, k, divisible(hidden * width_mult), cout,
                                                bool(se), bool(hs), stride))
            cin = cout
        layers.append(conv_norm_act(cin, 6 * cin, 1, act=nn.Hardswish(), eps=1e-3))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(6 * cin, last), nn.Hardswish(),
                                        nn.Dropout(0.2), nn.Linear(last, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores (N, num_classes) of images (N, 3, H, W)."""
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class TorchMBConv(nn.Module):
    """torchvision's EfficientNet MBConv: 1x1 expansion (unless `t` is 1), depthwise `k` x `k`,
    squeeze-excitation to ``cin // 4``, 1x1 projection, SiLU throughout; the residual path
    dropped per sample with probability `p` in training (stochastic depth, "row" mode)."""

    def __init__(self, t: int, k: int, stride: int, cin: int, cout: int, p: float):
        super().__init__()
        hidden = divisible(cin * t)
        layers: list[nn.Module] = []
        if hidden != cin:
            layers.append(conv_norm_act(cin, hidden, 1, act=nn.SiLU()))
        layers += [conv_norm_act(hidden, hidden, k, stride, hidden, nn.SiLU()),
                   TorchSqueezeExcitation(hidden, max(1, cin // 4), nn.SiLU(), nn.Sigmoid()),
                   conv_norm_act(hidden, cout, 1)]
        self.block = nn.Sequential(*layers)
        self.p = p
        self.use_res_connect = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output."""
        y = self.block(x)
        if not self.use_res_connect:
            return y
        if self.training and self.p > 0:
            keep = torch.empty(y.shape[0], 1, 1, 1).bernoulli_(1 - self.p)
            y = y * keep / (1 - self.p)
        return x + y


class TorchEfficientNet(nn.Module):
    """torchvision's EfficientNet, B0's stages scaled by `width_mult` and `depth_mult`."""

    def __init__(self, num_classes: int, width_mult: float = 1.0, depth_mult: float = 1.0,
                 stochastic_depth_prob: float = 0.2):
        super().__init__()
        # (expansion, kernel, stride, out channels, blocks), per the paper
        rows = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]
        total = sum(int(math.ceil(n * depth_mult)) for *_, n in rows)
        cin = divisible(32 * width_mult)
        layers: list[nn.Module] = [conv_norm_act(3, cin, 3, 2, act=nn.SiLU())]
        block_id = 0
        for t, k, s, c, n in rows:
            stage = []
            for i in range(int(math.ceil(n * depth_mult))):
                cout = divisible(c * width_mult)
                stage.append(TorchMBConv(t, k, s if i == 0 else 1, cin, cout,
                                         stochastic_depth_prob * block_id / total))
                cin = cout
                block_id += 1
            layers.append(nn.Sequential(*stage))
        layers.append(conv_norm_act(cin, 4 * cin, 1, act=nn.SiLU()))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(4 * cin, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores (N, num_classes) of images (N, 3, H, W)."""
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


#: each zoo model's network: `REFERENCES[name](num_classes, **config)`, config as the zoo's
REFERENCES: dict[str, Callable[..., nn.Module]] = {
    "resnet18": lambda c, width=64: TorchResNet(False, (2, 2, 2, 2), c, width),
    "resnet34": lambda c, width=64: TorchResNet(False, (3, 4, 6, 3), c, width),
    "resnet50": lambda c, width=64: TorchResNet(True, (3, 4, 6, 3), c, width),
    "mobilenet_v2": lambda c, width_mult=1.0: TorchMobileNetV2(c, width_mult),
    "squeezenet1_0": lambda c: TorchSqueezeNet("1_0", c),
    "squeezenet1_1": lambda c: TorchSqueezeNet("1_1", c),
    "mobilenet_v3_small": lambda c, width_mult=1.0: TorchMobileNetV3("small", c, width_mult),
    "mobilenet_v3_large": lambda c, width_mult=1.0: TorchMobileNetV3("large", c, width_mult),
    "efficientnet_b0": TorchEfficientNet,
}

