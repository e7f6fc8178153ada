"""Compiled kernels for the cpu backend, through numba (the optional extra ``jit``).

numpy has no fast way to compute a depthwise convolution (``groups`` equal to the input's
channels, as in MobileNet and EfficientNet): `conv.conv` makes it an im2col copy and one
tiny matrix product per channel, several times slower than PyTorch. Here it is one loop
nest compiled by numba for each geometry (kernel size, stride and dilation are compile-time
constants, so the loop over the taps is unrolled and the loop over the outputs vectorised):

- each input channel is copied into a zeroed scratch of ``stride_h * stride_w`` phase planes,
  ``plane[ry, rx][i, j] = padded[i * stride_h + ry, j * stride_w + rx]``; the padding cells
  are never written, so they stay zero for every channel. In these planes every tap of the
  kernel reads a contiguous run at a fixed offset;
- each output channel is then one flat loop over the rows of outputs, ``out[p] = bias +
  sum over taps of weight[tap] * plane[offset(tap) + p]``, taken over whole plane rows (the
  few positions past the output's width are computed and dropped) so that even a 7x7 image
  runs as one long vectorised loop; the sum of each output stays in a register.

The same kernel (`grouped`) takes a convolution with a few input channels per group, the
number of them a compile-time constant too: a group's channels fill their planes side by
side and each output sums over all their taps. That is a network's stem on an RGB image
(3 x 3 x 3 taps, 16 or 32 outputs: twice as fast as im2col and BLAS, whose product is
thin, and without the columns' megabytes), taken where the input is large
(`grouped_applies`).

Small outputs are where planes lose (a 7x7 output of a 5x5 kernel computes 77 positions per
channel for 49, a few vectors and a scalar remainder; a stride-2 fill de-interleaves). A
depthwise convolution of many channels and few outputs, or of an input stored channels last,
runs channels last instead (`depthwise_last`): one vectorised pass over the channels per
output position, the input transposed to (N, H, W, C) storage first where needed, the
output left stored so (an (N, C, H, W) array with transposed strides, which numpy computes
on as on any other; `channels_last` tells them apart).

Max pooling (`max_pool`) is compiled per geometry too, a channel at a time: the channel is
copied into a padded plane (-inf in the padding), each output row's window rows are reduced
to one row of maxima (a vectorised loop over contiguous rows), then the taps across: one
flat loop over all the rows (the few positions past each row's width dropped, as above),
whose loads at the stride numba vectorises by de-interleaving. numpy's strided views take
two to four times as long, most of it in the padded copy and the scalar strided passes.

The im2col copy of every other 2-d convolution (`columns`, a row per input channel and
tap) is compiled too: numpy's version builds a padded copy and a view of the windows first,
which cost as much as the copy itself on a network's small layers.

The gradients, for training: in the input (`depthwise_transpose`, one output channel per
input channel) it is `grouped` again, of the output's gradient spread out by the stride,
with the kernel flipped; in the weight (`depthwise_weight`) one sum per tap over the same
phase planes. A few-channel convolution's gradients are im2col's.

Each output is the sum PyTorch computes, in this kernel's order (the bias, then the taps
channel by channel, row by row) and with fused multiply-adds: of numba's ``fastmath`` flags
only "contract" is on (and "reassoc" for the weight gradient's sums), so NaN and infinity
keep their IEEE meaning. float32 and float64 are compiled apart, on first use of each.

The numba code is in `numba_kernels`, imported on the first kernel a call asks for while the
kernels are enabled. Compiled code is cached on disk (numba's ``cache=True``, beside these
files or in numba's cache directory): the first call of a geometry in the first process
compiles for about a second, later processes load it in a fraction of that.
``PYBURN_CPU_JIT=0`` switches the kernels off (and numba is then never imported); then, or
when numba is not installed, the numpy code computes everything.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .numba_kernels import Kernels

#: the environment variable that switches the compiled kernels off when set to "0"
ENV = "PYBURN_CPU_JIT"


@functools.cache
def _numba_imports() -> bool:
    """Whether numba is installed (imported once, when a kernel is first asked for)."""
    try:
        import numba  # noqa: F401  (optional: numba, the extra "jit")
    except ImportError:
        return False
    return True


def enabled() -> bool:
    """Whether the compiled kernels run: numba imports and ``$PYBURN_CPU_JIT`` is not "0"
    (or "false", "off", "no", as ``$PYBURN_FUSION``). Read once, on the first call: the
    convolutions and activations ask on every call, and a read of the environment costs
    them about 0.8 µs each time (a test switches the kernels by replacing this function)."""
    global _state
    if _state is None:
        switch = os.environ.get(ENV, "1")
        _state = switch.strip().lower() not in ("0", "false", "off", "no") and _numba_imports()
    return _state


#: `enabled`'s answer once read
_state: bool | None = None


def depthwise_weight_applies(x: np.ndarray, g: np.ndarray, groups: int) -> bool:
    """Whether `depthwise_weight` computes the weight gradient of a convolution of x whose
    output's gradient is g: 2-d, one group per input channel, float32 or float64
    throughout, and the kernels enabled."""
    return (x.ndim == 4 and groups == x.shape[1] and x.dtype == g.dtype and
            x.dtype in (np.float32, np.float64) and enabled())


def depthwise_transpose_applies(x: np.ndarray, w: np.ndarray, groups: int) -> bool:
    """Whether `depthwise_transpose` computes this transposed convolution: 2-d, one input and
    one output channel per group, float32 or float64 throughout, and the kernels enabled."""
    return (x.ndim == 4 and groups == w.shape[0] == x.shape[1] and w.shape[1] == 1 and
            x.dtype == w.dtype and x.dtype in (np.float32, np.float64) and enabled())


def output_size(spatial: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
                padding: Sequence[tuple[int, int]], dilation: Sequence[int]) -> tuple[int, ...]:
    """The output's spatial dims of a window op (convolution, pooling) over `spatial`."""
    return tuple((z + b + a - d * (k - 1) - 1) // s + 1 for z, (b, a), d, k, s in
                 zip(spatial, padding, dilation, kernel, stride))


