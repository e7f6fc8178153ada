"""What a zoo model's inputs need before the model sees them, as data and as a function:
`Preprocessing` holds the recipe its publisher trained with (torchvision's, timm's or
transformers' resize, crop and normalisation) and applies it to a batch of images.

>>> import pyburn
>>> recipe = Preprocessing(resize=4, crop=2, mean=(0.5,), std=(0.5,))
>>> image = pyburn.full((1, 4, 6), 255, dtype=pyburn.uint8, device="flex")
>>> recipe(image).shape, recipe(image).tolist()[0][0][0]
((1, 1, 2, 2), [1.0, 1.0])
"""

from __future__ import annotations

from dataclasses import dataclass

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..nn.functional.sampling import interpolate
from ..ops.creation import tensor

#: how images may be resized (`pyburn.nn.functional.interpolate`'s modes)
INTERPOLATIONS = ("nearest", "bilinear", "bicubic")


@dataclass(frozen=True)
class Preprocessing:
    """An image recipe: resize so that the shorter side is `resize` (the other in
    proportion, rounded down, as torchvision does), or to `resize` x `resize` when
    `keep_aspect` is False (transformers' image processors); cut `crop` x `crop` from the
    middle; scale to [0, 1] (integer pixels are divided by 255, float ones are taken to be
    in [0, 1] already); subtract `mean` and divide by `std` per channel. A field left empty
    skips its step; text models have none (their tokenizer is their preprocessing).

    Calling it applies the recipe to (C, H, W) or (N, C, H, W) images and gives float
    (N, C, crop, crop). Resizing interpolates without antialiasing (as
    ``torch.nn.functional.interpolate`` does by default; PIL and torchvision's tensor
    ``Resize`` antialias when they shrink), so pictures much larger than `resize` come out a
    little sharper than the publisher's pipeline makes them."""

    resize: int | None = None
    crop: int | None = None
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()
    interpolation: str = "bilinear"
    keep_aspect: bool = True

    def __post_init__(self) -> None:
        if self.interpolation not in INTERPOLATIONS:
            raise ArgumentError(f"Preprocessing: interpolation must be one of "
                                f"{', '.join(INTERPOLATIONS)}, got {self.interpolation!r}")
        if len(self.mean) != len(self.std):
            raise ArgumentError(f"Preprocessing: mean has {len(self.mean)} values and std "
                                f"{len(self.std)}; give one of each per channel")

    def __call__(self, images: Tensor) -> Tensor:
        """`images` preprocessed: float (N, C, crop, crop) (or the resized size)."""
        if not isinstance(images, Tensor):
            raise ArgumentError(f"Preprocessing takes a tensor of images, got "
                                f"{type(images).__name__}")
        if images.ndim not in (3, 4):
            raise ShapeError(f"Preprocessing takes images (C, H, W) or (N, C, H, W), got "
                             f"shape {images.shape}")
        x = images if images.ndim == 4 else images.unsqueeze(0)
        x = x.float() / 255.0 if not x.dtype.is_floating_point else x.float()
        if self.resize is not None:
            x = self._resized(x)
        if self.crop is not None:
            x = self._cropped(x)
        if self.mean:
            if len(self.mean) != x.shape[1]:
                raise ShapeError(f"Preprocessing normalises {len(self.mean)} channels, the "
                                 f"images have {x.shape[1]}")
            view = (1, len(self.mean), 1, 1)
            mean = tensor(list(self.mean), device=x.device).reshape(view)
            std = tensor(list(self.std), device=x.device).reshape(view)
            x = (x - mean) / std
        return x

    def _resized(self, x: Tensor) -> Tensor:
        h, w = x.shape[2:]
        side = self.resize
        assert side is not None
        if not self.keep_aspect:
            size = (side, side)
        elif h <= w:
            size = (side, int(side * w / h))
        else:
            size = (int(side * h / w), side)
        if size == (h, w):
            return x
        corners = None if self.interpolation == "nearest" else False
        return interpolate(x, size=size, mode=self.interpolation, align_corners=corners)

    def _cropped(self, x: Tensor) -> Tensor:
        h, w = x.shape[2:]
        crop = self.crop
        assert crop is not None
        if crop > h or crop > w:
            raise ShapeError(f"Preprocessing crops {crop}x{crop}, the images are {h}x{w}: "
                             f"resize them first (resize >= crop)")
        top, left = int(round((h - crop) / 2.0)), int(round((w - crop) / 2.0))
        return x[:, :, top:top + crop, left:left + crop]
