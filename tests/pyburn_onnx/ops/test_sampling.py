"""GridSample and AffineGrid against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node
from .runtime_reference import ort_outputs

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_2d(dev: str, mode: str, padding: str, align: int) -> None:
    x = RNG.standard_normal((2, 2, 4, 5)).astype(np.float32)
    grid = (RNG.random((2, 3, 6, 2)) * 3.0 - 1.5).astype(np.float32)  # some points outside
    grid[0, 0, :2] = [[0.5, -0.25], [-1.0, 1.0]]  # ties and corners
    check_node("GridSample", [x, grid],
               {"mode": mode, "padding_mode": padding, "align_corners": align}, opset=20,
               device=dev, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_3d(dev: str, mode: str, padding: str) -> None:
    x = RNG.standard_normal((1, 2, 3, 4, 3)).astype(np.float32)
    grid = (RNG.random((1, 2, 3, 2, 3)) * 2.6 - 1.3).astype(np.float32)
    check_node("GridSample", [x, grid], {"mode": mode, "padding_mode": padding}, opset=20,
               device=dev, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
def test_grid_sample_opset16_names(dev: str, mode: str) -> None:
    x = RNG.standard_normal((1, 1, 4, 4)).astype(np.float32)
    grid = (RNG.random((1, 3, 3, 2)) * 2.0 - 1.0).astype(np.float32)
    # onnx's reference knows only opset 20's mode names
    check_node("GridSample", [x, grid], {"mode": mode}, opset=16, device=dev, rtol=1e-4,
               atol=1e-5, expected=ort_outputs("GridSample", [x, grid], {"mode": mode},
                                               opset=16))


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 4, 2)])
@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid(dev: str, size: tuple[int, ...], align: int) -> None:
    nd = len(size) - 2
    theta = RNG.standard_normal((size[0], nd, nd + 1)).astype(np.float32)
    check_node("AffineGrid", [theta, np.array(size, np.int64)], {"align_corners": align},
               opset=20, device=dev, rtol=1e-5, atol=1e-6)
