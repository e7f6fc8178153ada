"""Resampling and rearranging pixels: interpolate, pixel_shuffle/unshuffle, unfold/fold
(im2col and col2im), and pad.

`interpolate` is separable: each spatial dim in turn is resampled by a few taps, each one an
``index_select`` of the source positions times a per-position weight (nearest: one tap,
linear: two, cubic: four). The positions and weights are computed once in Python from
PyTorch's coordinate rules, so the tensor work is O(output) and differentiable.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

from ... import ArgumentError, ShapeError, Tensor, tensor
from ... import pad as tensor_pad
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d
from .windows import (
    Ints,
    check_min_rank,
    check_rank,
    ntuple,
    pad_spatial,
    place_windows,
    windowed_sizes,
    windows,
)

# modes that interpolate between neighbours, and the number of spatial dims each expects
_INTERPOLATING = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75  # PyTorch's cubic convolution coefficient


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: `pad` is (last_before, last_after,
    previous_before, ...). Modes "constant" (with `value`, default 0; negative pads crop),
    "reflect", "replicate", "circular"."""
    return tensor_pad(input, pad, mode, 0 if value is None else value)


def _f32(value: float) -> float:
    """`value` rounded to float32, where PyTorch computes nearest-neighbour indices."""
    return struct.unpack("f", struct.pack("f", value))[0]


def _nearest_taps(n: int, out: int, scale: float | None, exact: bool) -> list:
    if out == n and not exact:
        return [(list(range(out)), None)]
    if out == 2 * n and not exact:
        return [([i >> 1 for i in range(out)], None)]
    step = _f32(1.0 / scale) if scale else _f32(n / out)
    if exact:
        index = [min(math.floor(_f32(_f32(i + 0.5) * step)), n - 1) for i in range(out)]
    else:
        index = [min(math.floor(_f32(i * step)), n - 1) for i in range(out)]
    return [(index, None)]


def _source(n: int, out: int, scale: float | None, align_corners: bool, cubic: bool) -> list:
    """PyTorch's source coordinate of every output position along one dim."""
    if align_corners:
        step = (n - 1) / (out - 1) if out > 1 else 0.0
        return [step * i for i in range(out)]
    step = 1.0 / scale if scale else n / out
    coords = [step * (i + 0.5) - 0.5 for i in range(out)]
    return coords if cubic else [max(c, 0.0) for c in coords]


def _linear_taps(n: int, out: int, scale: float | None, align_corners: bool) -> list:
    if out == n:
        return [(list(range(out)), None)]
    low, high, w_low, w_high = [], [], [], []
    for c in _source(n, out, scale, align_corners, cubic=False):
        i = min(math.floor(c), n - 1)
        frac = min(max(c - i, 0.0), 1.0)
        low.append(i)
        high.append(min(i + 1, n - 1))
        w_low.append(1.0 - frac)
        w_high.append(frac)
    return [(low, w_low), (high, w_high)]


def _cubic_weight(d: float) -> float:
    """The cubic convolution kernel at distance |d| < 2 (Keys, a = -0.75)."""
    d = abs(d)
    a = _CUBIC_A
    if d <= 1.0:
        return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
    return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a


def _cubic_taps(n: int, out: int, scale: float | None, align_corners: bool) -> list:
    taps: list = [([], []) for _ in range(4)]
    for c in _source(n, out, scale, align_corners, cubic=True):
        i = math.floor(c)
        t = c - i
        for k in range(4):  # neighbours i-1 .. i+2, clamped at the borders
            taps[k][0].append(min(max(i - 1 + k, 0), n - 1))
            taps[k][1].append(_cubic_weight(t + 1.0 - k))
    return taps


