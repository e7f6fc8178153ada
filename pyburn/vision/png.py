"""PNG images read and written in pure Python (``zlib`` and ``struct``: it works in Pyodide as
on the desktop, with nothing to install).

`read_png` takes every PNG the standard allows: greyscale (1, 2, 4, 8 and 16 bits), RGB and
greyscale or RGB with alpha (8 and 16 bits), palette images (1 to 8 bits, expanded to RGB,
or RGBA where the palette has transparency), all five row filters and Adam7 interlacing;
every chunk's CRC is checked. An image is a (C, H, W) tensor as torchvision's ``read_image``
gives it: uint8 for up to 8 bits (greyscale below 8 bits scaled to 0-255), int32 holding
0-65535 for 16 bits. `write_png` writes such a tensor back.

>>> import pyburn
>>> image = pyburn.tensor([[[0, 128], [255, 7]]], dtype=pyburn.uint8, device="flex")
>>> read_png(encode_png(image), device="flex").tolist()
[[[0, 128], [255, 7]]]
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..dtypes import int32, uint8
from ..errors import ArgumentError, FormatError
from ..ops.creation import tensor
from ..store.atomic import atomic_write

SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: channels of each colour type: grey, RGB, palette, grey + alpha, RGBA
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
#: the bit depths each colour type allows
DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
#: Adam7's passes: (first row, first column, row step, column step)
ADAM7 = ((0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2),
         (1, 0, 2, 1))
#: the colour type `write_png` uses for each channel count
COLOUR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}


@dataclass(frozen=True)
class Header:
    """What IHDR says."""

    width: int
    height: int
    depth: int
    colour: int
    interlaced: bool

    @property
    def channels(self) -> int:
        """Samples per pixel as stored (a palette index is one)."""
        return CHANNELS[self.colour]

    def row_bytes(self, width: int) -> int:
        """Bytes of one row of `width` pixels, without its filter byte."""
        return (width * self.channels * self.depth + 7) // 8

    @property
    def pixel_bytes(self) -> int:
        """The filters' distance to the byte to the left: bytes per pixel, at least one."""
        return max(1, self.channels * self.depth // 8)


def read_png(source: str | os.PathLike[str] | bytes | bytearray | memoryview,
             device: Any = None) -> Tensor:
    """The image in the PNG file at path `source` (or in its bytes) as a (C, H, W) tensor
    on `device`: uint8, or int32 for 16-bit samples."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        with open(source, "rb") as file:
            data = file.read()
    header, palette, transparency, compressed = _chunks(data)
    try:
        raw = zlib.decompress(compressed)
    except zlib.error as error:
        raise FormatError(f"the image data (IDAT) does not decompress: {error}") from None
    samples = _samples(header, raw)
    channels = header.channels
    if header.colour == 3:
        samples, channels = _expand_palette(header, samples, palette, transparency)
    elif header.depth < 8:
        top = (1 << header.depth) - 1
        samples = [v * 255 // top for v in samples]
    dtype = int32 if header.depth == 16 else uint8
    return tensor(_planar(samples, channels), dtype=dtype, device=device).reshape(
        channels, header.height, header.width)


def encode_png(image: Tensor, compress_level: int = 6) -> bytes:
    """The bytes of a PNG file holding `image`: (C, H, W) or (H, W), C from 1 to 4 (grey,
    grey + alpha, RGB, RGBA); uint8 gives 8-bit samples, int32 (0-65535) 16-bit ones."""
    if not isinstance(image, Tensor):
        raise ArgumentError(f"encode_png takes a tensor, got {type(image).__name__}")
    if image.ndim == 2:
        image = image.unsqueeze(0)
    if image.ndim != 3 or image.shape[0] not in COLOUR_TYPES or 0 in image.shape[1:]:
        raise ArgumentError(f"a PNG holds a (C, H, W) image with C from 1 to 4, got shape "
                            f"{image.shape}")
    if image.dtype is uint8:
        depth = 8
    elif image.dtype is int32:
        depth = 16
    else:
        raise ArgumentError(f"a PNG holds uint8 or int32 (16-bit) samples, got {image.dtype}")
    channels, height, width = image.shape
    values = image.permute(1, 2, 0).reshape(-1).tolist()
    if depth == 16 and values and not 0 <= min(values) <= max(values) <= 0xFFFF:
        raise ArgumentError("16-bit PNG samples are 0 to 65535")
    if depth == 8:
        pixels = bytes(values)
    else:
        pixels = struct.pack(f">{len(values)}H", *values)
    stride = len(pixels) // height
    rows = b"".join(b"\x00" + pixels[r * stride:(r + 1) * stride] for r in range(height))
    header = struct.pack(">IIBBBBB", width, height, depth, COLOUR_TYPES[channels], 0, 0, 0)
    return (SIGNATURE + _chunk(b"IHDR", header) +
            _chunk(b"IDAT", zlib.compress(rows, compress_level)) + _chunk(b"IEND", b""))


def write_png(image: Tensor, path: str | os.PathLike[str], compress_level: int = 6) -> None:
    """Write `image` (see `encode_png`) to `path`, atomically."""
    atomic_write(os.fspath(path), [encode_png(image, compress_level)])


# ---- reading -------------------------------------------------------------------------------
def _chunks(data: bytes) -> tuple[Header, bytes, bytes, bytes]:
    """IHDR, PLTE and tRNS (b"" where absent), and the IDATs together; every CRC checked."""
    if not data.startswith(SIGNATURE):
        raise FormatError("not a PNG file: it does not start with the PNG signature")
    header = None
    palette = transparency = b""
    idat = []
    for kind, body, at in _walk(data):
        if header is None and kind != b"IHDR":
            raise FormatError(f"the first chunk is {kind!r} at byte {at}, not IHDR")
        if kind == b"IHDR":
            header = _header(body, at)
        elif kind == b"PLTE":
            palette = body
        elif kind == b"tRNS":
            transparency = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    else:
        raise FormatError("the file ends before its IEND chunk: it is truncated")
    assert header is not None  # the loop refused a file without IHDR first
    if not idat:
        raise FormatError("the file has no image data (IDAT)")
    if header.colour == 3 and not palette:
        raise FormatError("a palette image without a palette (PLTE)")
    return header, palette, transparency, b"".join(idat)


def _walk(data: bytes) -> Iterator[tuple[bytes, bytes, int]]:
    at = len(SIGNATURE)
    while at < len(data):
        if at + 12 > len(data):
            raise FormatError(f"a chunk at byte {at} is cut short: the file is truncated")
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        end = at + 8 + length
        if end + 4 > len(data):
            raise FormatError(f"chunk {kind!r} at byte {at} says {length} bytes, past the end "
                              "of the file: it is truncated")
        body = data[at + 8:end]
        (crc,) = struct.unpack(">I", data[end:end + 4])
        if zlib.crc32(kind + body) != crc:
            raise FormatError(f"chunk {kind!r} at byte {at} fails its CRC check: the file is "
                              "corrupt")
        yield kind, body, at
        at = end + 4


def _header(body: bytes, at: int) -> Header:
    if len(body) != 13:
        raise FormatError(f"IHDR at byte {at} has {len(body)} bytes, not 13")
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(
        ">IIBBBBB", body)
    if colour not in DEPTHS or depth not in DEPTHS[colour]:
        raise FormatError(f"colour type {colour} with {depth}-bit samples is not a PNG format")
    if width == 0 or height == 0 or compression or filtering or interlace > 1:
        raise FormatError(f"IHDR says {width}x{height}, compression {compression}, filter "
                          f"method {filtering}, interlace {interlace}: not a valid PNG header")
    return Header(width, height, depth, colour, bool(interlace))


def _samples(header: Header, raw: bytes) -> list[int]:
    """Every sample, pixel by pixel in row-major order, from the decompressed rows."""
    if not header.interlaced:
        rows, used = _unfilter(header, raw, 0, header.width, header.height)
        _check_used(used, len(raw))
        return _unpack(header, rows, header.width)
    width, height, channels = header.width, header.height, header.channels
    samples = [0] * (width * height * channels)
    offset = 0
    for row0, column0, row_step, column_step in ADAM7:
        pass_width = (width - column0 + column_step - 1) // column_step
        pass_height = (height - row0 + row_step - 1) // row_step
        if pass_width <= 0 or pass_height <= 0:
            continue
        rows, offset = _unfilter(header, raw, offset, pass_width, pass_height)
        values = _unpack(header, rows, pass_width)
        k = 0
        for r in range(row0, height, row_step):
            for c in range(column0, width, column_step):
                at = (r * width + c) * channels
                samples[at:at + channels] = values[k:k + channels]
                k += channels
    _check_used(offset, len(raw))
    return samples


def _check_used(used: int, total: int) -> None:
    if used != total:
        raise FormatError(f"the image data holds {total} bytes where the header implies {used}")


def _unfilter(header: Header, raw: bytes, offset: int, width: int,
              height: int) -> tuple[list[bytearray], int]:
    """`height` rows of `width` pixels from `raw` at `offset`, each row's filter undone;
    and the offset after them."""
    stride, left = header.row_bytes(width), header.pixel_bytes
    if offset + height * (stride + 1) > len(raw):
        raise FormatError(f"the image data holds {len(raw)} bytes, fewer than the header "
                          "implies: it is truncated")
    previous = bytearray(stride)
    rows = []
    for _ in range(height):
        kind = raw[offset]
        row = bytearray(raw[offset + 1:offset + 1 + stride])
        offset += stride + 1
        if kind == 1:  # Sub
            for i in range(left, stride):
                row[i] = (row[i] + row[i - left]) & 0xFF
        elif kind == 2:  # Up
            row = bytearray((a + b) & 0xFF for a, b in zip(row, previous))
        elif kind == 3:  # Average
            for i in range(stride):
                row[i] = (row[i] + ((row[i - left] if i >= left else 0) + previous[i]) // 2) & 0xFF
        elif kind == 4:  # Paeth
            for i in range(stride):
                a = row[i - left] if i >= left else 0
                b = previous[i]
                c = previous[i - left] if i >= left else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        elif kind != 0:
            raise FormatError(f"a row uses filter type {kind}; PNG has 0 to 4")
        rows.append(row)
        previous = row
    return rows, offset


def _unpack(header: Header, rows: list[bytearray], width: int) -> list[int]:
    """The samples of filtered-back rows of `width` pixels."""
    count = width * header.channels
    depth = header.depth
    out: list[int] = []
    for row in rows:
        if depth == 8:
            out.extend(row)
        elif depth == 16:
            out.extend(struct.unpack(f">{count}H", row))
        else:
            per_byte, mask = 8 // depth, (1 << depth) - 1
            values = [(byte >> (8 - depth * (k + 1))) & mask for byte in row
                      for k in range(per_byte)]
            out.extend(values[:count])
    return out


def _expand_palette(header: Header, indices: list[int], palette: bytes,
                    transparency: bytes) -> tuple[list[int], int]:
    """Palette indices as RGB samples, or RGBA where tRNS gives alphas."""
    colours = len(palette) // 3
    if max(indices) >= colours:
        raise FormatError(f"a pixel names palette entry {max(indices)} of {colours}")
    if transparency:
        alphas = list(transparency) + [255] * (colours - len(transparency))
        table = [(*palette[3 * k:3 * k + 3], alphas[k]) for k in range(colours)]
        return [v for k in indices for v in table[k]], 4
    table3 = [tuple(palette[3 * k:3 * k + 3]) for k in range(colours)]
    return [v for k in indices for v in table3[k]], 3


def _planar(samples: list[int], channels: int) -> list[int]:
    """Interleaved samples (pixel by pixel) as channel planes, one after the other."""
    return [v for c in range(channels) for v in samples[c::channels]] if channels > 1 \
        else samples


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
