"""Protobuf's wire format: the primitives the schema-driven codec (`codec.py`) is built from.

A message is a run of fields, each a tag (``field_number << 3 | wire_type``, as a varint)
followed by its value: wire type 0 is a varint, 1 eight little-endian bytes, 2 a varint
length and that many bytes (strings, bytes, nested messages, packed repeated numbers), 5 four
little-endian bytes. Types 3 and 4 (groups) are obsolete and ONNX has none; 6 and 7 do not
exist.

Reading works on a `memoryview` with explicit ``pos``/``end`` indices (a nested message is a
window of its parent, never a copy). Every malformed input raises `WireError`, a
`pyburn.FormatError` that carries the byte offset; the codec adds which message and field
was being read as the error travels out. Writing produces canonical protobuf: a `Writer`
collects small pieces in a bytearray and keeps large byte strings (tensor data) as separate
chunks, so that a model is serialized without copying its weights.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterable, Iterator

from ...errors import FormatError

VARINT, FIXED64, LENGTH, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
MASK64 = (1 << 64) - 1
#: a varint holds at most 64 bits: ten bytes of seven bits
MAX_VARINT_BYTES = 10
#: byte strings at least this long are kept as their own chunk by `Writer` instead of being
#: copied into its buffer
LARGE = 1 << 16
#: array typecodes of the packed fixed-width types (their sizes are 4 and 8 on every
#: platform Python runs on)
FLOAT_CODES = {FIXED32: "f", FIXED64: "d"}
_BIG_ENDIAN = sys.byteorder == "big"


class WireError(FormatError):
    """A malformed protobuf byte stream. `offset` is the byte where the problem is, `problem`
    says what it is, and `path` names the field being read, filled in from the innermost
    message outwards as the error propagates (see `codec.decode`)."""

    def __init__(self, offset: int, problem: str):
        super().__init__(problem)
        self.offset = offset
        self.problem = problem
        #: ``(message, field)`` pairs, innermost first; field may carry an ``[index]``
        self.path: list[tuple[str, str]] = []

    def __str__(self) -> str:
        if not self.path:
            return f"{self.problem} at byte {self.offset}"
        message, fld = self.path[0]
        where = f"{message}.{fld}" if fld else message
        text = f"{self.problem} at byte {self.offset} in {where}"
        if len(self.path) > 1:
            root = self.path[-1][0]
            chain = ".".join(f for _, f in reversed(self.path) if f)
            text += f" ({root}.{chain})"
        return text


def read_varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    """The unsigned varint at `pos` (at most 64 bits) and the position after it."""
    if pos < end:
        byte = buf[pos]
        if byte < 0x80:  # most tags and small numbers: one byte
            return byte, pos + 1
    start, result, shift = pos, 0, 0
    while pos < end:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            # a tenth byte may carry bits past 64: protobuf drops them, and so do we
            return result & MASK64, pos
        shift += 7
        if shift >= 7 * MAX_VARINT_BYTES:
            raise WireError(start, f"varint longer than {MAX_VARINT_BYTES} bytes")
    raise WireError(start, "truncated varint")


def read_length(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    """The length prefix at `pos` of a length-delimited field, checked to fit before `end`,
    and the position of its first byte."""
    n, start = read_varint(buf, pos, end)
    if n > end - start:
        raise WireError(pos, f"length {n} runs past the end of the enclosing message "
                             f"(only {end - start} of those bytes are there)")
    return n, start


def read_fixed(buf: memoryview, pos: int, end: int, size: int) -> int:
    """The position after a `size`-byte fixed-width value at `pos`, checked against `end`."""
    if end - pos < size:
        raise WireError(pos, f"truncated {8 * size}-bit value (only {end - pos} of its "
                             f"{size} bytes are there)")
    return pos + size


def skip(buf: memoryview, pos: int, end: int, wire: int, tag_at: int) -> int:
    """The position after the value of an unknown field of wire type `wire` at `pos`."""
    if wire == VARINT:
        return read_varint(buf, pos, end)[1]
    if wire == FIXED64:
        return read_fixed(buf, pos, end, 8)
    if wire == LENGTH:
        n, start = read_length(buf, pos, end)
        return start + n
    if wire == FIXED32:
        return read_fixed(buf, pos, end, 4)
    if wire in (START_GROUP, END_GROUP):
        raise WireError(tag_at, f"group field (wire type {wire}): protobuf groups are "
                                f"obsolete and ONNX uses none")
    raise WireError(tag_at, f"invalid wire type {wire}")


def packed_varints(buf: memoryview, pos: int, end: int) -> list[int]:
    """The unsigned varints filling ``buf[pos:end]`` (a packed repeated field)."""
    out = []
    append = out.append
    while pos < end:
        byte = buf[pos]
        if byte < 0x80:
            append(byte)
            pos += 1
        else:
            value, pos = read_varint(buf, pos, end)
            append(value)
    return out


def packed_floats(buf: memoryview, pos: int, end: int, wire: int) -> array:
    """The float32 (`wire` FIXED32) or float64 (FIXED64) values filling ``buf[pos:end]``, as
    an array built at C speed."""
    out = array(FLOAT_CODES[wire])
    if (end - pos) % out.itemsize:
        raise WireError(pos, f"packed {8 * out.itemsize}-bit values take {end - pos} bytes, "
                             f"not a multiple of {out.itemsize}")
    out.frombytes(buf[pos:end])
    if _BIG_ENDIAN:
        out.byteswap()
    return out


def signed64(value: int) -> int:
    """An unsigned 64-bit varint as protobuf's int64."""
    return value - (1 << 64) if value >> 63 else value


