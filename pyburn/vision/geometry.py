"""Warps of images (N, C, H, W) by affine and perspective maps, OpenCV's conventions: the
matrix maps source pixel coordinates (x, y) to destination ones, each destination pixel
takes the source at the inverse map (bilinear, nearest or bicubic), and what falls outside
the source is zero ("zeros"), the nearest edge ("border") or mirrored ("reflection"). The
sampling is `pyburn.nn.functional.grid_sample`: every device, and gradients for the image
and the matrix.

>>> import pyburn
>>> image = pyburn.arange(6, dtype=pyburn.float32, device="flex").reshape(1, 1, 2, 3)
>>> shift = pyburn.tensor([[[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]], device="flex")
>>> warp_affine(image, shift, (2, 3))[0, 0].tolist()
[[0.0, 0.0, 1.0], [0.0, 3.0, 4.0]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._tensor import Tensor
from ..errors import ShapeError
from ..nn.functional.grid import grid_sample
from ..ops.creation import arange, ones, zeros
from ..ops.movement import cat, stack


def affine_matrix(angle: float = 0.0, scale: float = 1.0,
                  translate: tuple[float, float] = (0.0, 0.0), shear: float = 0.0,
                  center: tuple[float, float] = (0.0, 0.0)) -> list[list[float]]:
    """The 2 x 3 map (rows) that turns by `angle` degrees (counter-clockwise in the image's
    x-right, y-down axes, as OpenCV's ``getRotationMatrix2D``), scales by `scale` and shears
    by `shear` degrees along x, all about `center` (x, y), then moves by `translate` (x, y)
    pixels: burn-vision's Transform2D, composed. Put it in a tensor (N, 2, 3) for
    `warp_affine`."""
    a, k = math.radians(angle), math.tan(math.radians(shear))
    cos, sin = math.cos(a) * scale, math.sin(a) * scale
    m00, m01 = cos - k * sin, sin + k * cos
    m10, m11 = -sin, cos
    cx, cy = center
    return [[m00, m01, cx - m00 * cx - m01 * cy + translate[0]],
            [m10, m11, cy - m10 * cx - m11 * cy + translate[1]]]


def _inverse3(m: Tensor) -> Tensor:
    """The inverses of 3 x 3 matrices (N, 3, 3), by their adjugates."""
    a = [[m[:, i, j] for j in range(3)] for i in range(3)]

    def minor(i: int, j: int) -> Tensor:
        rows = [r for r in range(3) if r != i]
        cols = [c for c in range(3) if c != j]
        return a[rows[0]][cols[0]] * a[rows[1]][cols[1]] - a[rows[0]][cols[1]] * a[rows[1]][cols[0]]
    cofactors = [[minor(i, j) * (1 if (i + j) % 2 == 0 else -1) for j in range(3)]
                 for i in range(3)]
    det = a[0][0] * cofactors[0][0] + a[0][1] * cofactors[0][1] + a[0][2] * cofactors[0][2]
    # the adjugate is the transposed cofactor matrix
    return stack([stack([cofactors[j][i] / det for j in range(3)], dim=1) for i in range(3)],
                 dim=1)


def warp_perspective(image: Tensor, matrix: Tensor, size: Sequence[int],
                     mode: str = "bilinear", padding_mode: str = "zeros") -> Tensor:
    """`image` seen through the homographies `matrix` (N, 3, 3), source to destination, as an
    image of `size` (height, width): OpenCV's ``warpPerspective``."""
    if not isinstance(image, Tensor) or image.ndim != 4:
        raise ShapeError(f"warps take images (N, C, H, W), got "
                         f"{getattr(image, 'shape', type(image).__name__)}")
    count = image.shape[0]
    if not isinstance(matrix, Tensor) or matrix.shape != (count, 3, 3):
        raise ShapeError(f"warp_perspective takes one 3 x 3 matrix per image, (N, 3, 3), got "
                         f"{getattr(matrix, 'shape', type(matrix).__name__)} for {count} images")
    height, width = (int(s) for s in size)
    device, dtype = image.device, image.dtype if image.dtype.is_floating_point else None
    matrix = matrix.float()
    ys = arange(height, device=device).float().reshape(height, 1).expand(height, width)
    xs = arange(width, device=device).float().reshape(1, width).expand(height, width)
    points = stack([xs.reshape(-1), ys.reshape(-1), ones(height * width, device=device)],
                   dim=0)  # (3, H*W)
    source = _inverse3(matrix) @ points  # (N, 3, H*W)
    sx, sy = source[:, 0] / source[:, 2], source[:, 1] / source[:, 2]
    in_height, in_width = image.shape[2:]
    gx = sx * (2 / max(in_width - 1, 1)) - 1
    gy = sy * (2 / max(in_height - 1, 1)) - 1
    grid = stack([gx, gy], dim=-1).reshape(count, height, width, 2)
    out = grid_sample(image if dtype is not None else image.float(), grid, mode, padding_mode,
                      align_corners=True)
    return out


def warp_affine(image: Tensor, matrix: Tensor, size: Sequence[int], mode: str = "bilinear",
                padding_mode: str = "zeros") -> Tensor:
    """`image` seen through the affine maps `matrix` (N, 2, 3), source to destination, as an
    image of `size` (height, width): OpenCV's ``warpAffine``."""
    if not isinstance(matrix, Tensor) or matrix.ndim != 3 or matrix.shape[1:] != (2, 3):
        raise ShapeError(f"warp_affine takes one 2 x 3 matrix per image, (N, 2, 3), got "
                         f"{getattr(matrix, 'shape', type(matrix).__name__)}")
    last = cat([zeros(matrix.shape[0], 1, 2, device=matrix.device),
                ones(matrix.shape[0], 1, 1, device=matrix.device)], dim=2)
    return warp_perspective(image, cat([matrix.float(), last], dim=1), size, mode, padding_mode)
