"""The IDX file format (MNIST's): a typed, n-dimensional array, big-endian.

Layout: two zero bytes; one byte naming the element type; one byte with the number of dims
``d``; ``d`` big-endian uint32 sizes; then the elements, big-endian, in row-major order.
Files may be gzip-compressed (``.gz``): the reader recognises gzip by its first two bytes,
whatever the file is called.
"""

from __future__ import annotations

import array
import gzip
import math
import os
import struct
import sys
import zlib
from dataclasses import dataclass
from typing import Any

from ..._tensor import Tensor
from ...devices import Device
from ...errors import FormatError
from ...numpy_support import require_numpy
from ...ops.creation import tensor as make_tensor

_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class IdxType:
    """One IDX element type: its code, the name of its values, and how to unpack them."""

    code: int
    name: str  # "uint8", "int8", ... as numpy names them
    array_code: str  # the `array` module's typecode for the native-endian values
    itemsize: int
    tensor_dtype: str  # the pyburn dtype of `IdxArray.tensor()` (int8, int16 widen to int32)


IDX_TYPES: dict[int, IdxType] = {t.code: t for t in (
    IdxType(0x08, "uint8", "B", 1, "uint8"),
    IdxType(0x09, "int8", "b", 1, "int32"),
    IdxType(0x0B, "int16", "h", 2, "int32"),
    IdxType(0x0C, "int32", "i", 4, "int32"),
    IdxType(0x0D, "float32", "f", 4, "float32"),
    IdxType(0x0E, "float64", "d", 8, "float64"),
)}


@dataclass(frozen=True)
class IdxArray:
    """The contents of an IDX file: its shape, element type and raw element bytes.

    `data` holds the elements exactly as in the file (big-endian); `values()`, `tolist()`,
    `numpy()` and `tensor()` convert them.
    """

    shape: tuple[int, ...]
    type: IdxType
    data: memoryview

    @property
    def dtype(self) -> str:
        """The element type's name: "uint8", "int8", "int16", "int32", "float32", "float64"."""
        return self.type.name

    def values(self) -> array.array:
        """Every element, row-major, as a flat `array.array` of native numbers."""
        out = array.array(self.type.array_code)
        out.frombytes(self.data)
        if self.type.itemsize > 1 and sys.byteorder == "little":
            out.byteswap()
        return out

    def tolist(self) -> Any:
        """The elements as nested lists of Python numbers (a number for a 0-d file)."""
        flat: list[Any] = self.values().tolist()
        for size in reversed(self.shape[1:]):
            flat = [flat[i:i + size] for i in range(0, len(flat), size)]
        return flat[0] if not self.shape else flat

    def numpy(self) -> Any:
        """The elements as a numpy array of the native byte order (needs numpy)."""
        np = require_numpy()
        big_endian = np.dtype(self.type.name).newbyteorder(">")
        return np.frombuffer(self.data, dtype=big_endian).astype(self.type.name).reshape(
            self.shape)

    def tensor(self, device: Device | str | None = None) -> Tensor:
        """The elements as a pyburn tensor on `device`; int8 and int16 widen to int32, the
        narrowest signed type pyburn has."""
        values = self.values()
        if self.type.tensor_dtype != self.type.name:  # int8 and int16 widen to int32
            values = array.array("i", values)
        if sys.byteorder != "little":  # pyburn tensors take little-endian bytes
            values.byteswap()
        return make_tensor(values.tobytes(), shape=self.shape, dtype=self.type.tensor_dtype,
                           device=device)


def parse_idx(data: bytes | bytearray | memoryview, source: str = "<bytes>") -> IdxArray:
    """Parse the bytes of an (uncompressed) IDX file; `source` names it in errors.

    Raises `pyburn.FormatError` for a bad magic number, an unknown element type, a truncated
    header or data, or bytes left over after the data.
    """
    view = memoryview(data).cast("B")
    if len(view) < 4:
        raise FormatError(f"{source}: truncated IDX header: {len(view)} bytes, the magic "
                          "number alone takes 4")
    zero0, zero1, code, ndim = view[:4]
    if zero0 or zero1:
        raise FormatError(f"{source}: not an IDX file: its magic number "
                          f"0x{bytes(view[:4]).hex().upper()} (bytes 0-3) does not start with "
                          "two zero bytes")
    if code not in IDX_TYPES:
        known = ", ".join(f"0x{c:02X} ({t.name})" for c, t in IDX_TYPES.items())
        raise FormatError(f"{source}: unknown IDX element type 0x{code:02X} at byte 2; "
                          f"known: {known}")
    header = 4 + 4 * ndim
    if len(view) < header:
        raise FormatError(f"{source}: truncated IDX header: {ndim} dims need {header} bytes, "
                          f"the file has {len(view)}")
    shape = struct.unpack(f">{ndim}I", view[4:header])
    kind = IDX_TYPES[code]
    expected = math.prod(shape) * kind.itemsize
    actual = len(view) - header
    if actual < expected:
        raise FormatError(f"{source}: truncated IDX data: shape {shape} of {kind.name} needs "
                          f"{expected} bytes from byte {header}, the file has {actual}")
    if actual > expected:
        raise FormatError(f"{source}: IDX size mismatch: shape {shape} of {kind.name} ends at "
                          f"byte {header + expected}, the file has {actual - expected} more "
                          "bytes")
    return IdxArray(shape, kind, view[header:])


def read_idx(path: str | os.PathLike[str]) -> IdxArray:
    """Read an IDX file, raw or gzip-compressed.

    >>> import os, struct, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny-idx2-ubyte")
    >>> _ = open(path, "wb").write(bytes([0, 0, 8, 2]) + struct.pack(">II", 2, 3) + bytes(range(6)))
    >>> read_idx(path).tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    source = os.fspath(path)
    with open(source, "rb") as file:
        raw = file.read()
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise FormatError(f"{source}: corrupt gzip data: {exc}") from None
    return parse_idx(raw, source)
