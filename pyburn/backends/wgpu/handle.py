"""The wgpu handle: a pooled buffer read through a shape, element strides and an offset.

Movement primitives (reshape of a contiguous tensor, permute, expand, slice, flip) only make
a new `GpuTensor` over the same `Storage`; kernels read every input through its strides, so
they need no copy. Strides and offsets count elements, not bytes; strides may be 0
(expanded dims) or negative (flipped dims).
"""

from __future__ import annotations

import math

from ...dtypes import DType
from ...shape import contiguous_strides
from ..pool import Storage
from .kinds import Kind, kind_of

Shape = tuple[int, ...]


class GpuTensor:
    """A wgpu tensor: `storage` read as `dtype` through `shape`, `strides` and `offset`."""

    __slots__ = ("storage", "shape", "strides", "offset", "dtype")

    def __init__(self, storage: Storage, shape: Shape, dtype: DType,
                 strides: Shape | None = None, offset: int = 0):
        self.storage = storage
        self.shape = shape
        self.dtype = dtype
        self.strides = contiguous_strides(shape) if strides is None else strides
        self.offset = offset

    def __repr__(self) -> str:
        return (f"GpuTensor({self.dtype.name}, shape={self.shape}, strides={self.strides}, "
                f"offset={self.offset}, {self.storage!r})")

    @property
    def kind(self) -> Kind:
        """How the dtype is stored and computed in WGSL."""
        return kind_of(self.dtype)

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

    def view(self, shape: Shape, strides: Shape, offset: int) -> GpuTensor:
        """Another view of the same storage."""
        return GpuTensor(self.storage, shape, self.dtype, strides, offset)
