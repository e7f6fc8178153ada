"""The flex handle: an ``array.array`` seen through a shape, strides and an offset.

Movement ops (reshape of a contiguous tensor, permute, expand, slice, flip) only make a new
`Buf` over the same array; the elements are gathered into row-major order the first time
something needs them (`Buf.flat`) and that copy is kept, since handles never change.

Storage per dtype: bool and uint8 as ``'B'`` (bool holds 0 or 1), int32 as a 4-byte code,
int64 as ``'q'``, float32 as ``'f'``, float64 as ``'d'``. float16 lives in ``'f'`` arrays with
every stored value rounded to half precision, so arithmetic on it sees exactly the float16
numbers and only `to_bytes` packs them into two bytes.
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from itertools import repeat

from ...dtypes import ALL_DTYPES, DType, bool_, float16, int32, int64, uint8
from ...shape import contiguous_strides

Shape = tuple[int, ...]


def _four_byte_code() -> str:
    # int32 needs a 4-byte typecode: 'i' on every platform CPython supports today, 'l'
    # kept as the fallback the C standard allows.
    for code in ("i", "l"):
        if array(code).itemsize == 4:
            return code
    raise RuntimeError("no 4-byte array typecode for int32")


TYPECODE: dict[DType, str] = {d: d.struct_char for d in ALL_DTYPES}
TYPECODE.update({bool_: "B", int32: _four_byte_code(), float16: "f"})
_BIG_ENDIAN = sys.byteorder == "big"


def numel(shape: Iterable[int]) -> int:
    """Number of elements of `shape` (1 for a scalar)."""
    return math.prod(shape)


def _merged_dims(shape: Sequence[int], strides: Sequence[int]) -> list[tuple[int, int]]:
    """(size, stride) pairs without size-1 dims, adjacent dims fused where they step as one."""
    dims: list[tuple[int, int]] = []
    for size, stride in zip(shape, strides, strict=True):
        if size == 1:
            continue
        if dims and dims[-1][1] == size * stride:
            dims[-1] = (dims[-1][0] * size, stride)
        else:
            dims.append((size, stride))
    return dims


def _bases(dims: Sequence[tuple[int, int]], offset: int) -> list[int]:
    """Start offsets of every element of `dims` in row-major order."""
    bases = [offset]
    for size, stride in dims:
        steps = range(0, size * stride, stride) if stride else [0] * size
        bases = [b + s for b in bases for s in steps]
    return bases


def element_offsets(shape: Sequence[int], strides: Sequence[int], offset: int) -> list[int]:
    """Storage offset of every element of a strided view, in row-major order."""
    if 0 in shape:
        return []
    return _bases(_merged_dims(shape, strides), offset)


def _gather(data: array, shape: Shape, strides: Shape, offset: int) -> array:
    """The elements of a strided view as a new contiguous array."""
    if 0 in shape:
        return array(data.typecode)
    dims = _merged_dims(shape, strides)
    if not dims:
        return array(data.typecode, [data[offset]])
    size, stride = dims[-1]
    out = array(data.typecode)
    # The innermost run is copied by one C-level slice per row, whatever its stride.
    for base in _bases(dims[:-1], offset):
        if stride == 0:
            out.extend(array(data.typecode, [data[base]]) * size)
        else:
            stop = base + size * stride
            out.extend(data[base:stop if stop >= 0 else None:stride])
    return out


class Buf:
    """A flex tensor: `data` read through `shape`, element `strides` and `offset`."""

    __slots__ = ("data", "shape", "strides", "offset", "dtype", "_flat", "__weakref__")

    def __init__(self, data: array, shape: Shape, dtype: DType,
                 strides: Shape | None = None, offset: int = 0):
        self.data = data
        self.shape = shape
        self.dtype = dtype
        self.strides = contiguous_strides(shape) if strides is None else strides
        self.offset = offset
        self._flat: array | None = None

    def __repr__(self) -> str:
        return (f"Buf({self.dtype.name}, shape={self.shape}, strides={self.strides}, "
                f"offset={self.offset})")

    @property
    def size(self) -> int:
        """Number of elements."""
        return numel(self.shape)

    def is_contiguous(self) -> bool:
        """Whether the elements sit in row-major order in one run of `data`."""
        dims = _merged_dims(self.shape, self.strides)
        return len(dims) == 0 or (len(dims) == 1 and dims[0][1] == 1)

    def flat(self) -> array:
        """The elements in row-major order. May be `data` itself: never modify it."""
        if self._flat is None:
            n = self.size
            if n == 0 or not self.is_contiguous():
                self._flat = _gather(self.data, self.shape, self.strides, self.offset)
            elif self.offset == 0 and len(self.data) == n:
                self._flat = self.data
            else:
                self._flat = self.data[self.offset:self.offset + n]
        return self._flat

    def elements(self) -> Iterable:
        """The elements in row-major order: a `repeat` when every one is the same stored
        value (a broadcast scalar), which saves materialising it."""
        n = self.size
        if n > 1 and not any(self.strides[d] for d in range(len(self.shape))
                             if self.shape[d] != 1):
            return repeat(self.data[self.offset], n)
        return self.flat()

    def view(self, shape: Shape, strides: Shape, offset: int) -> Buf:
        """Another view of the same storage."""
        return Buf(self.data, shape, self.dtype, strides, offset)


# ---- turning Python values into stored arrays ------------------------------------------

def _half(value: float) -> float:
    try:
        return struct.unpack("<e", struct.pack("<e", float(value)))[0]
    except OverflowError:  # beyond the largest half: rounds to infinity
        return math.copysign(math.inf, value)


def round_half(values: Sequence[float] | array) -> array:
    """An ``'f'`` array of `values` rounded to float16 (round half to even, overflow → inf)."""
    fmt = f"<{len(values)}e"
    try:
        return array("f", struct.unpack(fmt, struct.pack(fmt, *values)))
    except (OverflowError, struct.error):  # struct refuses ints beyond the half range
        return array("f", map(_half, values))


def _int_wrapper(dtype: DType):
    bits = dtype.itemsize * 8
    mask = (1 << bits) - 1
    if dtype.kind == "u":
        return lambda v: v & mask
    half = 1 << (bits - 1)
    return lambda v: ((v + half) & mask) - half


_WRAP = {d: _int_wrapper(d) for d in (uint8, int32, int64)}


def pack(values: Sequence, dtype: DType) -> array:
    """Store Python numbers as `dtype`: floats rounded to the dtype's precision, integers
    wrapped like two's complement, bool as ``value != 0``."""
    code = TYPECODE[dtype]
    if dtype is float16:
        return round_half(values)
    if dtype is bool_:
        return array(code, map(bool, values))
    try:
        return array(code, values)
    except OverflowError:
        return array(code, map(_WRAP[dtype], values))


def scalar(value: float | int | bool, dtype: DType) -> array:
    """A one-element array holding `value` as `dtype`."""
    return pack([value], dtype)


# ---- bytes ------------------------------------------------------------------------------

def from_bytes(data: bytes | memoryview, shape: Shape, dtype: DType) -> Buf:
    """A handle from C-ordered little-endian bytes."""
    if dtype is float16:
        values = array("f", struct.unpack(f"<{len(data) // 2}e", data))
    else:
        values = array(TYPECODE[dtype])
        values.frombytes(data)
        if _BIG_ENDIAN:
            values.byteswap()
    return Buf(values, shape, dtype)


def to_bytes(x: Buf) -> bytes:
    """The elements as C-ordered little-endian bytes."""
    flat = x.flat()
    if x.dtype is float16:
        return struct.pack(f"<{len(flat)}e", *flat)
    if _BIG_ENDIAN:
        flat = array(flat.typecode, flat)
        flat.byteswap()
    return flat.tobytes()

