"""Sampling an image at arbitrary points: ONNX's GridSample and AffineGrid, on
`pyburn.nn.functional.grid` (PyTorch's grid_sample and affine_grid, whose interpolation
DeformConv shares): here only ONNX's names and attributes are mapped onto them."""

from __future__ import annotations

from ... import Tensor
from ...nn.functional import grid as sampling
from ..registry import Ints, check, ints, onnx_op

#: ONNX's mode names, and grid_sample's
_MODES = {"bilinear": "bilinear", "bicubic": "bicubic", "linear": "bilinear",
          "cubic": "bicubic", "nearest": "nearest"}


@onnx_op("GridSample", since=16)
def grid_sample(x: Tensor, grid: Tensor, *, align_corners: int = 0, mode: str = "linear",
                padding_mode: str = "zeros") -> Tensor:
    """GridSample: x (N, C, *S) sampled at grid (N, *O, nd), whose last dim holds normalized
    coordinates in [-1, 1] in reverse dim order (x, y[, z]). Modes nearest (ties to even),
    linear/bilinear, cubic/bicubic (a = -0.75); padding zeros, border or reflection."""
    check(mode in _MODES, f"GridSample: mode must be one of {', '.join(_MODES)}, got {mode!r}")
    return sampling.grid_sample(x, grid, _MODES[mode], padding_mode, bool(align_corners),
                                cubic_points_clamped=True)


@onnx_op("AffineGrid", since=20)
def affine_grid(theta: Tensor, size: Ints, *, align_corners: int = 0) -> Tensor:
    """AffineGrid: the sampling grid (N, H, W, 2) or (N, D, H, W, 3) of the affine maps
    theta (N, 2, 3) or (N, 3, 4) applied to the normalized pixel centres of an image of
    `size` (N, C, H, W) or (N, C, D, H, W)."""
    return sampling.affine_grid(theta, ints(size), bool(align_corners))
