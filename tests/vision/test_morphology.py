"""`pyburn.vision.morphology` on every device against OpenCV (erode, dilate, morphologyEx)
and scipy.ndimage (grey_erosion), on bytes, floats and bools, with a structuring element
that is not symmetric, an anchor off centre and several iterations."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.vision.morphology import (
    black_hat,
    closing,
    dilate,
    erode,
    morphological_gradient,
    opening,
    top_hat,
)

cv2 = pytest.importorskip("cv2", reason="OpenCV is the reference: opencv-python-headless")
ndimage = pytest.importorskip("scipy.ndimage")

RNG = np.random.default_rng(0)
BYTES = (RNG.random((2, 2, 12, 13)) * 255).astype(np.uint8)
FLOATS = RNG.random((2, 2, 12, 13)).astype(np.float32)
ELEMENT = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 1]], np.uint8)
COMPOSED = {opening: cv2.MORPH_OPEN, closing: cv2.MORPH_CLOSE,
            morphological_gradient: cv2.MORPH_GRADIENT, top_hat: cv2.MORPH_TOPHAT,
            black_hat: cv2.MORPH_BLACKHAT}


def opencv(images: np.ndarray, function) -> np.ndarray:
    return np.stack([np.stack([function(channel) for channel in image]) for image in images])


@pytest.mark.parametrize("images", [BYTES, FLOATS], ids=["uint8", "float32"])
def test_erode_and_dilate_match_opencv(device, images):
    t, element = pyburn.tensor(images, device=device), pyburn.tensor(ELEMENT, device=device)
    np.testing.assert_array_equal(
        dilate(t, element, iterations=2).numpy(),
        opencv(images, lambda c: cv2.dilate(c, ELEMENT, iterations=2)))
    np.testing.assert_array_equal(  # OpenCV's anchor is (x, y), pyburn's (row, column)
        erode(t, element, anchor=(0, 1)).numpy(),
        opencv(images, lambda c: cv2.erode(c, ELEMENT, anchor=(1, 0))))


@pytest.mark.parametrize("images", [BYTES, FLOATS], ids=["uint8", "float32"])
@pytest.mark.parametrize("op", list(COMPOSED), ids=lambda op: op.__name__)
def test_composed_operations_match_opencv(device, images, op):
    got = op(pyburn.tensor(images, device=device), pyburn.tensor(ELEMENT, device=device))
    want = opencv(images, lambda c: cv2.morphologyEx(c, COMPOSED[op], ELEMENT))
    np.testing.assert_allclose(got.numpy(), want, atol=1e-6)


def test_bool_images_and_scipys_greyscale_erosion(device):
    masks = BYTES > 128
    got = dilate(pyburn.tensor(masks, device=device), pyburn.tensor(ELEMENT, device=device))
    assert got.dtype is pyburn.bool
    want = opencv(masks.astype(np.uint8), lambda c: cv2.dilate(c, ELEMENT)) > 0
    np.testing.assert_array_equal(got.numpy(), want)
    square = np.ones((3, 5), np.uint8)
    got = erode(pyburn.tensor(FLOATS, device=device), pyburn.tensor(square, device=device))
    want = ndimage.grey_erosion(FLOATS, footprint=square[None, None], mode="constant",
                                cval=np.inf)
    np.testing.assert_array_equal(got.numpy(), want)


def test_bad_elements_are_refused():
    image = pyburn.zeros(1, 1, 4, 4, device="flex")
    with pytest.raises(pyburn.PyburnError, match="nowhere"):
        dilate(image, pyburn.zeros(3, 3, device="flex"))
    with pytest.raises(pyburn.PyburnError, match=r"\(kh, kw\)"):
        erode(image, pyburn.ones(3, device="flex"))
