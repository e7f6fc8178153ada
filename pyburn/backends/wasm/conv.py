"""The "conv" capability on wasm (``pyburn.ops.capability.CONV``): convolutions as a few
kernel calls, whatever their size: the input padded (a fill and a copy), its windows
gathered by one strided copy into columns, and one batched matmul per call.

The columns of a padded input xp (N, C, *S) are a view of it: for group g, channel c of the
group, kernel offset k and batch n, output position p reads ``xp[n, g*C/G + c,
p*stride + k*dilation]``, so the view (G, C/G, *K, N, *OUT) has strides (C/G * sC, sC,
dilation * sS, sN, stride * sS) and copying it makes the (G, C/G * K, N * OUT) matrix the
matmul kernel takes. The transposed convolution runs the same view backwards: the
product of the weights and the gradient is added into it (the float32 accumulating copy,
which handles overlapping windows in order).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..strided import slice_view

if TYPE_CHECKING:
    from .backend import WasmBackend, WasmTensor

Ints = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]


def _windows(xp: WasmTensor, kernel: Ints, stride: Ints, dilation: Ints, groups: int,
             out: Ints) -> WasmTensor:
    """The (G, C/G, *K, N, *OUT) view of contiguous `xp` whose elements are the windows."""
    n, c = xp.shape[:2]
    sn, sc, *ss = xp.strides
    shape = (groups, c // groups, *kernel, n, *out)
    strides = (c // groups * sc, sc, *(d * s for d, s in zip(dilation, ss)), sn,
               *(st * s for st, s in zip(stride, ss)))
    return xp.view(shape, strides, xp.offset)


def _grouped(b: WasmBackend, t: WasmTensor, groups: int) -> WasmTensor:
    """(N, O, *P) as the contiguous (G, O/G, N * P) matrices of its groups."""
    n, o = t.shape[:2]
    positions = math.prod(t.shape[2:])
    split = b.reshape(t, (n, groups, o // groups, positions))
    return b.reshape(b.contiguous(b.permute(split, (1, 2, 0, 3))),
                     (groups, o // groups, n * positions))


def _ungrouped(b: WasmBackend, y: WasmTensor, n: int, out: Ints) -> WasmTensor:
    """(G, O/G, N * P) back to the (N, O, *P) view."""
    groups, per = y.shape[:2]
    return b.permute(b.reshape(y, (groups * per, n, *out)), (1, 0, *range(2, 2 + len(out))))


def _out(size: Ints, kernel: Ints, stride: Ints, padding: Pads, dilation: Ints) -> Ints:
    return tuple((s + lo + hi - d * (k - 1) - 1) // st + 1
                 for s, k, st, (lo, hi), d in zip(size, kernel, stride, padding, dilation))


def _padded(b: WasmBackend, x: WasmTensor, padding: Pads) -> WasmTensor:
    return b.pad(b.contiguous(x), ((0, 0), (0, 0), *padding), 0.0)


def conv(b: WasmBackend, x: WasmTensor, w: WasmTensor, stride: Ints, padding: Pads,
         dilation: Ints, groups: int) -> WasmTensor:
    """x (N, C, *S) with w (O, C/G, *K): (N, O, *out)."""
    kernel = w.shape[2:]
    out = _out(x.shape[2:], kernel, stride, padding, dilation)
    xp = _padded(b, x, padding)
    columns = b.contiguous(_windows(xp, kernel, stride, dilation, groups, out))
    depth = w.shape[1] * math.prod(kernel)
    matrices = b.reshape(columns, (groups, depth, x.shape[0] * math.prod(out)))
    weights = b.reshape(b.contiguous(w), (groups, w.shape[0] // groups, depth))
    return _ungrouped(b, b.matmul(weights, matrices), x.shape[0], out)


def conv_weight(b: WasmBackend, x: WasmTensor, g: WasmTensor, kernel: Ints, stride: Ints,
                padding: Pads, dilation: Ints, groups: int) -> WasmTensor:
    """The weight gradient: x (N, C, *S) and g (N, O, *out) give (O, C/G, *kernel)."""
    out = g.shape[2:]
    xp = _padded(b, x, padding)
    columns = b.contiguous(_windows(xp, kernel, stride, dilation, groups, out))
    depth = x.shape[1] // groups * math.prod(kernel)
    matrices = b.reshape(columns, (groups, depth, x.shape[0] * math.prod(out)))
    across = b.contiguous(b.permute(matrices, (0, 2, 1)))  # (G, N * P, depth)
    product = b.matmul(_grouped(b, g, groups), across)  # (G, O/G, depth)
    return b.reshape(product, (g.shape[1], x.shape[1] // groups, *kernel))


def conv_transpose(b: WasmBackend, x: WasmTensor, w: WasmTensor, stride: Ints, padding: Ints,
                   dilation: Ints, groups: int, size: Ints) -> WasmTensor:
    """The adjoint of `conv` in its input: x (N, O, *m) gives (N, C, *size), the full
    result cut from offset `padding`."""
    n, kernel = x.shape[0], w.shape[2:]
    m = x.shape[2:]
    full = tuple((mi - 1) * st + d * (k - 1) + 1
                 for mi, st, d, k in zip(m, stride, dilation, kernel))
    reach = tuple(max(f, p + s) for f, p, s in zip(full, padding, size))
    channels = w.shape[1] * groups
    depth = w.shape[1] * math.prod(kernel)
    weights = b.reshape(b.contiguous(w), (groups, w.shape[0] // groups, depth))
    columns = b.matmul(b.contiguous(b.permute(weights, (0, 2, 1))), _grouped(b, x, groups))
    whole = b.full((n, channels, *reach), 0.0, x.dtype)
    b.accumulate(_windows(whole, kernel, stride, dilation, groups, m),
                 b.reshape(columns, (groups, w.shape[1], *kernel, n, *m)))
    return slice_view(whole, [0, 0, *padding], [n, channels, *(p + s for p, s in
                                                                 zip(padding, size))],
                      [1] * (2 + len(size)))
