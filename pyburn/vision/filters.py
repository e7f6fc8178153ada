"""Linear and median filters of images (N, C, H, W), OpenCV's conventions: a kernel is
correlated (not flipped), anchored at its centre, over the image extended at its border by
`border`: "reflect" (OpenCV's default, BORDER_REFLECT_101: ``dcb|abcd|cba``), "replicate",
"constant" (zeros) or "circular". Each channel is filtered alone (a depthwise convolution),
so they run on every device and carry gradients (the median's goes to the median element).

>>> import pyburn
>>> image = pyburn.tensor([[[[0.0, 0, 0], [0, 9, 0], [0, 0, 0]]]], device="flex")
>>> box_blur(image, (3, 3), border="constant")[0, 0, 1].tolist()
[1.0, 1.0, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..nn.functional import conv2d, pad
from ..ops.creation import tensor
from ..ops.movement import stack

#: the border modes, and the `pad` mode each is
BORDERS = {"reflect": "reflect", "replicate": "replicate", "constant": "constant",
           "circular": "circular"}
#: OpenCV's Laplacian kernels by aperture
LAPLACIAN = {1: ((0, 1, 0), (1, -4, 1), (0, 1, 0)), 3: ((2, 0, 2), (0, -8, 0), (2, 0, 2))}
#: OpenCV's Gaussian taps for sizes up to 7 when no sigma is given
SMALL_GAUSSIANS = {1: (1.0,), 3: (0.25, 0.5, 0.25), 5: (0.0625, 0.25, 0.375, 0.25, 0.0625),
                   7: (0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125)}
#: Sobel's smoothing and derivative taps (aperture 3)
SMOOTH, DERIVE = (1.0, 2.0, 1.0), (-1.0, 0.0, 1.0)


def _pair(size: int | Sequence[int], name: str) -> tuple[int, int]:
    pair = (size, size) if isinstance(size, int) else tuple(size)
    if len(pair) != 2 or any(not isinstance(k, int) or k < 1 for k in pair):
        raise ArgumentError(f"{name} is a positive int or a (height, width) pair, got {size!r}")
    return pair[0], pair[1]


def _check(image: Tensor, name: str) -> None:
    if not isinstance(image, Tensor) or image.ndim != 4:
        raise ShapeError(f"{name} takes images (N, C, H, W), got "
                         f"{getattr(image, 'shape', type(image).__name__)}")


def extend(image: Tensor, size: tuple[int, int], border: str,
           anchor: tuple[int, int] | None = None) -> Tensor:
    """`image` with the border a (kh, kw) window anchored at `anchor` (default: its centre)
    reaches past its edges, filled by `border`."""
    if border not in BORDERS:
        raise ArgumentError(f"border is one of {', '.join(BORDERS)}, got {border!r}")
    (kh, kw), (ay, ax) = size, anchor or (size[0] // 2, size[1] // 2)
    return pad(image, [ax, kw - 1 - ax, ay, kh - 1 - ay], mode=BORDERS[border])


def filter2d(image: Tensor, kernel: Tensor, border: str = "reflect",
             normalized: bool = False) -> Tensor:
    """`image` correlated with `kernel` (kh, kw), each channel alone; `normalized` divides
    the kernel by its sum first."""
    _check(image, "filter2d")
    if not isinstance(kernel, Tensor) or kernel.ndim != 2:
        raise ShapeError(f"filter2d takes a kernel (kh, kw), got "
                         f"{getattr(kernel, 'shape', type(kernel).__name__)}")
    kernel = kernel.to(image.device).to(image.dtype)
    if normalized:
        kernel = kernel / kernel.sum()
    channels = image.shape[1]
    weight = kernel.reshape(1, 1, *kernel.shape).expand(channels, 1, *kernel.shape)
    size = (kernel.shape[0], kernel.shape[1])
    return conv2d(extend(image, size, border), weight, groups=channels)


def _separable(image: Tensor, rows: Sequence[float], columns: Sequence[float],
               border: str) -> Tensor:
    """The filter ``outer(rows, columns)`` as two passes of one dim each."""
    device, dtype = image.device, image.dtype
    vertical = tensor([[v] for v in rows], device=device, dtype=dtype)
    horizontal = tensor([list(columns)], device=device, dtype=dtype)
    return filter2d(filter2d(image, vertical, border), horizontal, border)


def box_blur(image: Tensor, kernel_size: int | Sequence[int], border: str = "reflect") -> Tensor:
    """The mean over each (kh, kw) window (OpenCV's ``blur``)."""
    _check(image, "box_blur")
    kh, kw = _pair(kernel_size, "kernel_size")
    return _separable(image, [1 / kh] * kh, [1 / kw] * kw, border)


def gaussian_kernel1d(size: int, sigma: float) -> list[float]:
    """The `size` taps of a Gaussian of standard deviation `sigma`, summing to 1. `sigma` 0 or
    less means OpenCV's choice for the size: its fixed binomial-like taps for sizes 1 to 7,
    else ``sigma = 0.3 * ((size - 1) * 0.5 - 1) + 0.8``."""
    if size < 1 or size % 2 == 0:
        raise ArgumentError(f"a Gaussian kernel has an odd size, got {size}")
    if sigma <= 0 and size in SMALL_GAUSSIANS:
        return list(SMALL_GAUSSIANS[size])
    if sigma <= 0:
        sigma = 0.3 * ((size - 1) * 0.5 - 1) + 0.8
    taps = [math.exp(-((k - size // 2) ** 2) / (2 * sigma * sigma)) for k in range(size)]
    total = sum(taps)
    return [t / total for t in taps]


def gaussian_blur2d(image: Tensor, kernel_size: int | Sequence[int],
                    sigma: float | Sequence[float], border: str = "reflect") -> Tensor:
    """Blurred by a Gaussian of `sigma` (one, or (sigma_y, sigma_x)) over windows of
    `kernel_size` (odd), as OpenCV's ``GaussianBlur``."""
    _check(image, "gaussian_blur2d")
    kh, kw = _pair(kernel_size, "kernel_size")
    sy, sx = (sigma, sigma) if isinstance(sigma, (int, float)) else tuple(sigma)
    return _separable(image, gaussian_kernel1d(kh, sy), gaussian_kernel1d(kw, sx), border)


def spatial_gradient(image: Tensor, border: str = "reflect") -> Tensor:
    """Sobel's derivatives along x and along y (aperture 3, unscaled: OpenCV's ``Sobel``),
    (N, C, 2, H, W)."""
    _check(image, "spatial_gradient")
    dx = _separable(image, SMOOTH, DERIVE, border)
    dy = _separable(image, DERIVE, SMOOTH, border)
    return stack([dx, dy], dim=2)


def sobel(image: Tensor, border: str = "reflect", eps: float = 1e-12) -> Tensor:
    """The magnitude of Sobel's gradient, ``sqrt(dx^2 + dy^2)`` (`eps` inside the root keeps
    its gradient finite where the image is flat)."""
    gradient = spatial_gradient(image, border)
    return (gradient[:, :, 0] ** 2 + gradient[:, :, 1] ** 2 + eps).sqrt()


def laplacian(image: Tensor, kernel_size: int = 1, border: str = "reflect") -> Tensor:
    """The Laplacian with OpenCV's kernels: aperture 1 is the 4-neighbour one, 3 the
    diagonal one ``[[2, 0, 2], [0, -8, 0], [2, 0, 2]]``."""
    _check(image, "laplacian")
    if kernel_size not in LAPLACIAN:
        raise ArgumentError(f"laplacian's kernel_size is 1 or 3, got {kernel_size!r}")
    kernel = tensor([list(row) for row in LAPLACIAN[kernel_size]], device=image.device,
                    dtype=image.dtype)
    return filter2d(image, kernel, border)


def windows(image: Tensor, size: tuple[int, int], border: str, fill: float | None = None,
            anchor: tuple[int, int] | None = None) -> Tensor:
    """Every (kh, kw) window of `image` as a last dim of kh * kw values, (N, C, H, W, kh*kw):
    the image extended by `border` (or by `fill`, a constant) and shifted once per place of
    the window."""
    (kh, kw), (ay, ax) = size, anchor or (size[0] // 2, size[1] // 2)
    if fill is None:
        padded = extend(image, size, border, anchor)
    else:
        padded = pad(image, [ax, kw - 1 - ax, ay, kh - 1 - ay], value=fill)
    height, width = image.shape[-2:]
    return stack([padded[:, :, i:i + height, j:j + width] for i in range(kh)
                  for j in range(kw)], dim=-1)


def median_blur(image: Tensor, kernel_size: int | Sequence[int],
                border: str = "replicate") -> Tensor:
    """The median of each (kh, kw) window, both odd (OpenCV's ``medianBlur`` extends the
    border by replicating it)."""
    _check(image, "median_blur")
    kh, kw = _pair(kernel_size, "kernel_size")
    if kh % 2 == 0 or kw % 2 == 0:
        raise ArgumentError(f"median_blur takes odd window sizes, got {(kh, kw)}")
    values, _ = windows(image, (kh, kw), border).sort(dim=-1)
    return values[..., kh * kw // 2]
