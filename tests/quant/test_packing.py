"""pack / unpack on every device against a packing written with numpy, round trips of every
type, saturation, and bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.errors import ArgumentError, DTypeError, ShapeError
from pyburn.quant.packing import pack, unpack, words_per_row

TYPES = [(8, True), (8, False), (4, True), (4, False)]


def reference_words(values: np.ndarray, bits: int) -> np.ndarray:
    """The format written out by hand: little-endian fields of `bits` bits, zero padding."""
    per = 32 // bits
    n, k = values.shape
    out = np.zeros((n, -(-k // per)), np.uint32)
    for row in range(n):
        for j in range(k):
            field = int(values[row, j]) & ((1 << bits) - 1)
            out[row, j // per] |= np.uint32(field << (j % per) * bits)
    return out.view(np.int32)


@pytest.mark.parametrize("bits, signed", TYPES, ids=["int8", "uint8", "int4", "uint4"])
def test_pack_matches_the_format_and_unpack_undoes_it(device, bits, signed):
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    rng = np.random.default_rng(bits)
    values = rng.integers(low, high + 1, (3, 13)).astype(np.int32)
    values[0, :2] = (low, high)  # both ends of the range, sign bits included
    words = pack(pyburn.tensor(values.tolist(), dtype="int32", device=device), bits, signed)
    assert words.shape == (3, words_per_row(13, bits)) and words.dtype is pyburn.int32
    np.testing.assert_array_equal(np.array(words.tolist(), np.int32),
                                  reference_words(values, bits))
    assert unpack(words, 13, bits, signed).tolist() == values.tolist()


def test_values_outside_the_range_saturate():
    values = pyburn.tensor([[300, -300, 9, -9]], dtype="int32", device="flex")
    assert unpack(pack(values, 8, True), 4, 8, True).tolist() == [[127, -128, 9, -9]]
    assert unpack(pack(values, 4, False), 4, 4, False).tolist() == [[15, 0, 9, 0]]


def test_bad_arguments_are_refused():
    ints = pyburn.zeros(2, 3, dtype="int32", device="flex")
    with pytest.raises(ArgumentError, match="4 or 8 bits"):
        pack(ints, 2, True)
    with pytest.raises(DTypeError, match="int32 tensor"):
        pack(ints.float(), 8, True)
    with pytest.raises(DTypeError, match="int32 words"):
        unpack(ints.reshape(6), 6, 8, True)
    with pytest.raises(ShapeError, match="take 2 words a row"):
        unpack(ints, 5, 8, True)
    with pytest.raises(ArgumentError, match="non-negative int"):
        unpack(ints, -1, 8, True)
