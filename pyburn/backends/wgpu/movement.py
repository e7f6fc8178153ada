"""Movement primitives for wgpu. reshape (of a contiguous tensor), permute, expand, slice and
flip are views over the same storage; pad and cat write new tensors with the map kernel."""

from __future__ import annotations

from collections.abc import Sequence

from ...shape import contiguous_strides
from ..strided import cat_shape, flip_view, inside_view, padded_shape, slabs, slice_view
from .creation import full
from .elementwise import contiguous, copy_into
from .handle import GpuTensor, Shape
from .launch import Gpu


def reshape(gpu: Gpu, x: GpuTensor, shape: Shape) -> GpuTensor:
    """The same elements in row-major order with a new shape (a copy only when x's elements
    are not already in row-major order)."""
    x = contiguous(gpu, x)
    return x.view(shape, contiguous_strides(shape), x.offset)


def permute(x: GpuTensor, axes: Sequence[int]) -> GpuTensor:
    """Result dim i is input dim ``axes[i]``."""
    return x.view(tuple(x.shape[a] for a in axes), tuple(x.strides[a] for a in axes), x.offset)


def expand(x: GpuTensor, shape: Shape) -> GpuTensor:
    """Broadcast size-1 dims to `shape`: they get stride 0."""
    strides = tuple(0 if old == 1 and new != 1 else stride
                    for old, new, stride in zip(x.shape, shape, x.strides))
    return x.view(shape, strides, x.offset)


def slice_(x: GpuTensor, starts: Sequence[int], stops: Sequence[int],
           steps: Sequence[int]) -> GpuTensor:
    """Basic slicing on every axis (``0 <= start <= stop <= size``, step >= 1): a view."""
    return slice_view(x, starts, stops, steps)


def flip(x: GpuTensor, axes: Sequence[int]) -> GpuTensor:
    """Reverse the order of elements along `axes`: a view."""
    return flip_view(x, axes)


def pad(gpu: Gpu, x: GpuTensor, pads: Sequence[tuple[int, int]],
        value: float | int | bool) -> GpuTensor:
    """Constant padding: the output is filled with `value`, then x is copied inside."""
    shape = padded_shape(x.shape, pads)
    out = gpu.empty(shape, x.dtype)
    copy_into(gpu, out, full(gpu, shape, value, x.dtype))
    copy_into(gpu, inside_view(out, x.shape, pads), x)
    return out


def cat(gpu: Gpu, xs: Sequence[GpuTensor], axis: int) -> GpuTensor:
    """Join tensors along `axis`: each is copied into its slab of the output."""
    out = gpu.empty(cat_shape(xs, axis), xs[0].dtype)
    for slab, x in slabs(out, xs, axis):
        if x.numel:
            copy_into(gpu, slab, x)
    return out
