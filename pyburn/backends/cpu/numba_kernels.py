"""The numba kernels of `jit` (the cpu backend's compiled convolutions and pooling): imported
only by `jit`, when numba is there and $PYBURN_CPU_JIT does not say no. See `jit` for what
they compute and how."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numba import njit


# inlined into each kernel (at numba's level, so that sh and sw are the kernel's constants
# there): a call per channel costs about 5% on 7x7 images
@njit(inline="always")
def fill_planes(x: np.ndarray, n: int, c: int, top: int, left: int, sh: int, sw: int,
                hq: int, wq: int, flat: np.ndarray) -> None:
    """Copy x[n, c] into the phase planes held by `flat` (sh * sw planes of hq x wq):
    ``plane[ry, rx][i, j] = padded[i * sh + ry, j * sw + rx]``; the cells of the padding
    are left as they are (zero)."""
    height, width = x.shape[2], x.shape[3]
    size = hq * wq
    first = -(-left // sw)  # plane columns [first, last) have every phase in the input
    last = min(wq, (width + left) // sw)
    for i in range(height):
        qy = (i + top) // sh
        if qy >= hq:
            break
        src = x[n, c, i]
        base = (i + top) % sh * sw * size + qy * wq
        if sw == 1:  # one phase per row: a plain copy of the row, which vectorises (the
            # indexed form below does not: a 112-wide depthwise layer spent 40% there)
            into = flat[base + first:base + last]
            for j in range(last - first):
                into[j] = src[j]
            continue  # no column of a one-phase row reaches into the padding
        if sw == 2 and last > first:  # two phases: a de-interleave into two plane rows,
            # which vectorises (the indexed form below does not: 20% of a stride-2 layer;
            # one strided loop per phase for every stride was measured 1.6x slower overall)
            inner = src[first * 2 - left:]
            even = flat[base + first:base + last]
            odd = flat[base + size + first:base + size + last]
            for j in range(last - first):
                even[j] = inner[2 * j]
                odd[j] = inner[2 * j + 1]
        elif last > first:  # unsigned indices: numba adds no wraparound test
            inner = src[first * sw - left:]
            start = np.uint64(base + first)
            for j in range(np.uint64(last - first)):
                for rx in range(sw):
                    flat[start + np.uint64(rx * size) + j] = inner[j * np.uint64(sw) +
                                                                   np.uint64(rx)]
        for edge in range(2):  # the columns partly in the padding
            j0 = 0 if edge == 0 else max(first, last)
            j1 = min(first, wq) if edge == 0 else wq
            for j in range(j0, j1):
                for rx in range(sw):
                    col = j * sw + rx - left
                    if 0 <= col < width:
                        flat[base + rx * size + j] = src[col]


@njit(inline="always")
def greater(m: float, v: float) -> float:
    """The larger of m and v, NaN where v is NaN or m is (as `np.maximum`): two selects,
    which vectorise."""
    larger = v if v > m else m
    return v if v != v else larger


#: the max pool's loops run to a multiple of this many elements, reading and writing into
#: scratch past the row: the scalar remainder after a vectorised loop compiles its selects
#: to branches, which mispredict on data (a 13-wide row ran at 7 ns an output)
POOL_BLOCK = 64


class Kernels(NamedTuple):
    """The compiled kernels of one geometry."""

    #: ``forward(x, w, bias, top, left, out)`` fills `out` (N, O, H', W'), whose shape says
    #: where the padding after the input ends: the groups are ``C / cin``, each giving
    #: ``O / groups`` outputs
    forward: Callable[..., None]
    #: ``weight(x, g, top, left, grad)`` fills `grad` (C * m, 1, kh, kw) (`cin` 1 only: a
    #: depthwise convolution's)
    weight: Callable[..., None]
    #: ``channels_last(x, w, bias, top, left, out)``: the depthwise convolution of x stored
    #: (N, H, W, C) with w (kh, kw, C) into `out` (N, H', W', C) (`cin` 1 only)
    channels_last: Callable[..., None]
    #: ``max_pool(x, top, left, out)``: the max over the windows of x (N, C, H, W) into
    #: `out` (N, C, H', W'), cells of the padding not counted
    max_pool: Callable[..., None]
    #: ``columns(x, top, left, a, b, oh, ow, cols)``: im2col of images a to b of x
    #: (N, C, H, W) into `cols` (C * kh * kw, (b - a) * oh * ow), zeros for the padding
    columns: Callable[..., None]


def compile_kernels(kh: int, kw: int, sh: int, sw: int, dh: int, dw: int,
                    cin: int) -> Kernels:
    """The kernels of one geometry (kernel size, stride, dilation and `cin`, the input
    channels per group: constants of the compiled code), compiled on their first call or
    loaded from numba's cache, which keys each of these closures by the seven values."""

    @njit(cache=True, nogil=True, fastmath={"contract"})
    def forward(x: np.ndarray, w: np.ndarray, bias: np.ndarray, top: int, left: int,
                out: np.ndarray) -> None:
        groups = x.shape[1] // cin
        per_group = w.shape[0] // groups
        oh, ow = out.shape[2], out.shape[3]
        hq, wq = oh + (kh - 1) * dh // sh, ow + (kw - 1) * dw // sw
        size = hq * wq
        # one input channel's planes; + wq: the flat loop's last row reads up to wq - ow
        # cells past its last plane
        channel = sh * sw * size + wq
        flat = np.zeros(cin * channel, dtype=x.dtype)
        acc = np.empty(oh * wq, dtype=out.dtype)
        for n in range(x.shape[0]):
            for g in range(groups):
                for ci in range(cin):
                    fill_planes(x, n, g * cin + ci, top, left, sh, sw, hq, wq,
                                flat[ci * channel:])
                for o in range(g * per_group, g * per_group + per_group):
                    b = bias[o]
                    for p in range(np.uint64(oh * wq)):
                        total = b
                        for ci in range(cin):
                            for ky in range(kh):
                                for kx in range(kw):
                                    offset = np.uint64(
                                        ci * channel +
                                        (ky * dh % sh * sw + kx * dw % sw) * size +
                                        ky * dh // sh * wq + kx * dw // sw)
                                    total += w[o, ci, ky, kx] * flat[offset + p]
                        acc[p] = total
                    for oy in range(oh):
                        row = out[n, o, oy]
                        results = acc[oy * wq:]
                        for j in range(ow):
                            row[j] = results[j]

    # "reassoc": each tap's sum over the outputs is a reduction, vectorised in any order
    @njit(cache=True, nogil=True, fastmath={"contract", "reassoc"})
    def weight(x: np.ndarray, g: np.ndarray, top: int, left: int, grad: np.ndarray) -> None:
        channels = x.shape[1]
        multiplier = g.shape[1] // channels
        oh, ow = g.shape[2], g.shape[3]
        hq, wq = oh + (kh - 1) * dh // sh, ow + (kw - 1) * dw // sw
        size = hq * wq
        flat = np.zeros(sh * sw * size + wq, dtype=x.dtype)
        rows = np.zeros(oh * wq, dtype=g.dtype)  # g in rows of wq: the extra columns stay 0
        grad[:] = 0
        for n in range(x.shape[0]):
            for c in range(channels):
                fill_planes(x, n, c, top, left, sh, sw, hq, wq, flat)
                for o in range(c * multiplier, c * multiplier + multiplier):
                    for oy in range(oh):
                        row = g[n, o, oy]
                        into = rows[oy * wq:]
                        for j in range(ow):
                            into[j] = row[j]
                    for ky in range(kh):
                        for kx in range(kw):
                            offset = np.uint64((ky * dh % sh * sw + kx * dw % sw) * size +
                                               ky * dh // sh * wq + kx * dw // sw)
                            total = grad[o, 0, ky, kx]
                            for p in range(np.uint64(oh * wq)):
                                total += rows[p] * flat[offset + p]
                            grad[o, 0, ky, kx] = total

    @njit(cache=True, nogil=True, fastmath={"contract"})
    def channels_last(x: np.ndarray, w: np.ndarray, bias: np.ndarray, top: int, left: int,
                      out: np.ndarray) -> None:
        height, width, channels = x.shape[1], x.shape[2], x.shape[3]
        oh, ow = out.shape[1], out.shape[2]
        flat, taps_flat = x.reshape(-1), w.reshape(-1)
        for n in range(x.shape[0]):
            for oy in range(oh):
                iy = oy * sh - top  # the input row of tap row 0, and the tap rows inside
                ky0, ky1 = max(0, (dh - 1 - iy) // dh), min(kh, (height - iy + dh - 1) // dh)
                for ox in range(ow):
                    ix = ox * sw - left
                    kx0, kx1 = max(0, (dw - 1 - ix) // dw), min(kw, (width - ix + dw - 1) // dw)
                    total = out[n, oy, ox]
                    if ky0 == 0 and ky1 == kh and kx0 == 0 and kx1 == kw:
                        # the whole window inside: every tap in one pass over the channels,
                        # at offsets that are the kernel's constants (unsigned: numba adds
                        # no wraparound test, which would stop the vectorising)
                        corner = np.uint64(((n * height + iy) * width + ix) * channels)
                        for c in range(np.uint64(channels)):
                            t = bias[c]
                            for ky in range(kh):
                                for kx in range(kw):
                                    t += (taps_flat[np.uint64((ky * kw + kx) * channels) + c] *
                                          flat[corner + np.uint64((ky * dh * width + kx * dw) *
                                                                  channels) + c])
                            total[c] = t
                        continue
                    for c in range(channels):
                        total[c] = bias[c]
                    for ky in range(ky0, ky1):
                        row, taps = x[n, iy + ky * dh], w[ky]
                        for kx in range(kx0, kx1):
                            pixel, tap = row[ix + kx * dw], taps[kx]
                            for c in range(channels):
                                total[c] += tap[c] * pixel[c]

    @njit(cache=True, nogil=True)
    def max_pool(x: np.ndarray, top: int, left: int, out: np.ndarray) -> None:
        height, width = x.shape[2], x.shape[3]
        oh, ow = out.shape[2], out.shape[3]
        wq = ow + -(-(kw - 1) * dw // sw)  # the width of a row of the horizontal maxima
        span = wq * sw  # the width of a padded row
        hp = (oh - 1) * sh + (kh - 1) * dh + 1  # the padded rows the windows read
        run = -(-span // POOL_BLOCK) * POOL_BLOCK
        flat_run = -(-(oh * wq) // POOL_BLOCK) * POOL_BLOCK
        # the padded plane (-inf in the padding), the vertical maxima of each output row's
        # window rows (`rows`) and the horizontal maxima over those (`maxima`: wq - ow
        # columns per row past the output's width, dropped); each loop runs past its end
        # into the next row or the slack at the end, which a later row overwrites or no
        # output reads
        padded = np.full(hp * span + run + POOL_BLOCK, -np.inf, dtype=out.dtype)
        rows = np.full(oh * span + run + (kw - 1) * dw + POOL_BLOCK * sw, -np.inf,
                       dtype=out.dtype)
        maxima = np.empty(flat_run, dtype=out.dtype)
        y0, y1 = max(0, top), min(hp, top + height)  # the padded rows inside the input
        c0, c1 = max(0, left), min(span, left + width)  # and the columns
        for n in range(x.shape[0]):
            for c in range(x.shape[1]):
                plane = x[n, c]
                for y in range(y0, y1):
                    src, to = plane[y - top, c0 - left:], np.uint64(y * span + c0)
                    for j in range(np.uint64(c1 - c0)):
                        padded[to + j] = src[j]
                for i in range(oh):
                    at, to = np.uint64(i * sh * span), np.uint64(i * span)
                    for j in range(np.uint64(run)):
                        m = padded[at + j]
                        for ky in range(1, kh):
                            m = greater(m, padded[at + np.uint64(ky * dh * span) + j])
                        rows[to + j] = m
                for p in range(np.uint64(flat_run)):
                    m = rows[p * np.uint64(sw)]
                    for kx in range(1, kw):
                        m = greater(m, rows[p * np.uint64(sw) + np.uint64(kx * dw)])
                    maxima[p] = m
                for i in range(oh):
                    row, results = out[n, c, i], maxima[i * wq:]
                    for j in range(ow):
                        row[j] = results[j]

    @njit(cache=True, nogil=True)
    def columns(x: np.ndarray, top: int, left: int, a: int, b: int, oh: int, ow: int,
                cols: np.ndarray) -> None:
        height, width = x.shape[2], x.shape[3]
        for c in range(x.shape[1]):
            for ky in range(kh):
                for kx in range(kw):
                    row = cols[(c * kh + ky) * kw + kx]
                    shift = kx * dw - left  # output column j reads input column j * sw + shift
                    j0 = min(ow, max(0, (sw - 1 - shift) // sw))  # [j0, j1): inside
                    j1 = max(j0, min(ow, (width - 1 - shift) // sw + 1))
                    for n in range(a, b):
                        for oy in range(oh):
                            iy = oy * sh - top + ky * dh
                            into = row[((n - a) * oh + oy) * ow:]
                            inside = 0 <= iy < height
                            for j in range(j0 if inside else ow):
                                into[j] = 0
                            if not inside:
                                continue
                            src, run = x[n, c, iy, j0 * sw + shift:], into[j0:]
                            for j in range(j1 - j0):
                                run[j] = src[j * sw]
                            for j in range(j1, ow):
                                into[j] = 0

    return Kernels(forward, weight, channels_last, max_pool, columns)
