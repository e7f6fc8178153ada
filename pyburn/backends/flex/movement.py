"""Movement primitives for flex. reshape (of a contiguous tensor), permute, expand, slice and
flip are views over the same storage; pad and cat build new arrays with C-level slice copies.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from ...shape import contiguous_strides
from ..strided import flip_view, slice_view
from .storage import TYPECODE, Buf, Shape, element_offsets, numel, scalar


def reshape(x: Buf, shape: Shape) -> Buf:
    """The same elements in row-major order with a new shape."""
    if x.is_contiguous():
        return x.view(shape, contiguous_strides(shape), x.offset)
    return Buf(x.flat(), shape, x.dtype)


def permute(x: Buf, axes: Sequence[int]) -> Buf:
    """Result dim i is input dim ``axes[i]``."""
    return x.view(tuple(x.shape[a] for a in axes), tuple(x.strides[a] for a in axes), x.offset)


def inverse_permutation(axes: Sequence[int]) -> tuple[int, ...]:
    """The axes that undo `permute(x, axes)`."""
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return tuple(inverse)


def expand(x: Buf, shape: Shape) -> Buf:
    """Broadcast size-1 dims to `shape`: they get stride 0."""
    strides = tuple(0 if old == 1 and new != 1 else stride
                    for old, new, stride in zip(x.shape, shape, x.strides, strict=True))
    return x.view(shape, strides, x.offset)


def slice_(x: Buf, starts: Sequence[int], stops: Sequence[int], steps: Sequence[int]) -> Buf:
    """Basic slicing on every axis (``0 <= start <= stop <= size``, step >= 1): a view."""
    return slice_view(x, starts, stops, steps)


def flip(x: Buf, axes: Sequence[int]) -> Buf:
    """Reverse the order of elements along `axes`: a view."""
    return flip_view(x, axes)


def pad(x: Buf, pads: Sequence[tuple[int, int]], value: float | int | bool) -> Buf:
    """Constant padding with `pads[i]` = (before, after) on axis i."""
    if not any(before or after for before, after in pads):
        return x
    shape = tuple(size + before + after
                  for size, (before, after) in zip(x.shape, pads, strict=True))
    out = scalar(value, x.dtype) * numel(shape)
    if x.size:
        out_strides = contiguous_strides(shape)
        start = sum(before * stride for (before, _), stride in zip(pads, out_strides, strict=True))
        run = x.shape[-1]
        flat = x.flat()
        # Each innermost row of x lands, whole, at its place in the padded array.
        rows = element_offsets(x.shape[:-1], out_strides[:-1], start)
        for k, dst in enumerate(rows):
            out[dst:dst + run] = flat[k * run:(k + 1) * run]
    return Buf(out, shape, x.dtype)


def cat(xs: Sequence[Buf], axis: int) -> Buf:
    """Join tensors along `axis`: per index of the leading dims, one run from each input."""
    first = xs[0]
    outer = numel(first.shape[:axis])
    inner = numel(first.shape[axis + 1:])
    parts = [(x.flat(), x.shape[axis] * inner) for x in xs]
    out = array(TYPECODE[first.dtype])
    for o in range(outer):
        for flat, run in parts:
            out.extend(flat[o * run:(o + 1) * run])
    shape = list(first.shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return Buf(out, tuple(shape), first.dtype)


def to_rows(x: Buf, axes: Sequence[int]) -> tuple[array, int, tuple[int, ...]]:
    """x's elements with `axes` moved last, in row-major order, so that every group over
    `axes` is one run: (elements, run length, the permutation that was applied)."""
    rank = len(x.shape)
    perm = tuple([d for d in range(rank) if d not in axes] + list(axes))
    moved = x if perm == tuple(range(rank)) else permute(x, perm)
    return moved.flat(), numel(x.shape[a] for a in axes), perm
