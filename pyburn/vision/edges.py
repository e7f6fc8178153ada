"""Canny's edge detector, OpenCV's (``cv2.Canny``) step by step, on the device: Sobel's
derivatives of a byte image in integers (aperture 3, replicated border); the gradient's
magnitude, |dx| + |dy| or, with `l2_gradient`, the squared Euclidean one against squared
thresholds; non-maximum suppression along the gradient's direction quantized to four, with
OpenCV's fixed-point tangent (tan 22.5 degrees as 13573 / 2^15) and its comparisons (strict
on one side, not on the other; zeros past the border); and hysteresis: the candidates above
`low` that are 8-connected to one above `high` (`connected_components`).

>>> import pyburn
>>> image = pyburn.zeros(1, 1, 6, 6, dtype=pyburn.uint8, device="flex")
>>> image[..., 3:] = 200
>>> canny(image, 50, 100)[0, 0, 2].tolist()
[0, 0, 255, 0, 0, 0]
"""

from __future__ import annotations

import math

from .._tensor import Tensor
from ..dtypes import int32, uint8
from ..errors import ArgumentError, ShapeError
from ..ops.creation import zeros
from ..ops.math_ops import where
from .components import connected_components_with_stats
from .filters import windows

#: tan(22.5 degrees) in OpenCV's fixed point, and the shift it is scaled by
TAN_22_5, SHIFT = 13573, 15
#: Sobel's 3 x 3 taps in raster order: d/dx, d/dy
SOBEL_X = (-1, 0, 1, -2, 0, 2, -1, 0, 1)
SOBEL_Y = (-1, -2, -1, 0, 0, 0, 1, 2, 1)


def _correlate(places: Tensor, taps: tuple[int, ...]) -> Tensor:
    """The integer sum of the 9 window places weighted by `taps`."""
    total = None
    for k, tap in enumerate(taps):
        if tap:
            term = places[..., k] * tap
            total = term if total is None else total + term
    assert total is not None
    return total


def canny(image: Tensor, low: float, high: float, l2_gradient: bool = False) -> Tensor:
    """The edges of uint8 images (N, 1, H, W) as 0 / 255 bytes, OpenCV's Canny with
    aperture 3."""
    if not isinstance(image, Tensor) or image.ndim != 4 or image.shape[1] != 1 or \
            image.dtype is not uint8:
        raise ShapeError(f"canny takes uint8 images (N, 1, H, W), got "
                         f"{getattr(image, 'dtype', None)} {getattr(image, 'shape', None)}")
    if low > high:
        low, high = high, low  # as OpenCV
    if low < 0:
        raise ArgumentError(f"canny's thresholds are not negative, got {low}")
    pixels = image.to(int32)
    places = windows(pixels, (3, 3), "replicate")
    dx, dy = _correlate(places, SOBEL_X), _correlate(places, SOBEL_Y)
    if l2_gradient:
        magnitude = dx * dx + dy * dy
        low_bar, high_bar = low * low, high * high
    else:
        magnitude = dx.abs() + dy.abs()
        low_bar, high_bar = math.floor(low), math.floor(high)
    around = windows(magnitude, (3, 3), "constant", fill=0)  # zeros past the border

    def at(row: int, column: int) -> Tensor:
        return around[..., (row + 1) * 3 + column + 1]
    xs, ys = dx.abs(), dy.abs()
    tan22 = xs * TAN_22_5
    scaled = ys * (1 << SHIFT)
    horizontal = scaled < tan22
    vertical = scaled > tan22 + xs * (1 << (SHIFT + 1))
    # the diagonal: up-left to down-right where dx and dy have one sign, else the other
    same_sign = (dx >= 0) == (dy >= 0)
    peak = where(horizontal, (magnitude > at(0, -1)).logical_and(magnitude >= at(0, 1)),
                 where(vertical, (magnitude > at(-1, 0)).logical_and(magnitude >= at(1, 0)),
                       where(same_sign,
                             (magnitude > at(-1, -1)).logical_and(magnitude > at(1, 1)),
                             (magnitude > at(-1, 1)).logical_and(magnitude > at(1, -1)))))
    candidate = peak.logical_and(magnitude > low_bar)
    strong = candidate.logical_and(magnitude > high_bar)
    labels, stats = connected_components_with_stats(candidate[:, 0], connectivity=8)
    count, height, width = labels.shape
    components = stats.area.shape[1]
    if components == 0:
        return (image * 0).to(uint8)
    # a component is an edge where one of its pixels is strong
    flat = labels.reshape(count, height * width)
    hits = strong[:, 0].to(int32).reshape(count, height * width)
    touched = zeros(count, components + 1, dtype=int32, device=image.device).scatter_add(
        1, flat, hits) > 0
    edge = touched.gather(1, flat).logical_and(flat > 0).reshape(count, 1, height, width)
    return where(edge, 255, 0).to(uint8)

