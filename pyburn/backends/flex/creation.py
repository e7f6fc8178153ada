"""Creation primitives for flex: full, arange and random bits."""

from __future__ import annotations

from array import array

from ...dtypes import DType, int32
from ...random import random_words
from .storage import TYPECODE, Buf, Shape, numel, pack, scalar


def full(shape: Shape, value: float | int | bool, dtype: DType) -> Buf:
    """A tensor of `shape` with every element `value`."""
    return Buf(scalar(value, dtype) * numel(shape), shape, dtype)


def arange(start: float | int, step: float | int, n: int, dtype: DType) -> Buf:
    """``start + i * step`` for ``i in range(n)``: exact for integers, float64 then rounded
    for floats."""
    return Buf(pack([start + i * step for i in range(n)], dtype), (n,), dtype)


def random_bits(shape: Shape, seed: int, offset: int) -> Buf:
    """int32 random bits: the Philox words of ``pyburn.random`` reinterpreted as int32."""
    code = TYPECODE[int32]
    words = array(code.upper(), random_words(numel(shape), seed, offset))
    bits = array(code)
    bits.frombytes(words.tobytes())
    return Buf(bits, shape, int32)
