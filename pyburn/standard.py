"""The array API standard's entry points on `pyburn.Tensor`: ``t.__array_namespace__()``
gives `pyburn.array_api` (loaded on first use, as ``import pyburn`` does not load it) and
``t.to_device(d)`` moves a tensor. DLPack's methods are pyburn/dlpack.py's.

>>> import pyburn
>>> t = pyburn.tensor([1.0, 2.0], device="flex")
>>> t.__array_namespace__().__array_api_version__, t.to_device("flex").device
('2024.12', device('flex'))
"""

from __future__ import annotations

from types import ModuleType

from ._tensor import Tensor, install
from .devices import Device
from .errors import ArgumentError

#: the revisions of the standard whose namespace `pyburn.array_api` can stand for
API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def _array_namespace(x: Tensor, /, *, api_version: str | None = None) -> ModuleType:
    """`pyburn.array_api`, the namespace of the standard's functions on pyburn tensors."""
    if api_version is not None and api_version not in API_VERSIONS:
        raise ArgumentError(f"pyburn.array_api follows the array API revisions "
                            f"{', '.join(API_VERSIONS)}; got {api_version!r}")
    from . import array_api  # import time: the namespace loads on first use

    return array_api


def _to_device(x: Tensor, device: Device | str, /, *, stream: object = None) -> Tensor:
    """This tensor on `device` (the standard's spelling of ``t.to(device)``)."""
    if stream is not None:
        raise ArgumentError(f"pyburn moves tensors without streams; got stream={stream!r}")
    return x.to(device)


install({"__array_namespace__": _array_namespace, "to_device": _to_device})
