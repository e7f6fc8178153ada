"""Sorting: sort, argsort and topk along a dim (the backend's stable sort, NaN last)."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor, install, wrap
from ..dtypes import int32
from ..errors import ArgumentError
from ..shape import norm_dim
from .indexing import gather
from .movement import slice_dim
from .reduction import ValuesIndices


def sort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Stable sort along `dim`: (values, int32 indices). NaN sorts as the largest value."""
    if x.ndim == 0:
        return ValuesIndices(x, wrap(x.device.backend.full((), 0, int32), (), int32, x.device))
    d = norm_dim(dim, x.ndim)
    values, indices = x.device.backend.sort(x._h, d, descending)
    order = wrap(indices, x.shape, int32, x.device)
    if x.requires_grad:  # the sorted values as a gather, so gradients flow back to x
        return ValuesIndices(gather(x, d, order), order)
    return ValuesIndices(wrap(values, x.shape, x.dtype, x.device), order)


def argsort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """int32 indices that sort x along `dim`."""
    return sort(x, dim, descending).indices


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """The `k` largest (or smallest) elements along `dim`, in order: (values, indices)."""
    d = norm_dim(dim, max(x.ndim, 1))
    size = x.shape[d] if x.ndim else 1
    if not 0 <= k <= size:
        raise ArgumentError(f"topk: k={k} is out of range for dim {dim} of size {size}")
    values, indices = sort(x, d, descending=largest)
    if x.ndim == 0:
        return ValuesIndices(values, indices)
    return ValuesIndices(slice_dim(values, d, 0, k), slice_dim(indices, d, 0, k))


install({"sort": sort, "argsort": argsort, "topk": topk})
