"""View arithmetic shared by the backends whose handles are (storage, shape, strides, offset):
flex, wgpu and wasm. A handle type only needs ``shape``, ``strides``, ``offset`` and
``view(shape, strides, offset)``; `StridedView` is wgpu's and wasm's."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from ..dtypes import DType
from ..shape import contiguous_strides

Shape = tuple[int, ...]


class StridedView:
    """A tensor over a pooled `storage` (``pool.Storage``), read as `dtype` through `shape`,
    `strides` and `offset`, which count elements: strides may be 0 (expanded dims) or
    negative (flipped ones)."""

    __slots__ = ("storage", "shape", "strides", "offset", "dtype")

    def __init__(self, storage: Any, shape: Shape, dtype: DType,
                 strides: Shape | None = None, offset: int = 0):
        self.storage = storage
        self.shape = shape
        self.dtype = dtype
        self.strides = contiguous_strides(shape) if strides is None else strides
        self.offset = offset

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.dtype.name}, shape={self.shape}, "
                f"strides={self.strides}, offset={self.offset}, {self.storage!r})")

    @property
    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    def is_contiguous(self) -> bool:
        """Whether the elements lie in row-major order, one after the other."""
        step = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != step:
                return False
            step *= size
        return True

    def view(self, shape: Shape, strides: Shape, offset: int) -> Any:
        """Another view of the same storage, of the same type."""
        return type(self)(self.storage, shape, self.dtype, strides, offset)


def slice_view(x: Any, starts: Sequence[int], stops: Sequence[int], steps: Sequence[int]) -> Any:
    """Basic slicing on every axis (``0 <= start <= stop <= size``, step >= 1), as a view."""
    offset = x.offset
    shape, strides = [], []
    for start, stop, step, stride in zip(starts, stops, steps, x.strides):
        shape.append(max(0, -(-(stop - start) // step)))
        strides.append(stride * step)
        offset += start * stride
    return x.view(tuple(shape), tuple(strides), offset)


def flip_view(x: Any, axes: Sequence[int]) -> Any:
    """Reverse `axes` as a view: start at the far end of each and negate its stride."""
    offset = x.offset
    strides = list(x.strides)
    for a in axes:
        if x.shape[a] > 0:
            offset += (x.shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
    return x.view(x.shape, tuple(strides), offset)


def padded_shape(shape: Shape, pads: Sequence[tuple[int, int]]) -> Shape:
    """The shape of a tensor of `shape` with (before, after) `pads` around each dim."""
    return tuple(n + before + after for n, (before, after) in zip(shape, pads))


def inside_view(out: Any, shape: Shape, pads: Sequence[tuple[int, int]]) -> Any:
    """The view of padded `out` where the unpadded tensor of `shape` goes (pad copies it
    there)."""
    start = sum(before * stride for (before, _), stride in zip(pads, out.strides))
    return out.view(shape, out.strides, out.offset + start)


def cat_shape(xs: Sequence[Any], axis: int) -> Shape:
    """The shape of `xs` joined along `axis`."""
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return tuple(shape)


def slabs(out: Any, xs: Sequence[Any], axis: int) -> Iterator[tuple[Any, Any]]:
    """Each of `xs` with its slab of `out`, their join along `axis`: where cat copies it."""
    at = 0
    for x in xs:
        yield out.view(x.shape, out.strides, out.offset + at * out.strides[axis]), x
        at += x.shape[axis]


def coalesce(shape: Shape, strides: Sequence[Shape]) -> tuple[Shape, list[Shape]]:
    """The same iteration with fewer dims: size-1 dims dropped, and neighbours merged where
    every operand steps through them as through one dim (contiguous runs become one)."""
    dims: list[int] = []
    merged: list[list[int]] = [[] for _ in strides]
    for d, size in enumerate(shape):
        if size == 1:
            continue
        if dims and all(m[-1] == s[d] * size for m, s in zip(merged, strides)):
            dims[-1] *= size
            for m, s in zip(merged, strides):
                m[-1] = s[d]
            continue
        dims.append(size)
        for m, s in zip(merged, strides):
            m.append(s[d])
    return tuple(dims), [tuple(m) for m in merged]
