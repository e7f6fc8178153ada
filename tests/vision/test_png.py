"""`pyburn.vision.read_png` / `write_png` against real files made by real tools: Pillow
(every mode it writes, palettes with transparency, its filters) and pypng (every bit depth
of every colour type, Adam7 interlacing); written images read back by Pillow; corrupt and
truncated files refused with a `FormatError` that says where."""

from __future__ import annotations

import io
import zlib

import numpy as np
import pytest

import pyburn
from pyburn.vision import encode_png, read_png, write_png

png = pytest.importorskip("png", reason="pypng writes the interlaced and low-depth files")
Image = pytest.importorskip("PIL.Image", reason="Pillow writes and reads the other files")

RNG = np.random.default_rng(0)


def pillow_bytes(array: np.ndarray, mode: str, **options) -> bytes:
    out = io.BytesIO()
    Image.fromarray(array, mode=mode if mode != "I;16" else None).save(out, "PNG", **options)
    return out.getvalue()


def chw(array: np.ndarray) -> np.ndarray:
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)


@pytest.mark.parametrize("mode, shape", [("L", (13, 7)), ("RGB", (9, 11, 3)),
                                          ("RGBA", (5, 6, 4)), ("LA", (4, 9, 2))])
@pytest.mark.parametrize("optimize", [False, True], ids=["plain", "optimized"])
def test_pillow_images_read_as_pillow_reads_them(device, mode, shape, optimize):
    array = RNG.integers(0, 256, shape, dtype=np.uint8)
    data = pillow_bytes(array, mode, optimize=optimize)
    got = read_png(data, device=device)
    assert got.dtype is pyburn.uint8 and got.device == pyburn.device(device)
    np.testing.assert_array_equal(got.numpy(), chw(np.asarray(Image.open(io.BytesIO(data)))))


@pytest.mark.parametrize("transparent", [False, True])
def test_palette_images_expand_to_rgb_or_rgba(transparent):
    rgb = RNG.integers(0, 256, (10, 12, 3), dtype=np.uint8)
    image = Image.fromarray(rgb).quantize(colors=7)
    if transparent:
        image.info["transparency"] = bytes([0, 128, 255])
    out = io.BytesIO()
    image.save(out, "PNG", **({"transparency": bytes([0, 128, 255])} if transparent else {}))
    want = np.asarray(Image.open(io.BytesIO(out.getvalue())).convert(
        "RGBA" if transparent else "RGB"))
    np.testing.assert_array_equal(read_png(out.getvalue(), device="flex").numpy(), chw(want))


@pytest.mark.parametrize("interlace", [False, True], ids=["rows", "adam7"])
@pytest.mark.parametrize("planes, depth", [(1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (3, 8),
                                           (3, 16), (2, 16), (4, 16)])
def test_every_depth_and_adam7_as_pypng_writes_them(planes, depth, interlace):
    height, width = 11, 13  # not multiples of 8: every Adam7 pass is partial
    values = RNG.integers(0, 1 << depth, (height, width * planes))
    out = io.BytesIO()
    png.Writer(width, height, greyscale=planes in (1, 2), alpha=planes in (2, 4),
               bitdepth=depth, interlace=interlace).write(out, values.tolist())
    got = read_png(out.getvalue(), device="flex")
    want = values.reshape(height, width, planes).transpose(2, 0, 1)
    if depth < 8:
        want = want * 255 // ((1 << depth) - 1)
    assert got.dtype is (pyburn.int32 if depth == 16 else pyburn.uint8)
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", ["uint8", "int32"])
def test_written_images_read_back_by_pillow_and_pypng(device, tmp_path, channels, dtype):
    top = 256 if dtype == "uint8" else 65536
    array = RNG.integers(0, top, (channels, 7, 5))
    image = pyburn.tensor(array.tolist(), dtype=dtype, device=device)
    path = tmp_path / "out.png"
    write_png(image, path)
    width, height, rows, info = png.Reader(filename=str(path)).read()
    got = np.array(list(rows)).reshape(height, width, channels).transpose(2, 0, 1)
    np.testing.assert_array_equal(got, array)
    assert info["bitdepth"] == (8 if dtype == "uint8" else 16)
    if dtype == "uint8":
        np.testing.assert_array_equal(chw(np.asarray(Image.open(path))), array)
    assert read_png(path, device=device).tolist() == array.tolist()


def corrupt(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


def test_bad_files_are_refused_with_where_and_why():
    data = encode_png(pyburn.zeros(1, 4, 4, dtype=pyburn.uint8, device="flex"))
    cases = {b"GIF89a" + data[6:]: "signature", data[:40]: "truncated",
             corrupt(data, 20): "CRC", data[:-12]: "truncated"}
    for bad, why in cases.items():
        with pytest.raises(pyburn.errors.FormatError, match=why):
            read_png(bad)
    header = data[8:8 + 25]
    wrong_depth = bytearray(header)
    wrong_depth[8 + 8] = 3  # 3-bit greyscale
    body = bytes(wrong_depth[8:21])
    fixed = data[:8] + header[:8] + body + zlib.crc32(b"IHDR" + body).to_bytes(4, "big") + \
        data[33:]
    with pytest.raises(pyburn.errors.FormatError, match="3-bit"):
        read_png(fixed)
    with pytest.raises(pyburn.PyburnError, match="C from 1 to 4"):
        encode_png(pyburn.zeros(5, 2, 2, dtype=pyburn.uint8, device="flex"))
    with pytest.raises(pyburn.PyburnError, match="uint8 or int32"):
        encode_png(pyburn.zeros(1, 2, 2, device="flex"))
