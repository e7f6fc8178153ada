"""The wgpu handle: a pooled buffer read through a shape, element strides and an offset.

Movement primitives (reshape of a contiguous tensor, permute, expand, slice, flip) only make
a new `GpuTensor` over the same `Storage`; kernels read every input through its strides, so
they need no copy. Strides and offsets count elements, not bytes; strides may be 0
(expanded dims) or negative (flipped dims).
"""

from __future__ import annotations

from ..strided import Shape, StridedView
from .kinds import Kind, kind_of

__all__ = ["GpuTensor", "Shape"]


class GpuTensor(StridedView):
    """A wgpu tensor: `storage` read as `dtype` through `shape`, `strides` and `offset`."""

    __slots__ = ()

    @property
    def kind(self) -> Kind:
        """How the dtype is stored and computed in WGSL."""
        return kind_of(self.dtype)
