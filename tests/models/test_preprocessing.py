"""The zoo's image recipes applied (`pyburn.models.Preprocessing`), against the same steps in
PyTorch: ``torch.nn.functional.interpolate`` (torchvision's tensor resize without antialias),
the middle crop by torchvision's rounding, and the per-channel normalisation."""

from __future__ import annotations

import pytest

import pyburn
from pyburn.errors import ArgumentError, ShapeError
from pyburn.models import Preprocessing, entry

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def reference(images: np.ndarray, recipe: Preprocessing) -> np.ndarray:
    """`recipe` in PyTorch, on uint8 (N, C, H, W) images."""
    x = torch.from_numpy(images).double() / 255.0
    h, w = x.shape[2:]
    if recipe.keep_aspect:
        short = min(h, w)
        size = (recipe.resize * h // short, recipe.resize * w // short)
    else:
        size = (recipe.resize, recipe.resize)
    x = torch.nn.functional.interpolate(x, size=size, mode=recipe.interpolation,
                                        align_corners=False)
    if recipe.crop:
        top = int(round((size[0] - recipe.crop) / 2.0))
        left = int(round((size[1] - recipe.crop) / 2.0))
        x = x[:, :, top:top + recipe.crop, left:left + recipe.crop]
    mean = torch.tensor(recipe.mean, dtype=torch.float64).reshape(1, -1, 1, 1)
    std = torch.tensor(recipe.std, dtype=torch.float64).reshape(1, -1, 1, 1)
    return ((x - mean) / std).numpy()


@pytest.mark.parametrize("recipe, shape", [
    (Preprocessing(resize=20, crop=16, mean=MEAN, std=STD), (2, 3, 30, 45)),  # landscape
    (Preprocessing(resize=20, crop=17, mean=MEAN, std=STD, interpolation="bicubic"),
     (1, 3, 41, 27)),  # portrait, odd margins
    (Preprocessing(resize=24, mean=(0.5,) * 3, std=(0.5,) * 3, keep_aspect=False),
     (1, 3, 30, 50)),  # transformers' square resize
], ids=["bilinear-crop", "bicubic-crop", "square"])
@pytest.mark.parametrize("on", ["cpu", "flex"])
def test_recipe_is_pytorchs(recipe, shape, on):
    images = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    got = recipe(pyburn.tensor(images, device=on))
    np.testing.assert_allclose(np.asarray(got.tolist()), reference(images, recipe),
                               rtol=1e-5, atol=1e-5)
    assert got.dtype == pyburn.float32


def test_float_pixels_are_taken_in_unit_range_and_one_image_is_a_batch():
    recipe = Preprocessing(resize=8, crop=8, mean=MEAN, std=STD)
    images = np.random.default_rng(1).integers(0, 256, (3, 8, 8), dtype=np.uint8)
    as_bytes = recipe(pyburn.tensor(images, device="cpu"))
    as_floats = recipe(pyburn.tensor(images.astype(np.float32) / 255, device="cpu"))
    assert as_bytes.shape == (1, 3, 8, 8)
    np.testing.assert_allclose(as_bytes.numpy(), as_floats.numpy(), rtol=1e-6, atol=1e-6)


def test_the_zoo_carries_its_publishers_recipes():
    assert entry("efficientnet_b0").preprocessing.interpolation == "bicubic"
    assert entry("vit_tiny_patch16_224").preprocessing.interpolation == "bicubic"
    assert entry("resnet18").preprocessing.interpolation == "bilinear"
    square = entry("vit-base-patch16-224").preprocessing
    assert (square.resize, square.crop, square.keep_aspect) == (224, None, False)
    image = pyburn.zeros(3, 300, 400, dtype=pyburn.uint8, device="cpu")
    assert entry("resnet18").preprocessing(image).shape == (1, 3, 224, 224)
    assert square(image).shape == (1, 3, 224, 224)


def test_misuse_is_named():
    with pytest.raises(ArgumentError, match="interpolation must be one of nearest, bilinear, "
                                            "bicubic, got 'area'"):
        Preprocessing(interpolation="area")
    with pytest.raises(ArgumentError, match="mean has 3 values and std 1"):
        Preprocessing(mean=MEAN, std=(0.5,))
    recipe = Preprocessing(crop=10, mean=MEAN, std=STD)
    with pytest.raises(ShapeError, match="crops 10x10, the images are 8x12"):
        recipe(pyburn.zeros(1, 3, 8, 12, device="cpu"))
    with pytest.raises(ShapeError, match="normalises 3 channels, the images have 1"):
        Preprocessing(mean=MEAN, std=STD)(pyburn.zeros(1, 1, 4, 4, device="cpu"))
    with pytest.raises(ShapeError, match=r"\(C, H, W\) or \(N, C, H, W\), got shape \(4, 4\)"):
        recipe(pyburn.zeros(4, 4, device="cpu"))
    with pytest.raises(ArgumentError, match="tensor of images, got list"):
        recipe([[0.0]])
