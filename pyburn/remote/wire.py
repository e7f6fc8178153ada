"""The remote device's wire format: MessagePack (https://msgpack.org, the format burn-remote
uses too), written and read here in pure Python so that the client runs under Pyodide.

`pack` writes nil, bools, ints (up to 64 bits), floats (always float64, so values cross
exactly), str, bytes-like (``bin``), lists and tuples (``array``), dicts (``map``) and the
extension types of the protocol: a `HandleId` (type 1, 8-byte unsigned id), a `DType` (type
2, its name), and in a registered graph a `LocalRef` (type 3: the k-th handle the graph
makes), a `ParamRef` (type 4: its j-th input handle) and a `ValueRef` (type 5: its j-th
input value), each a 4-byte unsigned index.

`unpack` reads exactly one value spanning the whole frame and raises `WireError` for
anything else: a truncated or oversized value, trailing bytes, a reserved or unknown type
byte, an unknown extension, nesting deeper than `MAX_DEPTH`. Arrays are read as tuples.
Nothing it reads is ever executed: values are data only.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ..dtypes import DType, as_dtype
from ..errors import DTypeError, RemoteError

#: containers nested deeper than this are refused (a frame is a few levels deep)
MAX_DEPTH = 32
HANDLE_EXT = 1
DTYPE_EXT = 2
LOCAL_EXT = 3
PARAM_EXT = 4
VALUE_EXT = 5


class WireError(RemoteError):
    """A frame that is not one well-formed protocol value."""


@dataclass(frozen=True)
class HandleId:
    """A tensor handle on the server, named by the id the client gave it."""

    id: int


@dataclass(frozen=True)
class LocalRef:
    """In a registered graph: the `index`-th handle the graph's own tasks make."""

    index: int


@dataclass(frozen=True)
class ParamRef:
    """In a registered graph: the `index`-th handle a replay passes in."""

    index: int


@dataclass(frozen=True)
class ValueRef:
    """In a registered graph: the `index`-th value (a fill value) a replay passes in."""

    index: int


#: the index references of a registered graph, by their extension types
_REFS = {LOCAL_EXT: LocalRef, PARAM_EXT: ParamRef, VALUE_EXT: ValueRef}
_REF_TYPES = {ref: kind for kind, ref in _REFS.items()}


def pack(value: Any) -> bytes:
    """`value` as one MessagePack value."""
    out = bytearray()
    _pack(value, out, 0)
    return bytes(out)


def _pack(value: Any, out: bytearray, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested deeper than {MAX_DEPTH} levels")
    if value is None:
        out.append(0xC0)
    elif value is True or value is False:
        out.append(0xC3 if value else 0xC2)
    elif isinstance(value, int):
        _pack_int(value, out)
    elif isinstance(value, float):
        out += b"\xcb" + struct.pack(">d", value)
    elif isinstance(value, str):
        data = value.encode("utf-8")
        _pack_length(len(data), out, fix=(0xA0, 32), sized=(0xD9, 0xDA, 0xDB))
        out += data
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = memoryview(value).cast("B")
        _pack_length(len(raw), out, fix=None, sized=(0xC4, 0xC5, 0xC6))
        out += raw
    elif isinstance(value, (list, tuple)):
        _pack_length(len(value), out, fix=(0x90, 16), sized=(None, 0xDC, 0xDD))
        for item in value:
            _pack(item, out, depth + 1)
    elif isinstance(value, dict):
        _pack_length(len(value), out, fix=(0x80, 16), sized=(None, 0xDE, 0xDF))
        for key, item in value.items():
            _pack(key, out, depth + 1)
            _pack(item, out, depth + 1)
    elif isinstance(value, HandleId):
        out += b"\xd7" + bytes([HANDLE_EXT]) + struct.pack(">Q", value.id)
    elif isinstance(value, (LocalRef, ParamRef, ValueRef)):
        out += b"\xd6" + bytes([_REF_TYPES[type(value)]]) + struct.pack(">I", value.index)
    elif isinstance(value, DType):
        name = value.name.encode("ascii")
        _pack_length(len(name), out, fix=None, sized=(0xC7, 0xC8, 0xC9))
        out += bytes([DTYPE_EXT]) + name
    else:
        raise WireError(f"{type(value).__name__} values cannot be sent")


def _pack_int(value: int, out: bytearray) -> None:
    if 0 <= value < 0x80 or -32 <= value < 0:
        out += struct.pack(">b" if value < 0 else ">B", value)
    elif value >= 0:
        for code, fmt, limit in ((0xCC, ">B", 1 << 8), (0xCD, ">H", 1 << 16),
                                 (0xCE, ">I", 1 << 32), (0xCF, ">Q", 1 << 64)):
            if value < limit:
                out += bytes([code]) + struct.pack(fmt, value)
                return
        raise WireError(f"the integer {value} does not fit 64 bits")
    else:
        for code, fmt, bits in ((0xD0, ">b", 7), (0xD1, ">h", 15), (0xD2, ">i", 31),
                                (0xD3, ">q", 63)):
            if value >= -(1 << bits):
                out += bytes([code]) + struct.pack(fmt, value)
                return
        raise WireError(f"the integer {value} does not fit 64 bits")


def _pack_length(n: int, out: bytearray, fix: tuple[int, int] | None,
                 sized: tuple[int | None, int, int]) -> None:
    """The header of a str, bin, ext, array or map of `n` items: the fix form below its
    limit, else the 8-, 16- or 32-bit length form."""
    if fix is not None and n < fix[1]:
        out.append(fix[0] + n)
        return
    for code, fmt, limit in zip(sized, (">B", ">H", ">I"), (1 << 8, 1 << 16, 1 << 32)):
        if code is not None and n < limit:
            out += bytes([code]) + struct.pack(fmt, n)
            return
    raise WireError(f"a value of {n} items or bytes is too large for one frame")


def unpack(frame: bytes | bytearray | memoryview | str) -> Any:
    """The one value `frame` holds (the whole frame; a text frame is refused)."""
    if isinstance(frame, str):
        raise WireError("a text frame: the protocol's frames are binary")
    data = memoryview(frame).cast("B")
    value, end = _Reader(data).read(0, 0)
    if end != len(data):
        raise WireError(f"{len(data) - end} bytes after the frame's value")
    return value


_FIXED = {0xCA: ">f", 0xCB: ">d", 0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b",
          0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}
#: the length field of each sized str, bin, array, map and ext form: (kind, its format)
_SIZED = {0xD9: ("str", ">B"), 0xDA: ("str", ">H"), 0xDB: ("str", ">I"),
          0xC4: ("bin", ">B"), 0xC5: ("bin", ">H"), 0xC6: ("bin", ">I"),
          0xDC: ("array", ">H"), 0xDD: ("array", ">I"), 0xDE: ("map", ">H"),
          0xDF: ("map", ">I"), 0xC7: ("ext", ">B"), 0xC8: ("ext", ">H"), 0xC9: ("ext", ">I")}
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}


