"""Morphology of images (N, C, H, W) of any dtype (bool, integers, floats), OpenCV's
conventions: `kernel` is the structuring element (kh, kw), nonzero where it reaches,
anchored at its centre unless `anchor` (row, column) says otherwise; the border never wins
(it counts as the dtype's lowest value for a dilation, its highest for an erosion), and
`iterations` applies the operation that many times. Dilation is the maximum over the
element's places, erosion the minimum: tensor ops, so every device, and gradients where the
image is float (to the winning element).

>>> import pyburn
>>> dot = pyburn.tensor([[[[0, 0, 0], [0, 1, 0], [0, 0, 0]]]], dtype=pyburn.uint8, device="flex")
>>> dilate(dot, pyburn.ones(3, 3, device="flex"))[0, 0].tolist()
[[1, 1, 1], [1, 1, 1], [1, 1, 1]]
"""

from __future__ import annotations

import math

from .._tensor import Tensor
from ..dtypes import DType, bool_, uint8
from ..errors import ArgumentError, ShapeError
from .filters import windows


def _bounds(dtype: DType) -> tuple[float, float]:
    """The lowest and highest value of `dtype`."""
    if dtype.is_floating_point:
        return -math.inf, math.inf
    if dtype is bool_ or dtype is uint8:
        return 0, 255 if dtype is uint8 else 1
    bits = 8 * dtype.itemsize
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _morph(image: Tensor, kernel: Tensor, op: str, iterations: int,
           anchor: tuple[int, int] | None) -> Tensor:
    if not isinstance(image, Tensor) or image.ndim != 4:
        raise ShapeError(f"{op} takes images (N, C, H, W), got "
                         f"{getattr(image, 'shape', type(image).__name__)}")
    if not isinstance(kernel, Tensor) or kernel.ndim != 2:
        raise ShapeError(f"{op} takes a structuring element (kh, kw), got "
                         f"{getattr(kernel, 'shape', type(kernel).__name__)}")
    if not isinstance(iterations, int) or iterations < 0:
        raise ArgumentError(f"iterations is a count, got {iterations!r}")
    reach = [k for k, on in enumerate(kernel.reshape(-1).tolist()) if on]
    if not reach:
        raise ArgumentError("the structuring element reaches nowhere (every value is zero)")
    was_bool = image.dtype is bool_
    out = image.to(uint8) if was_bool else image
    low, high = _bounds(out.dtype)
    for _ in range(iterations):
        places = windows(out, (kernel.shape[0], kernel.shape[1]), "constant",
                         fill=low if op == "dilate" else high, anchor=anchor)
        if len(reach) < kernel.numel():
            places = places[..., reach]
        out = places.amax(dim=-1) if op == "dilate" else places.amin(dim=-1)
    return out.to(bool_) if was_bool else out


def dilate(image: Tensor, kernel: Tensor, iterations: int = 1,
           anchor: tuple[int, int] | None = None) -> Tensor:
    """The maximum over the structuring element's places around each pixel."""
    return _morph(image, kernel, "dilate", iterations, anchor)


def erode(image: Tensor, kernel: Tensor, iterations: int = 1,
          anchor: tuple[int, int] | None = None) -> Tensor:
    """The minimum over the structuring element's places around each pixel."""
    return _morph(image, kernel, "erode", iterations, anchor)


def opening(image: Tensor, kernel: Tensor, iterations: int = 1) -> Tensor:
    """Erosion, then dilation: removes what the element does not fit in."""
    return dilate(erode(image, kernel, iterations), kernel, iterations)


def closing(image: Tensor, kernel: Tensor, iterations: int = 1) -> Tensor:
    """Dilation, then erosion: fills gaps the element does not fit in."""
    return erode(dilate(image, kernel, iterations), kernel, iterations)


def _difference(a: Tensor, b: Tensor) -> Tensor:
    """a - b: "a and not b" for bool images, saturating at 0 for uint8 ones (as OpenCV's:
    with an element that is not symmetric, an opening may exceed the image)."""
    if a.dtype is bool_:
        return a.logical_and(b.logical_not())
    return a.maximum(b) - b if a.dtype is uint8 else a - b


def morphological_gradient(image: Tensor, kernel: Tensor) -> Tensor:
    """Dilation less erosion: the objects' outlines."""
    return _difference(dilate(image, kernel), erode(image, kernel))


def top_hat(image: Tensor, kernel: Tensor) -> Tensor:
    """The image less its opening: bright details smaller than the element."""
    return _difference(image, opening(image, kernel))


def black_hat(image: Tensor, kernel: Tensor) -> Tensor:
    """The closing less the image: dark details smaller than the element."""
    return _difference(closing(image, kernel), image)