def _out_sizes(x: Tensor, nd: int, size: Any, scale_factor: Any) -> tuple[Ints, list]:
    spatial = x.shape[2:]
    if (size is None) == (scale_factor is None):
        raise ArgumentError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        sizes = ntuple(size, nd, "size", "interpolate", 1)
        return sizes, [None] * nd
    scales = (scale_factor,) * nd if isinstance(scale_factor, (int, float)) \
        else tuple(scale_factor)
    if len(scales) != nd or any(not isinstance(s, (int, float)) or s <= 0 for s in scales):
        raise ArgumentError(f"interpolate: scale_factor must be a positive number or {nd} of "
                            f"them, got {scale_factor!r}")
    sizes = tuple(math.floor(n * float(s)) for n, s in zip(spatial, scales))
    if any(s <= 0 for s in sizes):
        raise ShapeError(f"interpolate: scale_factor {scale_factor!r} gives an empty output "
                         f"for input shape {x.shape}")
    return sizes, [float(s) for s in scales]


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,
                mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resize input (N, C, *spatial) with 1 to 3 spatial dims to `size`, or by
    `scale_factor` (output size ``floor(n * scale)``), with PyTorch's coordinate rules.

    Modes: "nearest", "nearest-exact", "linear" (3-d input), "bilinear" and "bicubic" (4-d),
    "trilinear" (5-d), "area" (adaptive average pooling). `align_corners` (interpolating
    modes only) maps the corner pixels' centres onto each other. With `scale_factor`, the
    coordinates use it as given unless `recompute_scale_factor` asks for in/out sizes.
    Antialiased downsampling is not available (``antialias=True`` raises ArgumentError).

    >>> import pyburn, pyburn.nn.functional as F
    >>> x = pyburn.tensor([[[1.0, 3.0]]], device="flex")
    >>> F.interpolate(x, scale_factor=2, mode="linear").tolist()
    [[[1.0, 1.5, 2.5, 3.0]]]
    """
    op = "interpolate"
    check_rank(input, (3, 4, 5), op, "N, C, followed by 1 to 3 spatial dims")
    nd = input.ndim - 2
    if mode not in ("nearest", "nearest-exact", "area") and mode not in _INTERPOLATING:
        raise ArgumentError(f"{op}: unknown mode {mode!r}; expected nearest, nearest-exact, "
                            f"{', '.join(_INTERPOLATING)} or area")
    if mode in _INTERPOLATING and _INTERPOLATING[mode] != nd:
        raise ShapeError(f"{op}: mode {mode!r} needs a {_INTERPOLATING[mode] + 2}-d input, got "
                         f"shape {input.shape}")
    if align_corners is not None and mode not in _INTERPOLATING:
        raise ArgumentError(f"{op}: align_corners can only be set with the interpolating "
                            f"modes ({', '.join(_INTERPOLATING)}), not {mode!r}")
    if antialias:
        raise ArgumentError(f"{op}: antialias=True is not available in pyburn")
    sizes, scales = _out_sizes(input, nd, size, scale_factor)
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1](input, sizes)
    if recompute_scale_factor:
        scales = [None] * nd
    x = input if input.dtype.is_floating_point or mode.startswith("nearest") else input.float()
    for j, (n, out, scale) in enumerate(zip(x.shape[2:], sizes, scales)):
        if mode.startswith("nearest"):
            taps = _nearest_taps(n, out, scale, exact=mode == "nearest-exact")
        elif mode == "bicubic":
            taps = _cubic_taps(n, out, scale, bool(align_corners))
        else:
            taps = _linear_taps(n, out, scale, bool(align_corners))
        x = resample(x, 2 + j, taps)
    return x


def resample(x: Tensor, dim: int, taps: list) -> Tensor:
    """``sum_k x.index_select(dim, index_k) * weight_k`` with each weight broadcast along
    the dims after `dim`: interpolation along one dim from (source indices, weights) taps
    (weights None: a plain pick). Shared with the ONNX Resize operator."""
    trailing = (1,) * (x.ndim - dim - 1)
    total = None
    for index, weight in taps:
        if weight is None and index == list(range(x.shape[dim])):  # the identity: no copy
            return x
        picked = x.index_select(dim, tensor(index, device=x.device))
        if weight is not None:
            w = tensor(weight, dtype=x.dtype, device=x.device).reshape((len(weight),) + trailing)
            picked = picked * w
        total = picked if total is None else total + picked
    return total


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r): each group of r^2 channels becomes an r x r
    block of pixels."""
    r = upscale_factor
    check_min_rank(input, 3, "pixel_shuffle", "..., C r^2, H, W")
    *lead, c, h, w = input.shape
    if not isinstance(r, int) or r <= 0 or c % (r * r):
        raise ShapeError(f"pixel_shuffle: {c} channels (input shape {input.shape}) are not "
                         f"divisible by upscale_factor^2 = {r!r}^2")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of `pixel_shuffle`."""
    r = downscale_factor
    check_min_rank(input, 3, "pixel_unshuffle", "..., C, H r, W r")
    *lead, c, h, w = input.shape
    if not isinstance(r, int) or r <= 0 or h % r or w % r:
        raise ShapeError(f"pixel_unshuffle: spatial size {(h, w)} (input shape {input.shape}) "
                         f"is not divisible by downscale_factor={r!r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Tensor:
    """im2col: the sliding blocks of input (N, C, H, W) or (C, H, W) as columns,
    (N, C kH kW, L) with L the number of block positions (row-major)."""
    op = "unfold"
    check_rank(input, (3, 4), op, "N, C, H, W or C, H, W")
    kernel = ntuple(kernel_size, 2, "kernel_size", op, 1)
    dil = ntuple(dilation, 2, "dilation", op, 1)
    pads = [(p, p) for p in ntuple(padding, 2, "padding", op, 0)]
    step = ntuple(stride, 2, "stride", op, 1)
    out = windowed_sizes(input, kernel, step, dil, pads, op)
    cols = windows(pad_spatial(input, pads), kernel, step, dil, out)
    lead = input.shape[:-3]
    return cols.reshape(lead + (input.shape[-3] * kernel[0] * kernel[1], out[0] * out[1]))


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1,
         padding: Any = 0, stride: Any = 1) -> Tensor:
    """col2im, the adjoint of `unfold`: columns (N, C kH kW, L) or (C kH kW, L) are added
    back into an image of `output_size` (overlapping blocks accumulate)."""
    op = "fold"
    check_rank(input, (2, 3), op, "N, C kH kW, L or C kH kW, L")
    size = ntuple(output_size, 2, "output_size", op, 1)
    kernel = ntuple(kernel_size, 2, "kernel_size", op, 1)
    dil = ntuple(dilation, 2, "dilation", op, 1)
    pads = ntuple(padding, 2, "padding", op, 0)
    step = ntuple(stride, 2, "stride", op, 1)
    k = kernel[0] * kernel[1]
    rows, blocks = input.shape[-2:]
    counts = tuple((n + 2 * p - d * (kk - 1) - 1) // s + 1
                   for n, p, d, kk, s in zip(size, pads, dil, kernel, step))
    if rows % k or any(c <= 0 for c in counts) or blocks != counts[0] * counts[1]:
        raise ShapeError(f"fold: input shape {input.shape} does not fit kernel_size {kernel} "
                         f"over output_size {size} (padding {pads}, stride {step}, dilation "
                         f"{dil}): expected (C * {k}, {max(counts[0], 0) * max(counts[1], 0)})")
    lead = input.shape[:-2]
    cols = input.reshape(lead + (rows // k, k) + counts)
    padded = tuple(n + 2 * p for n, p in zip(size, pads))
    image = place_windows(cols, kernel, step, dil, padded)
    return image[(Ellipsis, *(slice(p, p + n) for p, n in zip(pads, size)))]
