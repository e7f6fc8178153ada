"""Packing 8-bit and 4-bit integers into int32 words, and back, with tensor ops only (shifts,
ands, a sum), so that both run on every device, flex included.

The layout (docs/quantization.md): row k of values [N, K] becomes row k of words
[N, ceil(K / per_word)], per_word = 32 // bits; element j of a row sits in word j // per_word
at bits (j % per_word) * bits, two's complement for signed types; the padding at the end of
a row is zero. Read as little-endian bytes, an 8-bit row is its values in order and a 4-bit
row two values per byte, low nibble first (ONNX's int4 layout).
"""

from __future__ import annotations

from .._tensor import Tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from ..ops.capability.quantized import unpack as capability_unpack
from ..ops.creation import arange
from ..ops.movement import pad_dim

__all__ = ["pack", "unpack", "words_per_row"]


def words_per_row(k: int, bits: int) -> int:
    """How many int32 words hold a row of `k` values of `bits` bits."""
    per_word = 32 // _check_bits(bits)
    return -(-k // per_word)


def pack(values: Tensor, bits: int, signed: bool) -> Tensor:
    """The int32 words [N, ceil(K / per_word)] holding `values` (an int32 tensor [N, K]) as
    `bits`-bit integers, signed or not; values outside the type's range saturate.

    >>> import pyburn
    >>> words = pack(pyburn.tensor([[1, -2, 3]], dtype=pyburn.int32, device="flex"), 8, True)
    >>> hex(words.item() & 0xFFFFFFFF)
    '0x3fe01'
    """
    _check_bits(bits)
    if not isinstance(values, Tensor) or values.dtype.name != "int32" or values.ndim != 2:
        got = (f"{values.dtype.name} {values.shape}" if isinstance(values, Tensor)
               else type(values).__name__)
        raise DTypeError(f"pack takes an int32 tensor [N, K], got {got}")
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    per_word = 32 // bits
    n, k = values.shape
    words = words_per_row(k, bits)
    fields = pad_dim(values.clamp(low, high), 1, 0, words * per_word - k)
    shifts = arange(0, 32, bits, dtype="int32", device=values.device)
    # the fields do not overlap, so their sum is their bitwise or; the top field may be
    # negative (its sign bit is the word's), which the sum carries exactly, with no overflow
    return ((fields.reshape(n, words, per_word) & ((1 << bits) - 1)) << shifts).sum(-1)


def unpack(words: Tensor, k: int, bits: int, signed: bool) -> Tensor:
    """The int32 values [N, k] that `pack` stored in `words` [N, ceil(k / per_word)].

    >>> import pyburn
    >>> words = pack(pyburn.tensor([[1, -2, 3]], dtype=pyburn.int32, device="flex"), 4, True)
    >>> unpack(words, 3, 4, True).tolist()
    [[1, -2, 3]]
    """
    _check_bits(bits)
    if not isinstance(words, Tensor) or words.dtype.name != "int32" or words.ndim != 2:
        got = (f"{words.dtype.name} {words.shape}" if isinstance(words, Tensor)
               else type(words).__name__)
        raise DTypeError(f"unpack takes int32 words [N, W], got {got}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ArgumentError(f"unpack: k must be a non-negative int, got {k!r}")
    if words.shape[1] != words_per_row(k, bits):
        raise ShapeError(f"unpack: {k} values of {bits} bits take {words_per_row(k, bits)} "
                         f"words a row, got words of shape {words.shape}")
    return capability_unpack(words, bits, signed, k)


def _check_bits(bits: int) -> int:
    if bits not in (4, 8) or isinstance(bits, bool):
        raise ArgumentError(f"packed integers have 4 or 8 bits, got {bits!r}")
    return bits
