"""Convolutions for wgpu, the "conv" capability (``pyburn.ops.capability``).

- `conv` and `conv_transpose` are an implicit GEMM of the weight and the input whose input
  loads compute their coordinates on the fly (no im2col buffer); the two differ only in the
  map from an output position and a kernel offset to an input position, and in which weight
  dim is the row and which is summed over. Two kernels compute it (`pick_variant`):
  ``conv_tiled.wgsl`` stages 8-channel slabs of the weight and of the input's im2col columns
  in workgroup memory (tiles of 128x128 or 64x256, 8x8 per invocation: for GPUs), and
  ``conv.wgsl`` keeps 4x4 blocks in registers (for CPU drivers and small convolutions).
- `conv_weight` is ``conv_weight.wgsl``, the same product turned around (the sum runs over
  the images and output positions). Its result is small and its sum long, so the sum is
  split into chunks (`splits`), each written to a slot of partial results that the
  backend's sum over the slots adds up: a GPU gets enough workgroups to fill it.

Each is launched over the space (images or nothing, groups, rows, ...) that `launch.boxes`
may cut when an operand is too large to bind whole; a box binds every input channel of its
groups and the whole spatial extent of its images (`windows.span`). The channel and kernel
loops (conv) or the image and position loops (conv_weight, per chunk) are cut into pieces
within the loop budget (`windows.pieces`), whose results are added.

`conv` stores its result through an `Epilogue`: the elementwise consumers the fusion backend
fused into it (a bias, a per-channel scale and shift, an activation), read at the result's
point; a convolution cut into pieces applies it afterwards, with a map kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .creation import full
from .elementwise import ANCHOR, Epilogue, Fragment, apply_epilogue, copy_into, declare, indent
from .handle import GpuTensor, Shape
from .kinds import Kind
from .launch import Gpu, Operand
from .reduce import reduce
from .templates import render
from .windows import pieces, span, spatial, tiles, unflipped

Ints = Sequence[int]
Pads = Sequence[tuple[int, int]]

#: workgroups a weight gradient aims at on a GPU, whose 100+ compute units each want a few
#: in flight, while a small result (64 x 288 for a 32 -> 64 3x3 conv) alone gives a handful
TARGET_WORKGROUPS = 512
#: the fewest (image, output position) steps a chunk of a split weight gradient sums, so that
#: a workgroup's setup and its store of partial results stay small next to its products
MIN_CHUNK = 1024


#: the smallest tile of conv_tiled.wgsl, (rows, columns): 8 x 32 invocations of 8 x 8 results
SMALLEST_TILE = (64, 256)


def tiled_arrangement(rows: int, columns: int) -> tuple[int, int]:
    """Invocations along rows and columns of a ``conv_tiled.wgsl`` workgroup (256, of 8 x 8
    results each) for `rows` by `columns` results: 16 x 16, the squarest tile (the fewest
    loads per multiply-add), unless 8 x 32 covers fewer results past the edges (a group of
    64 output channels).

    >>> tiled_arrangement(64, 36864), tiled_arrangement(256, 36864)
    ((8, 32), (16, 16))
    """
    def covered(along: tuple[int, int]) -> int:
        tile_r, tile_c = 8 * along[0], 8 * along[1]
        return -(-rows // tile_r) * tile_r * -(-columns // tile_c) * tile_c

    return min(((16, 16), (8, 32)), key=covered)


@dataclass(frozen=True)
class Variant:
    """A kernel for `conv` and `conv_transpose`: its file, the side of the square block of
    results an invocation computes, how a workgroup's invocations are arranged along rows
    and columns for `rows` by `columns` results, the channels one step of its channel loop
    covers (a slab), and what such a step costs against `launch.loop_budget` (counting the
    loops inside it)."""

    kernel: str
    block: int
    arrange: Callable[[int, int], tuple[int, int]]
    slab: int
    step_cost: int

    def channel_cost(self, channels: int) -> int:
        """Loop iterations of the channel loop over `channels` channels."""
        return -(-channels // self.slab) * self.step_cost


#: the kernels: "tiled" (workgroup memory) on GPUs, "blocked" (registers only) on CPU drivers
#: and for convolutions smaller than a tile or a slab. A tiled step runs three loops: staging
#: the input (at most 2 iterations) and the weight (at most 4), and the 8 channels' products.
VARIANTS = {
    "tiled": Variant("conv_tiled", 8, tiled_arrangement, 8, 64),
    "blocked": Variant("conv", 4, tiles, 1, 1),
}


def pick_variant(gpu: Gpu, rows: int, columns: int, depth: int, strided: bool) -> str:
    """The kernel for a convolution with `rows` output channels per group, `columns` (image,
    output position) pairs and `depth` summed channels per group (`strided`: a transposed
    convolution with a stride above 1): workgroup-memory tiles on hardware adapters once it
    fills the smallest tile and a slab, register blocks otherwise (CPU drivers run barriers
    slowly, a mostly empty tile or slab wastes a GPU's invocations, and the tiles would
    multiply the zeros of the offsets a strided transposed convolution skips)."""
    if (gpu.runtime.info.is_software or strided or rows < SMALLEST_TILE[0]
            or columns < SMALLEST_TILE[1] or depth < VARIANTS["tiled"].slab):
        return "blocked"
    return "tiled"


def _zeros_into(gpu: Gpu, out: GpuTensor) -> GpuTensor:
    copy_into(gpu, out, full(gpu, out.shape, 0, out.dtype))
    return out


def _layout(t: GpuTensor | Operand, rows: int) -> tuple[tuple[int, ...], list[int]]:
    """The strides of an operand over the output's space (N, groups * rows, *Q) along
    (n, g, r), and along the three spatial dims."""
    st = t.strides
    return (st[0], rows * st[1], st[1]), spatial(st[2:], 0)


def _plain(tail: Epilogue) -> bool:
    return tail.keep is None and tail.fragment == Fragment()


def _epilogue(tail: Epilogue, kind: Kind) -> tuple[list[str], list[str], list[str]]:
    """(declarations, statements before the store loop, statements at row r and column j of
    the block) of the kernels' epilogue; its operand k (from 3 on) is at binding k + 1, its
    layout in info at ``EPI + 7 * (k - 3)``. A plain convolution adds to what an earlier
    piece stored."""
    point = []
    if _plain(tail):
        point.append("if (accumulate) {\n    s += pb_load_out(at);\n}")
    point.append(f"let {ANCHOR} = {kind.load(kind.store('s'))};")
    decls, bases = [], []
    buffers = ([("kept", tail.keep.kind.storage, None)] if tail.keep is not None else []) + [
        (f"epi{j}", r.element, r) for j, r in enumerate(tail.fragment.reads)]
    for k, (name, element, read) in enumerate(buffers, start=3):
        decls.append(declare(k + 1, name, element, read is None))
        i = f"EPI + {7 * (k - 3)}"
        bases += [f"let base{k} = info[{i}] + g * info[{i} + 2];",
                  f"let row{k} = info[{i} + 3];",
                  f"let col{k} = n4 * info[{i} + 1] + qd * info[{i} + 4]"
                  f" + qh * info[{i} + 5] + qw * info[{i} + 6];"]
        at = f"base{k} + r * row{k} + col{k}[j]"
        if read is None:
            point.append(f"kept[{at}] = {tail.keep.kind.store(ANCHOR)};")
        elif any(read.operand.strides) or read.operand.tail:  # (tail: the spatial span)
            point.append(f"let {read.name} = {read.load.format(buf=name, at=at)};")
        else:  # the same at every point (a scalar): loaded once
            bases.append(f"let {read.name} = {read.load.format(buf=name, at=f'base{k}')};")
    point += [tail.fragment.body, f"let result = {tail.out.kind.store(tail.fragment.value)};"]
    return decls, bases, point


def _gemm(gpu: Gpu, x: GpuTensor, w: GpuTensor, tail: Epilogue, groups: int, rows: int,
          depth: int, w_strides: tuple[int, int, int], maps: Sequence[tuple[int, ...]],
          variant: str | None = None) -> None:
    """Run kernel `variant` (`pick_variant`'s choice when None): ``tail.out`` (N, groups *
    rows, *Q) from x (N, groups * depth, *S) and w, read through `w_strides` (along a group, a
    row, a summed channel) and its own strides along the kernel dims; `maps` holds (A, B, C,
    D) per spatial dim (see ``conv.wgsl``)."""
    out = tail.out
    kind = x.kind
    q, s, k = (spatial(t.shape[2:], 1) for t in (out, x, w))
    columns = x.shape[0] * math.prod(q)
    strided = any(m[3] != 1 for m in maps)  # (its divisor: a transposed stride)
    variant = variant or pick_variant(gpu, rows, columns, depth, strided)
    spec = VARIANTS[variant]
    loops = pieces((depth, *k),
                   lambda e: e[1] * (e[2] * (e[3] * (spec.channel_cost(e[0]) + 2) + 2) + 2))
    extra = ([Operand.of(tail.keep)] if tail.keep is not None else []) + [
        r.operand for r in tail.fragment.reads]
    layouts = [_layout(t, rows) for t in (out, *extra)]
    # pieces are added up first; a flipped epilogue input is not bound by its spatial span
    if not _plain(tail) and (len(loops) > 1 or any(st < 0 for _, qs in layouts for st in qs)):
        total = gpu.empty(out.shape, x.dtype)
        _gemm(gpu, x, w, Epilogue.plain(total), groups, rows, depth, w_strides, maps, variant)
        apply_epilogue(gpu, tail, total)
        return
    s_strides, k_strides = (spatial(t.strides[2:], 0) for t in (x, w))
    itemsize = kind.itemsize
    operands = {
        1: Operand(out.storage, out.offset, layouts[0][0], out.kind.itemsize,
                   span(q, layouts[0][1])),
        2: Operand(x.storage, x.offset, (x.strides[0], depth * x.strides[1], 0), itemsize,
                   (depth - 1) * x.strides[1] + span(s, s_strides)),
        3: Operand(w.storage, w.offset, (0, w_strides[0], w_strides[1]), itemsize,
                   (depth - 1) * w_strides[2] + span(k, k_strides)),
    }
    for key, (e, (along, q_strides)) in enumerate(zip(extra, layouts[1:]), start=4):
        operands[key] = replace(e, strides=along, tail=span(q, q_strides))
    fragment = replace(tail.fragment, reads=tuple(
        replace(r, operand=operands[key]) for key, r in
        enumerate(tail.fragment.reads, start=4 + (tail.keep is not None))))
    decls, bases, point = _epilogue(replace(tail, fragment=fragment), kind)
    along_rows, along_cols = spec.arrange(rows, columns)
    source = render(spec.kernel, rows=along_rows, cols=along_cols, element=kind.storage,
                    out_type=out.kind.storage, bindings="\n".join(decls),
                    bases=indent("\n".join(bases), 4), epilogue=indent("\n".join(point), 16))
    maps3 = [(1, 1, 0, 1)] * (3 - len(maps)) + list(maps)
    geometry = [*q, *s, *k, *(m[i] for i in range(4) for m in maps3)]
    for box in gpu.launches((x.shape[0], groups, rows), operands):
        nb, gb, rb = box.extents
        o, xp, wp = (box.operands[i] for i in (1, 2, 3))
        placed = [o.offset, *o.strides, *layouts[0][1], xp.offset, *xp.strides[:2],
                  x.strides[1], *s_strides, wp.offset, *wp.strides[1:], w_strides[2],
                  *k_strides]
        for key, (_, q_strides) in enumerate(layouts[1:], start=4):
            placed += [box.operands[key].offset, *box.operands[key].strides, *q_strides]
        count = (gb * -(-rb // (spec.block * along_rows))
                 * -(-(nb * math.prod(q)) // (spec.block * along_cols)))
        for starts, extents in loops:
            piece = [v for a, n in zip(starts, extents) for v in (a, a + n)]
            piece.append(int(any(starts)))
            gpu.dispatch(source, box, [nb, gb, rb, *geometry, *piece, *placed], count)


def output_sizes(sizes: Ints, kernel: Ints, stride: Ints, padding: Pads,
                 dilation: Ints) -> tuple[int, ...]:
    """The spatial sizes of `conv`'s result for input sizes `sizes`."""
    return tuple((n + b + a - d * (k - 1) - 1) // s + 1 for n, k, s, (b, a), d
                 in zip(sizes, kernel, stride, padding, dilation))


