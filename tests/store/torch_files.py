"""Hand-built PyTorch files for the store tests, written without torch: a small pickle
assembler (opcode by opcode, so tests can write any pickle, hostile ones included) and the
two container layouts (zip archive, legacy stream), plus rewriting of real ``torch.save``
files (their records, the location strings in their pickles, their byte order)."""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from collections.abc import Callable

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
SYS_INFO = {"protocol_version": 1001, "little_endian": True,
            "type_sizes": {"short": 2, "int": 4, "long": 4}}

# ---- a pickle assembler: each function returns the bytes of one value's opcodes ----------


def pkl(*parts: bytes, proto: int = 2) -> bytes:
    """A whole pickle: PROTO, the parts, STOP."""
    return bytes([0x80, proto]) + b"".join(parts) + b"."


def glob(module: str, name: str) -> bytes:
    """GLOBAL module.name (protocol 0's text form, which every protocol reads)."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def text(s: str) -> bytes:
    """BINUNICODE."""
    data = s.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def num(n: int) -> bytes:
    """BININT for 32-bit values, LONG1 beyond."""
    if -2**31 <= n < 2**31:
        return b"J" + struct.pack("<i", n)
    data = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(data)]) + data


def tup(*items: bytes) -> bytes:
    """MARK items TUPLE."""
    return b"(" + b"".join(items) + b"t"


def lst(*items: bytes) -> bytes:
    """EMPTY_LIST MARK items APPENDS."""
    return b"](" + b"".join(items) + b"e"


def dct(*pairs: tuple[bytes, bytes]) -> bytes:
    """EMPTY_DICT MARK key value ... SETITEMS."""
    return b"}(" + b"".join(k + v for k, v in pairs) + b"u"


def call(func: bytes, *args: bytes) -> bytes:
    """func args REDUCE."""
    return func + tup(*args) + b"R"


NONE, TRUE, FALSE = b"N", b"\x88", b"\x89"


def ordered_dict() -> bytes:
    """An empty collections.OrderedDict, as torch writes backward hooks."""
    return call(glob("collections", "OrderedDict"))


def storage(kind: str, key: str, numel: int, location: str = "cpu", legacy: bool = False,
            module: str = "torch") -> bytes:
    """A storage's persistent ID: ('storage', torch.<kind>, key, location, numel) BINPERSID
    (legacy IDs carry a sixth field, the view: None)."""
    fields = [text("storage"), glob(module, kind), text(key), text(location), num(numel)]
    return tup(*fields, *([NONE] if legacy else [])) + b"Q"


def tensor(storage_pid: bytes, offset: int, shape: tuple[int, ...],
           strides: tuple[int, ...]) -> bytes:
    """torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())."""
    return call(glob("torch._utils", "_rebuild_tensor_v2"), storage_pid, num(offset),
                tup(*map(num, shape)), tup(*map(num, strides)), FALSE, ordered_dict())


# ---- containers ---------------------------------------------------------------------------


def zip_file(data_pkl: bytes, records: dict[str, bytes] | None = None, *,
             prefix: str = "archive", byteorder: bytes | None = b"little",
             compression: int = zipfile.ZIP_STORED) -> bytes:
    """A zip-format file: NAME/data.pkl, NAME/byteorder and NAME/data/KEY records."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as z:
        z.writestr(f"{prefix}/data.pkl", data_pkl)
        if byteorder is not None:
            z.writestr(f"{prefix}/byteorder", byteorder)
        for key, data in (records or {}).items():
            z.writestr(f"{prefix}/data/{key}", data)
        z.writestr(f"{prefix}/version", b"3\n")
    return out.getvalue()


def legacy_file(data_pkl: bytes, storages: dict[str, tuple[int, bytes]]) -> bytes:
    """A legacy-format file: the three header pickles, the object's pickle, the key list,
    then each storage as (element count, bytes)."""
    head = b"".join(pickle.dumps(v, protocol=2) for v in (MAGIC_NUMBER, 1001, SYS_INFO))
    body = b"".join(struct.pack("<q", count) + data for count, data in storages.values())
    return head + data_pkl + pickle.dumps(list(storages), protocol=2) + body


def rewrite_zip(data: bytes, change: Callable[[str, bytes], bytes | None]) -> bytes:
    """A copy of a zip file with each record passed through ``change(name, bytes)`` (None
    drops the record); stored, in the same order."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            new = change(info.filename, src.read(info.filename))
            if new is not None:
                dst.writestr(info.filename, new)
    return out.getvalue()


def zip64_file(records: dict[str, bytes]) -> bytes:
    """A stored zip archive written with every size and offset in zip64 fields (what
    archives past 4 GB need), to test that path on small data."""
    out, central = bytearray(), bytearray()
    for name, data in records.items():
        raw, offset, crc = name.encode(), len(out), _crc(data)
        extra = struct.pack("<HHQQ", 1, 16, len(data), len(data))
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 45, 0, 0, 0, 0, crc, 0xFFFFFFFF,
                           0xFFFFFFFF, len(raw), len(extra)) + raw + extra + data
        cextra = struct.pack("<HHQQQ", 1, 24, len(data), len(data), offset)
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 45, 45, 0, 0, 0, 0, crc,
                               0xFFFFFFFF, 0xFFFFFFFF, len(raw), len(cextra), 0, 0, 0, 0,
                               0xFFFFFFFF) + raw + cextra
    cd_offset, n = len(out), len(records)
    out += central
    eocd64 = len(out)
    out += struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, n, n, len(central),
                       cd_offset)
    out += struct.pack("<4sIQI", b"PK\x06\x07", 0, eocd64, 1)
    out += struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF,
                       0xFFFFFFFF, 0)
    return bytes(out)


def _crc(data: bytes) -> int:
    import zlib

    return zlib.crc32(data)


def relocate(data: bytes, location: str = "cuda:0") -> bytes:
    """A torch.save file whose storages say they were saved on `location` instead of the
    CPU: the BINUNICODE 'cpu' strings of the pickle rewritten (the zip archive rebuilt around
    the longer pickle; a legacy file just grows)."""
    old, new = text("cpu"), text(location)
    if data.startswith(b"PK"):
        return rewrite_zip(data, lambda name, rec: rec.replace(old, new)
                           if name.endswith("data.pkl") else rec)
    return data.replace(old, new)


def big_endian(data: bytes, itemsizes: dict[str, int]) -> bytes:
    """A zip-format torch.save file as a big-endian machine writes it: byteorder "big" and
    every element of storage KEY (of `itemsizes[KEY]` bytes) byte-swapped."""
    def change(name: str, rec: bytes) -> bytes:
        if name.endswith("/byteorder"):
            return b"big"
        key = name.rsplit("/data/", 1)[-1] if "/data/" in name else None
        if key is None:
            return rec
        k = itemsizes[key]
        swapped = bytearray(len(rec))
        for b in range(k):
            swapped[b::k] = rec[k - 1 - b::k]
        return bytes(swapped)

    return rewrite_zip(data, change)
