"""`pyburn.vision.color` on every device against OpenCV (grey, HSV, YUV) and scikit-image
(L*a*b*), round trips back to RGB, the edge cases (grey and black pixels, colours sRGB
cannot show), and gradients against PyTorch's autograd of the textbook formulas."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.vision import (
    grayscale_to_rgb,
    hsv_to_rgb,
    lab_to_rgb,
    rgb_to_grayscale,
    rgb_to_hsv,
    rgb_to_lab,
    rgb_to_yuv,
    yuv_to_rgb,
)

cv2 = pytest.importorskip("cv2", reason="OpenCV is the reference: opencv-python-headless")
skimage_color = pytest.importorskip("skimage.color", reason="scikit-image is the reference")
torch = pytest.importorskip("torch")

SHAPE = (2, 3, 6, 5)


def images(seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).random(SHAPE).astype(np.float32)
    x[0, :, 0, 0] = 0.5  # a grey pixel: no hue
    x[0, :, 0, 1] = 0.0  # black: no saturation
    x[1, :, 1, 1] = (1.0, 0.0, 0.0)  # pure red
    return x


def per_image(convert, x: np.ndarray) -> np.ndarray:
    """An OpenCV / scikit-image conversion of HWC images, as (N, 3, H, W)."""
    return np.stack([convert(np.ascontiguousarray(im.transpose(1, 2, 0))).transpose(2, 0, 1)
                     for im in x])


def opencv(code: int):
    return lambda hwc: cv2.cvtColor(hwc, code)


def test_grey_matches_opencv(device):
    x = images()
    got = rgb_to_grayscale(pyburn.tensor(x, device=device))
    want = np.stack([cv2.cvtColor(im.transpose(1, 2, 0), cv2.COLOR_RGB2GRAY) for im in x])
    np.testing.assert_allclose(got.numpy()[:, 0], want, atol=1e-6)
    assert grayscale_to_rgb(got).shape == SHAPE


def test_hsv_matches_opencv_and_goes_back(device):
    x = images()
    hsv = rgb_to_hsv(pyburn.tensor(x, device=device))
    want = per_image(opencv(cv2.COLOR_RGB2HSV), x)
    np.testing.assert_allclose(hsv.numpy(), want, atol=1e-4)
    assert hsv.numpy()[0, :, 0, 0].tolist()[:2] == [0.0, 0.0]  # grey: hue and saturation 0
    np.testing.assert_allclose(hsv_to_rgb(hsv).numpy(), x, atol=1e-5)
    back = per_image(opencv(cv2.COLOR_HSV2RGB), hsv.numpy())
    np.testing.assert_allclose(hsv_to_rgb(hsv).numpy(), back, atol=1e-5)


def test_yuv_matches_opencv_less_its_offset_and_goes_back(device):
    x = images()
    yuv = rgb_to_yuv(pyburn.tensor(x, device=device))
    want = per_image(opencv(cv2.COLOR_RGB2YUV), x)
    want[:, 1:] -= 0.5  # OpenCV centres U and V on 0.5 for floats
    np.testing.assert_allclose(yuv.numpy(), want, atol=1e-5)
    np.testing.assert_allclose(yuv_to_rgb(yuv).numpy(), x, atol=1e-5)


def test_lab_matches_scikit_image_and_goes_back(device):
    x = images()
    lab = rgb_to_lab(pyburn.tensor(x, device=device))
    want = per_image(skimage_color.rgb2lab, x.astype(np.float64))
    np.testing.assert_allclose(lab.numpy(), want, atol=2e-3)
    np.testing.assert_allclose(lab_to_rgb(lab).numpy(), x, atol=1e-4)
    beyond = pyburn.tensor([[[[100.0]], [[120.0]], [[-120.0]]]], device=device)
    assert 0.0 <= lab_to_rgb(beyond).numpy().min() and lab_to_rgb(beyond).numpy().max() <= 1.0


def torch_lab(x):
    linear = torch.where(x > 0.04045, ((x.clamp(min=0.04045) + 0.055) / 1.055) ** 2.4, x / 12.92)
    m = torch.tensor([[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169],
                      [0.019334, 0.119193, 0.950227]], dtype=x.dtype)
    xyz = torch.einsum("ij,njhw->nihw", m, linear)
    xyz = xyz / torch.tensor([0.95047, 1.0, 1.08883], dtype=x.dtype).view(1, 3, 1, 1)
    e, k = 216 / 24389, 24389 / 27
    f = torch.where(xyz > e, xyz.clamp(min=e) ** (1 / 3), (k * xyz + 16) / 116)
    return torch.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]),
                        200 * (f[:, 1] - f[:, 2])], dim=1)


def torch_hsv(x):
    r, g, b = x.unbind(1)
    v = x.amax(1)
    spread = v - x.amin(1)
    safe = spread + 1e-8
    h = torch.where(r == v, torch.remainder((g - b) / safe, 6),
                    torch.where(g == v, (b - r) / safe + 2, (r - g) / safe + 4))
    return torch.stack([torch.where(spread > 0, h * 60, h * 0), spread / (v + 1e-8), v], 1)


def torch_yuv(x):
    r, g, b = x.unbind(1)
    y = 0.299 * r + 0.587 * g + 0.114 * b
    return torch.stack([y, 0.492 * (b - y), 0.877 * (r - y)], 1)


@pytest.mark.parametrize("ours, theirs", [(rgb_to_lab, torch_lab), (rgb_to_hsv, torch_hsv),
                                          (rgb_to_yuv, torch_yuv)],
                         ids=["lab", "hsv", "yuv"])
def test_gradients_match_torch_autograd(device, ours, theirs):
    x = images(1)
    # not black: saturation's derivative there is 1/eps, whose float32 products lose the
    # other terms (PyTorch's float64 keeps them)
    x[0, :, 0, 1] = 0.25
    weights = np.random.default_rng(2).standard_normal(SHAPE).astype(np.float32)
    grad_device = pyburn.device(device).autodiff()
    mine = pyburn.tensor(x, device=grad_device, requires_grad=True)
    (ours(mine) * pyburn.tensor(weights, device=grad_device)).sum().backward()
    reference = torch.tensor(x.astype(np.float64), requires_grad=True)
    (theirs(reference) * torch.tensor(weights.astype(np.float64))).sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=2e-3, atol=2e-3)


def test_images_without_three_channels_are_refused():
    with pytest.raises(pyburn.PyburnError, match=r"\(\.\.\., 3, H, W\)"):
        rgb_to_hsv(pyburn.zeros(2, 4, 4, 4, device="flex"))
