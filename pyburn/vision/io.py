"""Image files by their contents: `read_image` reads a PNG with pyburn's own decoder
(`png`, pure Python: Pyodide too) and a JPEG through Pillow where it is installed; and
`write_image` writes by the path's extension. Images are (C, H, W) uint8 tensors, as
torchvision's ``read_image`` gives them (PNG's 16-bit samples: int32).
"""

from __future__ import annotations

import io
import os
from typing import Any

from .._tensor import Tensor
from ..dtypes import uint8
from ..errors import ArgumentError, FormatError, MissingExtraError
from ..ops.creation import tensor
from ..store.atomic import atomic_write
from .png import SIGNATURE, encode_png, read_png

JPEG_SIGNATURE = b"\xff\xd8\xff"
#: Pillow's modes that read as they are (others are converted to RGB)
_PILLOW_MODES = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4}


def _pillow(what: str) -> Any:
    try:
        from PIL import Image  # optional: Pillow, for JPEG only
    except ImportError:
        raise MissingExtraError(f"{what} needs Pillow: pip install pillow (PNG needs nothing)") \
            from None
    return Image


def read_image(source: str | os.PathLike[str] | bytes | bytearray | memoryview,
               device: Any = None) -> Tensor:
    """The image in a PNG or JPEG file (a path, or its bytes) as a (C, H, W) tensor on
    `device`."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        with open(source, "rb") as file:
            data = file.read()
    if data.startswith(SIGNATURE):
        return read_png(data, device)
    if not data.startswith(JPEG_SIGNATURE):
        raise FormatError("not a PNG or JPEG file: it starts with neither signature")
    image = _pillow("reading JPEG").open(io.BytesIO(data))
    if image.mode not in _PILLOW_MODES:
        image = image.convert("RGB")
    channels = _PILLOW_MODES[image.mode]
    width, height = image.size
    pixels = image.tobytes()  # interleaved: pixel by pixel
    planes = [v for c in range(channels) for v in pixels[c::channels]]
    return tensor(planes, dtype=uint8, device=device).reshape(channels, height, width)


def save_image(image: Tensor, path: str | os.PathLike[str], quality: int = 90) -> None:
    """Write a tensor to look at (burn's ``save_tensor_as_image``): uint8 as it is, floats
    taken as [0, 1], clipped, scaled to 0-255 and rounded; (C, H, W) or (H, W), a batch
    (N, C, H, W) of one image too; the format by the extension (see `write_image`)."""
    if not isinstance(image, Tensor):
        raise ArgumentError(f"save_image takes a tensor, got {type(image).__name__}")
    if image.ndim == 4:
        if image.shape[0] != 1:
            raise ArgumentError(f"save_image writes one image, got a batch of {image.shape[0]}")
        image = image[0]
    if image.dtype is not uint8:
        image = (image.float().clamp(0, 1) * 255).round().to(uint8)
    write_image(image, path, quality)


def write_image(image: Tensor, path: str | os.PathLike[str], quality: int = 90) -> None:
    """Write `image` ((C, H, W) or (H, W)) to `path` as its extension says: .png (any
    channels from 1 to 4, uint8 or 16-bit) or .jpg / .jpeg (grey or RGB uint8, at JPEG
    `quality`), atomically."""
    extension = os.path.splitext(os.fspath(path))[1].lower()
    if extension == ".png":
        atomic_write(os.fspath(path), [encode_png(image)])
        return
    if extension not in (".jpg", ".jpeg"):
        raise ArgumentError(f"write_image writes .png, .jpg or .jpeg files, got {extension!r}")
    if not isinstance(image, Tensor) or image.dtype is not uint8:
        raise ArgumentError("a JPEG holds uint8 images")
    if image.ndim == 2:
        image = image.unsqueeze(0)
    if image.ndim != 3 or image.shape[0] not in (1, 3):
        raise ArgumentError(f"a JPEG holds (1, H, W) or (3, H, W) images, got {image.shape}")
    channels, height, width = image.shape
    pixels = bytes(image.permute(1, 2, 0).reshape(-1).tolist())
    picture = _pillow("writing JPEG").frombytes("L" if channels == 1 else "RGB",
                                                (width, height), pixels)
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=quality)
    atomic_write(os.fspath(path), [out.getvalue()])
