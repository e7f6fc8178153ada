"""`__array_namespace_info__`: what pyburn.array_api can do, its default dtypes and devices.

>>> from pyburn import array_api as xp
>>> info = xp.__array_namespace_info__()
>>> info.default_dtypes(device="flex")["real floating"]
pyburn.float32
>>> xp.float64 in info.dtypes(device="flex").values()
True
"""

from __future__ import annotations

from typing import Any

from ..devices import Device, available_devices, default_device
from ..devices import device as as_device
from ..dtypes import DType, default_float, default_int
from .dtypes import DTYPES, isdtype

DeviceLike = Device | str | None


class Info:
    """The standard's inspection object (``xp.__array_namespace_info__()``)."""

    def capabilities(self) -> dict[str, Any]:
        """Optional features: boolean-mask indexing and data-dependent output shapes
        (`nonzero`, `unique_*`) both work on every device; ranks have no fixed limit."""
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": None}

    def default_device(self) -> Device:
        """The device arrays go to when none is named (`pyburn.default_device`)."""
        return default_device()

    def devices(self) -> list[Device]:
        """Every device that works here, fastest first."""
        return available_devices()

    def default_dtypes(self, *, device: DeviceLike = None) -> dict[str, DType | None]:
        """float32 and int32 on every device (WGSL has no 64-bit types, and the same code
        gives the same dtypes everywhere); no complex dtype exists."""
        return {"real floating": default_float, "complex floating": None,
                "integral": default_int, "indexing": default_int}

    def dtypes(self, *, device: DeviceLike = None,
               kind: str | tuple[str, ...] | None = None) -> dict[str, DType]:
        """The dtypes `device` (the default device if None) stores, by name, of `kind` if
        given (a kind's name or a tuple of them)."""
        stored = as_device(device).backend.dtypes
        return {d.name: d for d in DTYPES
                if d in stored and (kind is None or isdtype(d, kind))}


def __array_namespace_info__() -> Info:  # noqa: N807 - the standard's name
    """The namespace's inspection object."""
    return Info()