def signed32(value: int) -> int:
    """An unsigned varint as protobuf's int32 (and enum): its low 32 bits, signed."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >> 31 else value


def varint_bytes(value: int) -> bytes:
    """`value` as a varint; negative values take ten bytes (two's complement in 64 bits)."""
    if 0 <= value < 0x80:
        return _SMALL[value]
    value &= MASK64
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL = [bytes([v]) for v in range(0x80)]


def float_array_bytes(values: Iterable[float], wire: int) -> bytes:
    """`values` as packed little-endian float32 (`wire` FIXED32) or float64 (FIXED64)."""
    code = FLOAT_CODES[wire]
    out = values if isinstance(values, array) and values.typecode == code else \
        array(code, values)
    if _BIG_ENDIAN:
        out = array(code, out)
        out.byteswap()
    return out.tobytes()


class Deferred:
    """A byte string of known `size` that `load` produces when it is written (tensor data
    still in its file: a model is saved without holding all its weights at once)."""

    def __init__(self, size: int, load: Callable[[], bytes | bytearray | memoryview]):
        self.size = size
        self.load = load

    def __call__(self) -> bytes | bytearray | memoryview:
        data = self.load()
        if memoryview(data).nbytes != self.size:
            raise FormatError(f"data read back as {memoryview(data).nbytes} bytes where "
                              f"{self.size} were expected: its file changed")
        return data


Chunk = bytes | bytearray | memoryview | Deferred


class Writer:
    """A protobuf message being written: small pieces go to a buffer, large byte strings
    stay separate chunks (no copy), and a nested message is a child `Writer` whose length
    is known once it is complete."""

    def __init__(self) -> None:
        #: the bytes written since the last chunk (callers append small pieces directly)
        self.buf = bytearray()
        self._chunks: list[Chunk] = []
        self._chunked = 0  # bytes in _chunks

    def __len__(self) -> int:
        return self._chunked + len(self.buf)

    def tag(self, number: int, wire: int) -> None:
        """Start field `number` of wire type `wire`."""
        self.buf += varint_bytes(number << 3 | wire)

    def varint(self, value: int) -> None:
        """Append `value` as a varint."""
        self.buf += varint_bytes(value)

    def raw(self, data: Chunk) -> None:
        """Append `data` as it is: copied when small, kept as a chunk when large or
        deferred."""
        n = data.size if isinstance(data, Deferred) else memoryview(data).nbytes
        if n < LARGE and not isinstance(data, Deferred):
            self.buf += data
            return
        self._flush()
        self._chunks.append(data)
        self._chunked += n

    def length_delimited(self, number: int, data: Chunk) -> None:
        """Field `number` holding the byte string `data`."""
        self.tag(number, LENGTH)
        self.varint(data.size if isinstance(data, Deferred) else memoryview(data).nbytes)
        self.raw(data)

    def message(self, number: int, child: Writer) -> None:
        """Field `number` holding the message written by `child`."""
        self.tag(number, LENGTH)
        self.varint(len(child))
        if not child._chunks:
            self.buf += child.buf
            return
        self._flush()
        child._flush()
        self._chunks.extend(child._chunks)
        self._chunked += child._chunked

    def chunks(self) -> Iterator[bytes | bytearray | memoryview]:
        """The message's bytes, as the chunks that concatenate to it (deferred ones are
        read as they are reached)."""
        self._flush()
        for chunk in self._chunks:
            yield chunk() if isinstance(chunk, Deferred) else chunk

    def _flush(self) -> None:
        if self.buf:
            self._chunks.append(self.buf)
            self._chunked += len(self.buf)
            self.buf = bytearray()