#: where `grouped` takes a convolution with more than one input channel per group: at most
#: this many input channels per group, taps per output (input channels times kernel cells)
#: and outputs per group (beyond them one BLAS product over the im2col columns is faster),
#: and at least this many input positions (below, the columns are small enough to be
#: cheap, and a network's small layers compile no kernel of their own)
FEW_CHANNELS, FEW_TAPS, FEW_OUTPUTS, MANY_POSITIONS = 4, 32, 32, 4096


def grouped_applies(x: np.ndarray, w: np.ndarray, groups: int,
                    bias: np.ndarray | None) -> bool:
    """Whether `grouped` computes this convolution of x with w: 2-d, float32 or float64
    throughout, the kernels enabled, and either depthwise (one group per input channel) or
    with few input channels per group (a stem's RGB) and a large input (`FEW_CHANNELS`)."""
    cin = w.shape[1]  # the cheapest test first: most convolutions fail it
    if not ((groups == x.shape[1] or cin <= FEW_CHANNELS) and x.ndim == 4
            and x.dtype == w.dtype and x.dtype in (np.float32, np.float64)
            and (bias is None or bias.dtype == x.dtype)):
        return False
    kh, kw = w.shape[2:]
    few = (cin <= FEW_CHANNELS and cin * kh * kw <= FEW_TAPS
           and w.shape[0] // groups <= FEW_OUTPUTS
           and x.shape[2] * x.shape[3] >= MANY_POSITIONS)
    return (groups == x.shape[1] or few) and enabled()


