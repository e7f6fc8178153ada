"""A PyTorch YOLOX (Ge et al., "YOLOX: Exceeding YOLO Series in 2021") in the layout of the
official repository (Megvii-BaseDetection/YOLOX): its state-dict keys, strides, paddings and
layer order, and its inference-mode output (boxes decoded on the grid, sigmoids on objectness
and classes). The reference of tests/models/test_yolox.py; the repository's own code is not
installed, so the network is written here. This module imports torch: import it only where
torch is there.
"""

from __future__ import annotations

import torch
from torch import nn


class TorchBaseConv(nn.Module):
    """Convolution (no bias, "same" padding), batch norm with YOLOX's eps and momentum, SiLU:
    keys ``conv.weight``, ``bn.*``."""

    def __init__(self, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """conv - bn - silu."""
        return self.act(self.bn(self.conv(x)))


class TorchDWConv(nn.Module):
    """A depthwise `TorchBaseConv` (``dconv``) then a pointwise one (``pconv``)."""

    def __init__(self, cin: int, cout: int, k: int, stride: int = 1):
        super().__init__()
        self.dconv = TorchBaseConv(cin, cin, k, stride, groups=cin)
        self.pconv = TorchBaseConv(cin, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Depthwise, then pointwise."""
        return self.pconv(self.dconv(x))


def conv(cin: int, cout: int, k: int, stride: int, depthwise: bool) -> nn.Module:
    """YOLOX's ``DWConv if depthwise else BaseConv``."""
    return TorchDWConv(cin, cout, k, stride) if depthwise else TorchBaseConv(cin, cout, k, stride)


class TorchBottleneck(nn.Module):
    """1x1 then 3x3 at the same width, the input added back when `shortcut`."""

    def __init__(self, channels: int, shortcut: bool, depthwise: bool):
        super().__init__()
        self.conv1 = TorchBaseConv(channels, channels, 1)
        self.conv2 = conv(channels, channels, 3, 1, depthwise)
        self.shortcut = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output."""
        y = self.conv2(self.conv1(x))
        return y + x if self.shortcut else y


class TorchCSPLayer(nn.Module):
    """Two 1x1 branches of half the output width, `n` bottlenecks on the first, concatenated
    and mixed by a 1x1 ``conv3``."""

    def __init__(self, cin: int, cout: int, n: int, shortcut: bool, depthwise: bool):
        super().__init__()
        hidden = int(cout * 0.5)
        self.conv1 = TorchBaseConv(cin, hidden, 1)
        self.conv2 = TorchBaseConv(cin, hidden, 1)
        self.conv3 = TorchBaseConv(2 * hidden, cout, 1)
        self.m = nn.Sequential(*[TorchBottleneck(hidden, shortcut, depthwise) for _ in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The layer's output."""
        return self.conv3(torch.cat([self.m(self.conv1(x)), self.conv2(x)], 1))


class TorchSPPBottleneck(nn.Module):
    """1x1 to half width, max pools 5, 9 and 13 (stride 1) concatenated with it, 1x1 out."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        hidden = cin // 2
        self.conv1 = TorchBaseConv(cin, hidden, 1)
        self.m = nn.ModuleList([nn.MaxPool2d(k, 1, k // 2) for k in (5, 9, 13)])
        self.conv2 = TorchBaseConv(hidden * 4, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output."""
        x = self.conv1(x)
        return self.conv2(torch.cat([x] + [pool(x) for pool in self.m], 1))


class TorchFocus(nn.Module):
    """Each 2x2 block of pixels into channels (top-left, bottom-left, top-right,
    bottom-right), then a 3x3 `TorchBaseConv`."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv = TorchBaseConv(cin * 4, cout, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Half the size, `cout` channels."""
        x = torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2],
                       x[..., 1::2, 1::2]], 1)
        return self.conv(x)


class TorchCSPDarknet(nn.Module):
    """The backbone: stem, then dark2 ... dark5, each halving the size; gives dark3, dark4
    and dark5 (strides 8, 16, 32)."""

    def __init__(self, depth: float, width: float, depthwise: bool):
        super().__init__()
        c = int(width * 64)
        n = max(round(depth * 3), 1)
        self.stem = TorchFocus(3, c)
        self.dark2 = nn.Sequential(conv(c, c * 2, 3, 2, depthwise),
                                   TorchCSPLayer(c * 2, c * 2, n, True, depthwise))
        self.dark3 = nn.Sequential(conv(c * 2, c * 4, 3, 2, depthwise),
                                   TorchCSPLayer(c * 4, c * 4, n * 3, True, depthwise))
        self.dark4 = nn.Sequential(conv(c * 4, c * 8, 3, 2, depthwise),
                                   TorchCSPLayer(c * 8, c * 8, n * 3, True, depthwise))
        self.dark5 = nn.Sequential(conv(c * 8, c * 16, 3, 2, depthwise),
                                   TorchSPPBottleneck(c * 16, c * 16),
                                   TorchCSPLayer(c * 16, c * 16, n, False, depthwise))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """dark3, dark4, dark5."""
        x3 = self.dark3(self.dark2(self.stem(x)))
        x4 = self.dark4(x3)
        return x3, x4, self.dark5(x4)


