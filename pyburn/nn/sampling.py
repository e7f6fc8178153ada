"""Shape and resolution layers: `Identity`, `Flatten`, `Unflatten`, `Upsample`,
`PixelShuffle`, `PixelUnshuffle`, and the padding layers (`ZeroPad2d`, `ConstantPad1d/2d/3d`,
`ReflectionPad1d/2d/3d`, `ReplicationPad1d/2d/3d`, `CircularPad1d/2d/3d`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from . import functional as F
from .functional.windows import ntuple
from .module import Module


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored): a placeholder,
    e.g. to remove a classifier head."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()

    def forward(self, input: Any) -> Any:
        """`input` itself."""
        return input


class Flatten(Module):
    """Merge dims `start_dim`..`end_dim` into one: (N, C, H, W) -> (N, C*H*W) by default.

    >>> import pyburn
    >>> pyburn.nn.Flatten()(pyburn.ones(2, 3, 4, device="flex")).shape
    (2, 12)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        """The flattened input."""
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size`: the inverse of `Flatten`."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]):
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        """The input with `dim` split."""
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Upsample(Module):
    """Resize (N, C, *spatial) to `size` or by `scale_factor` with `F.interpolate`'s modes
    (nearest, linear, bilinear, bicubic, trilinear)."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None):
        super().__init__()
        self.size = size
        if isinstance(scale_factor, (tuple, list)):
            self.scale_factor: Any = tuple(float(s) for s in scale_factor)
        else:
            self.scale_factor = None if scale_factor is None else float(scale_factor)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        """The resized input."""
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self) -> str:
        what = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None
                else f"size={self.size!r}")
        return f"{what}, mode={self.mode!r}"


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r), r = `upscale_factor` (sub-pixel convolution)."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """The rearranged input."""
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W), r = `downscale_factor`."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """The rearranged input."""
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class _Pad(Module):
    """Padding of the last `nd` dims by `padding` (an int for every side, or 2 * nd ints:
    last dim's (before, after) first, as ``F.pad`` takes them)."""

    nd: int
    mode: str

    def __init__(self, padding: Any):
        super().__init__()
        self.padding = ntuple(padding, 2 * self.nd, "padding", type(self).__name__)

    def forward(self, input: Tensor) -> Tensor:
        """The padded input."""
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPad(_Pad):
    """Padding with a constant `value`."""

    mode = "constant"
    #: whether the repr names the value (PyTorch's zero-padding classes leave it out)
    shows_value = True

    def __init__(self, padding: Any, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        """The padded input."""
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        if not self.shows_value:
            return super().extra_repr()
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPad):
    """Pad the last dim with `value`."""

    nd = 1


class ConstantPad2d(_ConstantPad):
    """Pad the last 2 dims with `value`."""

    nd = 2


class ConstantPad3d(_ConstantPad):
    """Pad the last 3 dims with `value`."""

    nd = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    shows_value = False

    def __init__(self, padding: Any):
        super().__init__(padding, 0.0)


class ZeroPad2d(ConstantPad2d):
    """Pad the last 2 dims with zeros: ``ZeroPad2d((left, right, top, bottom))``."""

    shows_value = False

    def __init__(self, padding: Any):
        super().__init__(padding, 0.0)


class ZeroPad3d(ConstantPad3d):
    """Pad the last 3 dims with zeros."""

    shows_value = False

    def __init__(self, padding: Any):
        super().__init__(padding, 0.0)


class ReflectionPad1d(_Pad):
    """Mirror-pad the last dim (the edge itself is not repeated)."""

    nd, mode = 1, "reflect"


class ReplicationPad1d(_Pad):
    """Pad the last dim by repeating the edge values."""

    nd, mode = 1, "replicate"


class CircularPad1d(_Pad):
    """Pad the last dim by wrapping around."""

    nd, mode = 1, "circular"


class ReflectionPad2d(_Pad):
    """Mirror-pad the last 2 dims (the edge itself is not repeated)."""

    nd, mode = 2, "reflect"


class ReplicationPad2d(_Pad):
    """Pad the last 2 dims by repeating the edge values."""

    nd, mode = 2, "replicate"


class CircularPad2d(_Pad):
    """Pad the last 2 dims by wrapping around."""

    nd, mode = 2, "circular"


class ReflectionPad3d(_Pad):
    """Mirror-pad the last 3 dims (the edge itself is not repeated)."""

    nd, mode = 3, "reflect"


class ReplicationPad3d(_Pad):
    """Pad the last 3 dims by repeating the edge values."""

    nd, mode = 3, "replicate"


class CircularPad3d(_Pad):
    """Pad the last 3 dims by wrapping around."""

    nd, mode = 3, "circular"
