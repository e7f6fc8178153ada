"""Random augmentations applied jointly to a batch's images and what is drawn on them: boxes,
masks and keypoints, with an `inverse`. Each transform draws one set of parameters per
sample from pyburn's generator (``pyburn.rand`` on the images' device: the same numbers on
every device for the same seed) and records them, so `Compose.inverse` undoes the last call.

A sample is a dict: ``"image"`` (N, C, H, W) floats, and optionally ``"boxes"`` (N, K, 4)
corners (x1, y1, x2, y2), ``"masks"`` (N, M, H, W) and ``"keypoints"`` (N, P, 2) as (x, y).
Geometric transforms are 3 x 3 maps from source to destination pixels: the image is warped
bilinearly and the masks by nearest pixel (`geometry.warp_perspective`), keypoints move by
the map and boxes become the box around their four moved corners. Photometric transforms
change the image alone.

>>> import pyburn
>>> flip = Compose([RandomHorizontalFlip(p=1.0)])
>>> out = flip({"image": pyburn.arange(3.0, device="flex").reshape(1, 1, 1, 3),
...             "keypoints": pyburn.tensor([[[0.0, 0.0]]], device="flex")})
>>> out["image"].reshape(3).tolist(), out["keypoints"].tolist()
([2.0, 1.0, 0.0], [[[2.0, 0.0]]])
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..ops.creation import ones, tensor
from ..ops.math_ops import where
from ..ops.movement import cat, stack
from ..ops.random_tensors import rand
from .color import hsv_to_rgb, rgb_to_grayscale, rgb_to_hsv
from .geometry import _inverse3, warp_perspective

Sample = dict[str, Tensor]


def _uniform(count: int, low: float, high: float, device: Any) -> list[float]:
    """`count` draws from [low, high) of pyburn's generator."""
    return [low + (high - low) * v for v in rand(count, device=device).tolist()]


class Transform(ABC):
    """One augmentation: photometric ones change the image when called (drawing and
    recording their parameters); geometric ones (`Geometric`) give maps that `Compose`
    applies to every part of the sample."""

    @abstractmethod
    def __call__(self, sample: Sample) -> Sample:
        """`sample` changed by this transform, with parameters drawn now."""


class Geometric(Transform):
    """A transform that is a 3 x 3 map per sample; `draw` makes them, for images of
    (height, width), into images of `output_size` of that (default: the same size)."""

    @abstractmethod
    def draw(self, count: int, height: int, width: int, device: Any) -> list[list[float]]:
        """One row-major 3 x 3 source-to-destination map per sample."""

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """The (height, width) of what this transform makes of images of (height, width)."""
        return height, width

    def __call__(self, sample: Sample) -> Sample:
        """`sample` through this transform alone (as a Compose of one)."""
        return Compose([self])(sample)


class _Flip(Geometric):
    """Mirror along x (`vertical` False) or y with probability `p`."""

    vertical = False

    def __init__(self, p: float = 0.5):
        self.p = p

    def draw(self, count: int, height: int, width: int, device: Any) -> list[list[float]]:
        flips = [v < self.p for v in _uniform(count, 0.0, 1.0, device)]
        if self.vertical:
            mirror = [1.0, 0.0, 0.0, 0.0, -1.0, height - 1.0, 0.0, 0.0, 1.0]
        else:
            mirror = [-1.0, 0.0, width - 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        return [mirror if f else _IDENTITY for f in flips]


class RandomHorizontalFlip(_Flip):
    """Mirror left to right with probability `p`."""


class RandomVerticalFlip(_Flip):
    """Mirror top to bottom with probability `p`."""

    vertical = True


class RandomAffine(Geometric):
    """A rotation by up to `degrees` either way, a scale in `scale` (low, high), a shear of
    up to `shear` degrees along x and a translation of up to `translate` (fraction of width,
    of height), about the image's centre."""

    def __init__(self, degrees: float = 0.0, translate: tuple[float, float] = (0.0, 0.0),
                 scale: tuple[float, float] = (1.0, 1.0), shear: float = 0.0):
        self.degrees, self.translate, self.scale, self.shear = degrees, translate, scale, shear

    def draw(self, count: int, height: int, width: int, device: Any) -> list[list[float]]:
        angles = _uniform(count, -self.degrees, self.degrees, device)
        scales = _uniform(count, self.scale[0], self.scale[1], device)
        shears = _uniform(count, -self.shear, self.shear, device)
        moves_x = _uniform(count, -self.translate[0], self.translate[0], device)
        moves_y = _uniform(count, -self.translate[1], self.translate[1], device)
        cx, cy = (width - 1) / 2, (height - 1) / 2
        maps = []
        for angle, s, shear, mx, my in zip(angles, scales, shears, moves_x, moves_y):
            a, k = math.radians(angle), math.tan(math.radians(shear))
            cos, sin = math.cos(a) * s, math.sin(a) * s
            # rotation and scale, then shear along x: [[1, k], [0, 1]] @ [[cos, -sin], [sin, cos]]
            m00, m01 = cos + k * sin, -sin + k * cos
            m10, m11 = sin, cos
            tx = cx - m00 * cx - m01 * cy + mx * width
            ty = cy - m10 * cx - m11 * cy + my * height
            maps.append([m00, m01, tx, m10, m11, ty, 0.0, 0.0, 1.0])
        return maps


class RandomResizedCrop(Geometric):
    """A random part of each image, of `scale` (low, high) of its area and `ratio` (low, high)
    width over height (both drawn on a log scale for the ratio), stretched to `size`
    (height, width); a part that would not fit is the largest centred one of that ratio."""

    def __init__(self, size: tuple[int, int], scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3 / 4, 4 / 3)):
        self.size, self.scale, self.ratio = size, scale, ratio

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        return self.size

    def draw(self, count: int, height: int, width: int, device: Any) -> list[list[float]]:
        areas = _uniform(count, self.scale[0], self.scale[1], device)
        logs = _uniform(count, math.log(self.ratio[0]), math.log(self.ratio[1]), device)
        places = _uniform(2 * count, 0.0, 1.0, device)
        out_h, out_w = self.size
        maps = []
        for k, (area, log_ratio) in enumerate(zip(areas, logs)):
            ratio = math.exp(log_ratio)
            w = math.sqrt(area * height * width * ratio)
            h = math.sqrt(area * height * width / ratio)
            if w > width or h > height:  # the largest part of that ratio, centred
                w, h = min(width, height * ratio), min(height, width / ratio)
            left = (width - w) * places[2 * k]
            top = (height - h) * places[2 * k + 1]
            # pixel centres: the part's first and last pixel go to the output's
            sx, sy = (out_w - 1) / max(w - 1, 1e-6), (out_h - 1) / max(h - 1, 1e-6)
            maps.append([sx, 0.0, -left * sx, 0.0, sy, -top * sy, 0.0, 0.0, 1.0])
        return maps


