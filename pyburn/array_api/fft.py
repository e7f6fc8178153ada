"""The standard's ``fft`` extension, as far as pyburn can go: it has no complex dtype, so
the transforms themselves are absent, and the helpers that stay real are here.

>>> from pyburn import array_api as xp
>>> xp.fft.fftfreq(4, d=0.5, device="flex").tolist()
[0.0, 0.5, -1.0, -0.5]
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..devices import Device
from ..dtypes import default_float
from ..ops.creation import arange
from ..ops.movement import roll
from ..shape import norm_dims


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None,
            device: Device | str | None = None) -> Tensor:
    """The sample frequencies of an n-point transform: 0, 1, ..., then the negative ones,
    over ``n * d``."""
    steps = arange(n, dtype=dtype or default_float, device=device)
    return (steps - (steps >= (n + 1) // 2) * n) / (n * d)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None,
             device: Device | str | None = None) -> Tensor:
    """The non-negative sample frequencies of an n-point real transform."""
    return arange(n // 2 + 1, dtype=dtype or default_float, device=device) / (n * d)


def fftshift(x: Tensor, /, *, axes: int | tuple[int, ...] | None = None) -> Tensor:
    """`x` rolled so that the zero frequency is in the middle of each of `axes`."""
    dims = norm_dims(axes, x.ndim)
    return roll(x, [x.shape[a] // 2 for a in dims], dims)


def ifftshift(x: Tensor, /, *, axes: int | tuple[int, ...] | None = None) -> Tensor:
    """The inverse of `fftshift`."""
    dims = norm_dims(axes, x.ndim)
    return roll(x, [-(x.shape[a] // 2) for a in dims], dims)


__all__ = ["fftfreq", "fftshift", "ifftshift", "rfftfreq"]
