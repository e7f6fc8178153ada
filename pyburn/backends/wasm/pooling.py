"""The "max_pool" and "avg_pool" capabilities on wasm (``pyburn.ops.capability.MAX_POOL``,
``AVG_POOL``).

max_pool without positions and without dilation (what inference asks for): a box's max is
separable too, so it is the box sums' kernel with max for sum (``box_max_f32``), one pooled
dim at a time over windows clipped to the input (padding with -inf adds nothing to a max).
With positions, or dilation: the input padded with -inf, its windows copied by one strided
copy into rows of ``prod(kernel)``, then one max reduction, and for the positions one argmax
(the first max, NaN the largest, as the kernel has it).

A window's position is the data's part (which offset of the window won, an argmax) plus
two tables that depend only on the geometry, uploaded with the call: each output
position's first element in the unpadded input (``base``) and each window offset's
distance from it (``offsets``). A window of nothing but -inf names its first element
inside the input, as PyTorch does (``first``): its argmax may have landed in the padding.

avg_pool: a box's sum is separable, so each pooled dim in turn is summed over its windows by
one call of ``box_sum_f32(out, x, outer, length, inner, count, bounds)``: over the
contiguous (outer, length, inner) block around that dim, output i of `count` is the sum of
rows ``[start, stop)`` (the i-th pair of int32 `bounds`, clipped to the input, so padding
adds nothing), four neighbouring columns at a time, the last ``inner % 4`` (all of them
where the dim is the last) one at a time. Windows of any sizes, sliding or adaptive, are
such pairs. Then one division: by each box's product of counts (a table of the output's
spatial shape, broadcast over the lead dims), or by the divisor. ``box_max_f32`` takes the
same arguments; NaN wins its max (WebAssembly's ``f32x4.max``), as in the reduction.
"""

from __future__ import annotations

import itertools
import math
import struct
from typing import TYPE_CHECKING

from ...dtypes import bool_, float32, int32
from .assemble import Function
from .kinds import KINDS

if TYPE_CHECKING:
    from .backend import WasmBackend, WasmTensor

Ints = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]


def _table(b: WasmBackend, values: list[int], shape: Ints) -> WasmTensor:
    """A small int32 tensor of geometry (not data), uploaded in one copy."""
    return b.from_bytes(struct.pack(f"<{len(values)}i", *values), shape, int32)


