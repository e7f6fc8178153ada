"""Packing Python values into bytes and back, in the layout every backend shares.

Bytes are C-ordered and little-endian; bool takes one byte. Only the standard library is
used, so this works under Pyodide.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from typing import Any

from .dtypes import DType, float16
from .errors import ArgumentError

if sys.byteorder != "little":  # pragma: no cover - every supported platform is little-endian
    raise ImportError("pyburn needs a little-endian host")

# array typecodes by dtype; float16 goes through struct, "?" is stored as unsigned bytes
_TYPECODES = {"?": "B", "B": "B", "i": "i" if array("i").itemsize == 4 else "l", "q": "q",
              "f": "f", "d": "d"}


def typecode(dtype: DType) -> str:
    """The `array.array` typecode that stores `dtype` (float16 is stored as "f")."""
    return _TYPECODES.get(dtype.struct_char, "f")


def pack(values: Sequence[Any], dtype: DType) -> bytes:
    """Bytes of the flat sequence `values` stored as `dtype` (range-checked for ints)."""
    try:
        if dtype is float16:
            return struct.pack(f"<{len(values)}e", *values)
        if dtype.is_bool:
            return bytes(map(bool, values))
        if dtype.is_integer:
            values = [v if type(v) is int else int(v) for v in values]
        return array(_TYPECODES[dtype.struct_char], values).tobytes()
    except OverflowError:
        raise ArgumentError(f"a value is out of range for {dtype.name}") from None
    except (TypeError, ValueError) as exc:
        raise ArgumentError(f"cannot store these values as {dtype.name}: {exc}") from None


def unpack(data: bytes | memoryview, dtype: DType) -> list:
    """The flat list of Python values stored in `data` as `dtype`."""
    if dtype is float16:
        return list(struct.unpack(f"<{len(data) // 2}e", data))
    if dtype.is_bool:
        return [b != 0 for b in bytes(data)]
    values = array(_TYPECODES[dtype.struct_char])
    values.frombytes(data)
    return values.tolist()


def flatten_nested(data: Any) -> tuple[list, tuple[int, ...]]:
    """Flatten nested lists/tuples of scalars into a flat list and the shape they form."""
    if not isinstance(data, (list, tuple)):
        return [data], ()
    if not data:
        return [], (0,)
    if not isinstance(data[0], (list, tuple)):
        if any(isinstance(x, (list, tuple)) for x in data):
            raise ArgumentError("nested sequence mixes numbers and sequences at one level")
        return list(data), (len(data),)
    flat: list = []
    inner: tuple[int, ...] | None = None
    for item in data:
        part, shape = flatten_nested(item)
        if inner is None:
            inner = shape
        elif shape != inner or not isinstance(item, (list, tuple)):
            raise ArgumentError(f"ragged nested sequence: found sub-sequences of shapes "
                                f"{inner} and {shape}")
        flat.extend(part)
    return flat, (len(data),) + (inner or ())


def nest(flat: list, shape: tuple[int, ...]) -> Any:
    """Inverse of `flatten_nested`: the flat list cut into nested lists of `shape`."""
    if not shape:
        return flat[0]
    if 0 in shape:
        return _empty_nest(shape)
    for size in reversed(shape[1:]):
        flat = [flat[i:i + size] for i in range(0, len(flat), size)]
    return flat


def _empty_nest(shape: tuple[int, ...]) -> Any:
    if len(shape) == 1:
        return []
    return [_empty_nest(shape[1:]) for _ in range(shape[0])]
