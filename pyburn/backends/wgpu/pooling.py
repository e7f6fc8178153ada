"""Pooling for wgpu, the "max_pool" and "avg_pool" capabilities
(``pyburn.ops.capability``): ``max_pool.wgsl`` and ``avg_pool.wgsl``, one
invocation per output element.

The iteration space handed to `launch.boxes` is the lead (batch and channel) dims, each
point of which is one whole image: x binds the spatial extent of its images and out (and
the indices) theirs (`windows.span`), so only the lead dims are ever cut. A window longer
than the loop budget is walked in pieces that merge with (max) or add to (average) the
earlier pieces' results.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ...dtypes import int32
from ..strided import coalesce
from .handle import GpuTensor
from .launch import Box, Gpu, Operand, loop_budget
from .templates import render
from .windows import SPATIAL, span, spatial, unflipped

WORKGROUP = 64
#: where avg_pool.wgsl's info reaches its lead dims (its DIMS)
AVG_DIMS = 20

Ints = Sequence[int]
Pads = Sequence[tuple[int, int]]


def _launch(gpu: Gpu, x: GpuTensor, out: GpuTensor, nd: int, source: str, geometry: list[int],
            window: int, middle: Callable[[Box], list[int]], index: GpuTensor | None = None,
            after: Sequence[int] = ()) -> None:
    """Dispatch a pooling kernel over the lead dims of x and out (pooled over their
    trailing `nd` dims), one invocation per output element: out at binding 1, x at 2, the
    `index` output (shaped and strided as out) at 3. Each piece of the window's `window`
    offsets (within the loop budget) gets the info ``[count, rank, *geometry, k0, k1, x's
    offset and spatial strides, out's offset and spatial strides, *middle(box), the lead
    shape, x's and out's lead strides, *after]``."""
    q, s = spatial(out.shape[-nd:], 1), spatial(x.shape[-nd:], 1)
    q_strides, s_strides = spatial(out.strides[-nd:], 0), spatial(x.strides[-nd:], 0)
    lead_shape, (x_lead, out_lead) = coalesce(out.shape[:-nd],
                                              [x.strides[:-nd], out.strides[:-nd]])
    itemsize = x.kind.itemsize
    operands = {1: Operand(out.storage, out.offset, out_lead, itemsize, span(q, q_strides)),
                2: Operand(x.storage, x.offset, x_lead, itemsize, span(s, s_strides))}
    if index is not None:
        operands[3] = Operand(index.storage, index.offset, out_lead, 4, span(q, q_strides))
    piece = loop_budget(1)
    rank = len(lead_shape)
    for box in gpu.launches(lead_shape, operands):
        count = box.size * math.prod(q)
        out_at, x_at = box.operands[1], box.operands[2]
        for k0 in range(0, window, piece):
            info = [count, rank, *geometry, k0, min(k0 + piece, window), x_at.offset,
                    *s_strides, out_at.offset, *q_strides, *middle(box), *box.extents,
                    *x_at.strides, *out_at.strides, *after]
            gpu.dispatch(source, box, info, -(-count // WORKGROUP))


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
    index_parts = {"index_binding": "", "previous_index": "0", "store_index": ""}
    if positions is not None:
        index_parts = {
            "index_binding": "@group(0) @binding(3) var<storage, read_write> index: array<i32>;",
            "previous_index": "index[at_index]", "store_index": "index[at_index] = best_at;"}
    source = render("max_pool", workgroup=WORKGROUP, element=kind.storage,
                    store=kind.store("s"), **index_parts)
    geometry = [*spatial(out_sizes, 1), *spatial(sizes, 1), *spatial(kernel, 1),
                *spatial(stride, 1), *spatial([b for b, _ in padding], 0),
                *spatial(dilation, 1)]
    _launch(gpu, x, values, nd, source, geometry, math.prod(kernel),
            lambda box: [box.operands[3].offset if positions is not None else 0], positions)
    return values, positions


def avg_pool(gpu: Gpu, x: GpuTensor, windows: Sequence[Sequence[tuple[int, int, int]]],
             divisor: int) -> GpuTensor:
    """Means over boxes of the trailing ``len(windows)`` dims of float x: along dim d,
    output position i covers ``[start, stop)`` of ``windows[d][i] = (start, stop, count)``
    (clipped to the input here), and the box's sum is divided by the product of its counts,
    or by `divisor` when that is nonzero."""
    x = unflipped(gpu, x)
    nd = len(windows)
    lead, sizes = x.shape[:-nd], x.shape[-nd:]
    out = gpu.empty(lead + tuple(len(w) for w in windows), x.dtype)
    if out.numel == 0:
        return out
    rows = [[(0, 1, 1)]] * (SPATIAL - nd) + [
        [(max(a, 0), min(b, n), c) for a, b, c in w] for w, n in zip(windows, sizes)]
    largest = [max(max(b - a, 0) for a, b, _ in w) for w in rows]
    kind = x.kind
    source = render("avg_pool", workgroup=WORKGROUP, element=kind.storage,
                    store=kind.store("s"))

    def middle(box: Box) -> list[int]:
        # the tables follow the lead dims' shape and strides (info[TABLES], see the kernel)
        return [divisor, AVG_DIMS + 3 * len(box.extents)]

    _launch(gpu, x, out, nd, source, [*(len(w) for w in rows), *largest],
            max(1, math.prod(largest)),
            middle, after=[v for w in rows for row in w for v in row])
    return out
