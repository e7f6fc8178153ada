"""`pyburn.vision.geometry` on every device against OpenCV's warpAffine and warpPerspective
(bilinear and nearest, constant and replicated borders), and its gradients for the image
and the matrix against PyTorch's autograd through torch's own grid_sample."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.vision.filters import gaussian_blur2d
from pyburn.vision.geometry import warp_affine, warp_perspective

cv2 = pytest.importorskip("cv2", reason="OpenCV is the reference: opencv-python-headless")
torch = pytest.importorskip("torch")

#: smooth images (OpenCV interpolates at 1/32 of a pixel: a smooth image hides that)
IMAGES = gaussian_blur2d(pyburn.tensor(np.random.default_rng(0).random((2, 3, 20, 24)),
                                       dtype="float32", device="cpu"), 5, 2.0).numpy()
AFFINE = np.array([[[0.9, 0.2, 1.5], [-0.15, 1.05, -2.0]],
                   [[1.1, -0.1, 0.5], [0.05, 0.8, 3.0]]], np.float32)
HOMOGRAPHY = np.array([[[0.9, 0.1, 1.0], [-0.05, 1.0, 2.0], [0.001, 0.002, 1.0]],
                       [[1.05, 0.0, -1.0], [0.02, 0.95, 0.5], [-0.002, 0.001, 1.0]]],
                      np.float32)
SIZE = (18, 26)
FLAGS = {"bilinear": cv2.INTER_LINEAR, "nearest": cv2.INTER_NEAREST}
BORDERS = {"zeros": cv2.BORDER_CONSTANT, "border": cv2.BORDER_REPLICATE}


def opencv(warp, matrices, mode, padding):
    return np.stack([np.stack([warp(c, matrices[i], SIZE[::-1], flags=FLAGS[mode],
                                    borderMode=BORDERS[padding]) for c in image])
                     for i, image in enumerate(IMAGES)])


@pytest.mark.parametrize("padding", list(BORDERS))
def test_warps_match_opencv(device, padding):
    image = pyburn.tensor(IMAGES, device=device)
    got = warp_affine(image, pyburn.tensor(AFFINE, device=device), SIZE, padding_mode=padding)
    np.testing.assert_allclose(got.numpy(), opencv(cv2.warpAffine, AFFINE, "bilinear", padding),
                               atol=2e-3)
    got = warp_perspective(image, pyburn.tensor(HOMOGRAPHY, device=device), SIZE,
                           padding_mode=padding)
    np.testing.assert_allclose(
        got.numpy(), opencv(cv2.warpPerspective, HOMOGRAPHY, "bilinear", padding), atol=2e-3)


def test_nearest_warps_pick_opencvs_pixels_away_from_ties(device):
    # a shift by whole pixels: nearest and bilinear agree, and OpenCV's rounding cannot differ
    shift = np.array([[[1, 0, 2], [0, 1, -1]]] * 2, np.float32)
    got = warp_affine(pyburn.tensor(IMAGES, device=device), pyburn.tensor(shift, device=device),
                      SIZE, mode="nearest")
    np.testing.assert_array_equal(got.numpy(), opencv(cv2.warpAffine, shift, "nearest", "zeros"))


def test_gradients_match_torch_autograd(device):
    grad_device = pyburn.device(device).autodiff()
    image = pyburn.tensor(IMAGES, device=grad_device, requires_grad=True)
    matrix = pyburn.tensor(HOMOGRAPHY, device=grad_device, requires_grad=True)
    weights = np.random.default_rng(1).standard_normal((2, 3, *SIZE)).astype(np.float32)
    (warp_perspective(image, matrix, SIZE) * pyburn.tensor(weights, device=grad_device)) \
        .sum().backward()
    x = torch.tensor(IMAGES.astype(np.float64), requires_grad=True)
    h = torch.tensor(HOMOGRAPHY.astype(np.float64), requires_grad=True)
    ys, xs = torch.meshgrid(torch.arange(SIZE[0], dtype=torch.float64),
                            torch.arange(SIZE[1], dtype=torch.float64), indexing="ij")
    points = torch.stack([xs.reshape(-1), ys.reshape(-1), torch.ones(SIZE[0] * SIZE[1],
                                                                    dtype=torch.float64)])
    source = torch.linalg.inv(h) @ points
    gx = source[:, 0] / source[:, 2] * 2 / (IMAGES.shape[3] - 1) - 1
    gy = source[:, 1] / source[:, 2] * 2 / (IMAGES.shape[2] - 1) - 1
    grid = torch.stack([gx, gy], -1).reshape(2, *SIZE, 2)
    warped = torch.nn.functional.grid_sample(x, grid, align_corners=True)
    (warped * torch.tensor(weights.astype(np.float64))).sum().backward()
    np.testing.assert_allclose(image.grad.numpy(), x.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(matrix.grad.numpy(), h.grad.numpy(), rtol=2e-2, atol=2e-2)


def test_matrices_of_the_wrong_shape_are_refused():
    image = pyburn.zeros(1, 1, 4, 4, device="flex")
    with pytest.raises(pyburn.PyburnError, match=r"\(N, 2, 3\)"):
        warp_affine(image, pyburn.zeros(1, 3, 3, device="flex"), (4, 4))
    with pytest.raises(pyburn.PyburnError, match=r"\(N, 3, 3\)"):
        warp_perspective(image, pyburn.zeros(2, 3, 3, device="flex"), (4, 4))


def test_affine_matrix_is_opencvs_rotation_and_composes_shear_and_moves():
    from pyburn.vision import affine_matrix

    np.testing.assert_allclose(affine_matrix(30, 1.2, center=(10, 5)),
                               cv2.getRotationMatrix2D((10, 5), 30, 1.2), atol=1e-12)
    sheared = np.array(affine_matrix(shear=20, translate=(3, -2)))
    point = np.array([4.0, 6.0, 1.0])
    np.testing.assert_allclose(sheared @ point, [4 + np.tan(np.radians(20)) * 6 + 3, 6 - 2])
