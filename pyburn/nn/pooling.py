"""Pooling layers: max, average and adaptive (output-sized) pooling over 1 to 3 spatial
dims, thin modules over ``pyburn.nn.functional``'s pooling with PyTorch's arguments."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from . import functional as F
from .module import Module


class _MaxPoolNd(Module):
    """Max over sliding windows; `stride` defaults to `kernel_size`."""

    function: Any

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Any:
        """The pooled input (and the int32 positions of the maxima with return_indices)."""
        return type(self).function(input, self.kernel_size, self.stride, self.padding,
                                   self.dilation, ceil_mode=self.ceil_mode,
                                   return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-d max pooling of (N, C, L) or (C, L)."""

    function = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-d max pooling of (N, C, H, W) or (C, H, W).

    >>> import pyburn
    >>> pyburn.nn.MaxPool2d(2)(pyburn.ones(1, 3, 8, 8, device="flex")).shape
    (1, 3, 4, 4)
    """

    function = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """3-d max pooling of (N, C, D, H, W) or (C, D, H, W)."""

    function = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    """1-d average pooling of (N, C, L) or (C, L); `count_include_pad` counts the zero
    padding in each window's divisor."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True):
        super().__init__()
        # PyTorch keeps AvgPool1d's sizes as 1-tuples (its repr shows them so)
        self.kernel_size = _one(kernel_size)
        self.stride = self.kernel_size if stride is None else _one(stride)
        self.padding = _one(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        """The window means."""
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _one(value: Any) -> Any:
    return (value,) if isinstance(value, int) else tuple(value)


class _AvgPoolNd(Module):
    """2-d and 3-d average pooling; `divisor_override` replaces every window's count."""

    function: Any

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        """The window means."""
        return type(self).function(input, self.kernel_size, self.stride, self.padding,
                                   self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-d average pooling of (N, C, H, W) or (C, H, W)."""

    function = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """3-d average pooling of (N, C, D, H, W) or (C, D, H, W)."""

    function = staticmethod(F.avg_pool3d)


class _AdaptivePool(Module):
    """Pooling to a fixed output size, whatever the input size (`output_size` entries may
    be None: that dim keeps its size)."""

    function: Any

    def __init__(self, output_size: Any):
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Any:
        """The pooled input."""
        return type(self).function(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Adaptive average pooling of (N, C, L) to (N, C, output_size)."""

    function = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Adaptive average pooling of (N, C, H, W) to (N, C, *output_size); ``(1, 1)`` is global
    average pooling.

    >>> import pyburn
    >>> pyburn.nn.AdaptiveAvgPool2d((1, 1))(pyburn.ones(2, 3, 7, 5, device="flex")).shape
    (2, 3, 1, 1)
    """

    function = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptivePool):
    """Adaptive average pooling of (N, C, D, H, W) to (N, C, *output_size)."""

    function = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPool(_AdaptivePool):
    """Adaptive max pooling; with `return_indices` also the int32 positions of the maxima."""

    def __init__(self, output_size: Any, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        """The pooled input (and the positions of the maxima with return_indices)."""
        return type(self).function(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """Adaptive max pooling of (N, C, L) to (N, C, output_size)."""

    function = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """Adaptive max pooling of (N, C, H, W) to (N, C, *output_size)."""

    function = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    """Adaptive max pooling of (N, C, D, H, W) to (N, C, *output_size)."""

    function = staticmethod(F.adaptive_max_pool3d)