def conv(gpu: Gpu, x: GpuTensor, w: GpuTensor, stride: Ints, padding: Pads, dilation: Ints,
         groups: int, tail: Epilogue | None = None, variant: str | None = None) -> GpuTensor:
    """Cross-correlation of x (N, C, *S) with w (O, C/groups, *K); `padding` holds (before,
    after) zeros per spatial dim. Returns (N, O, *out); with `tail`, stored through that
    epilogue (whose operands are over the result's space) into ``tail.out``, returned. By
    kernel `variant` (`pick_variant`'s choice when None; the GPU benchmark times each)."""
    x, w = unflipped(gpu, x), unflipped(gpu, w)
    sizes = output_sizes(x.shape[2:], w.shape[2:], stride, padding, dilation)
    out = gpu.empty((x.shape[0], w.shape[0]) + sizes, x.dtype) if tail is None else tail.out
    depth = w.shape[1]
    if out.numel == 0:
        return out
    if depth == 0:  # an empty sum: zeros
        if tail is None:
            return _zeros_into(gpu, out)
        return apply_epilogue(gpu, tail, full(gpu, out.shape, 0, x.dtype))
    rows = w.shape[0] // groups
    maps = [(s, d, -b, 1) for s, d, (b, _) in zip(stride, dilation, padding)]
    _gemm(gpu, x, w, tail or Epilogue.plain(out), groups, rows, depth,
          (rows * w.strides[0], w.strides[0], w.strides[1]), maps, variant)
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
    _gemm(gpu, x, w, Epilogue.plain(out), groups, rows, depth,
          (depth * w.strides[0], w.strides[1], w.strides[0]), maps)
    return out


