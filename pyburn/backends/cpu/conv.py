"""Convolution and max pooling in numpy: the cpu backend's "conv" and "max_pool" capabilities.

The tensor layer's composites (``pyburn.nn.functional``) build these from primitives: a
slice per kernel offset stacked into columns, then a batched matmul with one small product
per image. Here each is one im2col copy and one large matrix product, in the layout that
keeps both fast:

- the columns are laid out ``(groups, C/groups * K, N * P)`` (K kernel offsets, P output
  positions), so the product with the weight is one BLAS call per group over the whole
  batch, and the copy reads the input along its contiguous last dim;
- the result comes out as ``(C_out, N, *out)`` and is returned as a transposed view
  ``(N, C_out, *out)``: handles may be views, and whoever reads it next (an elementwise op,
  the next layer's im2col, `to_bytes`) reads either layout at the same speed.

The gradients are the same two products turned around (`conv_weight`, and `conv_transpose`
with a col2im of one strided add per kernel offset), so a training step is three large
products per layer, as in PyTorch. Spatial dims may be 1, 2 or 3; float16 is computed in
float32.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

Ints = Sequence[int]
Pads = Sequence[tuple[int, int]]


def _computed(a: np.ndarray) -> np.ndarray:
    """float16 goes through float32 (as in matmul): faster, and accumulates in more bits."""
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _padded(x: np.ndarray, padding: Pads, fill: float | int = 0) -> np.ndarray:
    """x with its trailing ``len(padding)`` dims padded by (before, after) pairs."""
    if not any(b or a for b, a in padding):
        return x
    lead = x.ndim - len(padding)
    shape = x.shape[:lead] + tuple(n + b + a for n, (b, a) in zip(x.shape[lead:], padding))
    out = np.full(shape, fill, dtype=x.dtype)
    out[(Ellipsis, *(slice(b, b + n) for n, (b, _) in zip(x.shape[lead:], padding)))] = x
    return out


def _windows(xp: np.ndarray, kernel: Ints, stride: Ints, dilation: Ints) -> np.ndarray:
    """A view ``(..., *out, *kernel)`` of the padded input's windows over its trailing dims."""
    nd = len(kernel)
    spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    view = sliding_window_view(xp, spans, axis=tuple(range(xp.ndim - nd, xp.ndim)))
    return view[(Ellipsis, *(slice(None, None, s) for s in stride),
                 *(slice(None, None, d) for d in dilation))]


