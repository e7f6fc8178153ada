"""`pyburn.vision.filters` on every device against OpenCV (filter2D, blur, GaussianBlur,
Sobel, Laplacian, medianBlur), every border mode, and gradients against PyTorch's autograd
of the same depthwise convolution."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.vision.filters import (
    box_blur,
    filter2d,
    gaussian_blur2d,
    laplacian,
    median_blur,
    sobel,
    spatial_gradient,
)

cv2 = pytest.importorskip("cv2", reason="OpenCV is the reference: opencv-python-headless")
torch = pytest.importorskip("torch")

IMAGES = np.random.default_rng(0).random((2, 3, 9, 11)).astype(np.float32)
#: pyburn's border names and OpenCV's
BORDERS = {"reflect": cv2.BORDER_REFLECT_101, "replicate": cv2.BORDER_REPLICATE,
           "constant": cv2.BORDER_CONSTANT}


def opencv(images: np.ndarray, function) -> np.ndarray:
    return np.stack([np.stack([function(channel) for channel in image]) for image in images])


@pytest.mark.parametrize("border", list(BORDERS))
def test_filter2d_and_box_blur_match_opencv(device, border):
    kernel = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    t = pyburn.tensor(IMAGES, device=device)
    got = filter2d(t, pyburn.tensor(kernel, device=device), border)
    # OpenCV anchors an even kernel at (kw // 2, kh // 2) too
    want = opencv(IMAGES, lambda c: cv2.filter2D(c, -1, kernel, borderType=BORDERS[border]))
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5)
    got = box_blur(t, (3, 5), border)
    want = opencv(IMAGES, lambda c: cv2.blur(c, (5, 3), borderType=BORDERS[border]))
    np.testing.assert_allclose(got.numpy(), want, atol=1e-6)


def test_gaussian_sobel_and_laplacian_match_opencv(device):
    t = pyburn.tensor(IMAGES, device=device)
    reflect = cv2.BORDER_REFLECT_101
    got = gaussian_blur2d(t, (5, 3), (1.3, 0.7))
    want = opencv(IMAGES, lambda c: cv2.GaussianBlur(c, (3, 5), sigmaX=0.7, sigmaY=1.3,
                                                     borderType=reflect))
    np.testing.assert_allclose(got.numpy(), want, atol=1e-6)
    default = gaussian_blur2d(t, 5, 0.0)  # OpenCV's sigma for the size
    want = opencv(IMAGES, lambda c: cv2.GaussianBlur(c, (5, 5), 0, borderType=reflect))
    np.testing.assert_allclose(default.numpy(), want, atol=1e-6)
    gradient = spatial_gradient(t).numpy()
    for axis, (dx, dy) in enumerate(((1, 0), (0, 1))):
        want = opencv(IMAGES, lambda c: cv2.Sobel(c, cv2.CV_32F, dx, dy, ksize=3,  # noqa: B023
                                                  borderType=reflect))
        np.testing.assert_allclose(gradient[:, :, axis], want, atol=1e-5)
    np.testing.assert_allclose(sobel(t).numpy(), np.sqrt(gradient[:, :, 0] ** 2 +
                                                         gradient[:, :, 1] ** 2), atol=1e-5)
    for size in (1, 3):
        want = opencv(IMAGES, lambda c: cv2.Laplacian(c, cv2.CV_32F, ksize=size,  # noqa: B023
                                                      borderType=reflect))
        np.testing.assert_allclose(laplacian(t, size).numpy(), want, atol=1e-5)


@pytest.mark.parametrize("size", [3, 5])
def test_median_blur_matches_opencv_on_bytes(device, size):
    images = (IMAGES * 255).astype(np.uint8)
    got = median_blur(pyburn.tensor(images, device=device), size)
    np.testing.assert_array_equal(got.numpy(), opencv(images, lambda c: cv2.medianBlur(c, size)))


def test_gradients_match_torch_autograd(device):
    kernel = np.random.default_rng(2).standard_normal((3, 3)).astype(np.float32)
    weights = np.random.default_rng(3).standard_normal(IMAGES.shape).astype(np.float32)
    grad_device = pyburn.device(device).autodiff()
    mine = pyburn.tensor(IMAGES, device=grad_device, requires_grad=True)
    (filter2d(mine, pyburn.tensor(kernel, device=grad_device), "replicate") *
     pyburn.tensor(weights, device=grad_device)).sum().backward()
    x = torch.tensor(IMAGES.astype(np.float64), requires_grad=True)
    padded = torch.nn.functional.pad(x, (1, 1, 1, 1), mode="replicate")
    weight = torch.tensor(kernel.astype(np.float64)).expand(3, 1, 3, 3)
    (torch.nn.functional.conv2d(padded, weight, groups=3) *
     torch.tensor(weights.astype(np.float64))).sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), x.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_bad_arguments_are_refused():
    image = pyburn.zeros(1, 1, 4, 4, device="flex")
    with pytest.raises(pyburn.PyburnError, match="border"):
        box_blur(image, 3, border="mirror")
    with pytest.raises(pyburn.PyburnError, match="odd"):
        median_blur(image, 4)
    with pytest.raises(pyburn.PyburnError, match=r"\(N, C, H, W\)"):
        sobel(pyburn.zeros(4, 4, device="flex"))
