"""grid_sample and affine_grid against PyTorch: every mode, padding and align_corners, in 2-d
and 3-d, with gradients for the image, the grid and theta; grid points past the borders
(a grid in [-1.3, 1.3)) exercise the padding."""

from __future__ import annotations

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import PERMISSIVE, TF


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_2d(ref, mode, padding_mode, align_corners):
    ref.check(F.grid_sample, TF.grid_sample, ref.floats(2, 3, 5, 6),
              ref.floats(2, 4, 3, 2, low=-1.3, high=1.3), mode=mode, padding_mode=padding_mode,
              align_corners=align_corners, tol=PERMISSIVE, grad=mode != "nearest")


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
def test_grid_sample_3d(ref, padding_mode, align_corners):
    ref.check(F.grid_sample, TF.grid_sample, ref.floats(1, 2, 3, 4, 5),
              ref.floats(1, 2, 3, 2, 3, low=-1.2, high=1.2), mode="bilinear",
              padding_mode=padding_mode, align_corners=align_corners, tol=PERMISSIVE)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 4, 2)], ids=["2d", "3d"])
def test_affine_grid(ref, size, align_corners):
    nd = len(size) - 2
    ref.check(F.affine_grid, TF.affine_grid, ref.floats(2, nd, nd + 1), size,
              align_corners=align_corners)


def test_bad_arguments():
    image, grid = pyburn.zeros(1, 1, 3, 3, device="flex"), pyburn.zeros(1, 2, 2, 2, device="flex")
    for call, words in ((lambda: F.grid_sample(image, grid, mode="area"), "mode"),
                        (lambda: F.grid_sample(image, grid, padding_mode="wrap"), "padding_mode"),
                        (lambda: F.grid_sample(image, grid[..., :1]), "does not fit"),
                        (lambda: F.affine_grid(pyburn.zeros(1, 2, 2, device="flex"),
                                               (1, 1, 3, 3)), "does not fit")):
        with pytest.raises(pyburn.PyburnError, match=words):
            call()
