"""Indexing primitives for wgpu: gather, scatter, index_select and nonzero.

gather and scatter iterate over the index's shape, plus one more dim that no kernel loops
over: the indexed axis of x (or of the output), whose whole length the index may reach.
Putting it in the iteration space is what makes `launch.boxes` bind all of it.
"""

from __future__ import annotations

import math
import struct
from itertools import chain

from ...dtypes import bool_, float16, float32, int32
from ...shape import contiguous_strides
from .elementwise import Read, cast, contiguous, launch_map
from .handle import GpuTensor, Shape
from .launch import Box, Gpu, Operand
from .reduce import scan
from .templates import render

WORKGROUP = 256


def _without_axis(strides: Shape, axis: int) -> Shape:
    return strides[:axis] + (0,) + strides[axis + 1:]


def _info(box: Box, order: list[int]) -> list[int]:
    """[points, rank, index extents, then each operand in `order`: offset, strides]; the
    box's last dim is the indexed axis, which only contributes operands' axis steps."""
    rank = len(box.extents) - 1
    placed = [box.operands[k] for k in order]
    return [math.prod(box.extents[:rank]), rank, *box.extents[:rank],
            *chain.from_iterable(p.meta() for p in placed)]


def gather(gpu: Gpu, x: GpuTensor, axis: int, index: GpuTensor) -> GpuTensor:
    """``out[i][j][k] = x[i][index[i][j][k]][k]`` for axis 1 (likewise for any axis)."""
    index = cast(gpu, index, int32)  # the kernels read i32 words
    out = gpu.empty(index.shape, x.dtype)
    if out.numel == 0:
        return out
    space = index.shape + (x.shape[axis],)
    operands = {1: Operand(out.storage, out.offset, out.strides + (0,), out.kind.itemsize),
                2: Operand(index.storage, index.offset, index.strides + (0,)),
                3: Operand(x.storage, x.offset, _without_axis(x.strides, axis)
                           + (x.strides[axis],), x.kind.itemsize)}
    source = render("gather", workgroup=WORKGROUP, element=x.kind.storage)
    gpu.run(source, space, operands, lambda box: _info(box, [1, 2, 3]),
            lambda box: -(-math.prod(box.extents[:-1]) // WORKGROUP), range(len(index.shape)))
    return out


def index_select(gpu: Gpu, x: GpuTensor, axis: int, index: GpuTensor) -> GpuTensor:
    """Entries `index` (1-d) along `axis`: a gather with the index expanded to the output."""
    shape = x.shape[:axis] + index.shape + x.shape[axis + 1:]
    strides = tuple(index.strides[0] if d == axis else 0 for d in range(len(shape)))
    return gather(gpu, x, axis, index.view(shape, strides, index.offset))


def _fix_up(gpu: Gpu, out: GpuTensor) -> GpuTensor:
    """Words accumulated as whole u32 (uint8 and bool sums) back into the dtype's range."""
    fixed = gpu.empty(out.shape, out.dtype)
    launch_map(gpu, fixed, [Read.of("x", out, raw=True)], out.kind.store("x"))
    return fixed


def scatter(gpu: Gpu, x: GpuTensor, axis: int, index: GpuTensor, src: GpuTensor,
            reduce: str) -> GpuTensor:
    """A copy of x with src assigned ("assign": the last write in row-major order of index
    wins) or added ("add") at `index` along `axis`."""
    if reduce == "add" and x.dtype is float16:  # accumulate in float32, round once
        wide = scatter(gpu, cast(gpu, x, float32), axis, index, cast(gpu, src, float32), "add")
        return cast(gpu, wide, float16)
    index = cast(gpu, index, int32)
    out = gpu.empty(x.shape, x.dtype)
    launch_map(gpu, out, [Read.of("x", x, raw=True)], "x")
    if index.numel == 0:
        return out
    kind = out.kind
    space = index.shape + (x.shape[axis],)
    itemsize = kind.itemsize
    out_map = _without_axis(out.strides, axis) + (out.strides[axis],)
    operands = {1: Operand(out.storage, 0, out_map, itemsize),
                2: Operand(index.storage, index.offset, index.strides + (0,)),
                3: Operand(src.storage, src.offset, src.strides + (0,), itemsize)}
    floating = kind.compute == "f32"
    atomic = "u32" if floating or kind.compute == "u32" else "i32"
    if floating:
        add = "\n".join([
            "    var old = atomicLoad(&out_words[t]);",
            "    loop {",
            "        let sum = bitcast<u32>(bitcast<f32>(old) + v);",
            "        let swap = atomicCompareExchangeWeak(&out_words[t], old, sum);",
            "        if (swap.exchanged) {",
            "            break;",
            "        }",
            "        old = swap.old_value;",
            "    }"])
    else:
        add = "    atomicAdd(&out_words[t], v);"
    source = render("scatter", workgroup=WORKGROUP, element=kind.storage, atomic=atomic, add=add)
    rank = len(index.shape)

    def groups(box: Box) -> int:
        return -(-math.prod(box.extents[:-1]) // WORKGROUP)

    if reduce == "add":
        for box in gpu.launches(space, operands, range(rank)):
            # `add` sees out as atomic words, at binding 5
            words = {5: box.operands[1], 2: box.operands[2], 3: box.operands[3]}
            gpu.dispatch(source, Box(box.starts, box.extents, words), _info(box, [1, 2, 3]),
                         groups(box), "add")
        return _fix_up(gpu, out) if kind.compute == "u32" else out
    winners = gpu.empty(out.shape, int32)
    launch_map(gpu, winners, [], "0")
    operands[4] = Operand(winners.storage, 0, out_map)
    operands[6] = Operand(None, 0, contiguous_strides(index.shape) + (0,))
    boxes = gpu.launches(space, operands, range(rank))
    for entry, used in (("claim", (2, 4)), ("assign", (1, 2, 3, 4))):
        for box in boxes:  # every claim before any assignment: winners are global
            info = _info(box, [1, 2, 3, 4, 6])
            only = Box(box.starts, box.extents, {k: box.operands[k] for k in used})
            gpu.dispatch(source, only, info, groups(box), entry)
    return out


def nonzero(gpu: Gpu, x: GpuTensor) -> tuple[GpuTensor, Shape]:
    """int32 coordinates of the nonzero elements, shape (count, rank), row-major order. The
    count is read back: it decides the result's shape."""
    n, rank = x.numel, len(x.shape)
    flags = contiguous(gpu, cast(gpu, x, bool_) if x.dtype is not bool_ else x)
    flat = flags.view((n,), (1,), flags.offset)
    found = scan(gpu, "sum", cast(gpu, flat, int32), 0) if n else flat
    count = struct.unpack("<i", gpu.runtime.read(found.storage.buffer,
                                                 (found.offset + n - 1) * 4, 4))[0] if n else 0
    out = gpu.empty((count, rank), int32)
    if count == 0 or rank == 0:
        return out, out.shape
    operands = {1: Operand(out.storage, 0, (0,), tail=count * rank - 1),
                2: Operand(flags.storage, flags.offset, (1,)),
                3: Operand(found.storage, found.offset, (1,))}
    source = render("nonzero", workgroup=WORKGROUP)

    def info(box: Box) -> list[int]:
        return [box.size, rank, *x.shape, box.starts[0], box.operands[2].offset,
                box.operands[3].offset, box.operands[1].offset]

    gpu.run(source, (n,), operands, info, lambda box: -(-box.size // WORKGROUP))
    return out, out.shape
