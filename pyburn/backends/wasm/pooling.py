"""The "max_pool" capability on wasm (``pyburn.ops.capability.MAX_POOL``): the input padded
with -inf, its windows copied by one strided copy into rows of ``prod(kernel)``, then one
max reduction, and for the positions one argmax (the first max, NaN the largest, as the
kernel has it).

A window's position is the data's part (which offset of the window won, an argmax) plus
two tables that depend only on the geometry, uploaded with the call: each output
position's first element in the unpadded input (``base``) and each window offset's
distance from it (``offsets``). A window of nothing but -inf names its first element
inside the input, as PyTorch does (``first``): its argmax may have landed in the padding.
"""

from __future__ import annotations

import itertools
import math
import struct
from typing import TYPE_CHECKING

from ...dtypes import bool_, int32

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
