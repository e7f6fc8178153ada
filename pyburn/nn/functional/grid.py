"""Sampling images at arbitrary points: `grid_sample` and `affine_grid` (PyTorch's), and
the interpolation they share with ONNX's GridSample, AffineGrid and DeformConv and with
pyburn.vision's warps.

A sample at a fractional position is a weighted sum of a few neighbours per spatial dim
(nearest: 1, linear: 2, cubic: 4); `interpolation_taps` yields every combination of
neighbours over the dims as (integer index per dim, weight), and `gather_points` fetches
the pixels at those indices. Out-of-range neighbours are clamped ("border"), reflected
("reflection") or given weight 0 ("zeros"), as the padding mode says. Everything is tensor
ops: every device, and gradients for the image and the grid.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from ..._tensor import Tensor
from ...errors import ArgumentError, ShapeError
from ...ops.creation import arange, ones
from ...ops.math_ops import where
from ...ops.movement import stack

_CUBIC_A = -0.75  # the Keys cubic convolution coefficient (PyTorch's, ONNX's)
#: grid_sample's modes, and the interpolation each is
MODES = {"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest"}
PADDINGS = ("zeros", "border", "reflection")


def gather_points(x: Tensor, index: Sequence[Tensor]) -> Tensor:
    """The pixels of x (B, C, *S) at integer positions: `index` holds one (B, P) tensor per
    spatial dim (in range); the result is (B, C, P)."""
    b, c = x.shape[:2]
    sizes = x.shape[2:]
    flat = index[0]
    for i, size in zip(index[1:], sizes[1:]):
        flat = flat * size + i
    points = flat.shape[-1]
    total = 1
    for size in sizes:
        total *= size
    return x.reshape(b, c, total).gather(2, flat.unsqueeze(1).expand(b, c, points))


def _reflect(v: Tensor, low: float, high: float) -> Tensor:
    """v folded back into [low, high] by repeated reflection at the borders."""
    span = high - low
    if span <= 0:
        return v * 0.0 + low
    below, above = v < low, v > high
    dist = where(below, low - v, v - high)
    times = (dist / span).floor()
    rest = dist - times * span
    even = times.remainder(2.0) == 0
    return where(below, where(even, low + rest, high - rest),
                 where(above, where(even, high - rest, low + rest), v))


def _borders(size: int, align_corners: int) -> tuple[float, float]:
    return (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)


def _cubic(t: Tensor, a: float = _CUBIC_A) -> list[Tensor]:
    """Weights of the neighbours at -1, 0, 1, 2 for a point at fraction t past neighbour 0."""
    def near(d: Tensor) -> Tensor:
        return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0

    def far(d: Tensor) -> Tensor:
        return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _dim_taps(coord: Tensor, size: int, mode: str, padding: str,
              align_corners: int) -> list[tuple[Tensor, Tensor | None]]:
    """(index, weight) neighbours of every (pixel-space) coordinate along one dim."""
    weights: list[Tensor | None]
    if mode == "nearest":
        base, weights = [coord], [None]
    else:
        low = coord.floor()
        t = coord - low
        if mode == "linear":
            base, weights = [low, low + 1.0], [1.0 - t, t]
        else:
            base = [low + float(k) for k in (-1, 0, 1, 2)]
            weights = list(_cubic(t))
    taps = []
    for position, weight in zip(base, weights):
        if padding == "zeros":
            valid = (position >= 0) & (position <= size - 1)
            keep = valid.cast(coord.dtype)
            weight = keep if weight is None else weight * keep
        elif padding == "reflection":
            position = _reflect(position, *_borders(size, align_corners)).trunc()
        index = position.clamp(0, size - 1).int()
        taps.append((index, weight))
    return taps


def interpolation_taps(coords: Sequence[Tensor], sizes: Sequence[int], mode: str = "linear",
                       padding: str = "zeros",
                       align_corners: int = 1) -> Iterator[tuple[list[Tensor], Tensor | None]]:
    """Every combination of per-dim neighbours of the points `coords` (one pixel-space
    coordinate tensor per spatial dim): (index per dim, product of the weights, None for
    nearest with nothing out of range)."""
    per_dim = [_dim_taps(c, n, mode, padding, align_corners) for c, n in zip(coords, sizes)]
    for combination in itertools.product(*per_dim):
        weight = None
        for _, w in combination:
            if w is not None:
                weight = w if weight is None else weight * w
        yield [index for index, _ in combination], weight


def sample(x: Tensor, coords: Sequence[Tensor], mode: str, padding: str,
           align_corners: int) -> Tensor:
    """x (B, C, *S) sampled at the pixel-space points `coords` (each (B, P)): (B, C, P)."""
    total: Tensor | None = None
    for index, weight in interpolation_taps(coords, x.shape[2:], mode, padding, align_corners):
        picked = gather_points(x, index)
        if weight is not None:
            picked = picked * weight.unsqueeze(1)
        total = picked if total is None else total + picked
    assert total is not None  # at least one tap per point
    return total


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool = False, *,
                cubic_points_clamped: bool = False) -> Tensor:
    """`input` (N, C, *S) sampled at `grid` (N, *O, nd), whose last dim holds normalized
    coordinates in [-1, 1] in reverse dim order (x, y[, z]): (N, C, *O). Modes "bilinear"
    (linear in every dim), "nearest" (ties to even) and "bicubic" (a = -0.75); padding
    "zeros", "border" or "reflection"; `align_corners` as PyTorch's. With "border", PyTorch
    clamps a bicubic sample's neighbours but not the point itself; ONNX's GridSample clamps
    the point first (`cubic_points_clamped`)."""
    if mode not in MODES:
        raise ArgumentError(f"grid_sample's mode is one of {', '.join(MODES)}, got {mode!r}")
    if padding_mode not in PADDINGS:
        raise ArgumentError(f"grid_sample's padding_mode is one of {', '.join(PADDINGS)}, got "
                            f"{padding_mode!r}")
    nd = input.ndim - 2
    if nd < 1 or grid.ndim != input.ndim or grid.shape[-1] != nd or \
            grid.shape[0] != input.shape[0]:
        raise ShapeError(f"grid_sample: grid shape {grid.shape} does not fit input shape "
                         f"{input.shape} (expected (N, *out, {nd}))")
    x, align = input, int(align_corners)
    kind = MODES[mode]
    n, c = x.shape[:2]
    out = grid.shape[1:-1]
    flat = grid.reshape(n, -1, nd)
    if not x.dtype.is_floating_point:
        x = x.float()
    flat = flat.cast(x.dtype)
    coords = []
    for dim, size in enumerate(x.shape[2:]):
        g = flat[:, :, nd - 1 - dim]
        pixel = (g + 1.0) * 0.5 * (size - 1) if align else ((g + 1.0) * size - 1.0) * 0.5
        if kind == "nearest":
            pixel = pixel.round()
        low, high = _borders(size, align)
        if padding_mode == "border" and (kind != "cubic" or cubic_points_clamped):
            # only points past the borders move
            pixel = where((pixel < low) | (pixel > high), pixel.clamp(0, size - 1), pixel)
        elif padding_mode == "reflection":
            pixel = _reflect(pixel, low, high)
        if kind == "nearest":
            pixel = pixel.trunc()
        coords.append(pixel)
    y = sample(x, coords, kind, padding_mode, align)
    return y.reshape((n, c) + tuple(out))


def _base_coords(size: int, align_corners: int, device, dtype) -> Tensor:
    """The normalized coordinates of `size` pixel centres along one dim."""
    if size == 1 and align_corners:
        return ones(1, device=device, dtype=dtype) * 0.0
    steps = arange(size, device=device).cast(dtype)
    if align_corners:
        return steps * (2.0 / (size - 1)) - 1.0
    return (steps * 2.0 + 1.0) / size - 1.0


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool = False) -> Tensor:
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of the affine maps `theta`
    (N, 2, 3) or (N, 3, 4) applied to the normalized pixel centres of an image of `size`
    (N, C, H, W) or (N, C, D, H, W)."""
    dims = [int(d) for d in size]
    nd = len(dims) - 2
    if nd not in (2, 3) or theta.shape != (dims[0], nd, nd + 1):
        raise ShapeError(f"affine_grid: theta shape {theta.shape} does not fit size {dims}")
    spatial = dims[2:]
    axes = [_base_coords(n, int(align_corners), theta.device, theta.dtype) for n in spatial]
    # homogeneous coordinates (x, y[, z], 1) of every output position, x varying fastest
    columns = []
    for k in range(nd):
        dim = nd - 1 - k  # column k is the coordinate along spatial dim nd - 1 - k
        shape = [1] * nd
        shape[dim] = spatial[dim]
        columns.append(axes[dim].reshape(tuple(shape)).expand(tuple(spatial)))
    columns.append(ones(tuple(spatial), device=theta.device, dtype=theta.dtype))
    base = stack(columns, -1).reshape(1, -1, nd + 1)
    grid = base @ theta.mT
    return grid.reshape((dims[0],) + tuple(spatial) + (nd,))
