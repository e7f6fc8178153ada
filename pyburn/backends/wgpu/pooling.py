"""Max pooling for wgpu, the "max_pool" capability (``pyburn/nn/functional/capability.py``):
``max_pool.wgsl``, one invocation per output element.

The iteration space handed to `launch.boxes` is the lead (batch and channel) dims, each
point of which is one whole image: x binds the spatial extent of its images and out (and
the indices) theirs (`windows.span`), so only the lead dims are ever cut. A window longer
than the loop budget is walked in pieces that merge with the earlier pieces' results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...dtypes import int32
from .handle import GpuTensor
from .launch import Gpu, Operand, coalesce, loop_budget
from .templates import render
from .windows import span, spatial, unflipped

WORKGROUP = 64

Ints = Sequence[int]
Pads = Sequence[tuple[int, int]]


def max_pool(gpu: Gpu, x: GpuTensor, kernel: Ints, stride: Ints, padding: Pads,
             dilation: Ints, indices: bool) -> tuple[GpuTensor, GpuTensor | None]:
    """Max over windows of the trailing ``len(kernel)`` dims of float x, padded with -inf:
    the values and, if `indices` (else None), the int32 flat position of each max within
    the (unpadded) trailing dims. The first max wins and NaN counts as the largest."""
    x = unflipped(gpu, x)
    nd = len(kernel)
    lead, sizes = x.shape[:-nd], x.shape[-nd:]
    out_sizes = tuple((n + b + a - d * (k - 1) - 1) // s + 1 for n, k, s, (b, a), d
                      in zip(sizes, kernel, stride, padding, dilation))
    values = gpu.empty(lead + out_sizes, x.dtype)
    positions = gpu.empty(values.shape, int32) if indices else None
    if values.numel == 0:
        return values, positions
    kind = x.kind
    q, s = spatial(out_sizes, 1), spatial(sizes, 1)
    q_strides, s_strides = spatial(values.strides[-nd:], 0), spatial(x.strides[-nd:], 0)
    lead_shape, (x_lead, out_lead) = coalesce(lead, [x.strides[:-nd], values.strides[:-nd]])
    operands = {1: Operand(values.storage, values.offset, out_lead, kind.itemsize,
                           span(q, q_strides)),
                2: Operand(x.storage, x.offset, x_lead, kind.itemsize, span(s, s_strides))}
    index_parts = {"index_binding": "", "previous_index": "0", "store_index": ""}
    if positions is not None:
        operands[3] = Operand(positions.storage, positions.offset, out_lead, 4,
                              span(q, q_strides))
        index_parts = {
            "index_binding": "@group(0) @binding(3) var<storage, read_write> index: array<i32>;",
            "previous_index": "index[at_index]", "store_index": "index[at_index] = best_at;"}
    source = render("max_pool", workgroup=WORKGROUP, element=kind.storage, load=kind.load("v"),
                    store=kind.store("s"), **index_parts)
    geometry = [*q, *s, *spatial(kernel, 1), *spatial(stride, 1),
                *spatial([b for b, _ in padding], 0), *spatial(dilation, 1)]
    window = math.prod(kernel)
    piece = loop_budget(1)
    rank = len(lead_shape)
    for box in gpu.launches(lead_shape, operands):
        count = box.size * math.prod(q)
        out_at, x_at = box.operands[1], box.operands[2]
        index_at = box.operands[3].offset if positions is not None else 0
        for k0 in range(0, window, piece):
            info = [count, rank, *geometry, k0, min(k0 + piece, window), x_at.offset, *s_strides,
                    out_at.offset, *q_strides, index_at, *box.extents, *x_at.strides,
                    *out_at.strides]
            gpu.dispatch(source, box, info, -(-count // WORKGROUP))
    return values, positions