def _columns(x: np.ndarray, kernel: Ints, stride: Ints, padding: Pads, dilation: Ints,
             groups: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """im2col: ``(groups, C/groups * K, N * P)`` and the output's spatial sizes."""
    nd = len(kernel)
    n, c = x.shape[:2]
    view = _windows(_padded(x, padding), kernel, stride, dilation)  # (N, C, *out, *kernel)
    out = view.shape[2:2 + nd]
    view = view.reshape((n, groups, c // groups) + view.shape[2:])
    order = (1, 2, *range(3 + nd, 3 + 2 * nd), 0, *range(3, 3 + nd))
    cols = view.transpose(order).reshape(groups, (c // groups) * math.prod(kernel),
                                         n * math.prod(out))
    return cols, out


def _by_group(y: np.ndarray, groups: int) -> np.ndarray:
    """``(N, C, *out) -> (groups, C/groups, N * P)``: channels first, batch and positions
    flattened (a view when y is already stored channels first, as `conv` returns it)."""
    n, c = y.shape[:2]
    y = y.reshape((n, groups, c // groups, -1))
    return y.transpose(1, 2, 0, 3).reshape(groups, c // groups, -1)


def conv(x: np.ndarray, w: np.ndarray, stride: Ints, padding: Pads, dilation: Ints,
         groups: int) -> np.ndarray:
    """Cross-correlation of x (N, C, *S) with w (O, C/groups, *K); `padding` holds
    (before, after) zeros per spatial dim. Returns (N, O, *out)."""
    dtype = x.dtype
    x, w = _computed(x), _computed(w)
    o = w.shape[0]
    cols, out = _columns(x, w.shape[2:], stride, padding, dilation, groups)
    y = np.matmul(w.reshape(groups, o // groups, -1), cols)  # (G, O/G, N * P)
    y = y.reshape((o, x.shape[0]) + out).swapaxes(0, 1)
    return y.astype(dtype, copy=False)


def conv_weight(x: np.ndarray, g: np.ndarray, kernel: Ints, stride: Ints, padding: Pads,
                dilation: Ints, groups: int) -> np.ndarray:
    """The gradient of `conv` with respect to its weight: x (N, C, *S) and the output's
    gradient g (N, O, *out) give (O, C/groups, *kernel)."""
    dtype = g.dtype
    x, g = _computed(x), _computed(g)
    cols, _ = _columns(x, kernel, stride, padding, dilation, groups)
    dw = np.matmul(_by_group(g, groups), cols.swapaxes(1, 2))  # (G, O/G, C/G * K)
    return dw.reshape((g.shape[1], x.shape[1] // groups) + tuple(kernel)).astype(dtype,
                                                                                   copy=False)


def conv_transpose(x: np.ndarray, w: np.ndarray, stride: Ints, padding: Ints, dilation: Ints,
                   groups: int, size: Ints) -> np.ndarray:
    """The adjoint of `conv` in its input: x (N, O, *m) and w (O, C/groups, *K) give
    (N, C, *size), the full transposed convolution cut to `size` from offset `padding`
    (and zero where `size` reaches past it)."""
    dtype = x.dtype
    x, w = _computed(x), _computed(w)
    kernel = w.shape[2:]
    n, m = x.shape[0], x.shape[2:]
    o, c = w.shape[0], w.shape[1] * groups
    wg = w.reshape(groups, o // groups, -1)
    cols = np.matmul(wg.swapaxes(1, 2), _by_group(x, groups))  # (G, C/G * K, N * P)
    cols = cols.reshape((c,) + tuple(kernel) + (n,) + tuple(m))
    full = [(j - 1) * s + d * (k - 1) + 1 for j, s, d, k in zip(m, stride, dilation, kernel)]
    extent = [max(f, p + z) for f, p, z in zip(full, padding, size)]
    image = np.zeros((c, n) + tuple(extent), dtype=cols.dtype)
    # col2im: one strided add per kernel offset
    for offset in itertools.product(*(range(k) for k in kernel)):
        at = tuple(slice(j * d, j * d + (q - 1) * s + 1, s)
                   for j, d, q, s in zip(offset, dilation, m, stride))
        image[(slice(None), slice(None)) + at] += cols[(slice(None),) + offset]
    image = image[(slice(None), slice(None)) + tuple(slice(p, p + z)
                                                     for p, z in zip(padding, size))]
    return image.swapaxes(0, 1).astype(dtype, copy=False)


def max_pool(x: np.ndarray, kernel: Ints, stride: Ints, padding: Pads,
             dilation: Ints) -> tuple[np.ndarray, np.ndarray]:
    """Max over windows of the trailing ``len(kernel)`` dims of x, padded with -inf: the
    values and the int32 flat position of each max within the (unpadded) trailing dims.
    The first max wins, and NaN counts as the largest; a window whose elements are all
    -inf names its first element inside the input, as PyTorch does."""
    nd = len(kernel)
    spatial = x.shape[x.ndim - nd:]
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    view = _windows(_padded(x, padding, fill), kernel, stride, dilation)
    out = view.shape[x.ndim - nd:x.ndim]
    flat = view.reshape(view.shape[:x.ndim] + (-1,))  # one copy: (..., *out, K)
    best = np.argmax(flat, axis=-1)
    values = np.take_along_axis(flat, best[..., None], axis=-1)[..., 0]
    # the winner's position along each spatial dim, from its kernel offset
    position = np.zeros(best.shape, dtype=np.int64)
    rest = best
    for i in reversed(range(nd)):
        offset = rest % kernel[i]
        rest = rest // kernel[i]
        start = (np.arange(out[i]) * stride[i] - padding[i][0]).reshape(
            (-1,) + (1,) * (nd - 1 - i))
        at = start + offset * dilation[i]
        # a max in the padding (all -inf): the window's first element inside the input
        at = np.where(at < 0, at + (-at + dilation[i] - 1) // dilation[i] * dilation[i], at)
        position += at * math.prod(spatial[i + 1:])
    return values, position.astype(np.int32)
