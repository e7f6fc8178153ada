"""Indexing primitives for flex: gather, scatter, index_select, nonzero.

gather and scatter turn each index element into a storage offset: the offset of its
position with the indexed axis left out (`element_offsets` with that stride set to 0), plus
the index value times the axis stride.
"""

from __future__ import annotations

from array import array
from itertools import compress

from ...dtypes import int32
from ...shape import contiguous_strides
from .storage import TYPECODE, Buf, Shape, element_offsets, numel, pack


def _without_axis(strides: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return strides[:axis] + (0,) + strides[axis + 1:]


def gather(x: Buf, axis: int, index: Buf) -> Buf:
    """``out[i][j][k] = x[i][index[i][j][k]][k]`` for axis 1, likewise for any axis."""
    bases = element_offsets(index.shape, _without_axis(x.strides, axis), x.offset)
    step = x.strides[axis]
    data = x.data
    values = [data[base + i * step] for base, i in zip(bases, index.flat(), strict=True)]
    return Buf(array(TYPECODE[x.dtype], values), index.shape, x.dtype)


def scatter(x: Buf, axis: int, index: Buf, src: Buf, reduce: str) -> Buf:
    """A copy of x with ``out[i][index[i][j][k]][k] = src[i][j][k]`` (axis 1 shown);
    `reduce` "assign" lets the last write win, "add" accumulates."""
    out = x.flat().tolist()
    strides = contiguous_strides(x.shape)
    step = strides[axis]
    bases = element_offsets(index.shape, _without_axis(strides, axis), 0)
    targets = (base + i * step for base, i in zip(bases, index.flat(), strict=True))
    if reduce == "add":
        # Accumulated as Python numbers, then wrapped or rounded to the dtype once.
        for target, value in zip(targets, src.elements(), strict=True):
            out[target] += value
    else:
        for target, value in zip(targets, src.elements(), strict=True):
            out[target] = value
    return Buf(pack(out, x.dtype), x.shape, x.dtype)


def index_select(x: Buf, axis: int, index: Buf) -> Buf:
    """Pick the entries `index` (1-d) along `axis`."""
    flat = x.flat()
    size = x.shape[axis]
    inner = numel(x.shape[axis + 1:])
    picks = index.flat()
    out = array(TYPECODE[x.dtype])
    for outer in range(numel(x.shape[:axis])):
        start = outer * size
        if inner == 1:
            out.extend(array(out.typecode, [flat[start + i] for i in picks]))
        else:
            for i in picks:
                row = (start + i) * inner
                out.extend(flat[row:row + inner])
    shape = x.shape[:axis] + (len(picks),) + x.shape[axis + 1:]
    return Buf(out, shape, x.dtype)


def nonzero(x: Buf) -> tuple[Buf, Shape]:
    """int32 coordinates of the nonzero elements, shape (count, rank), row-major order."""
    hits = list(compress(range(x.size), x.flat()))
    dims = list(zip(contiguous_strides(x.shape), x.shape, strict=True))
    coords = [(flat_index // stride) % size for flat_index in hits for stride, size in dims]
    shape = (len(hits), len(x.shape))
    return Buf(array(TYPECODE[int32], coords), shape, int32), shape
