"""Protobuf messages to plain dicts and back, by walking the table in `schema.py`.

A decoded message is a dict holding the fields present in the bytes, by name: scalars as
Python ints, floats and strs (protobuf strings are UTF-8; bytes that are not are kept
losslessly through ``surrogateescape``), bytes fields as zero-copy `memoryview` slices of the
input, nested messages as dicts, and repeated fields as lists (``array('f')``/``array('d')``
for repeated floats and doubles, read at C speed from packed runs). `encode` takes the same
form (plain bytes, lists and tuples work too) and writes the fields in number order, packed
where the schema says so: canonical protobuf, the bytes protobuf itself would write.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Mapping
from typing import Any, NamedTuple

from ...errors import ArgumentError
from .schema import MESSAGES, Field, Message
from .wire import (
    FIXED32,
    FIXED64,
    LENGTH,
    VARINT,
    Deferred,
    WireError,
    Writer,
    float_array_bytes,
    packed_floats,
    packed_varints,
    read_fixed,
    read_length,
    read_varint,
    signed32,
    signed64,
    skip,
    varint_bytes,
)

#: how deeply messages may nest (protobuf's own default limit): deeper input is refused
#: rather than allowed to exhaust the stack (in Pyodide, a crash of the interpreter)
MAX_DEPTH = 100

_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")
_CONVERT = {"int64": signed64, "int32": signed32, "enum": signed32, "uint64": int}


class Window(NamedTuple):
    """A byte string left in the file it was read from: `length` bytes at `offset`."""

    offset: int
    length: int


def decode(name: str, data: bytes | bytearray | memoryview, *, keep: int | None = None
           ) -> dict[str, Any]:
    """The message `name` (e.g. "ModelProto") in `data`, as a dict.

    With `keep` None, bytes fields are slices of `data` (which must then stay unchanged).
    With `keep` an int, `data` is a temporary view of a file: bytes fields are copied, except
    that ``large`` fields (TensorProto.raw_data) of `keep` bytes or more become a `Window`
    into the file. Malformed bytes raise `WireError` naming the byte offset and the path of
    the field being read, e.g. ``truncated varint at byte 1234 in NodeProto.input
    (ModelProto.graph.node[3].input)``.
    """
    buf = memoryview(data).cast("B") if not isinstance(data, memoryview) or \
        data.format != "B" else data
    return _decode(MESSAGES[name], buf, 0, buf.nbytes, 0, keep)


def _decode(message: Message, buf: memoryview, pos: int, end: int, depth: int,
            keep: int | None) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise WireError(pos, f"messages nest deeper than {MAX_DEPTH} levels")
    out: dict[str, Any] = {}
    by_number = message.by_number
    f: Field | None = None
    # the one-byte cases of tags, small numbers and short lengths are read inline: they are
    # nearly all of a graph's structure
    try:
        while pos < end:
            tag_at = pos
            tag = buf[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = read_varint(buf, pos, end)
            wire = tag & 7
            f = by_number.get(tag >> 3)
            if f is None:
                if tag >> 3 == 0:
                    raise WireError(tag_at, "field number 0, which protobuf does not allow")
                pos = skip(buf, pos, end, wire, tag_at)
                continue
            if wire != f.wire:
                if not (wire == LENGTH and f.repeated and f.wire != LENGTH):
                    raise WireError(tag_at, f"wire type {wire} where {f.kind} field "
                                            f"{f.name!r} has wire type {f.wire}")
                pos = _read_packed(f, buf, pos, end, out)
                continue
            if wire == LENGTH:
                n = buf[pos] if pos < end else 0x80
                if n < 0x80 and n < end - pos:
                    pos += 1
                else:
                    n, pos = read_length(buf, pos, end)
                if f.message is not None:
                    value = _decode(f.message, buf, pos, pos + n, depth + 1, keep)
                elif f.kind == "string":
                    value = str(buf[pos:pos + n], "utf-8", "surrogateescape")
                elif keep is None:
                    value = buf[pos:pos + n]
                elif f.large and n >= keep:
                    value = Window(pos, n)
                else:
                    value = bytes(buf[pos:pos + n])
                pos += n
            elif wire == VARINT:
                value = buf[pos] if pos < end else 0x80
                if value < 0x80:
                    pos += 1
                else:
                    value, pos = read_varint(buf, pos, end)
                    if value > 0x7FFFFFFF:  # below, every integer type reads the same
                        value = _CONVERT[f.kind](value)
            elif wire == FIXED32:
                after = read_fixed(buf, pos, end, 4)
                value, pos = _FLOAT.unpack_from(buf, pos)[0], after
            else:
                after = read_fixed(buf, pos, end, 8)
                value, pos = _DOUBLE.unpack_from(buf, pos)[0], after
            if f.repeated:
                values = out.get(f.name)
                if values is None:
                    values = out[f.name] = array("f" if wire == FIXED32 else "d") \
                        if wire in (FIXED32, FIXED64) else []
                values.append(value)
            else:
                out[f.name] = value
    except WireError as exc:
        if f is None:
            exc.path.append((message.name, ""))
        elif f.repeated and f.message is not None:
            exc.path.append((message.name, f"{f.name}[{len(out.get(f.name, ()))}]"))
        else:
            exc.path.append((message.name, f.name))
        raise
    return out


def _read_packed(f: Field, buf: memoryview, pos: int, end: int, out: dict[str, Any]) -> int:
    """Read the packed run of repeated numbers `f` at `pos`; the position after it."""
    n, pos = read_length(buf, pos, end)
    stop = pos + n
    if f.wire in (FIXED32, FIXED64):
        run = packed_floats(buf, pos, stop, f.wire)
        values = out.get(f.name)
        if values is None:
            out[f.name] = run
        else:
            values.extend(run)
        return stop
    convert = _CONVERT[f.kind]
    run_list = packed_varints(buf, pos, stop)
    if convert is not int:
        run_list = [convert(v) for v in run_list]
    out.setdefault(f.name, []).extend(run_list)
    return stop


def encode(name: str, value: Mapping[str, Any]) -> Writer:
    """The message `name` holding `value` (a dict in `decode`'s form), written; its
    ``chunks()`` concatenate to the bytes. Values of the wrong kind raise
    `pyburn.ArgumentError` naming the field."""
    return _encode(MESSAGES[name], value)


def _encode(message: Message, value: Mapping[str, Any]) -> Writer:
    out = Writer()
    for f in message.fields:
        v = value.get(f.name)
        if v is None:
            continue
        try:
            if not f.repeated:
                _encode_one(out, f, v)
            elif f.packed:
                if len(v):
                    out.length_delimited(f.number, _packed_bytes(f, v))
            else:
                for item in v:
                    _encode_one(out, f, item)
        except (TypeError, ValueError, OverflowError, struct.error) as exc:
            raise ArgumentError(f"cannot write {message.name}.{f.name}: {exc}") from None
    return out


def _encode_one(out: Writer, f: Field, v: Any) -> None:
    if f.message is not None:
        out.message(f.number, _encode(f.message, v))
        return
    wire = f.wire
    buf = out.buf
    buf += f.key
    if wire == LENGTH:
        data = v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v
        n = data.size if isinstance(data, Deferred) else memoryview(data).nbytes
        buf += varint_bytes(n)
        out.raw(data)
    elif wire == VARINT:
        buf += varint_bytes(v if type(v) is int else int(v))
    elif wire == FIXED32:
        buf += _float32_bytes(v)
    else:
        buf += _DOUBLE.pack(float(v))


def _packed_bytes(f: Field, values: Any) -> bytes:
    if f.wire in (FIXED32, FIXED64):
        return float_array_bytes(values, f.wire)  # array() turns float32 overflow into inf
    return b"".join(varint_bytes(int(v)) for v in values)


def _float32_bytes(v: Any) -> bytes:
    """`v` as a little-endian float32; values past its range become infinities (as a C cast
    does, and as protobuf writes them), where ``struct.pack`` would refuse them."""
    v = float(v)
    try:
        return _FLOAT.pack(v)
    except OverflowError:
        return _FLOAT.pack(math.copysign(math.inf, v))
