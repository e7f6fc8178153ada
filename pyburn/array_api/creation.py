"""The standard's creation functions: pyburn's own (`pyburn.ops.creation`, whose signatures
already fit: `zeros`, `ones`, `empty`, `full` and their ``_like`` forms), and wrappers that
give the others the standard's signature.

>>> from pyburn import array_api as xp
>>> xp.linspace(0, 1, 4, endpoint=False, device="flex").tolist()
[0.0, 0.25, 0.5, 0.75]
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..devices import Device
from ..dlpack import from_dlpack
from ..dtypes import as_dtype
from ..errors import ArgumentError
from ..ops import creation
from ..ops.creation import (
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from ..ops.linalg import tril as _tril
from ..ops.linalg import triu as _triu
from ..ops.movement import broadcast_to, reshape

DeviceLike = Device | str | None


def asarray(obj: Any, /, *, dtype: Any = None, device: DeviceLike = None,
            copy: bool | None = None) -> Tensor:
    """An array from an array, a DLPack exporter (numpy, PyTorch), nested sequences of
    numbers or a scalar. `copy=False` shares memory (a DLPack exporter, on the cpu device)
    or raises ValueError where that cannot be."""
    if isinstance(obj, Tensor):
        moved = obj.to(obj.device if device is None else device, dtype)
        if copy is False and moved is not obj:
            raise ArgumentError(f"asarray(copy=False) of a {obj.dtype.name} array on "
                                f"{obj.device.name} needs a copy")
        if copy and moved is obj:  # new memory, which a DLPack export does not share with obj
            return creation.tensor(obj.to_bytes(), obj.dtype, obj.device, shape=obj.shape)
        return moved
    if copy is False:
        if not hasattr(obj, "__dlpack__"):
            raise ArgumentError(f"asarray(copy=False) cannot share a {type(obj).__name__}")
        shared = from_dlpack(obj, device=device, copy=False)
        if dtype is not None and as_dtype(dtype) is not shared.dtype:
            raise ArgumentError("asarray(copy=False) with another dtype needs a copy")
        return shared
    return creation.tensor(obj, dtype=dtype, device=device)


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *,
           dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """`pyburn.arange`."""
    return creation.arange(start, stop, step, dtype=dtype, device=device)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: DeviceLike = None) -> Tensor:
    """Ones on the `k`-th diagonal: the band of ``pyburn.ones`` between `tril` and
    `triu` at `k`."""
    band = creation.ones((n_rows, n_rows if n_cols is None else n_cols), dtype=dtype,
                         device=device)
    return _tril(_triu(band, k), k)


def linspace(start: int | float, stop: int | float, /, num: int, *, dtype: Any = None,
             device: DeviceLike = None, endpoint: bool = True) -> Tensor:
    """`pyburn.linspace`; without the endpoint, the first `num` of ``num + 1`` steps."""
    if endpoint:
        return creation.linspace(start, stop, num, dtype=dtype, device=device)
    return creation.linspace(start, stop, num + 1, dtype=dtype, device=device)[:num]


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids of 1-d arrays: "xy" (Cartesian: the first two axes swapped) or
    "ij" (matrix) indexing."""
    if indexing not in ("xy", "ij"):
        raise ArgumentError(f"meshgrid: indexing is 'xy' or 'ij', got {indexing!r}")
    sizes = [a.shape[0] if a.ndim else 1 for a in arrays]
    axes = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) > 1:
        axes[0], axes[1] = 1, 0
    shape = [sizes[a] for a in axes]
    return [broadcast_to(reshape(a, [-1 if axes[d] == i else 1 for d in range(len(axes))]),
                         shape) for i, a in enumerate(arrays)]


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """`pyburn.tril`."""
    return _tril(x, k)


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """`pyburn.triu`."""
    return _triu(x, k)


__all__ = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
           "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"]
