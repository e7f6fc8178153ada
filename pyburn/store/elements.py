"""The element types of the safetensors format, and how each becomes a pyburn dtype.

Seven types are pyburn's own and load byte for byte. The others load converted to the
narrowest pyburn dtype that holds every value exactly (docs/store.md has the table):
I8, U16 and I16 become int32; U32 becomes int64; U64 becomes int64 when every value is below
2**63; BF16 and the 8-bit floats become float32. Types with no exact pyburn form (4- and
6-bit floats, complex) are refused with a `DTypeError` that names them.

A conversion rebuilds each byte of the target's elements from one byte of the source's,
through a 256-entry translation table where needed (``bytes.translate``), so it runs at C
speed in pure Python, Pyodide included.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass

from ..dtypes import DType, bool_, float16, float32, float64, int32, int64, uint8
from ..errors import DTypeError

#: One byte of a converted element: ``(source byte, translation table or None)``, or None
#: for a zero byte.
Plane = tuple[int, bytes | None] | None


@dataclass(frozen=True)
class Element:
    """One safetensors element type: its name, its size, and what it loads as."""

    name: str
    bits: int
    #: the pyburn dtype it loads as; None when pyburn cannot hold its values
    dtype: DType | None
    #: how to build each byte of a `dtype` element from the source element's bytes;
    #: None when the bytes are already in `dtype`'s layout
    planes: tuple[Plane, ...] | None = None
    #: what pyburn lacks, for the message of a refused type
    refusal: str = ""

    def nbytes(self, count: int) -> int | None:
        """Bytes taken by `count` elements, or None when they do not fill whole bytes."""
        bits = count * self.bits
        return bits // 8 if bits % 8 == 0 else None

    def target(self, label: str) -> DType:
        """The pyburn dtype this type loads as; `label` names the tensor in the error
        raised when there is none."""
        if self.dtype is None:
            raise DTypeError(f"{label} has element type {self.name}, which pyburn cannot "
                             f"hold ({self.refusal})")
        return self.dtype

    def decode(self, data: bytes | memoryview, label: str) -> bytes | bytearray | memoryview:
        """The elements in `data` in the layout of the dtype they load as (`label` names
        the tensor in errors)."""
        dtype = self.target(label)
        if self.name == "U64" and max(data[7::8], default=0) >= 0x80:
            raise DTypeError(f"{label} is U64 with values of 2**63 or more, which pyburn's "
                             f"largest integer type, int64, cannot hold")
        if self.planes is None:
            return data
        data = bytes(data)  # a conversion copies anyway; bytes has translate(), views do not
        source_size, target_size = self.bits // 8, dtype.itemsize
        out = bytearray(len(data) // source_size * target_size)
        for k, plane in enumerate(self.planes):
            if plane is not None:
                byte, table = plane
                column = data[byte::source_size]
                out[k::target_size] = column.translate(table) if table else column
        return out


def _byte_map(encode: Callable[[int], bytes]) -> tuple[Plane, ...]:
    """Planes converting a one-byte type through ``encode(byte) -> target bytes``."""
    images = [encode(b) for b in range(256)]
    return tuple((0, bytes(image[k] for image in images)) for k in range(len(images[0])))


def _minifloat(exp_bits: int, man_bits: int, bias: int, style: str) -> Callable[[int], float]:
    """The value of each byte of an 8-bit float with a sign bit. `style` says where the
    special values are: "ieee" (top exponent: infinities and NaNs), "fn" (only the all-ones
    pattern is NaN, no infinities), "fnuz" (only 0x80, negative zero, is NaN)."""
    top, man_mask = (1 << exp_bits) - 1, (1 << man_bits) - 1

    def value(byte: int) -> float:
        negative = byte >> (exp_bits + man_bits) & 1
        exp, man = byte >> man_bits & top, byte & man_mask
        if style == "fnuz" and byte == 0x80:
            return math.nan
        signed_nan = math.copysign(math.nan, -1.0 if negative else 1.0)  # as PyTorch keeps it
        if style == "ieee" and exp == top:
            return signed_nan if man else (-math.inf if negative else math.inf)
        if style == "fn" and exp == top and man == man_mask:
            return signed_nan
        if exp == 0:  # subnormal: no implicit leading 1
            magnitude = math.ldexp(man, 1 - bias - man_bits)
        else:
            magnitude = math.ldexp(man + (1 << man_bits), exp - bias - man_bits)
        return -magnitude if negative else magnitude

    return value


def _e8m0(byte: int) -> float:
    """A power-of-two scale: 2**(byte - 127), with 0xFF as NaN (no sign, no zero)."""
    return math.nan if byte == 0xFF else math.ldexp(1.0, byte - 127)


def float32_map(value: Callable[[int], float]) -> tuple[Plane, ...]:
    """Planes converting a one-byte type to float32 through ``value(byte) -> float``."""
    return _byte_map(lambda b: struct.pack("<f", value(b)))


_SIGN = bytes(0xFF if b & 0x80 else 0 for b in range(256))  # the byte a sign bit extends to
_COPY = (0, None), (1, None), (2, None), (3, None)

ELEMENTS: dict[str, Element] = {e.name: e for e in (
    Element("BOOL", 8, bool_, _byte_map(lambda b: bytes([b != 0]))),  # any nonzero is True
    Element("U8", 8, uint8),
    Element("I8", 8, int32, _byte_map(lambda b: struct.pack("<i", b - (b & 0x80) * 2))),
    Element("U16", 16, int32, _COPY[:2] + (None, None)),
    Element("I16", 16, int32, _COPY[:2] + ((1, _SIGN), (1, _SIGN))),
    Element("F16", 16, float16),
    Element("BF16", 16, float32, (None, None) + _COPY[:2]),  # bf16 is float32's top half
    Element("I32", 32, int32),
    Element("U32", 32, int64, _COPY + (None,) * 4),
    Element("F32", 32, float32),
    Element("I64", 64, int64),
    Element("U64", 64, int64),  # same bytes; values of 2**63 or more are refused
    Element("F64", 64, float64),
    Element("F8_E4M3", 8, float32, float32_map(_minifloat(4, 3, 7, "fn"))),
    Element("F8_E5M2", 8, float32, float32_map(_minifloat(5, 2, 15, "ieee"))),
    Element("F8_E4M3FNUZ", 8, float32, float32_map(_minifloat(4, 3, 8, "fnuz"))),
    Element("F8_E5M2FNUZ", 8, float32, float32_map(_minifloat(5, 2, 16, "fnuz"))),
    Element("F8_E8M0", 8, float32, float32_map(_e8m0)),
    Element("F4", 4, None, refusal="4-bit floats, packed two to a byte"),
    Element("F6_E2M3", 6, None, refusal="6-bit floats"),
    Element("F6_E3M2", 6, None, refusal="6-bit floats"),
    Element("C64", 64, None, refusal="complex numbers"),
)}

#: the safetensors name of each pyburn dtype: all seven are in the format as they are
NAMES: dict[DType, str] = {bool_: "BOOL", uint8: "U8", int32: "I32", int64: "I64",
                           float16: "F16", float32: "F32", float64: "F64"}