class _Reader:
    """Reads values out of one frame, every length checked against what is left."""

    def __init__(self, data: memoryview):
        self.data = data

    def take(self, at: int, n: int) -> memoryview:
        if at + n > len(self.data):
            raise WireError(f"truncated frame: {n} bytes wanted at byte {at} of "
                            f"{len(self.data)}")
        return self.data[at:at + n]

    def read(self, at: int, depth: int) -> tuple[Any, int]:
        """The value starting at byte `at`, and where it ends."""
        if depth > MAX_DEPTH:
            raise WireError(f"a value nested deeper than {MAX_DEPTH} levels")
        code = self.take(at, 1)[0]
        at += 1
        if code < 0x80:
            return code, at
        if code >= 0xE0:
            return code - 0x100, at
        if code <= 0x8F:
            return self.container("map", code - 0x80, at, depth)
        if code <= 0x9F:
            return self.container("array", code - 0x90, at, depth)
        if code <= 0xBF:
            return self.text(code - 0xA0, at)
        if code in (0xC0, 0xC2, 0xC3):
            return {0xC0: None, 0xC2: False, 0xC3: True}[code], at
        if code in _FIXED:
            fmt = _FIXED[code]
            size = struct.calcsize(fmt)
            value = struct.unpack(fmt, self.take(at, size))[0]
            return value, at + size
        if code in _FIXEXT:
            return self.ext(_FIXEXT[code], at)
        if code in _SIZED:
            kind, fmt = _SIZED[code]
            size = struct.calcsize(fmt)
            n = struct.unpack(fmt, self.take(at, size))[0]
            at += size
            if kind == "str":
                return self.text(n, at)
            if kind == "bin":
                return bytes(self.take(at, n)), at + n
            if kind == "ext":
                return self.ext(n, at)
            return self.container(kind, n, at, depth)
        raise WireError(f"byte {code:#04x} at {at - 1} starts no value")

    def text(self, n: int, at: int) -> tuple[str, int]:
        try:
            return str(self.take(at, n), "utf-8"), at + n
        except UnicodeDecodeError:
            raise WireError(f"a str at byte {at} is not UTF-8") from None

    def container(self, kind: str, n: int, at: int, depth: int) -> tuple[Any, int]:
        if n > len(self.data) - at:  # every item takes a byte at least
            raise WireError(f"truncated frame: {kind} of {n} items at byte {at}")
        items = []
        for _ in range(n * (2 if kind == "map" else 1)):
            item, at = self.read(at, depth + 1)
            items.append(item)
        if kind == "array":
            return tuple(items), at
        keys = items[0::2]
        if not all(isinstance(k, (str, int)) for k in keys):
            raise WireError("a map key that is not a str or an int")
        return dict(zip(keys, items[1::2])), at

    def ext(self, n: int, at: int) -> tuple[Any, int]:
        kind = self.take(at, 1)[0]
        body = self.take(at + 1, n)
        end = at + 1 + n
        if kind == HANDLE_EXT and n == 8:
            return HandleId(struct.unpack(">Q", body)[0]), end
        if kind in _REFS and n == 4:
            return _REFS[kind](struct.unpack(">I", body)[0]), end
        if kind == DTYPE_EXT:
            try:
                return as_dtype(str(body, "ascii")), end
            except (UnicodeDecodeError, DTypeError):
                raise WireError(f"an unknown dtype at byte {at}") from None
        raise WireError(f"an unknown extension type {kind} of {n} bytes at byte {at}")
