"""Convolutions for wgpu, the "conv" capability (``pyburn/nn/functional/capability.py``).

- `conv` and `conv_transpose` are one kernel, ``conv.wgsl``: an implicit GEMM of the weight
  and the input whose input loads compute their coordinates on the fly (no im2col buffer);
  the two differ only in the map from an output position and a kernel offset to an input
  position, and in which weight dim is the row and which is summed over.
- `conv_weight` is ``conv_weight.wgsl``, the same product turned around (the sum runs over
  the images and output positions).

Each is launched over the space (images or nothing, groups, rows, ...) that `launch.boxes`
may cut when an operand is too large to bind whole; a box binds every input channel of its
groups and the whole spatial extent of its images (`windows.span`). The channel and kernel
loops (conv) or the image and position loops (conv_weight) are cut into pieces within the
loop budget (`windows.pieces`), whose results are added.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .creation import full
from .elementwise import copy_into
from .handle import GpuTensor
from .launch import Gpu, Operand
from .templates import render
from .windows import pieces, span, spatial, tiles, unflipped

Ints = Sequence[int]
Pads = Sequence[tuple[int, int]]


def _zeros_into(gpu: Gpu, out: GpuTensor) -> GpuTensor:
    copy_into(gpu, out, full(gpu, out.shape, 0, out.dtype))
    return out


def _gemm(gpu: Gpu, x: GpuTensor, w: GpuTensor, out: GpuTensor, groups: int, rows: int,
          depth: int, w_strides: tuple[int, int, int], maps: Sequence[tuple[int, ...]]) -> None:
    """Run ``conv.wgsl``: out (N, groups * rows, *Q) from x (N, groups * depth, *S) and w,
    read through `w_strides` (along a group, a row, a summed channel) and its own strides
    along the kernel dims; `maps` holds (A, B, C, D) per spatial dim (see the kernel)."""
    kind = out.kind
    q, s, k = (spatial(t.shape[2:], 1) for t in (out, x, w))
    q_strides, s_strides, k_strides = (spatial(t.strides[2:], 0) for t in (out, x, w))
    itemsize = kind.itemsize
    operands = {
        1: Operand(out.storage, out.offset, (out.strides[0], rows * out.strides[1],
                                             out.strides[1]), itemsize, span(q, q_strides)),
        2: Operand(x.storage, x.offset, (x.strides[0], depth * x.strides[1], 0), itemsize,
                   (depth - 1) * x.strides[1] + span(s, s_strides)),
        3: Operand(w.storage, w.offset, (0, w_strides[0], w_strides[1]), itemsize,
                   (depth - 1) * w_strides[2] + span(k, k_strides)),
    }
    along_rows, along_cols = tiles(rows, x.shape[0] * math.prod(q))
    source = render("conv", rows=along_rows, cols=along_cols, element=kind.storage,
                    load=kind.load("v"), store=kind.store("s"))
    maps3 = [(1, 1, 0, 1)] * (3 - len(maps)) + list(maps)
    geometry = [*q, *s, *k, *(m[i] for i in range(4) for m in maps3)]
    loops = pieces((depth, *k), lambda e: e[1] * (e[2] * (e[3] * (e[0] + 2) + 2) + 2))
    for box in gpu.launches((x.shape[0], groups, rows), operands):
        nb, gb, rb = box.extents
        o, xp, wp = (box.operands[i] for i in (1, 2, 3))
        placed = [o.offset, *o.strides, *q_strides, xp.offset, *xp.strides[:2], x.strides[1],
                  *s_strides, wp.offset, *wp.strides[1:], w_strides[2], *k_strides]
        count = gb * -(-rb // (4 * along_rows)) * -(-(nb * math.prod(q)) // (4 * along_cols))
        for starts, extents in loops:
            piece = [v for a, n in zip(starts, extents) for v in (a, a + n)]
            piece.append(int(any(starts)))
            gpu.dispatch(source, box, [nb, gb, rb, *geometry, *piece, *placed], count)


def conv(gpu: Gpu, x: GpuTensor, w: GpuTensor, stride: Ints, padding: Pads, dilation: Ints,
         groups: int) -> GpuTensor:
    """Cross-correlation of x (N, C, *S) with w (O, C/groups, *K); `padding` holds (before,
    after) zeros per spatial dim. Returns (N, O, *out)."""
    x, w = unflipped(gpu, x), unflipped(gpu, w)
    kernel = w.shape[2:]
    sizes = tuple((n + b + a - d * (k - 1) - 1) // s + 1 for n, k, s, (b, a), d
                  in zip(x.shape[2:], kernel, stride, padding, dilation))
    out = gpu.empty((x.shape[0], w.shape[0]) + sizes, x.dtype)
    depth = w.shape[1]
    if out.numel == 0:
        return out
    if depth == 0:
        return _zeros_into(gpu, out)
    rows = w.shape[0] // groups
    maps = [(s, d, -b, 1) for s, d, (b, _) in zip(stride, dilation, padding)]
    _gemm(gpu, x, w, out, groups, rows, depth,
          (rows * w.strides[0], w.strides[0], w.strides[1]), maps)
    return out


def conv_transpose(gpu: Gpu, x: GpuTensor, w: GpuTensor, stride: Ints, padding: Ints,
                   dilation: Ints, groups: int, size: Ints) -> GpuTensor:
    """The adjoint of `conv` in its input: x (N, O, *m) and w (O, C/groups, *K) give
    (N, C, *size), the full transposed convolution cut to `size` from offset `padding`
    (zero where `size` reaches past it)."""
    x, w = unflipped(gpu, x), unflipped(gpu, w)
    rows = w.shape[1]
    depth = w.shape[0] // groups
    out = gpu.empty((x.shape[0], rows * groups) + tuple(size), x.dtype)
    if out.numel == 0:
        return out
    if depth == 0:
        return _zeros_into(gpu, out)
    maps = [(1, -d, p, s) for s, d, p in zip(stride, dilation, padding)]
    _gemm(gpu, x, w, out, groups, rows, depth,
          (depth * w.strides[0], w.strides[1], w.strides[0]), maps)
    return out


def conv_weight(gpu: Gpu, x: GpuTensor, g: GpuTensor, kernel: Ints, stride: Ints,
                padding: Pads, dilation: Ints, groups: int) -> GpuTensor:
    """The gradient of `conv` in its weight: x (N, C, *S) and the output's gradient g
    (N, O, *out) give (O, C/groups, *kernel)."""
    x, g = unflipped(gpu, x), unflipped(gpu, g)
    rows, columns = g.shape[1] // groups, x.shape[1] // groups
    dw = _zeros_into(gpu, gpu.empty((g.shape[1], columns) + tuple(kernel), x.dtype))
    if dw.numel == 0 or x.shape[0] == 0 or math.prod(g.shape[2:]) == 0:
        return dw
    kind = dw.kind
    q, s, k = spatial(g.shape[2:], 1), spatial(x.shape[2:], 1), spatial(kernel, 1)
    strides3 = spatial(stride, 1)
    shifts = spatial([-b for b, _ in padding], 0)
    dilation3 = spatial(dilation, 1)
    table = []
    for n_q, n_s, n_k, st, shift, d in zip(q, s, k, strides3, shifts, dilation3):
        for i in range(n_k):
            at = i * d + shift  # input coordinate of output position 0
            first = max(0, -(at // st))
            table += [first, max(first, min(n_q, (n_s - 1 - at) // st + 1)), at]
    q_strides, s_strides, k_strides = (spatial(t.strides[2:], 0) for t in (g, x, dw))
    itemsize = kind.itemsize
    operands = {
        1: Operand(dw.storage, dw.offset, (0, rows * dw.strides[0], dw.strides[0],
                                           dw.strides[1]), itemsize, span(k, k_strides)),
        2: Operand(g.storage, g.offset, (g.strides[0], rows * g.strides[1], g.strides[1], 0),
                   itemsize, span(q, q_strides)),
        3: Operand(x.storage, x.offset, (x.strides[0], columns * x.strides[1], 0,
                                         x.strides[1]), itemsize, span(s, s_strides)),
    }
    along_rows, along_cols = tiles(rows, columns)
    source = render("conv_weight", rows=along_rows, cols=along_cols, element=kind.storage,
                    load=kind.load("v"), store=kind.store("s"))
    offsets = math.prod(k)
    for box in gpu.launches((x.shape[0], groups, rows, columns), operands):
        nb, gb, rb, cb = box.extents
        d, gp, xp = (box.operands[i] for i in (1, 2, 3))
        placed = [d.offset, *d.strides[1:], *k_strides, gp.offset, *gp.strides[:3],
                  *q_strides, xp.offset, xp.strides[0], xp.strides[1], x.strides[1],
                  *s_strides]
        count = gb * offsets * -(-rb // (4 * along_rows)) * -(-cb // (4 * along_cols))
        loops = pieces((nb, *q), lambda e: e[0] * (e[1] * (e[2] * (e[3] + 2) + 2) + 2))
        for starts, extents in loops:
            piece = [starts[0], starts[0] + extents[0], *starts[1:],
                     *(a + b for a, b in zip(starts[1:], extents[1:]))]
            info = [gb, rb, cb, *k, *strides3, *piece, *placed, *table]
            gpu.dispatch(source, box, info, count)
    return dw
