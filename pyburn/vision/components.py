"""Connected components of binary images (N, H, W) (any dtype: nonzero is foreground), on
the device: each foreground pixel starts with its own raster index as label, and every
round takes the smallest label among its neighbours (4- or 8-connectivity), then follows
labels to their own labels (pointer jumping: long components settle in far fewer rounds
than their length), until a round changes nothing. Each component then holds the index of
its first pixel in raster order, so numbering the roots by a cumulative sum gives labels
1..K in the order scipy.ndimage.label and OpenCV give them; background is 0.

>>> import pyburn
>>> image = pyburn.tensor([[[1, 0, 1], [1, 0, 0], [0, 0, 1]]], device="flex")
>>> connected_components(image, connectivity=4)[0].tolist()
[[1, 0, 2], [1, 0, 0], [0, 0, 3]]
"""

from __future__ import annotations

from dataclasses import dataclass

from .._tensor import Tensor
from ..dtypes import bool_, float32, int32
from ..errors import ArgumentError, ShapeError
from ..ops.creation import arange, ones_like, zeros
from ..ops.math_ops import where
from ..ops.movement import stack
from .boxes import first_last
from .filters import windows

#: the places of a 3 x 3 window each connectivity looks at (raster order, centre included)
NEIGHBOURS = {4: (1, 3, 4, 5, 7), 8: tuple(range(9))}
#: pointer jumps per round
JUMPS = 2


def _binary(image: Tensor) -> Tensor:
    if not isinstance(image, Tensor) or image.ndim not in (2, 3):
        raise ShapeError(f"connected components take images (N, H, W) or (H, W), got "
                         f"{getattr(image, 'shape', type(image).__name__)}")
    image = image if image.ndim == 3 else image.unsqueeze(0)
    return image if image.dtype is bool_ else image != 0


def connected_components(image: Tensor, connectivity: int = 8) -> Tensor:
    """Labels (N, H, W) int32: 0 for background, 1..K for the components of each image."""
    if connectivity not in NEIGHBOURS:
        raise ArgumentError(f"connectivity is 4 or 8, got {connectivity!r}")
    foreground = _binary(image)
    count, height, width = foreground.shape
    size = height * width
    none = size + 1  # more than any label: the background's, while labels spread
    index = (arange(size, dtype=int32, device=foreground.device) + 1).reshape(1, height, width)
    labels = where(foreground, index.expand(count, height, width), none)
    reach = list(NEIGHBOURS[connectivity])
    while True:
        around = windows(labels.unsqueeze(1), (3, 3), "constant", fill=none)[..., reach]
        spread = where(foreground, around.amin(dim=-1).squeeze(1), none)
        for _ in range(JUMPS):  # a label's own label, where it is smaller
            flat = spread.reshape(count, size)
            hop = flat.gather(1, (flat - 1).clamp(max=size - 1))
            spread = where(foreground, hop.minimum(flat).reshape(count, height, width), none)
        if not (spread != labels).any().item():
            break
        labels = spread
    roots = foreground.logical_and(labels == index)
    numbers = roots.to(int32).reshape(count, size).cumsum(dim=1)
    found = numbers.gather(1, (labels.reshape(count, size) - 1).clamp(max=size - 1))
    return where(foreground, found.reshape(count, height, width), 0)


@dataclass(frozen=True)
class ComponentStats:
    """Per image and component (labels 1..K, K the most any image has; a column past an
    image's own count is zero): `area` (N, K) int32 pixels; `boxes` (N, K, 4) float32,
    (x1, y1, x2, y2) with inclusive corners; `centroids` (N, K, 2) float32, (x, y); and
    `count` (N,) int32, each image's number of components."""

    area: Tensor
    boxes: Tensor
    centroids: Tensor
    count: Tensor


def connected_components_with_stats(image: Tensor,
                                    connectivity: int = 8) -> tuple[Tensor, ComponentStats]:
    """`connected_components`, and each component's area, box and centroid."""
    labels = connected_components(image, connectivity)
    count, height, width = labels.shape
    flat = labels.reshape(count, height * width)
    components = int(flat.amax().item()) if flat.numel() else 0
    slots = components + 1  # column 0: the background
    device = labels.device
    ys = arange(height, dtype=float32, device=device).reshape(1, height, 1).expand(
        count, height, width).reshape(count, -1)
    xs = arange(width, dtype=float32, device=device).reshape(1, 1, width).expand(
        count, height, width).reshape(count, -1)

    def total(values: Tensor) -> Tensor:
        return zeros(count, slots, dtype=values.dtype, device=device).scatter_add(
            1, flat, values)[:, 1:]
    area = total(ones_like(flat))
    safe = area.clamp(min=1).to(float32)
    centroids = stack([total(xs) / safe, total(ys) / safe], dim=-1)
    x1, x2 = _extent(flat, xs.to(int32), width, slots)
    y1, y2 = _extent(flat, ys.to(int32), height, slots)
    boxes = stack([x1, y1, x2, y2], dim=-1)
    counts = flat.amax(dim=1) if flat.numel() else zeros(count, dtype=int32, device=device)
    return labels, ComponentStats(area, boxes, centroids, counts)


def _extent(flat: Tensor, at: Tensor, length: int, slots: int) -> tuple[Tensor, Tensor]:
    """Each component's first and last place along one axis (`at`: each pixel's place on
    it, 0..length-1), from a (slots, length) table of which places each component touches."""
    count = flat.shape[0]
    touched = zeros(count, slots * length, dtype=int32, device=flat.device).scatter_add(
        1, flat * length + at, ones_like(flat)).reshape(count, slots, length)[:, 1:] > 0
    return first_last(touched)