def splits(workgroups: int, steps: int) -> int:
    """Into how many chunks `conv_weight` splits its sum when its result alone gives
    `workgroups` workgroups and the sum runs over `steps` (image, output position) pairs:
    enough for ``TARGET_WORKGROUPS`` in all, none shorter than ``MIN_CHUNK`` steps; 1 when
    the result already gives enough.

    >>> splits(18, 64 * 24 * 24), splits(18, 2 * 64)
    (29, 1)
    """
    if workgroups >= TARGET_WORKGROUPS:
        return 1
    return max(1, min(-(-TARGET_WORKGROUPS // workgroups), steps // MIN_CHUNK))


def conv_weight(gpu: Gpu, x: GpuTensor, g: GpuTensor, kernel: Ints, stride: Ints,
                padding: Pads, dilation: Ints, groups: int) -> GpuTensor:
    """The gradient of `conv` in its weight: x (N, C, *S) and the output's gradient g
    (N, O, *out) give (O, C/groups, *kernel). The sum over images and output positions is
    split into `splits` chunks, each writing a slot of partial results that a sum over the
    slots (the backend's reduction) adds up; fewer when the slots would not fit one
    binding or the grid."""
    x, g = unflipped(gpu, x), unflipped(gpu, g)
    rows, columns = g.shape[1] // groups, x.shape[1] // groups
    shape = (g.shape[1], columns) + tuple(kernel)
    if math.prod(shape) == 0 or x.shape[0] == 0 or math.prod(g.shape[2:]) == 0:
        return _zeros_into(gpu, gpu.empty(shape, x.dtype))
    q, s, k = spatial(g.shape[2:], 1), spatial(x.shape[2:], 1), spatial(kernel, 1)
    offsets = math.prod(k)
    along_rows, along_cols = tiles(rows, columns)
    tiled = -(-rows // (4 * along_rows)) * -(-columns // (4 * along_cols))
    limits = gpu.runtime.limits
    most = min(limits.max_storage_buffer_binding_size // (math.prod(shape) * x.kind.itemsize),
               limits.max_workgroups_per_dimension ** 3 // (groups * offsets * tiled))
    chunks = max(1, min(splits(groups * offsets * tiled, x.shape[0] * math.prod(q)), most))
    slots = gpu.empty((chunks,) + shape, x.dtype)  # every slot is stored by the first piece
    kind = slots.kind
    strides3 = spatial(stride, 1)
    shifts = spatial([-b for b, _ in padding], 0)
    dilation3 = spatial(dilation, 1)
    table = []
    for n_q, n_s, n_k, st, shift, d in zip(q, s, k, strides3, shifts, dilation3):
        for i in range(n_k):
            at = i * d + shift  # input coordinate of output position 0
            first = max(0, -(at // st))
            table += [first, max(first, min(n_q, (n_s - 1 - at) // st + 1)), at]
    q_strides, s_strides = (spatial(t.strides[2:], 0) for t in (g, x))
    k_strides = spatial(slots.strides[3:], 0)
    slot, along_o, along_c = slots.strides[:3]
    operands = {
        1: Operand(slots.storage, slots.offset, (0, rows * along_o, along_o, along_c),
                   kind.itemsize, (chunks - 1) * slot + span(k, k_strides)),
        2: Operand(g.storage, g.offset, (g.strides[0], rows * g.strides[1], g.strides[1], 0),
                   kind.itemsize, span(q, q_strides)),
        3: Operand(x.storage, x.offset, (x.strides[0], columns * x.strides[1], 0,
                                         x.strides[1]), kind.itemsize, span(s, s_strides)),
    }
    source = render("conv_weight", rows=along_rows, cols=along_cols, element=kind.storage,
                    store=kind.store("s"))

    def cost(e: Shape) -> int:  # an invocation's loop iterations over a piece of extents e
        lines = -(-e[0] * e[1] * e[2] // chunks) + 2  # (n, qd, qh) lines a chunk reaches
        return -(-math.prod(e) // chunks) + 2 * lines + 2

    for box in gpu.launches((x.shape[0], groups, rows, columns), operands):
        nb, gb, rb, cb = box.extents
        d, gp, xp = (box.operands[i] for i in (1, 2, 3))
        placed = [d.offset, slot, *d.strides[1:], *k_strides, gp.offset, *gp.strides[:3],
                  *q_strides, xp.offset, xp.strides[0], xp.strides[1], x.strides[1],
                  *s_strides]
        count = chunks * gb * offsets * -(-rb // (4 * along_rows)) * -(-cb // (4 * along_cols))
        for starts, extents in pieces((nb, *q), cost):
            piece = [starts[0], starts[0] + extents[0], *starts[1:],
                     *(a + b for a, b in zip(starts[1:], extents[1:]))]
            # the first piece of the first box along n stores (boxes come depth first, so it
            # comes before the others over the same results), the rest add
            add = int(box.starts[0] > 0 or any(starts))
            info = [gb, rb, cb, chunks, add, *k, *strides3, *piece, *placed, *table]
            gpu.dispatch(source, box, info, count)
    summed = slots if chunks == 1 else reduce(gpu, "sum", slots, (0,))
    return summed.view(shape, summed.strides[1:], summed.offset)
