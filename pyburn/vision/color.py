"""Colour space conversions of float images (..., 3, H, W) with values in [0, 1] (sRGB):
written with tensor ops, so they run on every device and carry gradients.

- grey: ITU-R BT.601 luma, ``0.299 R + 0.587 G + 0.114 B`` (OpenCV's and torchvision's);
- HSV: hue in degrees [0, 360), saturation and value in [0, 1] (OpenCV's float convention);
- YUV: BT.601, ``U = 0.492 (B - Y)``, ``V = 0.877 (R - Y)``, centred on 0 (kornia's; OpenCV
  adds 0.5 to U and V);
- CIE L*a*b* (D65 white, 2° observer): L in [0, 100], a and b about [-128, 127]
  (scikit-image's and OpenCV's float convention), through linear sRGB and XYZ.

>>> import pyburn
>>> red = pyburn.tensor([1.0, 0.0, 0.0], device="flex").reshape(3, 1, 1)
>>> [round(v, 3) for v in rgb_to_hsv(red).reshape(3).tolist()]
[0.0, 1.0, 1.0]
"""

from __future__ import annotations

from .._tensor import Tensor
from ..errors import ShapeError
from ..ops.math_ops import where
from ..ops.movement import stack

#: BT.601's luma weights
LUMA = (0.299, 0.587, 0.114)
#: BT.601's chroma scales (kornia's YUV)
U_SCALE, V_SCALE = 0.492, 0.877
#: linear sRGB to XYZ (D65), rows X, Y, Z
RGB_TO_XYZ = ((0.412453, 0.357580, 0.180423), (0.212671, 0.715160, 0.072169),
              (0.019334, 0.119193, 0.950227))
XYZ_TO_RGB = ((3.240479, -1.537150, -0.498535), (-0.969256, 1.875992, 0.041556),
              (0.055648, -0.204043, 1.057311))
#: the D65 white point (X, Y, Z), and CIE's constants
WHITE = (0.95047, 1.0, 1.08883)
EPSILON = 216 / 24389
KAPPA = 24389 / 27


def _channels(image: Tensor, name: str) -> tuple[Tensor, Tensor, Tensor]:
    if image.ndim < 3 or image.shape[-3] != 3:
        raise ShapeError(f"{name} takes images (..., 3, H, W), got shape {image.shape}")
    return image[..., 0, :, :], image[..., 1, :, :], image[..., 2, :, :]


def _mix(rows: tuple[tuple[float, float, float], ...], a: Tensor, b: Tensor,
         c: Tensor) -> Tensor:
    """The 3 x 3 matrix `rows` applied to the channels (a, b, c), stacked at dim -3."""
    return stack([a * p + b * q + c * r for p, q, r in rows], dim=-3)


def rgb_to_grayscale(image: Tensor) -> Tensor:
    """BT.601 luma, (..., 1, H, W)."""
    r, g, b = _channels(image, "rgb_to_grayscale")
    return (r * LUMA[0] + g * LUMA[1] + b * LUMA[2]).unsqueeze(-3)


def grayscale_to_rgb(image: Tensor) -> Tensor:
    """(..., 1, H, W) repeated into three channels."""
    if image.ndim < 3 or image.shape[-3] != 1:
        raise ShapeError(f"grayscale_to_rgb takes images (..., 1, H, W), got {image.shape}")
    return image.expand(*image.shape[:-3], 3, *image.shape[-2:])


def rgb_to_hsv(image: Tensor, eps: float = 1e-8) -> Tensor:
    """Hue in degrees [0, 360), saturation, value; grey pixels have hue 0."""
    r, g, b = _channels(image, "rgb_to_hsv")
    value = image.amax(dim=-3)
    low = image.amin(dim=-3)
    spread = value - low
    saturation = spread / (value + eps)
    safe = spread + eps
    hue = where(r == value, ((g - b) / safe) % 6,
                where(g == value, (b - r) / safe + 2, (r - g) / safe + 4))
    return stack([where(spread > 0, hue * 60, hue * 0), saturation, value], dim=-3)


def hsv_to_rgb(image: Tensor) -> Tensor:
    """The inverse of `rgb_to_hsv` (hue in degrees, taken modulo 360)."""
    hue, saturation, value = _channels(image, "hsv_to_rgb")
    chroma = value * saturation
    sector = (hue % 360) / 60

    def channel(n: float) -> Tensor:
        k = (sector + n) % 6
        return value - chroma * (k.minimum(4 - k).clamp(0, 1))
    return stack([channel(5), channel(3), channel(1)], dim=-3)


def rgb_to_yuv(image: Tensor) -> Tensor:
    """Y, U, V (BT.601, U and V centred on 0)."""
    r, g, b = _channels(image, "rgb_to_yuv")
    y = r * LUMA[0] + g * LUMA[1] + b * LUMA[2]
    return stack([y, (b - y) * U_SCALE, (r - y) * V_SCALE], dim=-3)


def yuv_to_rgb(image: Tensor) -> Tensor:
    """The inverse of `rgb_to_yuv`."""
    y, u, v = _channels(image, "yuv_to_rgb")
    r, b = y + v / V_SCALE, y + u / U_SCALE
    g = (y - r * LUMA[0] - b * LUMA[2]) / LUMA[1]
    return stack([r, g, b], dim=-3)


def rgb_to_lab(image: Tensor) -> Tensor:
    """CIE L*a*b* (D65): sRGB decoded to linear light, to XYZ, to L*a*b*."""
    r, g, b = (_linear(c) for c in _channels(image, "rgb_to_lab"))
    xyz = _mix(RGB_TO_XYZ, r, g, b)
    x, y, z = xyz[..., 0, :, :], xyz[..., 1, :, :], xyz[..., 2, :, :]
    fx, fy, fz = (_f(t / w) for t, w in zip((x, y, z), WHITE))
    return stack([fy * 116 - 16, (fx - fy) * 500, (fy - fz) * 200], dim=-3)


def lab_to_rgb(image: Tensor) -> Tensor:
    """The inverse of `rgb_to_lab`, clipped to [0, 1] (L*a*b* holds colours sRGB does not)."""
    lightness, a, b = _channels(image, "lab_to_rgb")
    fy = (lightness + 16) / 116
    fx, fz = fy + a / 500, fy - b / 200
    x, y, z = (_f_inverse(f) * w for f, w in zip((fx, fy, fz), WHITE))
    rgb = _mix(XYZ_TO_RGB, x, y, z)
    return _encoded(rgb.clamp(0, 1))


def _linear(c: Tensor) -> Tensor:
    """sRGB's transfer function undone."""
    return where(c > 0.04045, ((c.clamp(min=0.04045) + 0.055) / 1.055) ** 2.4, c / 12.92)


def _encoded(c: Tensor) -> Tensor:
    """sRGB's transfer function."""
    return where(c > 0.0031308, c.clamp(min=0.0031308) ** (1 / 2.4) * 1.055 - 0.055, c * 12.92)


def _f(t: Tensor) -> Tensor:
    return where(t > EPSILON, t.clamp(min=EPSILON) ** (1 / 3), (t * KAPPA + 16) / 116)


def _f_inverse(f: Tensor) -> Tensor:
    cube = f ** 3
    return where(cube > EPSILON, cube, (f * 116 - 16) / KAPPA)