def grouped(x: np.ndarray, w: np.ndarray, stride: Sequence[int],
            padding: Sequence[tuple[int, int]], dilation: Sequence[int],
            bias: np.ndarray | None = None) -> np.ndarray:
    """Cross-correlation of x (N, C, H, W) with w (O, cin, kh, kw) in ``C / cin`` groups,
    the input channels g * cin to g * cin + cin - 1 giving the outputs g * O / groups to
    (g + 1) * O / groups - 1, plus `bias` (O,) when given; `padding` holds (before, after)
    zeros per spatial dim. Returns a new (N, O, H', W') array."""
    (kh, kw), (sh, sw), (dh, dw) = w.shape[2:], stride, dilation
    (top, _), (left, _) = padding
    out = np.empty((x.shape[0], w.shape[0], *output_size(x.shape[2:], (kh, kw), stride,
                                                         padding, dilation)), dtype=x.dtype)
    shift = np.zeros(w.shape[0], dtype=x.dtype) if bias is None else bias
    _kernels(kh, kw, sh, sw, dh, dw, w.shape[1]).forward(
        np.ascontiguousarray(x), np.ascontiguousarray(w), np.ascontiguousarray(shift), top,
        left, out)
    return out


def depthwise_transpose(x: np.ndarray, w: np.ndarray, stride: Sequence[int],
                        padding: Sequence[int], dilation: Sequence[int],
                        size: Sequence[int]) -> np.ndarray:
    """The adjoint of `depthwise` with one output channel per input channel, in its input
    (its gradient): x (N, C, *m) and w (C, 1, kh, kw) give (N, C, *size), the full transposed
    convolution cut to `size` from offset `padding`. That is `depthwise` itself, of x spread
    out by the stride (zeros between) and padded, with the kernel flipped."""
    spread = x
    if any(s > 1 for s in stride):
        spread = np.zeros(x.shape[:2] + tuple((m - 1) * s + 1 for m, s in
                                              zip(x.shape[2:], stride)), dtype=x.dtype)
        spread[:, :, ::stride[0], ::stride[1]] = x
    # out[i] = sum over k of spread[i + before + k * d] * w[K - 1 - k]: a padding that would
    # be negative (a cut) pads by zero instead and the cut is taken from the result
    pads, cuts = [], []
    for m, k, d, p, z in zip(spread.shape[2:], w.shape[2:], dilation, padding, size):
        before, after = d * (k - 1) - p, z - m + p
        pads.append((max(before, 0), max(after, 0)))
        cuts.append(slice(max(-before, 0), max(-before, 0) + z))
    y = grouped(spread, w[:, :, ::-1, ::-1], (1, 1), pads, dilation)
    return y[:, :, cuts[0], cuts[1]]


