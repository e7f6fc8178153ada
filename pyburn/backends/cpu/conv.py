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

import functools
import itertools
import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from . import jit
from .activations import apply_in_place

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


# Work goes a chunk of images at a time, each chunk's columns about CHUNK_BYTES. A whole
# batch's columns can be tens of megabytes, and glibc maps every block over 32 MiB afresh from
# the kernel, so each call would pay a page fault per 4 KiB (measured here: longer than the
# product itself); blocks below that size are reused from the heap, and are still wide
# enough for the products to run at full speed.
CHUNK_BYTES = 1 << 23


def _chunks(n: int, per_image: int) -> list[tuple[int, int]]:
    """(start, stop) of consecutive chunks of n images of `per_image` bytes each."""
    step = max(1, CHUNK_BYTES // max(per_image, 1))
    return [(a, min(a + step, n)) for a in range(0, n, step)]


class _Columns:
    """im2col of x (N, C, *S), a chunk of images at a time: a chunk's columns are
    ``(groups, C/groups * K, images * P)``, whole images, so that a product with them is
    one large BLAS call per group."""

    def __init__(self, x: np.ndarray, kernel: Ints, stride: Ints, padding: Pads,
                 dilation: Ints, groups: int):
        n, c = x.shape[:2]
        self.out = jit.output_size(x.shape[2:], kernel, stride, padding, dilation)
        self.positions = math.prod(self.out)
        self.rows = (c // groups) * math.prod(kernel)
        self.groups = groups
        self.chunks = _chunks(n, c * math.prod(kernel) * self.positions * x.itemsize)
        self.compiled = (x, kernel, stride, padding, dilation) \
            if jit.columns_applies(x, kernel) else None
        if self.compiled is None:
            view = _windows(_padded(x, padding), kernel, stride, dilation)  # (N, C, *out, *K)
            self.view = view.reshape((n, groups, c // groups) + view.shape[2:])

    def __call__(self, a: int, b: int) -> np.ndarray:
        """The columns of images a to b (one copy)."""
        if self.compiled is not None:
            return jit.columns(*self.compiled, a, b, self.out).reshape(
                self.groups, self.rows, (b - a) * self.positions)
        nd = len(self.out)
        order = (1, 2, *range(3 + nd, 3 + 2 * nd), 0, *range(3, 3 + nd))
        return self.view[a:b].transpose(order).reshape(self.groups, self.rows,
                                                       (b - a) * self.positions)


def _by_group(y: np.ndarray, groups: int) -> np.ndarray:
    """``(N, C, *out) -> (groups, C/groups, N * P)``: channels first, batch and positions
    flattened (a view when y is already stored channels first, as `conv` returns it)."""
    n, c = y.shape[:2]
    p = math.prod(y.shape[2:])
    y = y.reshape((n, groups, c // groups, p))
    return y.transpose(1, 2, 0, 3).reshape(groups, c // groups, n * p)


def conv(x: np.ndarray, w: np.ndarray, stride: Ints, padding: Pads, dilation: Ints,
         groups: int, bias: np.ndarray | None = None,
         activation: tuple | None = None) -> np.ndarray:
    """Cross-correlation of x (N, C, *S) with w (O, C/groups, *K), plus `bias` (O,) per
    output channel when given, then `activation` when given (``("clip", lo, hi)`` or a
    name of `activations.activation`, written over the fresh output: see
    `activations.apply_in_place`); `padding` holds (before, after) zeros per spatial dim.
    Returns (N, O, *out). A 2-d depthwise convolution (one group per input channel) runs
    compiled when numba is installed (channels last, `jit.depthwise_last`, for many channels
    and a small output or an input stored so: its output is stored channels last too), and
    so does one with few input channels per group and a large input, such as a network's
    stem on RGB (`jit.grouped`)."""
    if jit.depthwise_last_applies(x, w, stride, groups, bias):
        return _activated(jit.depthwise_last(x, w, stride, padding, dilation, bias),
                          activation)
    if jit.grouped_applies(x, w, groups, bias):
        return _activated(jit.grouped(x, w, stride, padding, dilation, bias), activation)
    dtype = x.dtype
    x, w = _computed(x), _computed(w)
    n, o = x.shape[0], w.shape[0]
    nd = w.ndim - 2  # tuples compared whole: a third of the time of tests element by element
    if groups == 1 and w.shape[2:] == (1,) * nd and tuple(stride) == (1,) * nd \
            and tuple(padding) == ((0, 0),) * nd:
        return _pointwise(x, w, bias, dtype, activation)
    cols = _Columns(x, w.shape[2:], stride, padding, dilation, groups)
    wg = w.reshape(groups, o // groups, math.prod(w.shape[1:]))
    p = cols.positions
    y = np.empty((groups, o // groups, n * p), dtype=np.result_type(x, w))
    # The bias joins each chunk's product while that is still in cache, rather than in a
    # pass of its own over the whole output. It is one `out + bias` per element either way,
    # in the output's dtype, so the numbers are those of a separate add: float16 therefore
    # adds after its product is rounded to float16, as a separate add would.
    early = bias is not None and y.dtype == dtype
    shift = bias.reshape(groups, o // groups, 1) if early else None
    for a, b in cols.chunks:
        part = y[:, :, a * p:b * p]
        np.matmul(wg, cols(a, b), out=part)
        if early:
            part += shift
    if y.dtype == dtype:  # the activation on the contiguous product, before the transpose
        return _activated(y, activation).reshape((o, n) + cols.out).swapaxes(0, 1)
    out = y.reshape((o, n) + cols.out).swapaxes(0, 1).astype(dtype)
    if bias is not None:
        out += bias.reshape((o,) + (1,) * len(cols.out))
    return _activated(out, activation)


def _activated(y: np.ndarray, activation: tuple | None) -> np.ndarray:
    """y, or its `activation` (over y where it can be)."""
    return y if activation is None else apply_in_place(y, activation)


def _pointwise(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, dtype: np.dtype,
               activation: tuple | None) -> np.ndarray:
    """A 1x1 convolution with stride 1, no padding and one group: the input's positions
    are its columns already, so it is one product per image, ``w (O, C) @ x[i] (C, P)``, with
    no im2col (whose window views cost more than the product on small images); the bias is
    added as `conv` adds it (before the rounding to `dtype` only where nothing is rounded),
    in the activation's pass over the product where that pass is written in place.

    x may be stored channels last (the output of `jit.depthwise_last`): BLAS reads it as it
    lies, transposed, and the output is stored (N, O, P) all the same."""
    n, c = x.shape[:2]
    o = w.shape[0]
    spatial = x.shape[2:]
    w2 = w.reshape(o, c)
    columns = x.transpose(0, 2, 3, 1).reshape(n, -1, c).transpose(0, 2, 1) \
        if jit.channels_last(x) else x.reshape(n, c, -1)  # (N, C, P), a view either way
    y = np.matmul(w2, columns).reshape((n, o) + spatial)
    if y.dtype == dtype:
        return y if activation is None and bias is None else apply_in_place(
            y, activation, bias)
    out = y.astype(dtype)
    if bias is not None:
        out += bias.reshape((o,) + (1,) * (x.ndim - 2))
    return _activated(out, activation)


def conv_weight(x: np.ndarray, g: np.ndarray, kernel: Ints, stride: Ints, padding: Pads,
                dilation: Ints, groups: int) -> np.ndarray:
    """The gradient of `conv` with respect to its weight: x (N, C, *S) and the output's
    gradient g (N, O, *out) give (O, C/groups, *kernel). A 2-d depthwise one runs compiled
    when numba is installed (`jit.depthwise_weight`)."""
    if jit.depthwise_weight_applies(x, g, groups):
        return jit.depthwise_weight(x, g, kernel, stride, padding, dilation)
    dtype = g.dtype
    x, g = _computed(x), _computed(g)
    cols = _Columns(x, kernel, stride, padding, dilation, groups)
    gg = _by_group(g, groups)  # (G, O/G, N * P)
    p = cols.positions
    dw = np.zeros((groups, gg.shape[1], cols.rows), dtype=np.result_type(x, g))
    for a, b in cols.chunks:
        dw += np.matmul(gg[:, :, a * p:b * p], cols(a, b).swapaxes(1, 2))
    shape = (g.shape[1], x.shape[1] // groups) + tuple(kernel)
    return dw.reshape(shape).astype(dtype, copy=False)


def conv_transpose(x: np.ndarray, w: np.ndarray, stride: Ints, padding: Ints, dilation: Ints,
                   groups: int, size: Ints) -> np.ndarray:
    """The adjoint of `conv` in its input: x (N, O, *m) and w (O, C/groups, *K) give
    (N, C, *size), the full transposed convolution cut to `size` from offset `padding`
    (and zero where `size` reaches past it). A 2-d depthwise one (one input and one output
    channel per group) runs compiled when numba is installed (`jit.depthwise_transpose`)."""
    if jit.depthwise_transpose_applies(x, w, groups):
        return jit.depthwise_transpose(x, w, stride, padding, dilation, size)
    dtype = x.dtype
    x, w = _computed(x), _computed(w)
    kernel = w.shape[2:]
    n, m = x.shape[0], x.shape[2:]
    o, c = w.shape[0], w.shape[1] * groups
    positions = math.prod(m)
    wt = w.reshape(groups, o // groups, math.prod(w.shape[1:])).swapaxes(1, 2)  # (G, C/G K, O/G)
    gg = _by_group(x, groups)  # (G, O/G, N * P)
    full = [(j - 1) * s + d * (k - 1) + 1 for j, s, d, k in zip(m, stride, dilation, kernel)]
    extent = [max(f, p + z) for f, p, z in zip(full, padding, size)]
    image = np.zeros((c, n) + tuple(extent), dtype=np.result_type(x, w))
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    places = [tuple(slice(j * d, j * d + (q - 1) * s + 1, s)
                    for j, d, q, s in zip(offset, dilation, m, stride)) for offset in offsets]
    for a, b in _chunks(n, c * math.prod(kernel) * positions * image.itemsize):
        cols = np.matmul(wt, gg[:, :, a * positions:b * positions])
        cols = cols.reshape((c,) + tuple(kernel) + (b - a,) + tuple(m))
        for offset, at in zip(offsets, places):  # col2im: one strided add per kernel offset
            image[(slice(None), slice(a, b)) + at] += cols[(slice(None),) + offset]
    image = image[(slice(None), slice(None)) + tuple(slice(p, p + z)
                                                     for p, z in zip(padding, size))]
    return image.swapaxes(0, 1).astype(dtype, copy=False)


def _box_max(xp: np.ndarray, kernel: Ints, stride: Ints, dilation: Ints) -> np.ndarray:
    """The maxima of padded `xp`'s windows, one trailing dim at a time (the max of a box is
    the max over each dim in turn): k - 1 running `np.maximum`s per dim on strided views,
    in place, instead of prod(kernel) - 1 over whole windows."""
    nd = len(kernel)
    out = [(n - d * (k - 1) - 1) // s + 1
           for n, k, s, d in zip(xp.shape[xp.ndim - nd:], kernel, stride, dilation)]
    y = xp
    for i, (k, s, d, o) in enumerate(zip(kernel, stride, dilation, out)):
        axis = y.ndim - nd + i
        taps = []
        for j in range(k):
            index = [slice(None)] * y.ndim
            index[axis] = slice(j * d, j * d + s * (o - 1) + 1, s)
            taps.append(y[tuple(index)])
        y = np.maximum(taps[0], taps[1]) if k > 1 else taps[0].copy()
        for tap in taps[2:]:
            np.maximum(y, tap, out=y)
    return y


def max_pool(x: np.ndarray, kernel: Ints, stride: Ints, padding: Pads, dilation: Ints,
             indices: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Max over windows of the trailing ``len(kernel)`` dims of float x, padded with -inf:
    the values and, if `indices` (else None), the int32 flat position of each max within
    the (unpadded) trailing dims. The first max wins, and NaN counts as the largest; a
    window whose elements are all -inf names its first element inside the input, as
    PyTorch does.

    Everything is arithmetic on strided views, one per kernel offset: a running
    `np.maximum` (which propagates NaN) for the values, then the first offset that holds
    each max. No copy of the windows is made, and no masked assignment (`np.where`,
    `copyto(where=)`): on unpredictable masks those run ten times slower than arithmetic.
    The values alone of a 2-d pooling run compiled when numba is installed
    (`jit.max_pool`)."""
    if jit.max_pool_applies(x, kernel, indices):
        return jit.max_pool(x, kernel, stride, padding, dilation), None
    nd = len(kernel)
    spatial = x.shape[x.ndim - nd:]
    padded = _padded(x, padding, -np.inf)
    if not indices:
        return _box_max(padded, kernel, stride, dilation), None
    view = _windows(padded, kernel, stride, dilation)
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    pieces = [view[(Ellipsis, *offset)] for offset in offsets]
    values = functools.reduce(np.maximum, pieces)
    best = np.zeros(values.shape, dtype=np.int8 if len(offsets) < 128 else np.int32)
    has_nan = bool(np.isnan(np.max(x))) if x.size else False  # max propagates NaN
    for k in reversed(range(len(pieces))):  # the lowest offset that holds the max stays
        hit = pieces[k] == values
        if has_nan:
            hit |= np.isnan(pieces[k])
        best += (k - best) * hit
    out = values.shape[x.ndim - nd:]
    position = np.zeros(values.shape, dtype=np.int32)
    for i in range(nd):
        start = (np.arange(out[i], dtype=np.int32) * stride[i] - padding[i][0]).reshape(
            (-1,) + (1,) * (nd - 1 - i))
        at = start + np.array([offset[i] * dilation[i] for offset in offsets],
                              dtype=np.int32)[best]
        if padding[i][0]:  # a max in the padding (all -inf): the first element inside
            at = np.where(at < 0, at + (-at + dilation[i] - 1) // dilation[i] * dilation[i],
                          at)
        position += at * math.prod(spatial[i + 1:])
    return values, position
