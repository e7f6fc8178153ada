"""YOLOX's backbone and neck (Ge et al., "YOLOX: Exceeding YOLO Series in 2021"): the
CSPDarknet and the PAN feature pyramid over it, `YOLOPAFPN`, in the layout of the official
repository (Megvii-BaseDetection/YOLOX), so that its weights load with their own keys:
``backbone.stem.conv.conv.weight``, ``backbone.dark2.1.m.0.conv2.bn.running_var``,
``lateral_conv0.conv.weight``, ``C3_p4.conv3.bn.bias``, ... under the detector's
``backbone.`` (`pyburn.models.yolox`).

Every convolution is a `BaseConv` (convolution without bias, batch norm with YOLOX's eps
1e-3 and momentum 0.03, SiLU) or, in the depthwise models (YOLOX-Nano), a `DWConv` where
YOLOX puts one. `depth` and `width` scale the blocks per stage and the channels of
YOLOX-L's (depth 1, width 1) as YOLOX's models do.
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..nn import functional as F
from ..nn.containers import Sequential
from ..nn.conv import Conv2d
from ..nn.module import Module
from ..nn.normalization import BatchNorm2d
from ..ops.movement import cat

#: the channels of the three levels (strides 8, 16, 32) at width 1
LEVEL_CHANNELS = (256, 512, 1024)
#: the max pools' sizes in the spatial pyramid pooling block
SPP_KERNELS = (5, 9, 13)


class BaseConv(Module):
    """A convolution without bias, padded by ``(k - 1) // 2`` (only the stride changes the
    size), batch norm (eps 1e-3, momentum 0.03: YOLOX's), SiLU; keys ``conv.weight`` and
    ``bn.*``.

    >>> import pyburn
    >>> block = BaseConv(3, 4, 3, stride=2, device="flex")
    >>> block(pyburn.zeros(1, 3, 6, 6, device="flex")).shape, list(block.state_dict())[:2]
    ((1, 4, 3, 3), ['conv.weight', 'bn.weight'])
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 groups: int = 1, device: Any = None, dtype: Any = None):
        super().__init__()
        self.conv = Conv2d(in_channels, out_channels, kernel_size, stride,
                           (kernel_size - 1) // 2, groups=groups, bias=False, device=device,
                           dtype=dtype)
        self.bn = BatchNorm2d(out_channels, eps=1e-3, momentum=0.03, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """conv - bn - silu."""
        return F.silu(self.bn(self.conv(x)))


class DWConv(Module):
    """A depthwise `BaseConv` (``dconv``, strided) then a pointwise one (``pconv``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        self.dconv = BaseConv(in_channels, in_channels, kernel_size, stride, groups=in_channels,
                              device=device, dtype=dtype)
        self.pconv = BaseConv(in_channels, out_channels, 1, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """Depthwise, then pointwise."""
        return self.pconv(self.dconv(x))


def conv_block(in_channels: int, out_channels: int, kernel_size: int, stride: int,
               depthwise: bool, device: Any = None, dtype: Any = None) -> Module:
    """A `DWConv` where `depthwise`, a `BaseConv` otherwise (the convolutions YOLOX makes
    depthwise in its Nano model)."""
    kind = DWConv if depthwise else BaseConv
    return kind(in_channels, out_channels, kernel_size, stride, device=device, dtype=dtype)


class DarknetBottleneck(Module):
    """A 1x1 `BaseConv` (``conv1``) and a 3x3 one (``conv2``) at the same width, the input
    added back where `shortcut`."""

    def __init__(self, channels: int, shortcut: bool, depthwise: bool, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.conv1 = BaseConv(channels, channels, 1, device=device, dtype=dtype)
        self.conv2 = conv_block(channels, channels, 3, 1, depthwise, device, dtype)
        self.shortcut = shortcut

    def forward(self, x: Tensor) -> Tensor:
        """The block's output."""
        y = self.conv2(self.conv1(x))
        return y + x if self.shortcut else y


class CSPLayer(Module):
    """The cross-stage partial block: two 1x1 branches (``conv1``, ``conv2``) of half the
    output width, `n` `DarknetBottleneck`s (``m``) on the first, both concatenated and mixed
    by a 1x1 ``conv3``.

    >>> import pyburn
    >>> layer = CSPLayer(8, 16, 2, device="flex")
    >>> layer(pyburn.zeros(1, 8, 4, 4, device="flex")).shape
    (1, 16, 4, 4)
    """

    def __init__(self, in_channels: int, out_channels: int, n: int = 1, shortcut: bool = True,
                 depthwise: bool = False, device: Any = None, dtype: Any = None):
        super().__init__()
        hidden = out_channels // 2
        self.conv1 = BaseConv(in_channels, hidden, 1, device=device, dtype=dtype)
        self.conv2 = BaseConv(in_channels, hidden, 1, device=device, dtype=dtype)
        self.conv3 = BaseConv(2 * hidden, out_channels, 1, device=device, dtype=dtype)
        self.m = Sequential(*(DarknetBottleneck(hidden, shortcut, depthwise, device, dtype)
                              for _ in range(n)))

    def forward(self, x: Tensor) -> Tensor:
        """The layer's output."""
        return self.conv3(cat([self.m(self.conv1(x)), self.conv2(x)], 1))


class SPPBottleneck(Module):
    """Spatial pyramid pooling: a 1x1 `BaseConv` to half the channels (``conv1``), max pools
    of 5, 9 and 13 (stride 1, the size kept) concatenated with it, and a 1x1 ``conv2``."""

    def __init__(self, in_channels: int, out_channels: int, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        hidden = in_channels // 2
        self.conv1 = BaseConv(in_channels, hidden, 1, device=device, dtype=dtype)
        self.conv2 = BaseConv(hidden * (len(SPP_KERNELS) + 1), out_channels, 1, device=device,
                              dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """The block's output."""
        x = self.conv1(x)
        pooled = [F.max_pool2d(x, k, 1, k // 2) for k in SPP_KERNELS]
        return self.conv2(cat([x, *pooled], 1))


class Focus(Module):
    """The stem: each 2x2 block of pixels into channels (top-left, bottom-left, top-right,
    bottom-right, YOLOX's order), then a 3x3 `BaseConv` (``conv``): half the size, no pixel
    lost."""

    def __init__(self, in_channels: int, out_channels: int, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.conv = BaseConv(in_channels * 4, out_channels, 3, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """(N, C, H, W) to (N, out_channels, H / 2, W / 2)."""
        return self.conv(cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2],
                              x[..., 1::2, 1::2]], 1))


class CSPDarknet(Module):
    """The backbone: the `Focus` stem (``stem``), then ``dark2`` ... ``dark5``, each a strided
    3x3 convolution and a `CSPLayer` (dark5 with an `SPPBottleneck` between, and no
    shortcuts); each halves the size. Gives dark3, dark4 and dark5 (strides 8, 16, 32)."""

    def __init__(self, depth: float, width: float, depthwise: bool = False, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        c = int(width * 64)
        n = max(round(depth * 3), 1)
        self.stem = Focus(3, c, device=device, dtype=dtype)
        for stage, (cin, blocks) in enumerate(((c, n), (2 * c, 3 * n), (4 * c, 3 * n)), 2):
            setattr(self, f"dark{stage}", Sequential(
                conv_block(cin, 2 * cin, 3, 2, depthwise, device, dtype),
                CSPLayer(2 * cin, 2 * cin, blocks, True, depthwise, device, dtype)))
        self.dark5 = Sequential(
            conv_block(8 * c, 16 * c, 3, 2, depthwise, device, dtype),
            SPPBottleneck(16 * c, 16 * c, device, dtype),
            CSPLayer(16 * c, 16 * c, n, False, depthwise, device, dtype))

    def forward(self, images: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """dark3, dark4 and dark5's features."""
        x3 = self.dark3(self.dark2(self.stem(images)))
        x4 = self.dark4(x3)
        return x3, x4, self.dark5(x4)


class YOLOPAFPN(Module):
    """The `CSPDarknet` (``backbone``) and YOLOX's PAN neck over its three levels: top-down
    (``lateral_conv0``, ``C3_p4``, ``reduce_conv1``, ``C3_p3``, nearest 2x upsampling between),
    then bottom-up (``bu_conv2``, ``C3_n3``, ``bu_conv1``, ``C3_n4``). Gives three levels of
    features, strides 8, 16 and 32, with ``LEVEL_CHANNELS * width`` channels.

    >>> import pyburn
    >>> neck = YOLOPAFPN(0.33, 0.125, device="cpu")
    >>> [f.shape for f in neck(pyburn.zeros(1, 3, 64, 64, device="cpu"))]
    [(1, 32, 8, 8), (1, 64, 4, 4), (1, 128, 2, 2)]
    """

    def __init__(self, depth: float, width: float, depthwise: bool = False, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        c3, c4, c5 = (int(c * width) for c in LEVEL_CHANNELS)
        n = round(3 * depth)
        self.backbone = CSPDarknet(depth, width, depthwise, device, dtype)
        self.lateral_conv0 = BaseConv(c5, c4, 1, device=device, dtype=dtype)
        self.C3_p4 = CSPLayer(2 * c4, c4, n, False, depthwise, device, dtype)
        self.reduce_conv1 = BaseConv(c4, c3, 1, device=device, dtype=dtype)
        self.C3_p3 = CSPLayer(2 * c3, c3, n, False, depthwise, device, dtype)
        self.bu_conv2 = conv_block(c3, c3, 3, 2, depthwise, device, dtype)
        self.C3_n3 = CSPLayer(2 * c3, c4, n, False, depthwise, device, dtype)
        self.bu_conv1 = conv_block(c4, c4, 3, 2, depthwise, device, dtype)
        self.C3_n4 = CSPLayer(2 * c4, c5, n, False, depthwise, device, dtype)

    def forward(self, images: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The three levels' features (strides 8, 16, 32) of images (N, 3, H, W)."""
        x3, x4, x5 = self.backbone(images)
        fpn0 = self.lateral_conv0(x5)
        fpn1 = self.reduce_conv1(self.C3_p4(cat([_upsample(fpn0), x4], 1)))
        pan2 = self.C3_p3(cat([_upsample(fpn1), x3], 1))
        pan1 = self.C3_n3(cat([self.bu_conv2(pan2), fpn1], 1))
        pan0 = self.C3_n4(cat([self.bu_conv1(pan1), fpn0], 1))
        return pan2, pan1, pan0


def _upsample(x: Tensor) -> Tensor:
    """Twice the size, each pixel repeated (nearest)."""
    return F.interpolate(x, scale_factor=2, mode="nearest")
