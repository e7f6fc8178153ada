"""The standard's searching and sorting functions: pyburn's `argmax`, `argmin`, `nonzero`,
`where`, `sort` and `argsort`, and `searchsorted` composed from its comparisons.

>>> from pyburn import array_api as xp
>>> edges = xp.asarray([1.0, 2.0, 3.0], device="flex")
>>> xp.searchsorted(edges, xp.asarray([0.5, 2.0, 9.0], device="flex")).tolist()
[0, 1, 3]
"""

from __future__ import annotations

from .._tensor import Tensor
from ..dtypes import default_int
from ..errors import ArgumentError, ShapeError
from ..ops import indexing, reduction, sorting
from ..ops.math_ops import where
from ..ops.movement import unsqueeze


def argmax(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """`pyburn.argmax`: int32 indices of the first largest value."""
    return reduction.argmax(x, axis, keepdims)


def argmin(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """`pyburn.argmin`: int32 indices of the first smallest value."""
    return reduction.argmin(x, axis, keepdims)


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """`pyburn.nonzero` as a tuple of int32 index arrays, one per axis."""
    if x.ndim == 0:
        raise ShapeError("nonzero of a 0-d array")
    return tuple(indexing.nonzero(x, as_tuple=True))


def searchsorted(x1: Tensor, x2: Tensor, /, *, side: str = "left",
                 sorter: Tensor | None = None) -> Tensor:
    """Where each element of `x2` would go in the sorted 1-d `x1` (or `x1` ordered by
    `sorter`): the count of elements below it ("left") or not above it ("right")."""
    if side not in ("left", "right"):
        raise ArgumentError(f"searchsorted: side is 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise ShapeError(f"searchsorted needs a 1-d sorted array, got shape {x1.shape}")
    if sorter is not None:
        x1 = indexing.take(x1, sorter)
    probe = unsqueeze(x2, -1)
    before = x1 < probe if side == "left" else x1 <= probe
    return reduction.sum(before, dim=-1, dtype=default_int)


def sort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True
         ) -> Tensor:
    """`pyburn.sort`'s values (a stable sort: equal elements keep their order)."""
    return sorting.sort(x, axis, descending).values


def argsort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True
            ) -> Tensor:
    """`pyburn.argsort`: the int32 indices of a stable sort."""
    return sorting.argsort(x, axis, descending)


__all__ = ["argmax", "argmin", "argsort", "nonzero", "searchsorted", "sort", "where"]