def depthwise_weight(x: np.ndarray, g: np.ndarray, kernel: Sequence[int],
                     stride: Sequence[int], padding: Sequence[tuple[int, int]],
                     dilation: Sequence[int]) -> np.ndarray:
    """The gradient of `depthwise` in its weight: x (N, C, H, W) and the output's gradient g
    (N, C * m, H', W') give (C * m, 1, *kernel), each tap's products with g summed."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    grad = np.empty((g.shape[1], 1, kh, kw), dtype=x.dtype)
    _kernels(kh, kw, sh, sw, dh, dw, 1).weight(
        np.ascontiguousarray(x), np.ascontiguousarray(g), padding[0][0], padding[1][0], grad)
    return grad


def channels_last(x: np.ndarray) -> bool:
    """Whether 4-d x (N, C, H, W) is stored channels last: its (N, H, W, C) transpose is
    the contiguous one (and it, with more than one channel and position, is not)."""
    return (x.ndim == 4 and not x.flags.c_contiguous
            and x.transpose(0, 2, 3, 1).flags.c_contiguous)


#: where `depthwise_last` takes a depthwise convolution of x stored (N, C, H, W): at least
#: this many channels and at most this many output positions (a 7x7 image: each plane is
#: then a few vectors wide, and the transpose costs less than the planes' waste)
LAST_CHANNELS, FEW_OUTPUTS_LAST = 64, 64


def depthwise_last_applies(x: np.ndarray, w: np.ndarray, stride: Sequence[int], groups: int,
                           bias: np.ndarray | None) -> bool:
    """Whether `depthwise_last` computes this convolution of x with w: 2-d, one output
    channel per input channel (groups = C = O), float32 or float64 throughout, the kernels
    enabled, and x either stored channels last or with many channels and a small output
    (`LAST_CHANNELS`)."""
    if not (groups == x.shape[1] == w.shape[0] and x.ndim == 4 and w.shape[1] == 1
            and x.dtype == w.dtype and x.dtype in (np.float32, np.float64)
            and (bias is None or bias.dtype == x.dtype) and enabled()):
        return False
    return channels_last(x) or (x.shape[1] >= LAST_CHANNELS and x.shape[2] * x.shape[3]
                                <= FEW_OUTPUTS_LAST * stride[0] * stride[1])


def depthwise_last(x: np.ndarray, w: np.ndarray, stride: Sequence[int],
                   padding: Sequence[tuple[int, int]], dilation: Sequence[int],
                   bias: np.ndarray | None = None) -> np.ndarray:
    """The depthwise convolution of `grouped` computed channels last (x transposed to
    (N, H, W, C) storage first where it is not stored so), vectorised over the channels:
    each output is the bias plus its taps row by row, the taps in the padding left out.
    Returns (N, C, H', W') stored channels last."""
    (kh, kw), (sh, sw), (dh, dw) = w.shape[2:], stride, dilation
    (top, _), (left, _) = padding
    n, c = x.shape[:2]
    out = np.empty((n, *output_size(x.shape[2:], (kh, kw), stride, padding, dilation), c),
                   dtype=x.dtype)
    shift = np.zeros(c, dtype=x.dtype) if bias is None else bias
    taps = np.ascontiguousarray(w[:, 0].transpose(1, 2, 0))  # (kh, kw, C)
    _kernels(kh, kw, sh, sw, dh, dw, 1).channels_last(
        np.ascontiguousarray(x.transpose(0, 2, 3, 1)), taps, np.ascontiguousarray(shift),
        top, left, out)
    return out.transpose(0, 3, 1, 2)


def max_pool_applies(x: np.ndarray, kernel: Sequence[int], indices: bool) -> bool:
    """Whether `max_pool` computes this max pooling of x: 2-d, float32 or float64, without
    the positions of the maxima, and the kernels enabled."""
    return (not indices and len(kernel) == 2 and x.ndim == 4
            and x.dtype in (np.float32, np.float64) and enabled())


def max_pool(x: np.ndarray, kernel: Sequence[int], stride: Sequence[int],
             padding: Sequence[tuple[int, int]], dilation: Sequence[int]) -> np.ndarray:
    """The max over the windows of x (N, C, H, W), the padding's cells not counted (a
    window wholly in the padding gives -inf) and NaN propagated. Returns (N, C, H', W')."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    out = np.empty(x.shape[:2] + output_size(x.shape[2:], kernel, stride, padding, dilation),
                   dtype=x.dtype)
    _kernels(kh, kw, sh, sw, dh, dw, 1).max_pool(x, padding[0][0], padding[1][0], out)
    return out


def columns_applies(x: np.ndarray, kernel: Sequence[int]) -> bool:
    """Whether `columns` makes the im2col columns of x: 2-d, float32 or float64, and the
    kernels enabled."""
    return len(kernel) == 2 and x.ndim == 4 and x.dtype in (np.float32, np.float64) \
        and enabled()


def columns(x: np.ndarray, kernel: Sequence[int], stride: Sequence[int],
            padding: Sequence[tuple[int, int]], dilation: Sequence[int], a: int, b: int,
            out: Sequence[int]) -> np.ndarray:
    """The im2col columns of images a to b of x (N, C, H, W) for an output of `out`
    (H', W') positions: (C * kh * kw, (b - a) * H' * W'), row ``(c * kh + ky) * kw + kx``
    holding the inputs tap (ky, kx) of channel c meets, zero in the padding."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    cols = np.empty((x.shape[1] * kh * kw, (b - a) * out[0] * out[1]), dtype=x.dtype)
    _kernels(kh, kw, sh, sw, dh, dw, 1).columns(x, padding[0][0], padding[1][0], a, b,
                                                 out[0], out[1], cols)
    return cols


@functools.cache
def _kernels(kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, cin: int) -> Kernels:
    """The kernels of one geometry, compiled (or loaded from numba's cache) on first use."""
    from .numba_kernels import compile_kernels  # optional: numba, the extra "jit"

    return compile_kernels(kh, kw, sh, sw, dh, dw, cin)
