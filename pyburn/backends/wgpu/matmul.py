"""Batched matrix product for wgpu: ``matmul.wgsl`` (register-blocked 4x4 per invocation,
32x32 per workgroup) and ``matmul_naive.wgsl`` (one invocation per output, kept as the
benchmark's baseline).

The iteration space is (batch dims..., M, N, K): out does not move along K, a not along N,
b not along M. `launch.boxes` may cut the batch dims, M and N (never K, the loop inside
each invocation) when an operand is too large to bind whole; a K longer than a shader loop
may run (`launch.loop_budget`) is cut here, and the pieces' products added.
"""

from __future__ import annotations

import math

from .creation import full
from .elementwise import binary, copy_into
from .handle import GpuTensor
from .launch import Box, Gpu, Operand, coalesce, loop_budget
from .templates import render

#: kernel file and workgroup size of each variant
VARIANTS = {"blocked": ("matmul", 64), "naive": ("matmul_naive", 64)}


def _along(t: GpuTensor, dim: int, start: int, stop: int) -> GpuTensor:
    """The view of t with indices start..stop-1 along `dim`."""
    shape = list(t.shape)
    shape[dim] = stop - start
    return t.view(tuple(shape), t.strides, t.offset + start * t.strides[dim])


def matmul(gpu: Gpu, a: GpuTensor, b: GpuTensor, variant: str = "blocked") -> GpuTensor:
    """Product of (*B, M, K) and (*B, K, N) with the same batch dims."""
    *batch, m, k = a.shape
    n = b.shape[-1]
    piece = loop_budget(1)
    if k > piece:  # each invocation loops over K: add up the products of K's pieces
        total = None
        for start in range(0, k, piece):
            stop = min(start + piece, k)
            part = matmul(gpu, _along(a, -1, start, stop), _along(b, -2, start, stop), variant)
            total = part if total is None else binary(gpu, "add", total, part, a.dtype)
        return total
    out = gpu.empty((*batch, m, n), a.dtype)
    if out.numel == 0:
        return out
    if k == 0:  # an empty sum: zeros
        copy_into(gpu, out, full(gpu, out.shape, 0, out.dtype))
        return out
    nb = len(batch)
    bshape, (ba, bb, bo) = coalesce(tuple(batch), [a.strides[:nb], b.strides[:nb],
                                                  out.strides[:nb]])
    kind = a.kind
    itemsize = kind.itemsize
    operands = {
        1: Operand(out.storage, out.offset, bo + (out.strides[-2], out.strides[-1], 0),
                   itemsize),
        2: Operand(a.storage, a.offset, ba + (a.strides[-2], 0, a.strides[-1]), itemsize),
        3: Operand(b.storage, b.offset, bb + (0, b.strides[-1], b.strides[-2]), itemsize),
    }
    name, workgroup = VARIANTS[variant]
    source = render(name, workgroup=workgroup, element=kind.storage, out_type=kind.storage,
                    T=kind.compute, load=kind.load("v"), store=kind.store("s"))
    nbatch = len(bshape)

    def info(box: Box) -> list[int]:
        em, en, ek = box.extents[nbatch:]
        return [em, en, ek, math.prod(box.extents[:nbatch]), nbatch, *box.extents[:nbatch],
                *(v for key in (1, 2, 3) for v in box.operands[key].meta())]

    def groups(box: Box) -> int:
        em, en, _ = box.extents[nbatch:]
        count = math.prod(box.extents[:nbatch])
        if variant == "naive":
            return -(-count * em * en // workgroup)
        return count * -(-em // 32) * -(-en // 32)

    gpu.run(source, bshape + (m, n, k), operands, info, groups, range(nbatch + 2))
    return out
