"""Stable sort along an axis for wgpu: a bitonic network per row (``sort.wgsl``).

Each row is padded to a power of two P; the network has log2(P) * (log2(P) + 1) / 2
compare-exchange stages, one dispatch each over every row at once. Keys are paired with
their original index and the order compares the index on ties, which makes the result stable
(and the descending order stable too, with NaN first, as the cpu backend gives it).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ...dtypes import int32
from ...shape import contiguous_strides
from ..strided import coalesce
from .handle import GpuTensor
from .launch import Gpu, Operand
from .templates import render

WORKGROUP = 256
#: bindings each entry point of sort.wgsl uses
_USES = {"start": (1, 2, 3), "step": (1, 2), "finish": (2, 3, 4, 5)}


def _stages(p: int) -> list[tuple[int, int]]:
    """The (k, j) compare-exchange stages of a bitonic network over `p` elements."""
    stages = []
    k = 2
    while k <= p:
        j = k // 2
        while j:
            stages.append((k, j))
            j //= 2
        k *= 2
    return stages


def sort(gpu: Gpu, x: GpuTensor, axis: int, descending: bool) -> tuple[GpuTensor, GpuTensor]:
    """(values, int32 indices) of x sorted along `axis`, stably; NaN is the largest value."""
    values = gpu.empty(x.shape, x.dtype)
    indices = gpu.empty(x.shape, int32)
    if x.numel == 0:
        return values, indices
    length = x.shape[axis]
    p = 1 << (length - 1).bit_length()
    outer = [d for d in range(len(x.shape)) if d != axis]
    oshape, (ox, ov, oi) = coalesce(tuple(x.shape[d] for d in outer),
                                    [tuple(t.strides[d] for d in outer)
                                     for t in (x, values, indices)])
    rows = math.prod(oshape)
    work = tuple(s * p for s in contiguous_strides(oshape)) + (1,)
    keys, order = gpu.pool.allocate(rows * p * 4), gpu.pool.allocate(rows * p * 4)
    operands = {1: Operand(keys, 0, work, tail=p - length),
                2: Operand(order, 0, work, tail=p - length),
                3: Operand(x.storage, x.offset, ox + (x.strides[axis],), x.kind.itemsize),
                4: Operand(values.storage, values.offset, ov + (values.strides[axis],),
                           x.kind.itemsize),
                5: Operand(indices.storage, indices.offset, oi + (indices.strides[axis],))}
    kind = x.kind
    source = render("sort", workgroup=WORKGROUP, element=kind.storage, key=kind.compute,
                    load=kind.load("v"), nan="pb_isnan(k)" if kind.compute == "f32" else "false")
    for box in gpu.launches(oshape + (length,), operands, range(len(oshape))):
        count = math.prod(box.extents[:-1])
        maps = [v for k in range(1, 6) for v in box.operands[k].meta()]
        passes = [("start", 0, 0, count * p)]
        passes += [("step", k, j, count * p // 2) for k, j in _stages(p)]
        passes.append(("finish", 0, 0, count * length))
        for entry, k, j, threads in passes:
            only = replace(box, operands={b: box.operands[b] for b in _USES[entry]})
            info = [count, length, p, k, j, int(descending), len(oshape), *box.extents[:-1],
                    *maps]
            gpu.dispatch(source, only, info, -(-threads // WORKGROUP), entry)
    return values, indices
