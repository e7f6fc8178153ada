"""Reductions, arg-reductions and scans for wgpu (``reduce.wgsl``, ``scan.wgsl``).

The iteration space of a reduction is the kept dims followed by the reduced dims, each group
of dims coalesced where every operand walks them contiguously. What is reduced is a
`Fragment` over the input's space: one input read through its strides for a plain
reduction (reducing a permuted or expanded view copies nothing), or the elementwise code of
the producers the fusion backend fused into it, computed as it is read. The result goes
through an `Epilogue` (elementwise consumers fused into it) before it is stored.

Two layouts, which `_by_columns` picks between. By rows, the invocations of a group are
neighbours: how many share it grows with its size (one for a handful of elements, up to a
whole workgroup of 256), and they read neighbouring elements where the innermost reduced
dim is the contiguous one (``x.sum(1)`` of a row-major matrix). By columns, each invocation
folds a group alone and neighbouring invocations own neighbouring kept points, so they read
neighbouring elements where the innermost kept dim is the contiguous one (``x.sum(0)``,
``x.mean(1)`` of an (N, C, L) tensor): the loads of a workgroup are rows, not columns.
Either way a few long groups are cut into segments (`run`), so that the work fills the
device.

A reduction whose reduced dims are too large to bind at once, or to loop over within
llvmpipe's loop limit (``launch.boxes`` splits them), writes one partial result per piece,
then reduces the partials, applying the epilogue there: sum, prod, max, min, any and all are
associative. Partial results too many to bind at once are laid out with each kept point's
next to each other, so that the merge is cut along the kept dims only, and is one pass.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from itertools import chain

from ...dtypes import DType, bool_, int32
from ...errors import ArgumentError
from ...ops.elementwise import BINARY
from ...ops.reducers import REDUCTIONS
from ..strided import coalesce
from .creation import arange, full
from .elementwise import (
    ANCHOR,
    Epilogue,
    Fragment,
    Read,
    apply_epilogue,
    binary,
    cast,
    copy_into,
    declare,
    indent,
    launch_map,
    unary,
    where,
)
from .handle import GpuTensor, Shape
from .kinds import Kind, kind_of
from .launch import Box, Gpu, Operand, loop_budget
from .movement import cat, expand, slice_
from .templates import HELPER_LOOP, fill, helper_loops, render

WORKGROUP = 256
#: workgroups a reduction aims at, and the most segments a group is cut into for them: a
#: few long groups are cut into segments (by rows each folded by a workgroup of its own, by
#: columns a workgroup folds neighbouring groups' segments), so that every core gets some
TARGET_WORK = 256
#: the fewest elements each invocation folds in a segment (a shorter one is not worth a
#: partial result)
MIN_SEGMENT = 64
#: the fewest neighbouring kept points worth reading by columns: eight 4-byte elements are a
#: 32-byte memory sector, the unit GPUs load
MIN_COLUMNS = 8

_INF = {"f32": "pb_inf()", "i32": "i32(2147483647)", "u32": "0xffffffffu"}
_NEG_INF = {"f32": "-pb_inf()", "i32": "i32(-2147483648)", "u32": "0u"}


def _identity(op: str, dtype: DType) -> float | int | bool:
    """The value that reduction `op` leaves unchanged, in `dtype` (an infinite identity is
    the dtype's lowest or highest value on integers)."""
    identity = REDUCTIONS[op].identity
    if not math.isinf(identity) or dtype.is_floating_point:
        return identity
    if dtype is int32:
        return -(2**31) if identity < 0 else 2**31 - 1
    return 0 if identity < 0 else (1 if dtype is bool_ else 255)


def threads_for(count: int) -> int:
    """Invocations per group for a group of `count` elements: about four elements each,
    a power of two, at most a workgroup."""
    return min(WORKGROUP, 1 << max(0, (count - 1).bit_length() - 2))


def result_dtype(op: str, dtype: DType) -> DType:
    """The dtype reduction (or arg reduction) `op` of `dtype` elements gives."""
    if op in ("argmax", "argmin"):
        return int32
    return bool_ if REDUCTIONS[op].truth else dtype


def _on_accumulators(expression: str) -> str:
    """A fold's expression of values `a` and `b` as one of accumulators `a` and `b`."""
    return _OPERANDS.sub(lambda m: f"{m.group(0)}.v", expression)


_OPERANDS = re.compile(r"\b[ab]\b")


def _combine(op: str, kind: Kind, value: str) -> tuple[str, str, str, str]:
    """(accumulator type, identity, the source value `value` as the accumulator, combine
    body) of reduction `op` on a source of `kind`."""
    t = kind.compute
    if op in REDUCTIONS:
        reduction = REDUCTIONS[op]
        acc = "u32" if reduction.truth else t  # truth values fold as 0u and 1u
        fold = fill(BINARY[reduction.combine].wgsl, {"T": acc}, strict=False)
        identity = reduction.identity
        start = ((_NEG_INF if identity < 0 else _INF)[acc] if math.isinf(identity)
                 else f"{acc}({int(identity)})")
        if reduction.truth:
            value = f"select(0u, 1u, pb_truth_{t}({value}))"
        return acc, start, value, f"    return Acc({_on_accumulators(fold)}, 0);"
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
    return t, identity, value, "\n".join(body)


def _anchor(op: str, result: Kind) -> str:
    """The group's result (from `best: Acc`) as the epilogue sees it: in the compute type,
    rounded as storing it would round it."""
    if op in ("argmax", "argmin"):
        return "best.i"
    return "best.v" if REDUCTIONS[op].truth else result.load(result.store("best.v"))


@dataclass
class _Buffer:
    """One buffer of a reduction kernel: its operand over the kernel's space, WGSL name and
    element type, its role ("out"; "kept_source", the source stored as it is read;
    "source", a source input; "keep", a value the epilogue stores besides out, `value`;
    "epilogue", an input of the epilogue) and, for inputs, the `Read` it comes from; and
    the epilogue's read of the same operand, when a source input is one (a fused kernel's
    table of constants): bound once, as `shared`."""

    operand: Operand
    name: str
    element: str
    role: str
    read: Read | None = None
    shared: Read | None = None
    value: str = ""


def _over_input(operand: Operand, axes: tuple[int, ...]) -> Operand:
    """An operand of the result's space (size 1 along `axes`) as one of the input's."""
    return replace(operand, strides=tuple(0 if d in axes else s
                                          for d, s in enumerate(operand.strides)))


def _buffers(source: Fragment, axes: tuple[int, ...], tail: Epilogue,
             keep_source: GpuTensor | None) -> list[_Buffer]:
    """Every buffer of the kernel in binding order: out, then what the first pass of a
    reduction in pieces needs too (the source's kept copy and inputs), then the rest."""
    found = [_Buffer(_over_input(Operand.of(tail.out), axes), "out", tail.out.kind.storage,
                     "out")]
    if keep_source is not None:
        found.append(_Buffer(Operand.of(keep_source), "kept_source", keep_source.kind.storage,
                             "kept_source"))
    sources = [_Buffer(r.operand, f"src{j}", r.element, "source", r)
               for j, r in enumerate(source.reads)]
    found += sources
    found += [_Buffer(_over_input(Operand.of(t), axes), f"kept{j}", t.kind.storage, "keep",
                      value=value) for j, (t, value) in enumerate(tail.outputs())]
    for j, r in enumerate(tail.fragment.reads):
        operand = _over_input(r.operand, axes)
        same = next((b for b in sources if b.operand == operand and b.element == r.element),
                    None)
        if same is not None:
            same.shared = r
        else:
            found.append(_Buffer(operand, f"epi{j}", r.element, "epilogue", r))
    return found


def _moves(b: _Buffer, nr: int) -> bool:
    """Whether input `b` of the source moves along the reduced dims (the last `nr`)."""
    return any(b.operand.strides[len(b.operand.strides) - nr:])


def _cost(source: Fragment, buffers: list[_Buffer], nr: int) -> int:
    """The cost of one iteration of the kernel's loop, for `loop_budget`: the index
    arithmetic of each operand read over several reduced dims (a loop of `pb_strided`), and
    the loops of the helpers the source calls."""
    strided = sum(nr > 1 and _moves(b, nr) for b in buffers
                  if b.role in ("source", "kept_source"))
    return 2 + strided * (nr + 2) + (HELPER_LOOP + 2) * helper_loops(source.body + source.value)


def _kernel(op: str, source: Fragment, kind: Kind, tail: Epilogue, buffers: list[_Buffer],
            nr: int, threads: int) -> str:
    """The text of the kernel over `buffers` (their strides coalesced, the last `nr` over
    the reduced dims), `threads` invocations to a group (1: the layout by columns)."""
    acc, identity, value, combine = _combine(op, kind, source.value)
    decls, bases, hoisted, loads, kept, stores = [], [], [], [], "", []
    finish = [f"let {ANCHOR} = {_anchor(op, kind_of(result_dtype(op, kind.dtype)))};"]
    for k, b in enumerate(buffers, start=1):
        if k > 1:
            decls.append(declare(k, b.name, b.element, b.role in ("kept_source", "keep")))
        if b.role in ("source", "kept_source"):
            bases.append(f"let base{k} = group_at(g, {k});")
            at = f"base{k}"
            if _moves(b, nr) and nr == 1:
                # one reduced dim (most reductions, once `coalesce` has merged contiguous
                # dims): a multiply, and no division
                bases.append(f"let step{k} = info[block({k}) + 1 + info[2]];")
                at += f" + r * step{k}"
            elif _moves(b, nr):
                at += f" + reduced_at(r, {k})"
            if b.role == "kept_source":
                kept = f"kept_source[{at}] = {kind.store(source.value)};"
            else:  # an input that is the same across the group is loaded once
                (loads if " + r" in at else hoisted).append(
                    f"let {b.read.name} = {b.read.load.format(buf=b.name, at=at)};")
            if b.shared is not None:
                finish.append(f"let {b.shared.name} = "
                              f"{b.shared.load.format(buf=b.name, at=f'group_at(g, {k})')};")
        elif b.role == "keep":  # (after the epilogue, which computes the values)
            stores.append(f"{b.name}[group_at(g, {k})] = {b.value};")
        elif b.role == "epilogue":
            finish.append(f"let {b.read.name} = "
                          f"{b.read.load.format(buf=b.name, at=f'group_at(g, {k})')};")
    finish += [tail.fragment.body, *stores,
               f"let result = {tail.out.kind.store(tail.fragment.value)};"]
    return render("reduce", workgroup=WORKGROUP, threads=threads,
                  out_type=tail.out.kind.storage, bindings="\n".join(decls), acc=acc,
                  identity=identity, combine=combine,
                  bases=indent("\n".join(bases), 8), hoisted=indent("\n".join(hoisted), 8),
                  loads=indent("\n".join([*loads, source.body]), 12), value=value,
                  kept_source=indent(kept, 12), finish=indent("\n".join(finish), 8))


def _by_columns(buffers: list[_Buffer], kshape: Shape, rshape: Shape, split: bool,
                budget: int) -> bool:
    """Whether to fold each group in one invocation, neighbouring invocations owning
    neighbouring kept points (see the module docstring), rather than by rows. Yes when more
    of the source's operands step through memory in smaller steps along the innermost kept
    dim than along the innermost reduced dim, that kept dim is at least `MIN_COLUMNS` long,
    and the columns are work enough: cut into up to `TARGET_WORK` segments each (where
    `split`: the arg reductions are not cut) they make `TARGET_WORK` workgroups. An
    arg reduction's column must also fit one invocation's `budget` of loop iterations."""
    nk = len(kshape)
    if not nk or not rshape or kshape[-1] < MIN_COLUMNS:
        return False
    groups = math.prod(kshape)
    if groups * (TARGET_WORK if split else 1) < TARGET_WORK * WORKGROUP:
        return False
    if not split and math.prod(rshape) > budget:
        return False
    votes = 0
    for b in buffers:
        if b.role in ("source", "kept_source"):
            along_kept, along_reduced = abs(b.operand.strides[nk - 1]), abs(b.operand.strides[-1])
            if along_kept and along_reduced:
                votes += (along_kept < along_reduced) - (along_reduced < along_kept)
    return votes > 0


def run(gpu: Gpu, op: str, source: Fragment, shape: Shape, dtype: DType, axes: tuple[int, ...],
        tail: Epilogue, keep_source: GpuTensor | None = None, split_reduced: bool = True) -> bool:
    """Reduce `source` (elementwise code over the input space `shape`, valued in the compute
    type of `dtype`) over `axes` with `op`, the result going through `tail`; the source's
    values are stored into `keep_source` too when given. Without `split_reduced` (the arg
    reductions, whose winner is not associative across pieces) the reduced dims must be
    processed whole: returns False, having done nothing, when they cannot be."""
    buffers = _buffers(source, axes, tail, keep_source)
    kept = [d for d in range(len(shape)) if d not in axes]
    kshape, kst = coalesce(tuple(shape[d] for d in kept),
                           [tuple(b.operand.strides[d] for d in kept) for b in buffers])
    rshape, rst = coalesce(tuple(shape[d] for d in axes),
                           [tuple(b.operand.strides[d] for d in axes) for b in buffers])
    for b, ks, rs in zip(buffers, kst, rst):
        b.operand = replace(b.operand, strides=ks + rs)
    nk, nr = len(kshape), len(rshape)
    count, groups = math.prod(rshape), math.prod(kshape)
    kind = kind_of(dtype)
    each = max(1, loop_budget(_cost(source, buffers, nr)))  # one invocation's iterations
    columns = _by_columns(buffers, kshape, rshape, split_reduced, each)
    threads = 1 if columns else gpu.group_threads(threads_for(count))
    text = _kernel(op, source, kind, tail, buffers, nr, threads)
    operands = {k: b.operand for k, b in enumerate(buffers, start=1)}
    budget = threads * each  # what a group's invocations may fold in one kernel
    if split_reduced:  # few long groups are cut into segments, to keep every core busy:
        # into as many as make TARGET_WORK workgroups of work items, at most TARGET_WORK
        wanted = min(TARGET_WORK, -(-TARGET_WORK * (WORKGROUP // threads) // groups))
        length = min(budget, max(threads * MIN_SEGMENT, -(-count // wanted)))
    elif count > budget:
        return False
    else:
        length = count
    try:
        boxes = gpu.launches(kshape + rshape, operands, range(nk + nr if split_reduced else nk))
    except ArgumentError:
        if split_reduced:
            raise
        return False  # a row too long to bind whole

    def segments(box: Box) -> int:
        return -(-math.prod(box.extents[nk:]) // length)

    def info(box: Box, bound: int, step: int) -> list[int]:
        kept_points = math.prod(box.extents[:nk])
        return [kept_points * segments(box), math.prod(box.extents[nk:]), nk, nr, kept_points,
                length, step, *box.extents,
                *chain.from_iterable(box.operands[k].meta() for k in range(1, bound + 1))]

    def work(box: Box) -> int:
        return -(-math.prod(box.extents[:nk]) * segments(box) // (WORKGROUP // threads))

    pieces = sorted({box.starts[nk:] for box in boxes})
    most = max(segments(box) for box in boxes)
    if len(pieces) == 1 and most == 1:
        for box in boxes:
            gpu.dispatch(text, box, info(box, len(buffers), 0), work(box))
        return True
    # In pieces (bound apart) and segments: each writes its partial results to a slot of its
    # own, then the slots are reduced, and the epilogue applied, by a reduction over the
    # slots. Slots come first, (slots, kept dims), so that neighbouring kept points' partial
    # results are neighbours, where they fit one binding. Where they do not, a merge reading
    # its slots a row of kept points apart would be cut along the slots just as this pass
    # was cut along the reduced dims, and its merge again, for ever (a sum(0) of rows longer
    # than a binding); slots last, (kept dims, slots), a merge reads each kept point's slots
    # one after the other and is cut along the kept dims alone, so it is one pass.
    partial = result_dtype(op, dtype)
    slots = len(pieces) * most
    itemsize = kind_of(partial).itemsize
    last = slots * groups * itemsize > gpu.runtime.limits.max_storage_buffer_binding_size
    partials = gpu.empty(kshape + (slots,) if last else (slots,) + kshape, partial)
    step = partials.strides[-1 if last else 0]
    kept_strides = partials.strides[:nk] if last else partials.strides[1:]
    if len(pieces) > 1 or any(segments(box) < most for box in boxes):
        # a slot that no piece writes for some kept sub-box keeps the identity
        copy_into(gpu, partials, full(gpu, partials.shape, _identity(op, partial), partial))
    first_buffers = [replace(b, shared=None) for b in buffers
                     if b.role in ("out", "kept_source", "source")]
    first_text = _kernel(op, source, kind, Epilogue.plain(partials), first_buffers, nr, threads)
    first = {k: b.operand for k, b in enumerate(first_buffers, start=1)}
    for box in boxes:
        first[1] = Operand(partials.storage, pieces.index(box.starts[nk:]) * most * step,
                           kept_strides + (0,) * nr, itemsize, tail=(most - 1) * step)
        # (a piece's slots may span more than its kept points did: cut along those)
        for part in gpu.launches_within(box, first, range(nk)):
            gpu.dispatch(first_text, part, info(part, len(first), step), work(part))

    def merged(b: _Buffer) -> Operand:  # b's operand over the merge's space
        kept_only = b.operand.strides[:nk]
        return replace(b.operand, strides=kept_only + (0,) if last else (0,) + kept_only)

    def view(t: GpuTensor, b: _Buffer) -> GpuTensor:
        return t.view(kshape + (1,) if last else (1,) + kshape, merged(b).strides, t.offset)

    epilogue_reads = [(b, b.read if b.role == "epilogue" else b.shared) for b in buffers
                      if b.role == "epilogue" or b.shared is not None]
    stored = [(view(t, b), value) for b, (t, value) in
              zip([b for b in buffers if b.role == "keep"], tail.outputs())]
    merge = Epilogue(
        replace(tail.fragment, reads=tuple(replace(read, operand=merged(b))
                                           for b, read in epilogue_reads)),
        view(tail.out, buffers[0]), also=tuple(stored))
    return run(gpu, op, Fragment((Read.of("x", partials),), "", "x"), partials.shape, partial,
               (nk if last else 0,), merge)


def reduce(gpu: Gpu, op: str, x: GpuTensor, axes: tuple[int, ...]) -> GpuTensor:
    """Reduce over `axes` keeping them as size-1 dims; max/min propagate NaN; any/all give
    bool; a reduction over nothing gives the op's identity."""
    out_dtype = result_dtype(op, x.dtype)
    if not axes:
        return cast(gpu, x, out_dtype)
    shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    if math.prod(tuple(x.shape[d] for d in axes)) == 0:
        return full(gpu, shape, _identity(op, out_dtype), out_dtype)
    out = gpu.empty(shape, out_dtype)
    if out.numel:
        run(gpu, op, Fragment((Read.of("x", x),), "", "x"), x.shape, x.dtype, axes,
            Epilogue.plain(out))
    return out


def reduce_fused(gpu: Gpu, op: str, source: Fragment, shape: Shape, dtype: DType,
                 axes: tuple[int, ...], tail: Epilogue,
                 keep_source: GpuTensor | None = None) -> None:
    """`run` for every op, reductions (over any axes) and arg-reductions (over one):
    an arg-reduction whose rows are too long for one kernel computes its source first and
    takes the long way (`_arg_by_value`), then applies the epilogue as a map kernel."""
    if op not in ("argmax", "argmin"):
        run(gpu, op, source, shape, dtype, axes, tail, keep_source)
        return
    if run(gpu, op, source, shape, dtype, axes, tail, keep_source, split_reduced=False):
        return
    kind = kind_of(dtype)
    x = keep_source if keep_source is not None else gpu.empty(shape, dtype)
    launch_map(gpu, x, source.reads, kind.store(source.value), source.body)
    if len(axes) > 1:  # over every dim (the index is row-major): over the flat elements
        assert len(axes) == len(shape), "an arg-reduction is over one dim or all of them"
        best = _arg_by_value(gpu, op, x.view((x.numel,), (1,), x.offset), 0)
        best = best.view(tail.out.shape, (0,) * len(shape), best.offset)
    else:
        best = _arg_by_value(gpu, op, x, axes[0])
    apply_epilogue(gpu, tail, best)


def arg_reduce(gpu: Gpu, op: str, x: GpuTensor, axis: int) -> GpuTensor:
    """int32 index of the first max ("argmax") or min ("argmin") along `axis`, kept as a
    size-1 dim; NaN counts as both the largest and the smallest value."""
    shape = tuple(1 if d == axis else n for d, n in enumerate(x.shape))
    out = gpu.empty(shape, int32)
    if out.numel == 0:
        return out
    if run(gpu, op, Fragment((Read.of("x", x),), "", "x"), x.shape, x.dtype, (axis,),
           Epilogue.plain(out), split_reduced=False):
        return out
    return _arg_by_value(gpu, op, x, axis)


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
    """Inclusive scan along `axis` of reduction `op` (sum: cumsum, prod: cumprod), in the
    input dtype (float16 accumulates in float32)."""
    length = x.shape[axis]
    limits = gpu.runtime.limits
    per_binding = ((limits.max_storage_buffer_binding_size
                    - limits.min_storage_buffer_offset_alignment)
                   // (x.kind.itemsize * max(1, abs(x.strides[axis]))))
    most = gpu.group_threads(WORKGROUP)  # invocations a row may have
    piece = min(most * loop_budget(2), per_binding)  # two passes over each segment
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
    threads = min(most, 1 << max(0, (length - 1).bit_length() - 3))
    t = kind.compute
    source = render("scan", workgroup=WORKGROUP, threads=threads, in_type=kind.storage,
                    out_type=kind.storage, acc=t, identity=f"{t}({int(REDUCTIONS[op].identity)})",
                    load=kind.load("v"),
                    combine=fill(BINARY[REDUCTIONS[op].combine].wgsl, {"T": t}, strict=False),
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
    combine = REDUCTIONS[op].combine
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
