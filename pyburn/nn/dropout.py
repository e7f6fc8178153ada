"""Dropout layers: active in training mode only (``model.eval()`` turns them into the
identity). Masks come from pyburn's generator, so ``pyburn.manual_seed`` reproduces them."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError
from . import functional as F
from .module import Module


class _Dropout(Module):
    """A dropout with probability `p` whose `function` takes (input, p, training)."""

    function: Any

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ArgumentError(f"{type(self).__name__}: p must be a probability in [0, 1], "
                                f"got {p!r}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """`input` with random elements (or channels) dropped in training mode."""
        return type(self).function(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_Dropout):
    """Zero each element with probability `p` in training, scaling the rest by 1 / (1 - p).

    >>> import pyburn
    >>> drop = pyburn.nn.Dropout(0.5).eval()
    >>> drop(pyburn.ones(3, device="flex")).tolist()
    [1.0, 1.0, 1.0]
    """

    function = staticmethod(F.dropout)


class Dropout1d(_Dropout):
    """Zero whole channels of (N, C, L) or (C, L) with probability `p`."""

    function = staticmethod(F.dropout1d)


class Dropout2d(_Dropout):
    """Zero whole channels of (N, C, H, W) or (C, H, W) with probability `p`."""

    function = staticmethod(F.dropout2d)


class Dropout3d(_Dropout):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability `p`."""

    function = staticmethod(F.dropout3d)


class AlphaDropout(_Dropout):
    """Dropout for SELU networks: keeps zero mean and unit variance."""

    function = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_Dropout):
    """Alpha dropout of whole channels."""

    function = staticmethod(F.feature_alpha_dropout)
