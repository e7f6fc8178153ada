"""Reductions, arg-reductions and scans for wgpu (``reduce.wgsl``, ``scan.wgsl``).

The iteration space of a reduction is the kept dims followed by the reduced dims, each group
of dims coalesced where the input walks them contiguously; the input is read through its
strides, so reducing a permuted or expanded view copies nothing. How many invocations share
a group grows with the group's size (one for a handful of elements, up to a whole workgroup
of 256), so both many small groups and a few long ones keep the GPU busy.

A reduction whose reduced dims are too large to bind at once (``launch.boxes`` has to split
them) writes one partial result per piece, then reduces the partials: sum, prod, max, min,
any and all are associative.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ...dtypes import DType, bool_, int32
from .creation import arange, full
from .elementwise import binary, cast, copy_into, unary, where
from .handle import GpuTensor
from .kinds import Kind
from .launch import Box, Gpu, Operand, coalesce, loop_budget
from .movement import cat, expand, slice_
from .templates import render

WORKGROUP = 256

_INF = {"f32": "pb_inf()", "i32": "i32(2147483647)", "u32": "0xffffffffu"}
_NEG_INF = {"f32": "-pb_inf()", "i32": "i32(-2147483648)", "u32": "0u"}
_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}


def _identity(op: str, dtype: DType) -> float | int | bool:
    """The value that reduction `op` leaves unchanged, in `dtype`."""
    if op in _IDENTITY:
        return _IDENTITY[op]
    if dtype.is_floating_point:
        return -math.inf if op == "max" else math.inf
    if dtype is int32:
        return -(2**31) if op == "max" else 2**31 - 1
    return 0 if op == "max" else (1 if dtype is bool_ else 255)


def threads_for(count: int) -> int:
    """Invocations per group for a group of `count` elements: about four elements each,
    a power of two, at most a workgroup."""
    return min(WORKGROUP, 1 << max(0, (count - 1).bit_length() - 2))


def _combine(op: str, kind: Kind) -> tuple[str, str, str]:
    """(identity, load, combine body) of reduction `op` on inputs of `kind`."""
    t = kind.compute
    load = kind.load("v")
    if op in ("sum", "prod"):
        sign = "+" if op == "sum" else "*"
        return f"{t}({int(op == 'prod')})", load, f"    return Acc(a.v {sign} b.v, 0);"
    if op in ("max", "min"):
        identity = (_NEG_INF if op == "max" else _INF)[t]
        return identity, load, f"    return Acc(pb_{op}imum_{t}(a.v, b.v), 0);"
    if op in ("any", "all"):
        picked = "max" if op == "any" else "min"
        return (f"{int(op == 'all')}u", f"select(0u, 1u, pb_truth_{t}({load}))",
                f"    return Acc({picked}(a.v, b.v), 0);")
    # argmax / argmin: the better value wins, NaN beats everything, ties go to the first index
    better = ">" if op == "argmax" else "<"
    identity = (_NEG_INF if op == "argmax" else _INF)[t]
    first = ["        if (b.i < a.i) {", "            return b;", "        }", "        return a;"]
    body = ["    if (a.v == b.v) {", *first, "    }",
            f"    if (b.v {better} a.v) {{", "        return b;", "    }", "    return a;"]
    if t == "f32":
        body = ["    let a_nan = pb_isnan(a.v);", "    let b_nan = pb_isnan(b.v);",
                "    if (a_nan != b_nan) {", "        if (b_nan) {", "            return b;",
                "        }", "        return a;", "    }",
                "    if (a_nan) {", *first, "    }", *body]
    return identity, load, "\n".join(body)


def _launch(gpu: Gpu, op: str, x: GpuTensor, axes: tuple[int, ...], out: GpuTensor,
            result: str, acc: str, split_reduced: bool) -> GpuTensor:
    """Run reduce.wgsl: `x` reduced over `axes` into `out` (x's shape with size-1 `axes`).
    Returns the tensor holding the result: `out`, or, when the reduced dims had to be split
    to fit the binding limit, the reduction of the pieces' partial results."""
    kept = [d for d in range(len(x.shape)) if d not in axes]
    kshape, (kx, ko) = coalesce(tuple(x.shape[d] for d in kept),
                                [tuple(x.strides[d] for d in kept),
                                 tuple(out.strides[d] for d in kept)])
    rshape, (rx,) = coalesce(tuple(x.shape[d] for d in axes),
                             [tuple(x.strides[d] for d in axes)])
    threads = threads_for(math.prod(rshape))
    identity, load, body = _combine(op, x.kind)
    source = render("reduce", workgroup=WORKGROUP, threads=threads, in_type=x.kind.storage,
                    out_type=out.kind.storage, acc=acc, identity=identity, load=load,
                    combine=body, result=result)
    nk, nr = len(kshape), len(rshape)
    operands = {1: Operand(out.storage, out.offset, ko + (0,) * nr, out.kind.itemsize),
                2: Operand(x.storage, x.offset, kx + rx, x.kind.itemsize)}
    reduced = range(nk, nk + nr)
    # each invocation folds every threads-th element, with a loop over the reduced dims each
    boxes = gpu.launches(kshape + rshape, operands, range(nk + nr if split_reduced else nk),
                         reduced if split_reduced else (), threads * loop_budget(nr + 2))
    pieces = sorted({box.starts[nk:] for box in boxes})
    partials = None
    if len(pieces) > 1:
        # Kept sub-boxes may be cut differently along the reduced dims: a slot that some group
        # has no piece for keeps the identity.
        partials = gpu.empty((len(pieces),) + kshape, out.dtype)
        copy_into(gpu, partials, full(gpu, partials.shape, _identity(op, out.dtype),
                                      out.dtype))
    for box in boxes:
        if partials is not None:  # this piece writes its own slot of the partial results
            slot = Operand(partials.storage, pieces.index(box.starts[nk:]) * partials.strides[0],
                           partials.strides[1:] + (0,) * nr, partials.kind.itemsize)
            box = replace(box, operands={**box.operands,
                                         1: gpu.place(slot, box.starts, box.extents)})
        groups = math.prod(box.extents[:nk])
        info = [groups, math.prod(box.extents[nk:]), nk, nr, *box.extents,
                *box.operands[2].meta(), *box.operands[1].meta()[:1 + nk]]
        gpu.dispatch(source, box, info, -(-groups // (WORKGROUP // threads)))
    if partials is None:
        return out
    merged = reduce(gpu, op, partials, (0,))
    return merged.view(out.shape, out.strides, merged.offset)


def reduce(gpu: Gpu, op: str, x: GpuTensor, axes: tuple[int, ...]) -> GpuTensor:
    """Reduce over `axes` keeping them as size-1 dims; max/min propagate NaN; any/all give
    bool; a reduction over nothing gives the op's identity."""
    out_dtype = bool_ if op in ("any", "all") else x.dtype
    if not axes:
        return cast(gpu, x, out_dtype)
    shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    if math.prod(tuple(x.shape[d] for d in axes)) == 0:
        return full(gpu, shape, _IDENTITY[op], out_dtype)
    out = gpu.empty(shape, out_dtype)
    if out.numel == 0:
        return out
    kind = out.kind
    acc = "u32" if op in ("any", "all") else x.kind.compute
    result = "best.v" if op in ("any", "all") else kind.store("best.v")
    return _launch(gpu, op, x, axes, out, result, acc, split_reduced=True)


def arg_reduce(gpu: Gpu, op: str, x: GpuTensor, axis: int) -> GpuTensor:
    """int32 index of the first max ("argmax") or min ("argmin") along `axis`, kept as a
    size-1 dim; NaN counts as both the largest and the smallest value."""
    shape = tuple(1 if d == axis else n for d, n in enumerate(x.shape))
    out = gpu.empty(shape, int32)
    if out.numel == 0:
        return out
    limits = gpu.runtime.limits
    row_bytes = x.kind.itemsize * (abs(x.strides[axis]) * (x.shape[axis] - 1) + 1)
    if (row_bytes + limits.min_storage_buffer_offset_alignment
            > limits.max_storage_buffer_binding_size
            or x.shape[axis] > WORKGROUP * loop_budget(3)):
        return _arg_by_value(gpu, op, x, axis)
    return _launch(gpu, op, x, (axis,), out, "best.i", x.kind.compute, split_reduced=False)


def _arg_by_value(gpu: Gpu, op: str, x: GpuTensor, axis: int) -> GpuTensor:
    """arg_reduce for rows too long for one workgroup (to bind, or to loop over): the best
    value by a reduction that can be cut into pieces, then the smallest index holding it (or
    holding a NaN, which max and min propagate)."""
    best = reduce(gpu, "max" if op == "argmax" else "min", x, (axis,))
    hit = binary(gpu, "eq", x, expand(best, x.shape), bool_)
    if x.dtype.is_floating_point:
        hit = binary(gpu, "logical_or", hit, unary(gpu, "isnan", x, bool_), bool_)
    length = x.shape[axis]
    along = arange(gpu, 0, 1, length, int32)
    positions = along.view(x.shape, tuple(1 if d == axis else 0 for d in range(len(x.shape))),
                           along.offset)
    return reduce(gpu, "min", where(gpu, hit, positions, full(gpu, x.shape, length, int32)),
                  (axis,))


def scan(gpu: Gpu, op: str, x: GpuTensor, axis: int) -> GpuTensor:
    """Inclusive scan along `axis`: "sum" (cumsum) or "prod" (cumprod), in the input dtype
    (float16 accumulates in float32)."""
    length = x.shape[axis]
    limits = gpu.runtime.limits
    per_binding = ((limits.max_storage_buffer_binding_size
                    - limits.min_storage_buffer_offset_alignment)
                   // (x.kind.itemsize * max(1, abs(x.strides[axis]))))
    piece = min(WORKGROUP * loop_budget(2), per_binding)  # two passes over each segment
    if length > piece:
        return _scan_in_pieces(gpu, op, x, axis, piece)
    out = gpu.empty(x.shape, x.dtype)
    if out.numel == 0:
        return out
    kind = x.kind
    outer = [d for d in range(len(x.shape)) if d != axis]
    oshape, (ox, oo) = coalesce(tuple(x.shape[d] for d in outer),
                                [tuple(x.strides[d] for d in outer),
                                 tuple(out.strides[d] for d in outer)])
    threads = min(WORKGROUP, 1 << max(0, (length - 1).bit_length() - 3))
    t = kind.compute
    source = render("scan", workgroup=WORKGROUP, threads=threads, in_type=kind.storage,
                    out_type=kind.storage, acc=t, identity=f"{t}({int(op == 'prod')})",
                    load=kind.load("v"), combine="a + b" if op == "sum" else "a * b",
                    store=kind.store("running"))
    operands = {1: Operand(out.storage, out.offset, oo + (out.strides[axis],), kind.itemsize),
                2: Operand(x.storage, x.offset, ox + (x.strides[axis],), kind.itemsize)}
    k = len(oshape)

    def info(box: Box) -> list[int]:
        return [math.prod(box.extents[:k]), length, k, *box.extents[:k], *box.operands[2].meta(),
                *box.operands[1].meta()]

    gpu.run(source, oshape + (length,), operands, info,
            lambda box: -(-math.prod(box.extents[:k]) // (WORKGROUP // threads)), range(k))
    return out


def _scan_in_pieces(gpu: Gpu, op: str, x: GpuTensor, axis: int, piece: int) -> GpuTensor:
    """A scan of rows too long for one workgroup: each piece of at most `piece` elements is
    scanned on its own, then combined with the running total of the pieces before it."""
    length = x.shape[axis]
    combine = "add" if op == "sum" else "mul"
    pieces = []
    carry = None
    for start in range(0, length, piece):
        stop = min(start + piece, length)
        bounds = [(start, stop) if d == axis else (0, n) for d, n in enumerate(x.shape)]
        part = scan(gpu, op, slice_(x, *zip(*bounds), [1] * len(x.shape)), axis)
        if carry is not None:
            part = binary(gpu, combine, part, expand(carry, part.shape), x.dtype)
        last = [(stop - start - 1, stop - start) if d == axis else (0, n)
                for d, n in enumerate(part.shape)]
        carry = slice_(part, *zip(*last), [1] * len(x.shape))
        pieces.append(part)
    return cat(gpu, pieces, axis)
