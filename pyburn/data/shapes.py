"""`ShapesDataset`: generated images of one coloured shape each (a circle, a square, a triangle
or a five-pointed star) on a plain background of another colour, labelled by the shape: a
classification task with no download, small enough to learn in seconds.

Each item's shape, place, size, rotation, fill or outline and colours are uniform draws of
the Philox stream of the dataset's seed, from word ``i * 2**32`` on for item ``i`` (as in
`FakeDataset`), so an item is the same whatever the order, device or platform. The image is
drawn with tensor ops on the dataset's device, a batch at a time (`get_batch`), from each
pixel's signed distance to the shape's boundary (positive inside, in pixels): its coverage is
that distance plus a half, clamped to [0, 1] (for an outline, half the stroke's width less
the distance's magnitude, plus a half), which anti-aliases the edges as a rasteriser would
and rounds an outline's corners.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Sequence

from .._tensor import Tensor
from ..dtypes import float32, int32
from ..ops.creation import arange, tensor
from ..ops.math_ops import where
from .collate import DeviceLike
from .dataset import Dataset, check_index, check_int
from .shuffle import EPOCH_STRIDE, check_seed, fresh_seed, uniform_floats

#: the labels, in order
CLASSES = ("circle", "square", "triangle", "star")
#: the corners of each class's polygon (0: the circle, which has none)
CORNERS = (0, 4, 3, 5)
#: the uniform draws an item takes (see `_Draw`)
DRAWS = 14
#: fractions of the image's side: the centre's range (both axes) and the outer radius's
CENTRE = (0.3, 0.7)
RADIUS = (0.2, 0.42)
#: an outline's width, as a fraction of the side; the share of items drawn as outlines
STROKE = (0.05, 0.1)
OUTLINED = 0.35
#: a star's inner radius as a fraction of its outer one
STAR_INNER = (0.35, 0.5)
#: the least difference of brightness (HSV's value) between a shape and its background
CONTRAST = 0.35


def _within(low_high: tuple[float, float], u: float) -> float:
    low, high = low_high
    return low + (high - low) * u


class _Draw:
    """One item's parameters, made from its `DRAWS` uniform numbers in [0, 1)."""

    def __init__(self, u: Sequence[float], size: int):
        self.label = min(int(u[0] * len(CLASSES)), len(CLASSES) - 1)
        self.x, self.y = (_within(CENTRE, v) * size for v in u[1:3])
        self.radius = _within(RADIUS, u[3]) * size
        self.rotation = 2 * math.pi * u[4]
        self.outlined = u[5] < OUTLINED
        self.stroke = _within(STROKE, u[6]) * size
        corners = CORNERS[self.label]
        self.corners = max(corners, 1)
        # a regular polygon is a "star" whose inner corners are its sides' midpoints
        self.inner = _within(STAR_INNER, u[7]) if corners == 5 else \
            math.cos(math.pi / corners) if corners else 1.0
        # brightness apart by CONTRAST to 1 - CONTRAST, the hues and saturations free
        value = u[10]
        shape_value = (value + _within((CONTRAST, 1 - CONTRAST), u[13])) % 1.0
        self.background = colorsys.hsv_to_rgb(u[8], u[9], value)
        self.colour = colorsys.hsv_to_rgb(u[11], u[12], shape_value)


class ShapesDataset(Dataset[tuple[Tensor, int]]):
    """`length` items ``(image, label)``: a float32 RGB image (3, `size`, `size`) in [0, 1]
    of one shape, the label its index in `CLASSES` (circle, square, triangle, star).
    Shapes are filled or outlined, 0.4 to 0.84 of the side across, anywhere in the middle
    of the image, at any rotation and in any colours a little apart in brightness.

    Item ``i`` depends only on `seed` and ``i`` (see the module docstring); with no seed, one
    is drawn from pyburn's default generator (`pyburn.manual_seed` fixes it).

    >>> ds = ShapesDataset(8, size=16, device="flex")
    >>> image, label = ds[3]
    >>> image.shape, CLASSES[label], ds[3][0].tolist() == image.tolist()
    ((3, 16, 16), 'square', True)
    >>> images, labels = ds.get_batch([0, 3])
    >>> images.shape, labels.tolist()[1] == label
    ((2, 3, 16, 16), True)
    """

    classes = CLASSES

    def __init__(self, length: int, size: int = 32, seed: int | None = 0,
                 device: DeviceLike = None):
        self.length = check_int("ShapesDataset length", length, 0)
        self.size = check_int("ShapesDataset size", size, 8)
        checked = check_seed(seed, "ShapesDataset")
        self.seed = fresh_seed() if checked is None else checked
        self.device = device

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        images, labels = self.get_batch([index])
        return images[0], labels.tolist()[0]

    def get_batch(self, indices: Sequence[int]) -> tuple[Tensor, Tensor]:
        """float32 images (B, 3, size, size) and int32 labels (B,) of the items at
        `indices`, drawn together."""
        draws = [_Draw(uniform_floats(DRAWS, self.seed, EPOCH_STRIDE * check_index(
            i, self.length, "ShapesDataset")), self.size) for i in indices]
        labels = tensor([d.label for d in draws], dtype=int32, device=self.device)
        return self._render(draws), labels

    def _render(self, draws: list[_Draw]) -> Tensor:
        x, y, radius, corners, rotation, inner, stroke, outlined = (
            tensor([float(getattr(d, name)) for d in draws], dtype=float32,
                   device=self.device).reshape(-1, 1, 1)  # (B, 1, 1): over the pixels
            for name in ("x", "y", "radius", "corners", "rotation", "inner", "stroke",
                         "outlined"))
        centres = arange(self.size, dtype=float32, device=self.device) + 0.5
        dx, dy = centres.reshape(1, 1, -1) - x, centres.reshape(1, -1, 1) - y
        distance = (dx * dx + dy * dy).sqrt()
        # the pixel folded by the shape's symmetry to an angle in [0, pi / corners] from the
        # nearest outer corner: there the boundary is the side from that corner, (radius, 0),
        # to the inner one, (inner * radius) at pi / corners. Its distance to that segment,
        # with the sign of the side of its line the pixel is on, is the shape's
        sector = 2 * math.pi / corners
        angle = dy.atan2(dx) - rotation
        angle = (angle - sector * (angle / sector + 0.5).floor()).abs()
        px, py = distance * angle.cos() - radius, distance * angle.sin()
        inner = inner * radius
        ex, ey = inner * (sector / 2).cos() - radius, inner * (sector / 2).sin()
        along = ((px * ex + py * ey) / (ex * ex + ey * ey)).clamp(0, 1)
        gap = ((px - along * ex) ** 2 + (py - along * ey) ** 2).sqrt()
        polygon = where(ex * py - ey * px >= 0, gap, -gap)
        signed = where(corners > 1, polygon, radius - distance)
        filled = (signed + 0.5).clamp(0, 1)
        outline = (stroke / 2 + 0.5 - signed.abs()).clamp(0, 1)
        cover = where(outlined > 0, outline, filled).unsqueeze(1)
        background = tensor([d.background for d in draws], dtype=float32,
                            device=self.device).reshape(-1, 3, 1, 1)
        colour = tensor([d.colour for d in draws], dtype=float32,
                        device=self.device).reshape(-1, 3, 1, 1)
        return background + (colour - background) * cover

    def __repr__(self) -> str:
        return f"ShapesDataset({self.length}, size={self.size}, seed={self.seed})"