class ColorJitter(Transform):
    """Brightness, contrast and saturation factors drawn from [1 - v, 1 + v] and a hue shift
    from [-hue, hue] (a fraction of the colour wheel), applied in that order to RGB images
    in [0, 1], clipped to [0, 1]."""

    def __init__(self, brightness: float = 0.0, contrast: float = 0.0, saturation: float = 0.0,
                 hue: float = 0.0):
        if not 0 <= hue <= 0.5:
            raise ArgumentError(f"hue is a fraction of the colour wheel in [0, 0.5], got {hue}")
        self.brightness, self.contrast, self.saturation, self.hue = \
            brightness, contrast, saturation, hue
        #: the factors of the last call: (brightness, contrast, saturation, hue) per sample
        self.drawn: list[tuple[float, float, float, float]] = []

    def __call__(self, sample: Sample) -> Sample:
        image = sample["image"]
        count, device = image.shape[0], image.device
        draws = [_uniform(count, 1 - v, 1 + v, device) for v in
                 (self.brightness, self.contrast, self.saturation)]
        hues = _uniform(count, -self.hue, self.hue, device)
        self.drawn = list(zip(*draws, hues))

        def per_sample(values: list[float]) -> Tensor:
            return tensor(values, device=device, dtype=image.dtype).reshape(count, 1, 1, 1)
        out = (image * per_sample(draws[0])).clamp(0, 1)
        mean = rgb_to_grayscale(out).mean(dim=(1, 2, 3), keepdim=True)
        out = ((out - mean) * per_sample(draws[1]) + mean).clamp(0, 1)
        grey = rgb_to_grayscale(out)
        out = ((out - grey) * per_sample(draws[2]) + grey).clamp(0, 1)
        if self.hue:
            hsv = rgb_to_hsv(out)
            shifted = (hsv[:, :1] + per_sample(hues) * 360) % 360
            out = hsv_to_rgb(cat([shifted, hsv[:, 1:]], dim=1)).clamp(0, 1)
        return {**sample, "image": out}


class Normalize(Transform):
    """``(image - mean) / std`` per channel; undone by `Compose.inverse`."""

    def __init__(self, mean: Sequence[float], std: Sequence[float]):
        self.mean, self.std = list(mean), list(std)

    def _shaped(self, values: list[float], image: Tensor) -> Tensor:
        if len(values) != image.shape[1]:
            raise ShapeError(f"Normalize has {len(values)} channels' values, the images "
                             f"{image.shape[1]} channels")
        return tensor(values, device=image.device, dtype=image.dtype).reshape(1, -1, 1, 1)

    def __call__(self, sample: Sample) -> Sample:
        image = sample["image"]
        return {**sample, "image": (image - self._shaped(self.mean, image)) /
                self._shaped(self.std, image)}

    def undo(self, sample: Sample) -> Sample:
        """The image before `__call__`."""
        image = sample["image"]
        return {**sample, "image": image * self._shaped(self.std, image) +
                self._shaped(self.mean, image)}


