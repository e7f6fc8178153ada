"""`pyburn.vision.edges.canny` on every device against OpenCV's Canny, pixel for pixel: a
blurred noise image and shapes, L1 and L2 gradients, two pairs of thresholds (swapped ones
put in order), an image with no edge."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.vision.edges import canny

cv2 = pytest.importorskip("cv2", reason="OpenCV is the reference: opencv-python-headless")


def images() -> np.ndarray:
    noise = (np.random.default_rng(0).random((40, 50)) * 255).astype(np.uint8)
    shapes = np.zeros((40, 50), np.uint8)
    cv2.circle(shapes, (25, 20), 12, 200, -1)
    cv2.rectangle(shapes, (3, 3), (15, 30), 120, -1)
    flat = np.full((40, 50), 90, np.uint8)
    return np.stack([cv2.GaussianBlur(noise, (5, 5), 1.5), cv2.GaussianBlur(shapes, (3, 3), 0.8),
                     flat])


@pytest.mark.parametrize("l2", [False, True], ids=["l1", "l2"])
@pytest.mark.parametrize("low, high", [(20, 60), (50, 150)])
def test_canny_equals_opencvs(device, l2, low, high):
    x = images()
    got = canny(pyburn.tensor(x[:, None], device=device), low, high, l2_gradient=l2)
    want = np.stack([cv2.Canny(image, low, high, L2gradient=l2) for image in x])
    np.testing.assert_array_equal(got.numpy()[:, 0], want)
    assert got.numpy()[2].max() == 0  # a flat image has no edge


def test_swapped_thresholds_are_put_in_order():
    x = pyburn.tensor(images()[:2, None], device="cpu")
    assert canny(x, 150, 50).tolist() == canny(x, 50, 150).tolist()


def test_bad_input_is_refused():
    with pytest.raises(pyburn.PyburnError, match="uint8"):
        canny(pyburn.zeros(1, 1, 4, 4, device="flex"), 10, 20)
    with pytest.raises(pyburn.PyburnError, match="negative"):
        canny(pyburn.zeros(1, 1, 4, 4, dtype=pyburn.uint8, device="flex"), -1, 20)
