"""PNG in pure Python, as Pyodide runs it (no numpy, no Pillow: this file also runs inside
Pyodide): every channel count and both sample sizes written and read back on flex, a file
whose rows use every filter and Adam7 (built here from the standard's definitions: zlib and
struct), and corrupt files refused."""

from __future__ import annotations

import random
import struct
import zlib

import pytest

import pyburn
from pyburn.vision import encode_png, read_png


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def filtered(rows: list[bytes], left: int) -> bytes:
    """`rows` with filter k % 5 on row k, each computed from the standard's definition."""
    out, previous = b"", bytes(len(rows[0]))
    for k, row in enumerate(rows):
        kind, coded = k % 5, bytearray()
        for i, value in enumerate(row):
            a = row[i - left] if i >= left else 0
            b = previous[i]
            c = previous[i - left] if i >= left else 0
            p = a + b - c
            paeth = a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else \
                b if abs(p - b) <= abs(p - c) else c
            guess = (0, a, b, (a + b) // 2, paeth)[kind]
            coded.append((value - guess) & 0xFF)
        out += bytes([kind]) + bytes(coded)
        previous = row
    return out


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype, top", [("uint8", 256), ("int32", 65536)])
def test_written_images_read_back(channels, dtype, top):
    rng = random.Random(channels * 7 + top)
    values = [[[rng.randrange(top) for _ in range(5)] for _ in range(3)] for _ in range(channels)]
    image = pyburn.tensor(values, dtype=dtype, device="flex")
    assert read_png(encode_png(image), device="flex").tolist() == values


def test_every_filter_and_adam7():
    rng = random.Random(3)
    width, height = 7, 9
    pixels = [[(rng.randrange(256), rng.randrange(256), rng.randrange(256))
               for _ in range(width)] for _ in range(height)]
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    rows = [bytes(v for p in row for v in p) for row in pixels]
    plain = b"\x89PNG\r\n\x1a\n" + header + chunk(b"IDAT", zlib.compress(filtered(rows, 3))) + \
        chunk(b"IEND", b"")
    want = [[[pixels[y][x][c] for x in range(width)] for y in range(height)] for c in range(3)]
    assert read_png(plain, device="flex").tolist() == want
    passes = ((0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2),
              (0, 1, 2, 2), (1, 0, 2, 1))
    data = b""
    for top, left, dy, dx in passes:
        part = [bytes(v for x in range(left, width, dx) for v in pixels[y][x])
                for y in range(top, height, dy)]
        if part and part[0]:
            data += filtered(part, 3)
    interlaced = b"\x89PNG\r\n\x1a\n" + \
        chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 1)) + \
        chunk(b"IDAT", zlib.compress(data)) + chunk(b"IEND", b"")
    assert read_png(interlaced, device="flex").tolist() == want


def test_corrupt_files_are_refused():
    data = encode_png(pyburn.zeros(1, 3, 3, dtype=pyburn.uint8, device="flex"))
    for bad, why in ((data[:20], "truncated"), (data[:30] + b"\x00" + data[31:], "CRC"),
                     (b"\x00" + data[1:], "signature")):
        with pytest.raises(pyburn.errors.FormatError, match=why):
            read_png(bad)