def max_pool(b: WasmBackend, x: WasmTensor, kernel: Ints, stride: Ints, padding: Pads,
             dilation: Ints, indices: bool) -> tuple[WasmTensor, WasmTensor | None]:
    """Max over windows of x's trailing ``len(kernel)`` dims padded with -inf, and each
    max's flat position within those dims (unpadded) where `indices`."""
    nd = len(kernel)
    lead, spatial = x.shape[:-nd], x.shape[-nd:]
    out = tuple((s + lo + hi - d * (k - 1) - 1) // st + 1
                for s, k, st, (lo, hi), d in zip(spatial, kernel, stride, padding, dilation))
    if not indices and all(d == 1 for d in dilation) and x.dtype is float32:
        windows = tuple(tuple((o * st - lo, o * st - lo + k) for o in range(n))
                        for n, k, st, (lo, _) in zip(out, kernel, stride, padding))
        return _boxes(b, x, windows, "max"), None
    xp = b.pad(x, ((0, 0),) * len(lead) + tuple(padding), -math.inf)
    steps = xp.strides[-nd:]
    view = xp.view((*lead, *out, *kernel),
                   (*xp.strides[:-nd], *(st * s for st, s in zip(stride, steps)),
                    *(d * s for d, s in zip(dilation, steps))), xp.offset)
    size = math.prod(kernel)
    rows = b.reshape(b.contiguous(view), (*lead, *out, size))
    last = len(lead) + nd
    values = b.reshape(b.reduce("max", rows, (last,)), (*lead, *out))
    if not indices:
        return values, None
    won = b.reshape(b.arg_reduce("argmax", rows, last), (math.prod(values.shape),))
    place = [math.prod(spatial[d + 1:]) for d in range(nd)]
    offsets = [sum(k * d * p for k, d, p in zip(ks, dilation, place))
               for ks in itertools.product(*(range(k) for k in kernel))]
    corners, firsts = [], []
    for o in itertools.product(*(range(n) for n in out)):
        start = [oi * st - lo for oi, st, (lo, _) in zip(o, stride, padding)]
        inside = [s + d * -(-max(0, -s) // d) for s, d in zip(start, dilation)]
        corners.append(sum(s * p for s, p in zip(start, place)))
        firsts.append(sum(i * p for i, p in zip(inside, place)))
    shape = (*lead, *out)
    everywhere = (*(1,) * len(lead), *out)
    picked = b.reshape(b.index_select(_table(b, offsets, (size,)), 0, won), shape)
    corner = b.expand(_table(b, corners, everywhere), shape)
    positions = b.binary("add", picked, corner, int32)
    empty = b.binary("eq", values, b.expand(b.full((1,) * len(shape), -math.inf,
                                                   values.dtype), shape), bool_)
    first = b.expand(_table(b, firsts, everywhere), shape)
    return values, b.where(empty, first, positions)


def avg_pool(b: WasmBackend, x: WasmTensor, windows: tuple[tuple[tuple[int, int, int], ...], ...],
             divisor: int) -> WasmTensor:
    """The mean of each box over x's trailing ``len(windows)`` dims: box sums one dim at a
    time, then a division by the box's product of counts, or by a nonzero `divisor`."""
    nd = len(windows)
    lead = x.shape[:-nd]
    sizes = tuple(len(w) for w in windows)
    shape = (*lead, *sizes)
    summed = _boxes(b, x, tuple(tuple((start, stop) for start, stop, _ in w) for w in windows),
                    "sum")
    if not math.prod(shape):
        return summed
    if divisor:
        counts = b.full((1,) * len(shape), float(divisor), x.dtype)
    else:
        products = [float(math.prod(c for _, _, c in box))
                    for box in itertools.product(*windows)]
        counts = b.from_bytes(struct.pack(f"<{len(products)}f", *products),
                              (*(1,) * len(lead), *sizes), x.dtype)
    return b.binary("div", summed, b.expand(counts, shape), x.dtype)


def _boxes(b: WasmBackend, x: WasmTensor, windows: tuple[tuple[tuple[int, int], ...], ...],
           op: str) -> WasmTensor:
    """The sum or max (`op`) of float32 x over each box of its trailing ``len(windows)``
    dims, a box being one (start, stop) window of each, clipped to the input: one
    ``box_<op>_f32`` call a dim."""
    nd = len(windows)
    lead, spatial = x.shape[:-nd], x.shape[-nd:]
    shape = (*lead, *(len(w) for w in windows))
    if not math.prod(shape):
        return b.empty(shape, x.dtype)
    boxed = b.contiguous(x)
    for d, (rows, n) in enumerate(zip(windows, spatial)):
        axis = len(lead) + d
        bounds = []
        for start, stop in rows:
            lo = min(max(start, 0), n)
            bounds += [lo, max(min(stop, n), lo)]
        table = _table(b, bounds, (len(rows), 2))
        out = b.empty((*boxed.shape[:axis], len(rows), *boxed.shape[axis + 1:]), x.dtype)
        b.capability_kernel(f"box_{op}_f32")(out.address, boxed.address,
                                             math.prod(boxed.shape[:axis]), n,
                                             math.prod(boxed.shape[axis + 1:]), len(rows),
                                             table.address)
        boxed = out
    return boxed


#: per box kernel: the f32x4 instruction that takes in a row, and the lanes it starts from
#: (0 for a sum; -inf, as the bits of an i32, for a max)
_BOX_OPS = {"sum": ("f32x4.add", 0), "max": ("f32x4.max", -8388608)}


def _box_columns(width: int, op: str) -> str:
    """Columns $j.. of output $i of block $o, `width` at a time while `width` are left."""
    f = KINDS[float32]
    load, store = (f.load4, f.store4) if width == 4 else (f.load1, f.store1)
    take, start = _BOX_OPS[op]
    label = f"c{width}"
    return f"""
        block ${label}_done loop ${label}
          local.get $j i32.const {width} i32.add local.get $inner i32.gt_u br_if ${label}_done
          v128.const i32x4 {start} {start} {start} {start} local.set $acc
          local.get $x local.get $o local.get $length i32.mul local.get $start i32.add
          local.get $inner i32.mul local.get $j i32.add i32.const 2 i32.shl i32.add
          local.set $p
          local.get $stop local.get $start i32.sub local.set $l
          block ${label}_l_done loop ${label}_l
            local.get $l i32.const 0 i32.le_s br_if ${label}_l_done
            local.get $acc local.get $p {load} {take} local.set $acc
            local.get $p local.get $step i32.add local.set $p
            local.get $l i32.const 1 i32.sub local.set $l
            br ${label}_l
          end end
          local.get $out local.get $o local.get $count i32.mul local.get $i i32.add
          local.get $inner i32.mul local.get $j i32.add i32.const 2 i32.shl i32.add
          local.get $acc {store}
          local.get $j i32.const {width} i32.add local.set $j
          br ${label}
        end end"""


def kernels() -> list[Function]:
    """``box_sum_f32`` and ``box_max_f32``."""
    return [_box_kernel(op) for op in _BOX_OPS]


def _box_kernel(op: str) -> Function:
    body = f"""
    local.get $inner i32.const 2 i32.shl local.set $step
    i32.const 0 local.set $o
    block $outer_done loop $block
      local.get $o local.get $outer i32.ge_u br_if $outer_done
      i32.const 0 local.set $i
      block $windows_done loop $window
        local.get $i local.get $count i32.ge_u br_if $windows_done
        local.get $bounds local.get $i i32.const 3 i32.shl i32.add local.tee $p
        i32.load local.set $start
        local.get $p i32.load offset=4 local.set $stop
        i32.const 0 local.set $j
        {_box_columns(4, op)}
        {_box_columns(1, op)}
        local.get $i i32.const 1 i32.add local.set $i
        br $window
      end end
      local.get $o i32.const 1 i32.add local.set $o
      br $block
    end end"""
    params = tuple((name, "i32") for name in ("out", "x", "outer", "length", "inner",
                                              "count", "bounds"))
    local_vars = (*((name, "i32") for name in ("p", "o", "i", "j", "l", "start", "stop",
                                                "step")),
                  ("acc", "v128"))
    return Function(f"box_{op}_f32", params, body, locals=local_vars)
