"""The IDX reader on small files written here with `struct`, for every element type."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest

import pyburn
from pyburn.data.datasets import parse_idx, read_idx

# code, struct character (big-endian), numpy dtype, pyburn dtype of .tensor(), sample values
TYPES = [
    (0x08, "B", "uint8", pyburn.uint8, [0, 1, 127, 128, 255, 7]),
    (0x09, "b", "int8", pyburn.int32, [-128, -1, 0, 1, 127, 5]),
    (0x0B, "h", "int16", pyburn.int32, [-32768, -2, 0, 300, 32767, 9]),
    (0x0C, "i", "int32", pyburn.int32, [-2**31, -70000, 0, 1, 2**31 - 1, 65536]),
    (0x0D, "f", "float32", pyburn.float32, [-1.5, 0.0, 0.25, 2.0**127, -2.0**-20, 1.0]),
    (0x0E, "d", "float64", pyburn.float64, [-1.0e300, 0.1, 0.0, 2.0**-1000, 1.0, -7.25]),
]


def idx_bytes(code: int, shape: tuple[int, ...], char: str, flat: list) -> bytes:
    """An IDX file as the format describes it."""
    header = bytes([0, 0, code, len(shape)]) + struct.pack(f">{len(shape)}I", *shape)
    return header + struct.pack(f">{len(flat)}{char}", *flat)


def nest(flat: list, shape: tuple[int, ...]) -> list:
    for size in reversed(shape[1:]):
        flat = [flat[i:i + size] for i in range(0, len(flat), size)]
    return flat


@pytest.mark.parametrize(("code", "char", "np_name", "dtype", "flat"), TYPES,
                         ids=[t[2] for t in TYPES])
@pytest.mark.parametrize("compressed", [False, True], ids=["raw", "gz"])
def test_every_element_type(tmp_path, code, char, np_name, dtype, flat, compressed):
    shape = (2, 3)
    data = idx_bytes(code, shape, char, flat)
    path = tmp_path / ("x.idx.gz" if compressed else "x.idx")
    path.write_bytes(gzip.compress(data) if compressed else data)
    arr = read_idx(path)
    assert arr.shape == shape and arr.dtype == np_name
    assert arr.tolist() == nest(flat, shape)
    reference = np.array(flat, dtype=np_name).reshape(shape)
    np.testing.assert_array_equal(arr.numpy(), reference)
    assert arr.numpy().dtype == np.dtype(np_name)
    t = arr.tensor(device="flex")
    assert t.dtype is dtype and t.shape == shape
    assert t.tolist() == reference.astype(dtype.name).tolist()


@pytest.mark.parametrize("shape", [(), (0,), (4,), (2, 0, 3), (1, 2, 1, 2)])
def test_shapes_of_any_rank(tmp_path, shape):
    n = int(np.prod(shape))
    path = tmp_path / "x"
    path.write_bytes(idx_bytes(0x0C, shape, "i", list(range(n))))
    arr = read_idx(path)
    assert arr.shape == shape
    np.testing.assert_array_equal(arr.numpy(), np.arange(n, dtype=np.int32).reshape(shape))
    assert arr.tensor("flex").tolist() == np.arange(n).reshape(shape).tolist()


def test_gzip_is_recognised_by_content_not_name(tmp_path):
    path = tmp_path / "no-extension"
    path.write_bytes(gzip.compress(idx_bytes(0x08, (3,), "B", [1, 2, 3])))
    assert read_idx(path).tolist() == [1, 2, 3]


GOOD = idx_bytes(0x0B, (2, 2), "h", [1, 2, 3, 4])


@pytest.mark.parametrize(("data", "match"), [
    (b"", "truncated IDX header: 0 bytes"),
    (b"\x00\x00\x08", "truncated IDX header: 3 bytes"),
    (b"\x01" + GOOD[1:], "not an IDX file: its magic number 0x01000B02"),
    (b"PK\x03\x04", "not an IDX file"),
    (GOOD[:2] + b"\x0a" + GOOD[3:], "unknown IDX element type 0x0A at byte 2"),
    (GOOD[:9], "truncated IDX header: 2 dims need 12 bytes, the file has 9"),
    (GOOD[:-1], r"truncated IDX data: shape \(2, 2\) of int16 needs 8 bytes from byte 12, "
                "the file has 7"),
    (GOOD + b"\x00\x00\x01", "IDX size mismatch: .* ends at byte 20, the file has 3 more"),
])
def test_corrupt_files_raise_format_errors_naming_the_file(tmp_path, data, match):
    path = tmp_path / "bad-idx"
    path.write_bytes(data)
    with pytest.raises(pyburn.FormatError, match=match) as info:
        read_idx(path)
    assert str(path) in str(info.value)


def test_corrupt_gzip_raises_format_error(tmp_path):
    packed = gzip.compress(GOOD)
    for name, data in [("truncated.gz", packed[:-6]),
                       ("crc.gz", packed[:-8] + bytes(4) + packed[-4:])]:
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(pyburn.FormatError, match="corrupt gzip data"):
            read_idx(path)


def test_parse_idx_takes_bytes_and_names_the_source():
    assert parse_idx(GOOD).tolist() == [[1, 2], [3, 4]]
    with pytest.raises(pyburn.FormatError, match="^pkg:member: truncated"):
        parse_idx(GOOD[:5], "pkg:member")
