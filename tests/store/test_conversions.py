"""Element types pyburn lacks, converted on load: spot checks against values worked out by
hand from each format's definition (no numpy or PyTorch needed; test_interop.py checks every
bit pattern against PyTorch)."""

from __future__ import annotations

import math
import struct

import pytest

import pyburn
from pyburn import store

from .files import entry, raw_file


def _load_one(dtype: str, data: bytes, count: int) -> pyburn.Tensor:
    return store.load(raw_file({"x": entry(dtype, [count], 0, len(data))}, data),
                      device="flex")["x"]


@pytest.mark.parametrize("dtype, byte, value", [
    ("F8_E4M3", 0x00, 0.0), ("F8_E4M3", 0x80, -0.0), ("F8_E4M3", 0x01, 2.0**-9),
    ("F8_E4M3", 0x08, 2.0**-6), ("F8_E4M3", 0x38, 1.0), ("F8_E4M3", 0x7E, 448.0),
    ("F8_E4M3", 0xFE, -448.0), ("F8_E4M3", 0x7F, math.nan), ("F8_E4M3", 0x78, 256.0),
    ("F8_E5M2", 0x3C, 1.0), ("F8_E5M2", 0x01, 2.0**-16), ("F8_E5M2", 0x7B, 57344.0),
    ("F8_E5M2", 0x7C, math.inf), ("F8_E5M2", 0xFC, -math.inf), ("F8_E5M2", 0x7D, math.nan),
    ("F8_E4M3FNUZ", 0x40, 1.0), ("F8_E4M3FNUZ", 0x80, math.nan), ("F8_E4M3FNUZ", 0x7F, 240.0),
    ("F8_E4M3FNUZ", 0x01, 2.0**-10),
    ("F8_E5M2FNUZ", 0x40, 1.0), ("F8_E5M2FNUZ", 0x80, math.nan),
    ("F8_E5M2FNUZ", 0x7F, 57344.0), ("F8_E5M2FNUZ", 0xFF, -57344.0),
    ("F8_E8M0", 0x7F, 1.0), ("F8_E8M0", 0x00, 2.0**-127), ("F8_E8M0", 0xFE, 2.0**127),
    ("F8_E8M0", 0xFF, math.nan),
])
def test_8_bit_floats_load_as_float32(dtype, byte, value):
    x = _load_one(dtype, bytes([byte]), 1)
    assert x.dtype is pyburn.float32
    got = x.tolist()[0]
    if math.isnan(value):
        assert math.isnan(got)
    else:
        assert got == value and math.copysign(1, got) == math.copysign(1, value)


def test_bfloat16_is_the_top_half_of_float32():
    values = [1.0, -2.5, 1.5 * 2.0**127, 2.0**-133, math.inf, -0.0]  # all exact in bf16
    data = b"".join(struct.pack("<f", v)[2:] for v in values)
    assert _load_one("BF16", data, len(values)).tolist() == values


@pytest.mark.parametrize("dtype, fmt, values, expected", [
    ("I8", "b", [-128, -1, 0, 127], "int32"),
    ("I16", "h", [-32768, -1, 0, 32767], "int32"),
    ("U16", "H", [0, 1, 32768, 65535], "int32"),
    ("U32", "I", [0, 1, 2**31, 2**32 - 1], "int64"),
    ("U64", "Q", [0, 1, 2**62, 2**63 - 1], "int64"),
])
def test_integers_widen_exactly(dtype, fmt, values, expected):
    x = _load_one(dtype, struct.pack(f"<{len(values)}{fmt}", *values), len(values))
    assert x.dtype.name == expected and x.tolist() == values


def test_bool_bytes_other_than_one_read_as_true():
    x = _load_one("BOOL", bytes([0, 1, 2, 255]), 4)
    assert x.tolist() == [False, True, True, True] and x.to_bytes() == bytes([0, 1, 1, 1])


@pytest.mark.parametrize("dtype, count, nbytes, what", [
    ("F4", 4, 2, "4-bit"), ("F6_E2M3", 4, 3, "6-bit"), ("C64", 1, 8, "complex")])
def test_types_without_an_exact_pyburn_dtype_are_refused(dtype, count, nbytes, what):
    with pytest.raises(pyburn.DTypeError, match=f"'x' has element type {dtype}.*{what}"):
        _load_one(dtype, bytes(nbytes), count)


def test_uint64_values_past_int64_are_refused():
    with pytest.raises(pyburn.DTypeError, match="U64"):
        _load_one("U64", struct.pack("<2Q", 1, 2**63), 2)