class TorchYOLOPAFPN(nn.Module):
    """The backbone (``backbone``) and the PAN neck: top-down, then bottom-up."""

    def __init__(self, depth: float, width: float, depthwise: bool):
        super().__init__()
        c3, c4, c5 = (int(c * width) for c in (256, 512, 1024))
        n = round(3 * depth)
        self.backbone = TorchCSPDarknet(depth, width, depthwise)
        self.lateral_conv0 = TorchBaseConv(c5, c4, 1)
        self.C3_p4 = TorchCSPLayer(2 * c4, c4, n, False, depthwise)
        self.reduce_conv1 = TorchBaseConv(c4, c3, 1)
        self.C3_p3 = TorchCSPLayer(2 * c3, c3, n, False, depthwise)
        self.bu_conv2 = conv(c3, c3, 3, 2, depthwise)
        self.C3_n3 = TorchCSPLayer(2 * c3, c4, n, False, depthwise)
        self.bu_conv1 = conv(c4, c4, 3, 2, depthwise)
        self.C3_n4 = TorchCSPLayer(2 * c4, c5, n, False, depthwise)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The three levels' features, strides 8, 16 and 32."""
        x3, x4, x5 = self.backbone(x)

        def up(t: torch.Tensor) -> torch.Tensor:
            return nn.functional.interpolate(t, scale_factor=2, mode="nearest")

        fpn0 = self.lateral_conv0(x5)
        fpn1 = self.reduce_conv1(self.C3_p4(torch.cat([up(fpn0), x4], 1)))
        pan2 = self.C3_p3(torch.cat([up(fpn1), x3], 1))
        pan1 = self.C3_n3(torch.cat([self.bu_conv2(pan2), fpn1], 1))
        pan0 = self.C3_n4(torch.cat([self.bu_conv1(pan1), fpn0], 1))
        return pan2, pan1, pan0


class TorchYOLOXHead(nn.Module):
    """The decoupled head: per level a 1x1 stem, two 3x3 convolutions for the classes and two
    for the box, 1x1 predictions of the classes, the box (4) and the objectness (1)."""

    def __init__(self, num_classes: int, width: float, depthwise: bool):
        super().__init__()
        hidden = int(256 * width)
        self.strides = (8, 16, 32)
        self.cls_convs = nn.ModuleList()
        self.reg_convs = nn.ModuleList()
        self.cls_preds = nn.ModuleList()
        self.reg_preds = nn.ModuleList()
        self.obj_preds = nn.ModuleList()
        self.stems = nn.ModuleList()
        for cin in (256, 512, 1024):
            self.stems.append(TorchBaseConv(int(cin * width), hidden, 1))
            for convs in (self.cls_convs, self.reg_convs):
                convs.append(nn.Sequential(conv(hidden, hidden, 3, 1, depthwise),
                                           conv(hidden, hidden, 3, 1, depthwise)))
            self.cls_preds.append(nn.Conv2d(hidden, num_classes, 1))
            self.reg_preds.append(nn.Conv2d(hidden, 4, 1))
            self.obj_preds.append(nn.Conv2d(hidden, 1, 1))

    def forward(self, features: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """(N, anchors, 5 + classes): centre x, y, width, height in pixels, objectness and
        class probabilities, anchors level by level, row-major within each."""
        outputs, grids, strides = [], [], []
        for k, x in enumerate(features):
            x = self.stems[k](x)
            reg = self.reg_convs[k](x)
            out = torch.cat([self.reg_preds[k](reg), self.obj_preds[k](reg).sigmoid(),
                             self.cls_preds[k](self.cls_convs[k](x)).sigmoid()], 1)
            outputs.append(out.flatten(2))
            h, w = x.shape[-2:]
            yv, xv = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            grids.append(torch.stack([xv, yv], 2).reshape(-1, 2))
            strides.append(torch.full((h * w, 1), self.strides[k]))
        out = torch.cat(outputs, 2).permute(0, 2, 1)
        grid = torch.cat(grids).to(out.dtype)
        stride = torch.cat(strides).to(out.dtype)
        return torch.cat([(out[..., :2] + grid) * stride, out[..., 2:4].exp() * stride,
                          out[..., 4:]], -1)


class TorchYOLOX(nn.Module):
    """YOLOX: ``backbone`` (the `TorchYOLOPAFPN`) and ``head``, in inference mode. Nano is
    depth 0.33, width 0.25, depthwise; Tiny depth 0.33, width 0.375."""

    def __init__(self, depth: float, width: float, num_classes: int = 80,
                 depthwise: bool = False):
        super().__init__()
        self.backbone = TorchYOLOPAFPN(depth, width, depthwise)
        self.head = TorchYOLOXHead(num_classes, width, depthwise)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The decoded predictions (N, anchors, 5 + classes) of images (N, 3, H, W)."""
        return self.head(self.backbone(x))
