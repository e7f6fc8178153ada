"""Batched matrix product for wgpu: ``matmul_tiled.wgsl`` (128x128 tiles staged through
workgroup memory, 8x8 per invocation: for GPUs), ``matmul.wgsl`` (register-blocked 4x4 per
invocation, 32x32 per workgroup: for CPU drivers and small products) and
``matmul_naive.wgsl`` (one invocation per output, kept as the benchmark's baseline).

The iteration space is (batch dims..., M, N, K): out does not move along K, a not along N,
b not along M. `launch.boxes` may cut the batch dims, M and N (never K, the loop inside
each invocation) when an operand is too large to bind whole; a K longer than a shader loop
may run (`launch.loop_budget`) is cut here, and the pieces' products added.

The blocked kernel stores each product through an `Epilogue`: the elementwise consumers that
the fusion backend fused into it (a bias, an activation), read at the product's point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..strided import coalesce
from .creation import full
from .elementwise import ANCHOR, Epilogue, apply_epilogue, binary, copy_into, declare, indent
from .handle import GpuTensor
from .launch import Box, Gpu, Operand, loop_budget
from .templates import render


@dataclass(frozen=True)
class Variant:
    """A matmul kernel: its file, invocations per workgroup, the side of the square tile of
    out a workgroup computes, the product it stores at row ``r`` = ..+i, column ``c`` = ..+j,
    and what one step of its K loop costs against `launch.loop_budget`."""

    kernel: str
    workgroup: int
    tile: int
    anchor: str
    loop_cost: int


#: the kernels: "tiled" (workgroup memory) on GPUs, "blocked" (registers only) on CPU
#: drivers and for products smaller than a tile, "naive" as the benchmark's baseline
VARIANTS = {
    "tiled": Variant("matmul_tiled", 256, 128, "acc[2 * i + j / 4][j % 4]", 8),
    "blocked": Variant("matmul", 64, 32, "acc[i][j]", 1),
    "naive": Variant("matmul_naive", 64, 1, "", 1),
}


def pick_variant(gpu: Gpu, m: int, n: int) -> str:
    """The kernel for an M x N product on this adapter: workgroup-memory tiles on hardware
    adapters once the product fills a tile, register blocks otherwise (CPU drivers run
    barriers slowly, and a mostly empty 128x128 tile wastes a GPU's invocations)."""
    tiled = VARIANTS["tiled"].tile
    if gpu.runtime.info.is_software or m < tiled or n < tiled:
        return "blocked"
    return "tiled"


def _along(t: GpuTensor, dim: int, start: int, stop: int) -> GpuTensor:
    """The view of t with indices start..stop-1 along `dim`."""
    shape = list(t.shape)
    shape[dim] = stop - start
    return t.view(tuple(shape), t.strides, t.offset + start * t.strides[dim])


def _epilogue(tail: Epilogue, anchor: str, first: int) -> tuple[list[str], list[str], list[str]]:
    """(declarations, statements before the store loop, statements at point (r, c)) of the
    blocked kernel's epilogue, whose operands (its outputs, then its reads) are bound from
    `first` on (operand k at binding k + 1); `anchor` is the product in the compute type."""
    decls, bases, point, stores = [], [], [f"let {ANCHOR} = {anchor};"], []
    outputs = tail.outputs()
    # (name, element type, the read, or None for an output with its stored value)
    buffers = [(f"kept{j}", t.kind.storage, None, value)
               for j, (t, value) in enumerate(outputs)]
    buffers += [(f"epi{j}", r.element, r, "") for j, r in enumerate(tail.fragment.reads)]
    for k, (name, element, read, value) in enumerate(buffers, start=first):
        decls.append(declare(k + 1, name, element, read is None))
        bases += [f"let base{k} = pb_matmul_base(batch, {k});",
                  f"let rows{k} = pb_matmul_stride({k}, 0);",
                  f"let cols{k} = pb_matmul_stride({k}, 1);"]
        at = f"base{k} + r * rows{k} + c * cols{k}"
        if read is None:  # (after the fragment, which computes the values)
            stores.append(f"{name}[{at}] = {value};")
        elif any(read.operand.strides[-3:-1]):
            point.append(f"let {read.name} = {read.load.format(buf=name, at=at)};")
        else:  # the same at every point of the tile (a scalar): loaded once
            bases.append(f"let {read.name} = {read.load.format(buf=name, at=f'base{k}')};")
    point += [tail.fragment.body, *stores,
              f"let result = {tail.out.kind.store(tail.fragment.value)};"]
    return decls, bases, point


def matmul(gpu: Gpu, a: GpuTensor, b: GpuTensor, variant: str | None = None,
           tail: Epilogue | None = None) -> GpuTensor:
    """Product of (*B, M, K) and (*B, K, N) with the same batch dims, by kernel `variant`
    (`pick_variant`'s choice when None); with `tail`, stored through that epilogue (whose
    operands are over the product's space) into ``tail.out``, which is returned."""
    *batch, m, k = a.shape
    n = b.shape[-1]
    variant = variant or pick_variant(gpu, m, n)
    spec = VARIANTS[variant]
    piece = loop_budget(spec.loop_cost)
    if k > piece or (tail is not None and k == 0):
        # each invocation loops over K: add up the products of K's pieces, then apply the
        # epilogue (an empty K: zeros) as a map kernel
        total = None
        for start in range(0, k, piece):
            stop = min(start + piece, k)
            part = matmul(gpu, _along(a, -1, start, stop), _along(b, -2, start, stop), variant)
            total = part if total is None else binary(gpu, "add", total, part, a.dtype)
        if total is None:
            total = full(gpu, (*batch, m, n), 0, a.dtype)
        return total if tail is None else apply_epilogue(gpu, tail, total)
    out = gpu.empty((*batch, m, n), a.dtype) if tail is None else tail.out
    if out.numel == 0:
        return out
    if k == 0:  # an empty sum: zeros
        copy_into(gpu, out, full(gpu, out.shape, 0, out.dtype))
        return out
    tail = tail if tail is not None else Epilogue.plain(out)
    outputs = tail.outputs()
    extra = [Operand.of(t) for t, _ in outputs] + [r.operand for r in tail.fragment.reads]
    nb = len(batch)
    bshape, (ba, bb, bo, *be) = coalesce(
        tuple(batch), [a.strides[:nb], b.strides[:nb], out.strides[:nb],
                       *(e.strides[:nb] for e in extra)])
    kind = a.kind
    itemsize = kind.itemsize
    operands = {
        1: Operand(out.storage, out.offset, bo + (out.strides[-2], out.strides[-1], 0),
                   out.kind.itemsize),
        2: Operand(a.storage, a.offset, ba + (a.strides[-2], 0, a.strides[-1]), itemsize),
        3: Operand(b.storage, b.offset, bb + (0, b.strides[-1], b.strides[-2]), itemsize),
    }
    for key, (e, eb) in enumerate(zip(extra, be), start=4):
        operands[key] = replace(e, strides=eb + (e.strides[-2], e.strides[-1], 0))
    if variant == "naive":
        assert len(operands) == 3, "only the blocked and tiled kernels apply epilogues"
        source = render(spec.kernel, workgroup=spec.workgroup, element=kind.storage,
                        out_type=kind.storage, T=kind.compute, store=kind.store("s"))
    else:
        fragment = replace(tail.fragment, reads=tuple(
            replace(r, operand=operands[key]) for key, r in
            enumerate(tail.fragment.reads, start=4 + len(outputs))))
        decls, bases, point = _epilogue(replace(tail, fragment=fragment),
                                        kind.load(kind.store(spec.anchor)), 3)
        source = render(spec.kernel, workgroup=spec.workgroup, element=kind.storage,
                        out_type=out.kind.storage, T=kind.compute,
                        bindings="\n".join(decls), bases=indent("\n".join(bases), 4),
                        epilogue=indent("\n".join(point), 16))
    nbatch = len(bshape)

    def info(box: Box) -> list[int]:
        em, en, ek = box.extents[nbatch:]
        return [em, en, ek, math.prod(box.extents[:nbatch]), nbatch, *box.extents[:nbatch],
                *(v for key in sorted(box.operands) for v in box.operands[key].meta())]

    def groups(box: Box) -> int:
        em, en, _ = box.extents[nbatch:]
        count = math.prod(box.extents[:nbatch])
        if variant == "naive":
            return -(-count * em * en // spec.workgroup)
        return count * -(-em // spec.tile) * -(-en // spec.tile)

    gpu.run(source, bshape + (m, n, k), operands, info, groups, range(nbatch + 2))
    return out
