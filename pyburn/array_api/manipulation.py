"""The standard's manipulation and indexing functions: pyburn's movement ops (`reshape`,
`permute`, `cat`, `stack`, `flip`, `roll`, `tile`, ...) and `gather`/`index_select`, with
the standard's signatures and checks.

>>> from pyburn import array_api as xp
>>> x = xp.reshape(xp.arange(6, device="flex"), (2, 3))
>>> xp.repeat(x, 2, axis=0).shape, xp.take(x, xp.asarray([-1], device="flex"), axis=1).tolist()
((4, 3), [[2], [5]])
"""

from __future__ import annotations

from collections.abc import Sequence

from .._tensor import Tensor
from ..errors import ShapeError
from ..ops import indexing, movement
from ..ops.math_ops import where
from ..shape import broadcast_shapes, norm_dim

Axis = int | tuple[int, ...] | None


def broadcast_arrays(*arrays: Tensor) -> list[Tensor]:
    """The arrays broadcast to one shape."""
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return [movement.broadcast_to(a, shape) for a in arrays]


def broadcast_to(x: Tensor, /, shape: tuple[int, ...]) -> Tensor:
    """`pyburn.broadcast_to`."""
    return movement.broadcast_to(x, shape)


def concat(arrays: Sequence[Tensor], /, *, axis: int | None = 0) -> Tensor:
    """`pyburn.cat` along `axis`; None joins the flattened arrays."""
    if axis is None:
        return movement.cat([movement.flatten(a) for a in arrays])
    return movement.cat(list(arrays), axis)


def expand_dims(x: Tensor, /, axis: int = 0) -> Tensor:
    """`pyburn.unsqueeze`."""
    return movement.unsqueeze(x, axis)


def flip(x: Tensor, /, *, axis: Axis = None) -> Tensor:
    """`pyburn.flip` along `axis` (every axis if None)."""
    return movement.flip(x, tuple(range(x.ndim)) if axis is None else axis)


def moveaxis(x: Tensor, source: int | tuple[int, ...], destination: int | tuple[int, ...], /
             ) -> Tensor:
    """`pyburn.movedim`."""
    return movement.movedim(x, source, destination)


def permute_dims(x: Tensor, /, axes: tuple[int, ...]) -> Tensor:
    """`pyburn.permute`."""
    return movement.permute(x, *axes)


def repeat(x: Tensor, repeats: int | Tensor, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated `repeats` times (an int, or one count per element) along
    `axis` (of the flattened array if None): an `index_select` of the repeated indices."""
    if axis is None:
        x, axis = movement.flatten(x), 0
    d = norm_dim(axis, x.ndim)
    size = x.shape[d]
    counts = [repeats] * size if isinstance(repeats, int) else repeats.tolist()
    if isinstance(counts, int):  # a 0-d array of counts
        counts = [counts] * size
    picks = [i for i, n in enumerate(counts) for _ in range(n)]
    return indexing.index_select(x, d, picks)


def reshape(x: Tensor, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Tensor:
    """`pyburn.reshape` (handles are immutable: no copy is ever seen)."""
    return movement.reshape(x, shape)


def roll(x: Tensor, /, shift: int | tuple[int, ...], *, axis: Axis = None) -> Tensor:
    """`pyburn.roll`."""
    return movement.roll(x, shift, axis)


def squeeze(x: Tensor, /, axis: int | tuple[int, ...]) -> Tensor:
    """`x` without the size-1 axes `axis`; an axis of another size raises ShapeError."""
    axes = (axis,) if isinstance(axis, int) else axis
    for a in axes:
        if x.shape[norm_dim(a, x.ndim)] != 1:
            raise ShapeError(f"squeeze: axis {a} of shape {x.shape} is not of size 1")
    return movement.squeeze(x, axes)


def stack(arrays: Sequence[Tensor], /, *, axis: int = 0) -> Tensor:
    """`pyburn.stack`."""
    return movement.stack(list(arrays), axis)


def tile(x: Tensor, repetitions: tuple[int, ...], /) -> Tensor:
    """`pyburn.tile`."""
    return movement.tile(x, repetitions)


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of `x` along `axis`."""
    d = norm_dim(axis, x.ndim)
    return tuple(movement.squeeze(movement.slice_dim(x, d, i, i + 1), d)
                 for i in range(x.shape[d]))


def take(x: Tensor, indices: Tensor, /, *, axis: int | None = None) -> Tensor:
    """`pyburn.index_select` along `axis` (may be None for a 1-d `x`); negative indices
    count from the end."""
    if axis is None:
        if x.ndim != 1:
            raise ShapeError(f"take needs an axis for a {x.ndim}-d array")
        axis = 0
    d = norm_dim(axis, x.ndim)
    return indexing.index_select(x, d, where(indices < 0, indices + x.shape[d], indices))


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """`pyburn.gather` along `axis`, the other axes broadcast; negative indices count from
    the end."""
    d = norm_dim(axis, x.ndim)
    shape = broadcast_shapes(x.shape[:d] + (1,) + x.shape[d + 1:],
                             indices.shape[:d] + (1,) + indices.shape[d + 1:])
    index = movement.broadcast_to(indices, shape[:d] + indices.shape[d:d + 1] + shape[d + 1:])
    source = movement.broadcast_to(x, shape[:d] + x.shape[d:d + 1] + shape[d + 1:])
    return indexing.gather(source, d, where(index < 0, index + x.shape[d], index))
