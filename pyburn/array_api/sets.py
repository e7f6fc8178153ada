"""The standard's set functions, composed from pyburn's sort, comparisons, cumulative sum
and boolean selection (their output shapes depend on the data). Each NaN is its own value.

>>> from pyburn import array_api as xp
>>> found = xp.unique_counts(xp.asarray([3, 1, 3, 3], device="flex"))
>>> found.values.tolist(), found.counts.tolist()
([1, 3], [1, 3])
"""

from __future__ import annotations

from typing import NamedTuple

from .._tensor import Tensor
from ..dtypes import default_int
from ..ops import indexing, reduction, sorting
from ..ops.creation import full
from ..ops.movement import cat, flatten, reshape


class UniqueAll(NamedTuple):
    """`unique_all`'s result."""

    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCounts(NamedTuple):
    """`unique_counts`'s result."""

    values: Tensor
    counts: Tensor


class UniqueInverse(NamedTuple):
    """`unique_inverse`'s result."""

    values: Tensor
    inverse_indices: Tensor


def _sorted(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """`x`'s elements sorted, the flat index of each, and the mask of the first of each run
    of equal values."""
    values, order = sorting.sort(flatten(x))
    size = values.shape[0]
    first = cat([full((min(size, 1),), True, device=x.device), values[1:] != values[:-1]])
    return values, order, first


def unique_all(x: Tensor, /) -> UniqueAll:
    """The distinct values of `x` (sorted), where each first occurs (flat index), the index
    of each element's value, and how often each occurs."""
    values, order, first = _sorted(x)
    size = values.shape[0]
    starts = indexing.nonzero(first, as_tuple=True)[0]
    ends = cat([starts[1:], full((min(size, 1),), size, default_int, x.device)])
    group = reduction.cumsum(first, 0, dtype=default_int) - 1
    inverse = indexing.scatter(full((size,), 0, default_int, x.device), 0, order, group)
    return UniqueAll(indexing.masked_select(values, first), indexing.take(order, starts),
                     reshape(inverse, x.shape), ends - starts)


def unique_counts(x: Tensor, /) -> UniqueCounts:
    """The distinct values of `x` (sorted) and how often each occurs."""
    found = unique_all(x)
    return UniqueCounts(found.values, found.counts)


def unique_inverse(x: Tensor, /) -> UniqueInverse:
    """The distinct values of `x` (sorted) and, per element, the index of its value."""
    found = unique_all(x)
    return UniqueInverse(found.values, found.inverse_indices)


def unique_values(x: Tensor, /) -> Tensor:
    """The distinct values of `x`, sorted."""
    values, _, first = _sorted(x)
    return indexing.masked_select(values, first)
