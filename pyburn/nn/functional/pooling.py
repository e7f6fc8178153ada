"""Pooling: max and average pooling over sliding windows, and adaptive pooling to a fixed
output size, in 1, 2 and 3 spatial dims.

Sliding-window pooling reuses the convolution's `windows` (one strided view per kernel
offset, stacked) and reduces over the window dim; max pooling is one backend call where the
backend offers the "max_pool" capability, and average pooling, sliding or adaptive, where it
offers "avg_pool" (each output's box given per dim). Adaptive pooling has windows of varying
size: average pooling contracts each dim with an averaging matrix (a reshape-and-mean when the
sizes divide), max pooling gathers every window padded to the largest one by repeating its
last element (repeats cannot change a max).

Indices returned by ``return_indices=True`` are int32 (pyburn's default int; PyTorch's are
int64): the flat position of the max within each channel's spatial dims.
"""

from __future__ import annotations

from typing import Any

from ... import ArgumentError, Tensor, arange, tensor
from ...ops import capability
from ...ops.capability import AVG_POOL, MAX_POOL, offered
from .windows import Ints, check_rank, ntuple, pad_spatial, windowed_sizes, windows

_LOWEST = {"uint8": 0, "int32": -(2**31), "int64": -(2**63)}


def _numel(shape: Ints) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _layout(nd: int) -> str:
    return "N, C, " + ", ".join("DHW"[3 - nd:]) + " or without N"


class _Windows:
    """The checked geometry of one sliding-window pooling call."""

    def __init__(self, op: str, nd: int, x: Tensor, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, ceil_mode: bool):
        check_rank(x, (nd + 1, nd + 2), op, _layout(nd))
        self.nd = nd
        self.kernel = ntuple(kernel_size, nd, "kernel_size", op, 1)
        self.stride = self.kernel if stride is None or (
            isinstance(stride, (list, tuple)) and not stride) else ntuple(
            stride, nd, "stride", op, 1)
        self.pad = ntuple(padding, nd, "padding", op, 0)
        self.dilation = ntuple(dilation, nd, "dilation", op, 1)
        for p, k, d in zip(self.pad, self.kernel, self.dilation):
            if 2 * p > d * (k - 1) + 1:
                raise ArgumentError(f"{op}: padding {self.pad} must be at most half of the "
                                    f"effective kernel size (kernel_size {self.kernel}, "
                                    f"dilation {self.dilation})")
        self.spatial = x.shape[-nd:]
        self.out = windowed_sizes(x, self.kernel, self.stride, self.dilation,
                                  [(p, p) for p in self.pad], op, ceil_mode)
        # the right padding the last window needs: less than `pad` when it ends early, more
        # when ceil_mode lets a window hang past the padding
        self.pads = [(p, (o - 1) * s + d * (k - 1) + 1 - n - p)
                     for n, k, s, d, p, o in zip(self.spatial, self.kernel, self.stride,
                                                 self.dilation, self.pad, self.out)]

    def of(self, x: Tensor, fill: float) -> Tensor:
        """x's windows, ``(..., K, *out)``, padded with `fill`."""
        padded = pad_spatial(x, [(b, max(a, 0)) for b, a in self.pads], fill)
        return windows(padded, self.kernel, self.stride, self.dilation, self.out)

    def divisor(self, include_pad: bool) -> list[list[int]]:
        """Per spatial dim, the number of window elements per output position that lie in
        the input (or, with `include_pad`, in the input and its explicit padding)."""
        counts = []
        for n, k, s, p, o in zip(self.spatial, self.kernel, self.stride, self.pad, self.out):
            row = []
            for i in range(o):
                start = i * s - p
                end = min(start + k, n + p)
                row.append(end - start if include_pad else min(end, n) - max(start, 0))
            counts.append(row)
        return counts


