"""View arithmetic shared by the backends whose handles are (storage, shape, strides, offset):
flex and wgpu. A handle type only needs ``shape``, ``strides``, ``offset`` and
``view(shape, strides, offset)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


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