class RandomErasing(Transform):
    """With probability `p`, a rectangle of `size` (height, width) at a random place set to
    `value` in every channel (cutout); not undone by `inverse`."""

    def __init__(self, size: tuple[int, int], p: float = 0.5, value: float = 0.0):
        self.size, self.p, self.value = size, p, value

    def __call__(self, sample: Sample) -> Sample:
        image = sample["image"]
        count, _, height, width = image.shape
        device = image.device
        hit = [v < self.p for v in _uniform(count, 0.0, 1.0, device)]
        tops = [int(v) for v in _uniform(count, 0, max(height - self.size[0], 0) + 1, device)]
        lefts = [int(v) for v in _uniform(count, 0, max(width - self.size[1], 0) + 1, device)]
        rows = tensor(list(range(height)), device=device).reshape(1, 1, height, 1)
        cols = tensor(list(range(width)), device=device).reshape(1, 1, 1, width)

        def per_sample(values: list[int]) -> Tensor:
            return tensor(values, device=device).reshape(count, 1, 1, 1)
        top, left, on = per_sample(tops), per_sample(lefts), per_sample([int(h) for h in hit])
        inside = ((rows >= top).logical_and(rows < top + self.size[0])
                  .logical_and(cols >= left).logical_and(cols < left + self.size[1])
                  .logical_and(on > 0))
        return {**sample, "image": where(inside, self.value, image)}


_IDENTITY = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]


class Compose:
    """`transforms` in turn, applied jointly to a sample's image, boxes, masks and
    keypoints; `inverse` undoes the geometric maps and normalizations of the last call."""

    def __init__(self, transforms: Sequence[Transform]):
        self.transforms = list(transforms)
        #: the last call's composed map per sample (N, 3, 3), source to destination
        self.matrices: Tensor | None = None
        self._size: tuple[int, int] | None = None

    def __call__(self, sample: Sample) -> Sample:
        image = sample.get("image")
        if not isinstance(image, Tensor) or image.ndim != 4:
            raise ShapeError(f"a sample's image is (N, C, H, W), got "
                             f"{getattr(image, 'shape', type(image).__name__)}")
        count, _, height, width = image.shape
        self._size = (height, width)
        size = self._size  # what the images become after the maps drawn so far
        total = pending = None  # every map so far; those not applied yet
        out = dict(sample)
        for transform in self.transforms:
            if isinstance(transform, Geometric):
                rows = transform.draw(count, *size, image.device)
                size = transform.output_size(*size)
                maps = tensor(rows, device=image.device).reshape(count, 3, 3)
                pending = maps if pending is None else maps @ pending
                total = maps if total is None else maps @ total
                continue
            if pending is not None:  # consecutive maps: one warp, one interpolation
                out, pending = _move(out, pending, size), None
            out = transform(out)
        if pending is not None:
            out = _move(out, pending, size)
        eye = tensor(_IDENTITY, device=image.device).reshape(1, 3, 3).expand(count, 3, 3)
        self.matrices = eye if total is None else total
        return out

    def inverse(self, sample: Sample) -> Sample:
        """`sample` taken back through the last call's normalizations and maps (colour
        changes and erasures stay)."""
        if self.matrices is None or self._size is None:
            raise ArgumentError("inverse undoes the last call: call the Compose first")
        out = dict(sample)
        for transform in reversed(self.transforms):
            if isinstance(transform, Normalize):
                out = transform.undo(out)
        return _move(out, _inverse3(self.matrices), self._size)


def _move(sample: Sample, maps: Tensor, size: tuple[int, int] | None = None) -> Sample:
    """Every part of `sample` through `maps` (N, 3, 3), source to destination; the images
    and masks into `size` (default: their own)."""
    out = dict(sample)
    image = sample["image"]
    size = size or (image.shape[2], image.shape[3])
    out["image"] = warp_perspective(image, maps, size)
    if "masks" in sample:
        masks = sample["masks"]
        out["masks"] = warp_perspective(masks.float(), maps, size, mode="nearest").to(
            masks.dtype)
    if "keypoints" in sample:
        out["keypoints"] = _points(sample["keypoints"], maps)
    if "boxes" in sample:
        boxes = sample["boxes"]
        x1, y1, x2, y2 = (boxes[..., k] for k in range(4))
        corners = stack([stack(pair, dim=-1) for pair in
                         ((x1, y1), (x2, y1), (x1, y2), (x2, y2))], dim=2)  # (N, K, 4, 2)
        count, k = boxes.shape[:2]
        moved = _points(corners.reshape(count, k * 4, 2), maps).reshape(count, k, 4, 2)
        out["boxes"] = cat([moved.amin(dim=2), moved.amax(dim=2)], dim=-1)
    return out


def _points(points: Tensor, maps: Tensor) -> Tensor:
    """(N, P, 2) points through `maps` (N, 3, 3)."""
    count, many = points.shape[:2]
    homogeneous = cat([points.float(), ones(count, many, 1, device=points.device)], dim=-1)
    moved = homogeneous @ maps.mT
    return moved[..., :2] / moved[..., 2:]
