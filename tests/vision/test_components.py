"""`pyburn.vision.components` on every device against scipy.ndimage (labels, areas, boxes,
centroids) and OpenCV (connectedComponentsWithStats): random images, a long spiral (many
rounds of spreading), empty images; and the pipeline end to end, threshold, morphology,
components, on an image of blobs whose count and boxes are known."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.vision.components import connected_components, connected_components_with_stats
from pyburn.vision.filters import gaussian_blur2d
from pyburn.vision.morphology import opening

ndimage = pytest.importorskip("scipy.ndimage")
cv2 = pytest.importorskip("cv2", reason="OpenCV is a reference: opencv-python-headless")

STRUCTURES = {4: ndimage.generate_binary_structure(2, 1), 8: np.ones((3, 3), bool)}


def spiral(size: int) -> np.ndarray:
    """A one-pixel-wide spiral: one component whose far end is many steps away."""
    image = np.zeros((size, size), bool)
    top, left, bottom, right = 0, 0, size - 1, size - 1
    while top <= bottom and left <= right:
        image[top, left:right + 1] = True
        image[top:bottom + 1, right] = True
        image[bottom, left:right + 1] = True
        image[top + 2:bottom + 1, left] = True
        top, left, bottom, right = top + 2, left + 2, bottom - 2, right - 2
        if top <= bottom:
            image[top - 1, left] = True
    return image


@pytest.mark.parametrize("connectivity", [4, 8])
def test_labels_and_stats_match_scipy(device, connectivity):
    images = np.random.default_rng(connectivity).random((3, 17, 21)) > 0.55
    images[2] = False  # an empty image
    labels, stats = connected_components_with_stats(pyburn.tensor(images, device=device),
                                                    connectivity)
    assert labels.dtype is pyburn.int32
    for k, image in enumerate(images):
        want, count = ndimage.label(image, structure=STRUCTURES[connectivity])
        np.testing.assert_array_equal(labels.numpy()[k], want)
        assert stats.count.tolist()[k] == count
        if not count:
            continue
        ones = np.ones_like(want)
        area = ndimage.sum(ones, want, range(1, count + 1))
        boxes = [[o[1].start, o[0].start, o[1].stop - 1, o[0].stop - 1]
                 for o in ndimage.find_objects(want)]
        centroids = np.array(ndimage.center_of_mass(ones, want, range(1, count + 1)))[:, ::-1]
        np.testing.assert_array_equal(stats.area.numpy()[k, :count], area)
        np.testing.assert_array_equal(stats.boxes.numpy()[k, :count], boxes)
        np.testing.assert_allclose(stats.centroids.numpy()[k, :count], centroids, atol=1e-4)
        assert not stats.area.numpy()[k, count:].any()


def test_a_long_spiral_is_one_component_and_opencv_agrees(device):
    image = spiral(31)
    labels = connected_components(pyburn.tensor(image, device=device), connectivity=4)
    assert set(np.unique(labels.numpy())) == {0, 1}
    count, want = cv2.connectedComponents(image.astype(np.uint8), connectivity=4)
    assert count == 2 and (labels.numpy()[0] == want).all()


def test_threshold_morphology_components_on_blobs(device):
    rng = np.random.default_rng(7)
    canvas = np.zeros((1, 1, 64, 80), np.float32)
    centres = [(12, 14), (40, 20), (20, 55), (50, 65), (30, 38)]
    yy, xx = np.mgrid[0:64, 0:80]
    for cy, cx in centres:
        canvas[0, 0][(yy - cy) ** 2 + (xx - cx) ** 2 <= 36] = 1.0
    noisy = canvas + rng.normal(0, 0.15, canvas.shape).astype(np.float32)
    noisy[0, 0, rng.integers(0, 64, 12), rng.integers(0, 80, 12)] = 1.0  # salt
    image = pyburn.tensor(noisy, device=device)
    mask = gaussian_blur2d(image, 3, 0.8) > 0.5
    cleaned = opening(mask, pyburn.ones(3, 3, device=device))
    labels, stats = connected_components_with_stats(cleaned[:, 0])
    assert stats.count.tolist() == [5]
    boxes = sorted(tuple(b) for b in stats.boxes.numpy()[0].tolist())
    want = sorted((cx - 6.0, cy - 6.0, cx + 6.0, cy + 6.0) for cy, cx in centres)
    assert all(abs(g - w) <= 1 for got, wanted in zip(boxes, want)
               for g, w in zip(got, wanted))


def test_bad_arguments_are_refused():
    with pytest.raises(pyburn.PyburnError, match="4 or 8"):
        connected_components(pyburn.zeros(2, 2, device="flex"), connectivity=6)
    with pytest.raises(pyburn.PyburnError, match=r"\(N, H, W\)"):
        connected_components(pyburn.zeros(1, 1, 2, 2, device="flex"))
