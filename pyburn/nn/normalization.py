"""Normalisation layers: `BatchNorm1d/2d/3d`, `InstanceNorm1d/2d/3d`, `LayerNorm`,
`GroupNorm` and `RMSNorm`, with PyTorch's arguments, parameters, buffers and init.

Batch and instance norm keep running statistics as buffers (``running_mean``,
``running_var`` and ``num_batches_tracked``, which is int64 where the device stores int64
and int32 elsewhere). In training mode they are updated in place by each forward pass; the
buffer objects stay the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from ..devices import device as as_device
from ..dtypes import default_float, int32, int64
from ..errors import ArgumentError, ShapeError
from ..ops.creation import ones, zeros
from . import functional as F
from . import init
from .module import Module
from .parameter import empty_parameter


def _affine_parameters(module: Module, shape: tuple[int, ...], weight: bool, bias: bool,
                       device: Any, dtype: Any) -> None:
    """Register `weight` and `bias` of `shape` (or None where absent)."""
    for name, present in (("weight", weight), ("bias", bias)):
        module.register_parameter(name, empty_parameter(shape, device, dtype) if present
                                  else None)


def _reset_affine(module: Module) -> None:
    """Weight 1 and bias 0, where present."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _RunningStatsNorm(Module):
    """Per-channel normalisation with optional affine parameters and running statistics:
    what batch norm and instance norm share. `ranks` are the input ranks accepted."""

    ranks: tuple[int, ...]
    layout: str

    def __init__(self, num_features: int, eps: float, momentum: float | None, affine: bool,
                 track_running_stats: bool, device: Any, dtype: Any, bias: bool):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, (num_features,), affine, affine and bias, device, dtype)
        if track_running_stats:
            dev = as_device(device)
            dt = dtype or default_float
            counter = int64 if int64 in dev.backend.dtypes else int32
            self.register_buffer("running_mean", zeros(num_features, dtype=dt, device=dev))
            self.register_buffer("running_var", ones(num_features, dtype=dt, device=dev))
            self.register_buffer("num_batches_tracked", zeros((), dtype=counter, device=dev))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches tracked."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        """PyTorch's default: running statistics reset, weight 1, bias 0."""
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input(self, input: Tensor) -> None:
        if not isinstance(input, Tensor) or input.ndim not in self.ranks:
            wanted = " or ".join(map(str, self.ranks))
            raise ShapeError(f"{type(self).__name__} expects a {wanted}-d input "
                             f"({self.layout}), got shape {getattr(input, 'shape', input)}")

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_RunningStatsNorm):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias)

    def _momentum(self) -> float:
        """Count this batch (in training mode) and return its weight in the running
        statistics: the momentum, or 1 / batches seen (a cumulative average) when momentum is
        None."""
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                return 1.0 / self.num_batches_tracked.item()
        return 0.0 if self.momentum is None else self.momentum

    def forward(self, input: Tensor) -> Tensor:
        """Normalised input: batch statistics in training mode (updating the running ones),
        running statistics in evaluation mode (batch ones when none are tracked)."""
        self._check_input(input)
        momentum = self._momentum()
        use_batch = self.training or self.running_mean is None
        update = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if update else None,
                            self.running_var if update else None, self.weight, self.bias,
                            use_batch, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) over the batch (and length) per channel.

    >>> import pyburn
    >>> bn = pyburn.nn.BatchNorm1d(3, device="flex")
    >>> list(bn.state_dict())
    ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    """

    ranks, layout = (2, 3), "N, C or N, C, L"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) per channel."""

    ranks, layout = (4,), "N, C, H, W"


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) per channel."""

    ranks, layout = (5,), "N, C, D, H, W"


class _InstanceNorm(_RunningStatsNorm):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias)

    def forward(self, input: Tensor) -> Tensor:
        """Each channel of each sample normalised over its spatial dims (or with the
        running statistics, in evaluation mode when they are tracked). An unbatched input
        (one rank less) is accepted."""
        self._check_input(input)
        batched = input.ndim == self.ranks[-1]
        x = input if batched else input.unsqueeze(0)
        # as in PyTorch, instance norm neither counts batches nor averages cumulatively
        momentum = 0.0 if self.momentum is None else self.momentum
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats, momentum,
                              self.eps)
        return out if batched else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L)."""

    ranks, layout = (2, 3), "N, C, L or C, L"


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) (style transfer, GANs)."""

    ranks, layout = (3, 4), "N, C, H, W or C, H, W"


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W)."""

    ranks, layout = (4, 5), "N, C, D, H, W or C, D, H, W"


def _shape(normalized_shape: int | Sequence[int], name: str) -> tuple[int, ...]:
    shape = ((normalized_shape,) if isinstance(normalized_shape, int)
             else tuple(normalized_shape))
    if not shape or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise ArgumentError(f"{name}: normalized_shape must be an int or a non-empty sequence "
                            f"of sizes, got {normalized_shape!r}")
    return shape


class LayerNorm(Module):
    """Normalisation over the trailing dims `normalized_shape` of each sample, with a
    learned elementwise scale (`weight`, init 1) and shift (`bias`, init 0).

    >>> import pyburn
    >>> ln = pyburn.nn.LayerNorm(4, device="flex")
    >>> [round(v, 3) for v in ln(pyburn.tensor([[1.0, 2.0, 3.0, 4.0]], device="flex"))[0]
    ...  .tolist()]
    [-1.342, -0.447, 0.447, 1.342]
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape, "LayerNorm")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine,
                           elementwise_affine and bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1, bias 0."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        """`input` normalised over its trailing dims."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalisation over groups of channels of each sample of (N, C, *): `num_channels`
    split into `num_groups` groups, then a per-channel scale and shift."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True):
        super().__init__()
        if not isinstance(num_groups, int) or num_groups <= 0 or num_channels % num_groups:
            raise ArgumentError(f"GroupNorm: num_channels={num_channels} must be divisible by "
                                f"num_groups={num_groups!r}")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, (num_channels,), affine, affine and bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1, bias 0."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        """`input` normalised per sample and group."""
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing dims `normalized_shape`
    (LLaMA-style); `eps` None means the dtype's machine epsilon."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape, "RMSNorm")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.register_parameter("weight", empty_parameter(self.normalized_shape, device, dtype)
                                if elementwise_affine else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        """`input` divided by its root mean square over the trailing dims."""
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
