"""The standard's reductions and scans (statistical and utility functions): pyburn's, with
``axis``/``keepdims`` for ``dim``/``keepdim``.

One dtype rule differs: sums and products of bool and uint8 arrays give int32, the default
integer (the standard asks for an unsigned type as wide as it, which pyburn does not have).

>>> from pyburn import array_api as xp
>>> x = xp.asarray([[1, 2], [3, 4]], device="flex")
>>> xp.sum(x, axis=0).tolist(), xp.cumulative_sum(x, axis=1, include_initial=True).tolist()
([4, 6], [[0, 1, 3], [0, 3, 7]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..dtypes import default_int
from ..errors import ArgumentError
from ..ops import reduction
from ..ops.creation import full
from ..ops.movement import cat, flatten, slice_dim
from ..shape import norm_dim

Axis = int | tuple[int, ...] | None


def _dims(axis: Axis) -> Any:
    return list(axis) if isinstance(axis, tuple) else axis


def _reduction(fn: Callable[..., Tensor], name: str, counts: bool) -> Callable[..., Tensor]:
    """The standard's form of a pyburn reduction: `counts` ones (sum, prod) take a dtype
    and widen bool and uint8 to int32."""

    def reduce(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False,
               **options: Any) -> Tensor:
        if counts and options.get("dtype") is None and x.dtype.kind in "bu":
            options["dtype"] = default_int
        return fn(x, dim=_dims(axis), keepdim=keepdims, **options)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"`pyburn.{fn.__name__}` over `axis` (all axes if None)."
    return reduce


#: the reductions, by standard name
REDUCTIONS: dict[str, Callable[..., Tensor]] = {
    name: _reduction(fn, name, name in ("sum", "prod")) for name, fn in (
        ("max", reduction.amax), ("min", reduction.amin), ("mean", reduction.mean),
        ("prod", reduction.prod), ("sum", reduction.sum), ("std", reduction.std),
        ("var", reduction.var), ("all", reduction.all), ("any", reduction.any))}


def _scan(fn: Callable[..., Tensor], name: str, identity: int) -> Callable[..., Tensor]:
    """The standard's form of a pyburn scan: ``include_initial`` puts the identity first."""

    def scan(x: Tensor, /, *, axis: int | None = None, dtype: Any = None,
             include_initial: bool = False) -> Tensor:
        if axis is None:
            if x.ndim > 1:
                raise ArgumentError(f"{name} needs an axis for a {x.ndim}-d array")
            x, axis = flatten(x), 0
        if dtype is None and x.dtype.kind in "bu":
            dtype = default_int
        out = fn(x, norm_dim(axis, x.ndim), dtype=dtype)
        if include_initial:
            d = norm_dim(axis, x.ndim)
            first = full(x.shape[:d] + (1,) + x.shape[d + 1:], identity, out.dtype, out.device)
            out = cat([first, out], d)
        return out

    scan.__name__ = scan.__qualname__ = name
    scan.__doc__ = f"`pyburn.{fn.__name__}` along `axis`, with the identity first if asked."
    return scan


#: the scans, by standard name
SCANS: dict[str, Callable[..., Tensor]] = {
    "cumulative_sum": _scan(reduction.cumsum, "cumulative_sum", 0),
    "cumulative_prod": _scan(reduction.cumprod, "cumulative_prod", 1)}


def count_nonzero(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The number of nonzero elements over `axis`, as int32."""
    return reduction.sum(x != 0, dim=_dims(axis), keepdim=keepdims, dtype=default_int)


def diff(x: Tensor, /, *, axis: int = -1, n: int = 1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The `n`-th forward difference along `axis` (after `prepend` and `append`)."""
    d = norm_dim(axis, x.ndim)
    x = cat([t for t in (prepend, x, append) if t is not None], d)
    for _ in range(n):
        size = x.shape[d]
        x = slice_dim(x, d, 1, size) - slice_dim(x, d, 0, max(size - 1, 0))
    return x
