"""`pyburn.vision.augment` on every device: the parameters are the same on every device for a
seed; images, masks, boxes and keypoints move together (flips against numpy, affine maps
against OpenCV's warpPerspective with the recorded map); `inverse` takes them back; colour
jitter against numpy with the recorded factors; normalize and erasing."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.vision.augment import (
    ColorJitter,
    Compose,
    Normalize,
    RandomAffine,
    RandomErasing,
    RandomHorizontalFlip,
    RandomResizedCrop,
    RandomVerticalFlip,
)

cv2 = pytest.importorskip("cv2", reason="OpenCV is the reference: opencv-python-headless")

RNG = np.random.default_rng(0)
IMAGES = RNG.random((2, 3, 20, 24)).astype(np.float32)
BOXES = np.array([[[2, 3, 10, 12], [5, 5, 20, 18]]] * 2, np.float32)
POINTS = np.array([[[4, 4], [15, 10], [23, 19]]] * 2, np.float32)
MASKS = RNG.random((2, 1, 20, 24)) > 0.5
_ys, _xs = np.mgrid[0:20, 0:24]
#: smooth images: warping there and back blurs noise, not these
SMOOTH = np.stack([np.stack([0.5 + 0.4 * np.sin(_xs / (4 + c) + _ys / 5 + n)
                             for c in range(3)]) for n in range(2)]).astype(np.float32)


def sample(device) -> dict:
    return {"image": pyburn.tensor(IMAGES, device=device),
            "boxes": pyburn.tensor(BOXES, device=device),
            "keypoints": pyburn.tensor(POINTS, device=device),
            "masks": pyburn.tensor(MASKS, device=device)}


def moved(points: np.ndarray, maps: np.ndarray) -> np.ndarray:
    homogeneous = np.concatenate([points, np.ones((*points.shape[:2], 1))], axis=-1)
    out = homogeneous @ maps.transpose(0, 2, 1)
    return out[..., :2] / out[..., 2:]


def test_flips_move_everything_together(device):
    out = Compose([RandomHorizontalFlip(1.0), RandomVerticalFlip(1.0)])(sample(device))
    np.testing.assert_allclose(out["image"].numpy(), IMAGES[:, :, ::-1, ::-1], atol=1e-5)
    np.testing.assert_array_equal(out["masks"].numpy(), MASKS[:, :, ::-1, ::-1])
    np.testing.assert_allclose(out["keypoints"].numpy(), [23, 19] - POINTS, atol=1e-5)
    flipped = np.stack([23 - BOXES[..., 2], 19 - BOXES[..., 3], 23 - BOXES[..., 0],
                        19 - BOXES[..., 1]], axis=-1)
    np.testing.assert_allclose(out["boxes"].numpy(), flipped, atol=1e-5)


def test_affine_maps_match_opencv_and_the_seed_gives_them_on_every_device(device):
    augment = Compose([RandomHorizontalFlip(0.5), RandomAffine(20, (0.1, 0.1), (0.8, 1.2), 8)])
    pyburn.manual_seed(11)
    reference = Compose(augment.transforms)
    reference(sample("cpu"))
    pyburn.manual_seed(11)
    out = augment(sample(device))
    maps = augment.matrices.numpy()
    np.testing.assert_allclose(maps, reference.matrices.numpy(), rtol=1e-6, atol=1e-5)
    want = np.stack([np.stack([cv2.warpPerspective(channel, maps[i], (24, 20))
                               for channel in image]) for i, image in enumerate(IMAGES)])
    np.testing.assert_allclose(out["image"].numpy(), want, atol=1e-4)
    np.testing.assert_allclose(out["keypoints"].numpy(), moved(POINTS, maps), atol=1e-4)
    corners = np.stack([BOXES[..., [0, 1]], BOXES[..., [2, 1]], BOXES[..., [0, 3]],
                        BOXES[..., [2, 3]]], axis=2).reshape(2, 8, 2)
    around = moved(corners, maps).reshape(2, 2, 4, 2)
    np.testing.assert_allclose(out["boxes"].numpy(),
                               np.concatenate([around.min(2), around.max(2)], -1), atol=1e-4)


def test_inverse_takes_everything_back(device):
    pyburn.manual_seed(5)
    augment = Compose([RandomAffine(10, (0.05, 0.05)), Normalize([0.5, 0.4, 0.3], [0.2] * 3),
                       RandomHorizontalFlip(1.0)])
    smooth = {**sample(device), "image": pyburn.tensor(SMOOTH, device=device)}
    back = augment.inverse(augment(smooth))
    np.testing.assert_allclose(back["keypoints"].numpy(), POINTS, atol=1e-3)
    inner = (slice(None), slice(None), slice(6, 14), slice(7, 17))  # away from what fell out
    np.testing.assert_allclose(back["image"].numpy()[inner], SMOOTH[inner], atol=0.05)
    flips = Compose([RandomHorizontalFlip(1.0), Normalize([0.5] * 3, [0.25] * 3)])
    exact = flips.inverse(flips(sample(device)))
    np.testing.assert_allclose(exact["image"].numpy(), IMAGES, atol=1e-5)
    np.testing.assert_allclose(exact["boxes"].numpy(), BOXES, atol=1e-5)


def test_resized_crops_change_the_size_and_come_back(device):
    pyburn.manual_seed(2)
    augment = Compose([RandomResizedCrop((10, 12), scale=(0.3, 0.6)), RandomHorizontalFlip()])
    out = augment(sample(device))
    assert out["image"].shape == (2, 3, 10, 12) and out["masks"].shape == (2, 1, 10, 12)
    maps = augment.matrices.numpy()
    want = np.stack([np.stack([cv2.warpPerspective(channel, maps[i], (12, 10))
                               for channel in image]) for i, image in enumerate(IMAGES)])
    np.testing.assert_allclose(out["image"].numpy(), want, atol=1e-4)
    # the crop is a part of the image: its corners land inside the source
    corners = moved(np.array([[[0, 0], [11, 9]]] * 2, np.float32), np.linalg.inv(maps))
    assert (corners >= -1e-3).all() and (corners[..., 0] <= 23.001).all()
    back = augment.inverse(out)
    assert back["image"].shape == (2, 3, 20, 24)
    np.testing.assert_allclose(back["keypoints"].numpy(), POINTS, atol=1e-3)


def test_color_jitter_applies_the_recorded_factors(device):
    jitter = ColorJitter(brightness=0.3, contrast=0.3, saturation=0.3)
    out = Compose([jitter])(sample(device))["image"].numpy()
    want = []
    for image, (b, c, s, _) in zip(IMAGES, jitter.drawn):
        x = np.clip(image * b, 0, 1)
        grey = 0.299 * x[0] + 0.587 * x[1] + 0.114 * x[2]
        x = np.clip((x - grey.mean()) * c + grey.mean(), 0, 1)
        grey = 0.299 * x[0] + 0.587 * x[1] + 0.114 * x[2]
        want.append(np.clip((x - grey) * s + grey, 0, 1))
    np.testing.assert_allclose(out, np.stack(want), atol=1e-5)


def test_erasing_blanks_one_rectangle_per_sample(device):
    out = Compose([RandomErasing((4, 5), p=1.0, value=-1.0)])(sample(device))["image"].numpy()
    assert ((out == -1.0).sum(axis=(2, 3)) == 20).all()


def test_bad_samples_are_refused():
    with pytest.raises(pyburn.PyburnError, match=r"\(N, C, H, W\)"):
        Compose([RandomHorizontalFlip()])({"image": pyburn.zeros(3, 4, device="flex")})
    with pytest.raises(pyburn.PyburnError, match="call the Compose first"):
        Compose([]).inverse({"image": pyburn.zeros(1, 1, 2, 2, device="flex")})
