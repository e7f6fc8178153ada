"""Neural-network building blocks. ``pyburn.nn.functional`` (``import pyburn.nn.functional as
F``) holds the stateless ops: activations, losses, convolution, pooling, normalisation,
attention, resampling."""

from __future__ import annotations

from . import functional

__all__ = ["functional"]