def _max_pool(op: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    geometry = _Windows(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode)
    if offered(MAX_POOL, input):
        return capability.max_pool(input, geometry.kernel, geometry.stride,
                                   [(b, max(a, 0)) for b, a in geometry.pads],
                                   geometry.dilation, return_indices)
    fill = float("-inf") if input.dtype.is_floating_point else _LOWEST.get(input.dtype.name, 0)
    cols = geometry.of(input, fill)
    values = cols.amax(-nd - 1)
    if not return_indices:
        return values
    # the same windows over a map of flat positions (-1 in the padding) name each max; a
    # window of nothing but the fill, whose first max may be padding, names its first
    # element inside the input (as PyTorch does)
    positions = arange(_numel(geometry.spatial), device=input.device).reshape(geometry.spatial)
    where_from = geometry.of(positions, -1).expand(cols.shape)
    axis = cols.ndim - nd - 1
    picked = where_from.gather(axis, cols.argmax(axis, keepdim=True)).squeeze(axis)
    inside = where_from.gather(axis, (where_from >= 0).argmax(axis, keepdim=True))
    return values, picked.where(picked >= 0, inside.squeeze(axis))


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of input (N, C, L) or (C, L); padding counts as -inf;
    `stride` defaults to `kernel_size`. With `return_indices`, also the int32 position of
    each max within L."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of input (N, C, H, W) or (C, H, W). `ceil_mode` keeps a last,
    partial window that starts inside the input. With `return_indices`, also the int32 flat
    position ``h * W + w`` of each max.

    >>> import pyburn, pyburn.nn.functional as F
    >>> x = pyburn.arange(16.0, device="flex").reshape(1, 1, 4, 4)
    >>> F.max_pool2d(x, 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of input (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def _avg_pool(op: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool, count_include_pad: bool, divisor_override: int | None) -> Tensor:
    geometry = _Windows(op, nd, input, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override == 0:
        raise ArgumentError(f"{op}: divisor_override must be nonzero")
    counts = geometry.divisor(count_include_pad)
    if offered(AVG_POOL, input):
        boxes = [[(i * s - p, i * s - p + k, c) for i, c in enumerate(row)] for row, k, s, p
                 in zip(counts, geometry.kernel, geometry.stride, geometry.pad)]
        return capability.avg_pool(input, boxes, divisor_override or 0)
    x = input if input.dtype.is_floating_point else input.float()
    total = geometry.of(x, 0.0).sum(-nd - 1)
    if divisor_override is not None:
        return total / divisor_override
    divisor = tensor(counts[0], dtype=x.dtype, device=x.device)
    for row in counts[1:]:  # the count of a window is the product of its per-dim counts
        divisor = divisor.unsqueeze(-1) * tensor(row, dtype=x.dtype, device=x.device)
    return total / divisor


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of input (N, C, L) or (C, L). `count_include_pad` counts
    the zero padding in each window's divisor."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of input (N, C, H, W) or (C, H, W); `divisor_override`
    replaces every window's element count."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of input (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


# ---- adaptive pooling -----------------------------------------------------------------------
def _adaptive_sizes(op: str, nd: int, x: Tensor, output_size: Any) -> Ints:
    check_rank(x, (nd + 1, nd + 2), op, _layout(nd))
    listed = (output_size,) * nd if isinstance(output_size, int) or output_size is None \
        else tuple(output_size)
    if len(listed) == 1:
        listed *= nd
    if len(listed) != nd or any(o is not None and (not isinstance(o, int) or o < 0)
                                for o in listed):
        raise ArgumentError(f"{op}: output_size must be an int or {nd} ints (or None), got "
                            f"{output_size!r}")
    sizes = tuple(n if o is None else o for o, n in zip(listed, x.shape[-nd:]))
    if any(n == 0 for n in x.shape[-nd:]) and any(sizes):
        raise ArgumentError(f"{op}: cannot pool an input of shape {x.shape} with empty "
                            "spatial dims")
    return sizes


def _bins(size: int, out: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive windows: output i covers [floor(i n / o), ceil((i + 1) n / o))."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _adaptive_avg(op: str, nd: int, input: Tensor, output_size: Any) -> Tensor:
    sizes = _adaptive_sizes(op, nd, input, output_size)
    if offered(AVG_POOL, input):
        return capability.avg_pool(input, [[(a, b, b - a) for a, b in _bins(n, out)]
                                           for n, out in zip(input.shape[-nd:], sizes)], 0)
    x = input if input.dtype.is_floating_point else input.float()
    for j, out in enumerate(sizes):
        dim = x.ndim - nd + j
        n = x.shape[dim]
        if n == out:
            continue
        if out and n % out == 0:  # equal windows: a reshape and a mean
            x = x.unflatten(dim, (out, n // out)).mean(dim + 1)
            continue
        rows = [[1.0 / (e - s) if s <= c < e else 0.0 for c in range(n)] for s, e in _bins(n, out)]
        averaging = tensor(rows, dtype=x.dtype, device=x.device).reshape(out, n)
        x = (x.movedim(dim, -1) @ averaging.mT).movedim(-1, dim)
    return x


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of input (N, C, L) or (C, L) to length `output_size`, with windows
    ``[floor(i L / out), ceil((i + 1) L / out))``."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of input (N, C, H, W) or (C, H, W) to `output_size` (an int, or a
    pair whose None entries keep that input size).

    >>> import pyburn, pyburn.nn.functional as F
    >>> F.adaptive_avg_pool2d(pyburn.ones(1, 2, 5, 7, device="flex"), 1).shape
    (1, 2, 1, 1)
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of input (N, C, D, H, W) or (C, D, H, W) to `output_size`."""
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _gather_bins(x: Tensor, nd: int, sizes: Ints) -> Tensor:
    """``(..., *spatial) -> (..., *out, K)``: each adaptive window's elements, padded to the
    largest window (K elements in all) by repeating its last element."""
    picks = []
    lead = x.ndim - nd
    for j, out in enumerate(sizes):
        dim = lead + 2 * j  # each earlier spatial dim is now split in two
        bins = _bins(x.shape[dim], out)
        width = max((e - s for s, e in bins), default=1)
        index = [min(s + i, e - 1) for s, e in bins for i in range(width)]
        x = x.index_select(dim, tensor(index, device=x.device)).unflatten(dim, (out, width))
        picks.append(width)
    order = list(range(lead)) + [lead + 2 * j for j in range(nd)] + [
        lead + 2 * j + 1 for j in range(nd)]
    return x.permute(order).reshape(x.shape[:lead] + sizes + (_numel(tuple(picks)),))


def _adaptive_max(op: str, nd: int, input: Tensor, output_size: Any,
                  return_indices: bool) -> Any:
    sizes = _adaptive_sizes(op, nd, input, output_size)
    cols = _gather_bins(input, nd, sizes)
    values = cols.amax(-1)
    if not return_indices:
        return values
    spatial = input.shape[-nd:]
    positions = _gather_bins(arange(_numel(spatial), device=input.device).reshape(spatial),
                             nd, sizes)
    best = cols.argmax(-1, keepdim=True)
    return values, positions.expand(cols.shape).gather(-1, best).squeeze(-1)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of input (N, C, L) or (C, L) to length `output_size` (windows as in
    `adaptive_avg_pool1d`); with `return_indices`, also the int32 position of each max."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of input (N, C, H, W) or (C, H, W) to `output_size`; with
    `return_indices`, also the int32 flat position ``h * W + w`` of each max."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of input (N, C, D, H, W) or (C, D, H, W) to `output_size`."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)

