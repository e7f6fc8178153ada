"""PyTorch's zip format (``torch.save`` since 1.6): a zip archive of uncompressed records
under one top folder, the archive name (``archive/`` for buffers, the file's stem for older
versions, anything at all for other writers):

```
NAME/data.pkl          the pickle of the saved object; tensors refer to storages by key
NAME/byteorder         "little" or "big" (absent in old files: little)
NAME/data/KEY          the bytes of storage KEY, one record per storage
NAME/version, NAME/.format_version, NAME/.storage_alignment, ...   (not needed to read)
```

The zip reader is written here from the format's specification rather than taken from
``zipfile``, to read only what is asked, and to check every field a corrupt or hostile file
could abuse: offsets and sizes against the file, entries that overlap (the trick behind the
worst zip bombs), declared sizes that deflate cannot produce, names twice, encryption,
multi-disk archives. Records are read by range, so a tensor's bytes are read when it is
used. Zip64 (archives past 4 GB) is supported. PyTorch stores records uncompressed; a
re-compressed (deflate) archive also loads, each record inflated to its declared size and no
further.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import FormatError
from ..header import brief
from ..source import ByteSource
from .allowlist import StorageTable, find_global
from .pickle_reader import Unpickler

#: deflate's best ratio is about 1032:1; a record declaring more is a bomb or corrupt
MAX_RATIO = 1032
#: the largest pickle read (its structure, not tensor data: real ones are kilobytes)
MAX_PICKLE_BYTES = 1 << 30
_STORED, _DEFLATED = 0, 8
_EOCD = struct.Struct("<4sHHHHIIH")
_EOCD64_LOCATOR = struct.Struct("<4sIQI")
_EOCD64 = struct.Struct("<4sQHHIIQQQQ")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_U32, _U16 = 0xFFFFFFFF, 0xFFFF


@dataclass(frozen=True)
class ZipEntry:
    """One record of the central directory."""

    name: str
    method: int
    crc: int
    compressed_size: int
    size: int
    header_offset: int
    #: the name as stored (the local header must repeat it)
    name_bytes: bytes
    #: where the next record (or the central directory) starts: this one must end before
    limit: int


class ZipArchive:
    """The records of a zip archive, read by range from a `ByteSource`."""

    def __init__(self, source: ByteSource):
        self.source = source
        self._starts: dict[str, int] = {}
        self.entries = self._directory()

    def _directory(self) -> dict[str, ZipEntry]:
        size = self.source.size
        tail_size = min(size, _EOCD.size + _U16)
        tail = self.source.read_at(size - tail_size, tail_size, "the end of the zip archive")
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or at + _EOCD.size > tail_size:
            raise FormatError("the zip archive has no end-of-central-directory record: it is "
                              "truncated or corrupt")
        _, disk, cd_disk, n_disk, count, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, at)
        end = size - tail_size + at  # the central directory ends before this
        if end >= _EOCD64_LOCATOR.size:
            locator = self.source.read_at(end - _EOCD64_LOCATOR.size, _EOCD64_LOCATOR.size,
                                          "the zip64 locator")
            sig, _, eocd64_offset, _ = _EOCD64_LOCATOR.unpack(locator)
            if sig == b"PK\x06\x07":
                if eocd64_offset + _EOCD64.size > end - _EOCD64_LOCATOR.size:
                    raise FormatError(f"the zip64 end record at offset {eocd64_offset} runs "
                                      f"past its locator: the archive is corrupt")
                record = self.source.read_at(eocd64_offset, _EOCD64.size, "the zip64 record")
                (sig, _, _, _, disk, cd_disk, n_disk, count, cd_size,
                 cd_offset) = _EOCD64.unpack(record)
                if sig != b"PK\x06\x06":
                    raise FormatError(f"no zip64 end record at offset {eocd64_offset}")
                end = eocd64_offset
        if disk or cd_disk or n_disk != count:
            raise FormatError("multi-disk zip archives are not supported")
        if cd_offset + cd_size > end:
            raise FormatError(f"the zip central directory (offset {cd_offset}, {cd_size} bytes)"
                              f" runs past its end record at offset {end}: corrupt archive")
        if count * _CENTRAL.size > cd_size:
            raise FormatError(f"the zip archive declares {count} entries, more than its "
                              f"central directory of {cd_size} bytes holds")
        table = self.source.read_at(cd_offset, cd_size, "the zip central directory")
        found: list[tuple[str, int, int, int, int, int, bytes]] = []
        pos = 0
        for _ in range(count):
            if pos + _CENTRAL.size > cd_size:
                raise FormatError("the zip central directory ends in the middle of an entry")
            (sig, _, _, flags, method, _, _, crc, csize, usize, nlen, elen, clen, _, _, _,
             offset) = _CENTRAL.unpack_from(table, pos)
            if sig != b"PK\x01\x02":
                raise FormatError(f"bad zip central directory entry at file offset "
                                  f"{cd_offset + pos}")
            name_bytes = table[pos + 46:pos + 46 + nlen]
            extra = table[pos + 46 + nlen:pos + 46 + nlen + elen]
            pos += 46 + nlen + elen + clen
            if pos > cd_size:
                raise FormatError("the zip central directory ends in the middle of an entry")
            usize, csize, offset = _zip64(extra, usize, csize, offset)
            name = name_bytes.decode("utf-8" if flags & 0x800 else "cp437", "replace")
            _check_entry(name, flags, method, csize, usize)
            found.append((name, method, crc, csize, usize, offset, name_bytes))
        entries: dict[str, ZipEntry] = {}
        ordered = sorted(found, key=lambda e: e[5])
        for i, (name, method, crc, csize, usize, offset, raw) in enumerate(ordered):
            limit = ordered[i + 1][5] if i + 1 < len(ordered) else cd_offset
            if offset + _LOCAL.size + len(raw) + csize > limit:
                raise FormatError(f"zip record {brief(name)} (offset {offset}, {csize} bytes) "
                                  f"overlaps the next record or the directory: a corrupt "
                                  f"archive, or a zip bomb")
            if name in entries:
                raise FormatError(f"the zip archive holds {brief(name)} twice")
            entries[name] = ZipEntry(name, method, crc, csize, usize, offset, raw, limit)
        return {e[0]: entries[e[0]] for e in found}

    def data_start(self, entry: ZipEntry) -> int:
        """The file offset of the record's data, from its local header (read once)."""
        start = self._starts.get(entry.name)
        if start is None:
            size = _LOCAL.size + len(entry.name_bytes)
            local = self.source.read_at(entry.header_offset, size,
                                        f"the local header of {brief(entry.name)}")
            sig, *_, nlen, elen = _LOCAL.unpack_from(local)
            if sig != b"PK\x03\x04" or local[_LOCAL.size:] != entry.name_bytes:
                raise FormatError(f"the local header of zip record {brief(entry.name)} at "
                                  f"offset {entry.header_offset} does not match the directory")
            start = entry.header_offset + _LOCAL.size + nlen + elen
            if start + entry.compressed_size > entry.limit:
                raise FormatError(f"zip record {brief(entry.name)} runs into the next record")
            self._starts[entry.name] = start
        return start

    def read(self, entry: ZipEntry, limit: int | None = None) -> bytes:
        """The whole record (inflated if compressed), its CRC checked; `limit` refuses a
        larger record before reading it."""
        if limit is not None and entry.size > limit:
            raise FormatError(f"zip record {brief(entry.name)} declares {entry.size} bytes, "
                              f"more than the {limit} such a record can hold")
        data = self._record(entry)
        if zlib.crc32(data) != entry.crc:
            raise FormatError(f"zip record {brief(entry.name)} fails its CRC check: the file "
                              f"is corrupt")
        return data

    def _record(self, entry: ZipEntry) -> bytes:
        raw = self.source.read_at(self.data_start(entry), entry.compressed_size,
                                  f"zip record {brief(entry.name)}")
        if entry.method == _STORED:
            return raw
        inflater = zlib.decompressobj(-15)
        try:
            data = inflater.decompress(raw, entry.size + 1)  # never more than declared
        except zlib.error as exc:
            raise FormatError(f"zip record {brief(entry.name)} does not inflate: {exc}") from None
        if len(data) != entry.size or not inflater.eof:
            raise FormatError(f"zip record {brief(entry.name)} does not inflate to the "
                              f"{entry.size} bytes it declares")
        return data

    def range_reader(self, entry: ZipEntry) -> Callable[[int, int], bytes]:
        """A function reading `n` bytes of the record from `begin` (a stored record is read
        by range; a compressed one is inflated whole each time)."""
        what = f"zip record {brief(entry.name)}"
        if entry.method == _STORED:
            def read(begin: int, n: int) -> bytes:
                if begin + n > entry.size:
                    raise FormatError(f"{what}: bytes {begin} to {begin + n} are past its end")
                return self.source.read_at(self.data_start(entry) + begin, n, what)
        else:
            def read(begin: int, n: int) -> bytes:
                return self._record(entry)[begin:begin + n]
        return read


def _zip64(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    """The sizes and offset, with the saturated ones taken from the zip64 extra field."""
    if _U32 not in (usize, csize, offset):
        return usize, csize, offset
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4:pos + 4 + length]
        pos += 4 + length
        if tag != 1:
            continue
        values, at = [], 0
        for present in (usize == _U32, csize == _U32, offset == _U32):
            if present:
                if at + 8 > len(body):
                    raise FormatError("a zip64 extra field is shorter than its entry needs")
                values.append(struct.unpack_from("<Q", body, at)[0])
                at += 8
            else:
                values.append(None)
        return (usize if values[0] is None else values[0],
                csize if values[1] is None else values[1],
                offset if values[2] is None else values[2])
    raise FormatError("a zip entry's size or offset is saturated but it has no zip64 field")


def _check_entry(name: str, flags: int, method: int, csize: int, usize: int) -> None:
    if flags & 1:
        raise FormatError(f"zip record {brief(name)} is encrypted")
    if method not in (_STORED, _DEFLATED):
        raise FormatError(f"zip record {brief(name)} uses compression method {method}; only "
                          f"stored and deflate are read")
    if method == _STORED and csize != usize:
        raise FormatError(f"stored zip record {brief(name)} declares {usize} bytes but holds "
                          f"{csize}")
    if method == _DEFLATED and usize > csize * MAX_RATIO + 64:
        raise FormatError(f"zip record {brief(name)} declares {usize} bytes from {csize} "
                          f"compressed bytes, more than deflate can produce: a zip bomb, or "
                          f"a corrupt archive")


def read_zip(source: ByteSource) -> tuple[Any, dict[str, str]]:
    """The object a zip-format PyTorch file holds (tensors as lazy `PytorchTensor` views)
    and what the file says about itself (format, archive name, byte order)."""
    archive = ZipArchive(source)
    if any(n.endswith("/constants.pkl") and n.count("/") == 1 for n in archive.entries):
        raise FormatError("this zip archive is a TorchScript module (torch.jit.save), not a "
                          "torch.save file; save its state_dict() with torch.save")
    pickles = [n for n in archive.entries if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise FormatError(f"not a PyTorch file: the zip archive holds {len(pickles)} "
                          f"NAME/data.pkl records, where torch.save writes one")
    prefix = pickles[0][:-len("data.pkl")]
    byteorder = "little"
    if prefix + "byteorder" in archive.entries:
        raw = archive.read(archive.entries[prefix + "byteorder"], limit=16)
        if raw not in (b"little", b"big"):
            raise FormatError(f"unknown byte order {brief(raw)} in {prefix}byteorder")
        byteorder = raw.decode()
    entry = archive.entries[pickles[0]]
    data = archive.read(entry, limit=MAX_PICKLE_BYTES)
    table = StorageTable(legacy=False, big_endian=byteorder == "big")
    base = archive.data_start(entry) if entry.method == _STORED else None
    tree, _ = Unpickler(data, find_global=find_global, persistent_load=table.persistent_load,
                        origin=brief(entry.name), base=base).load()
    for key, storage in table.storages.items():
        record = archive.entries.get(f"{prefix}data/{key}")
        if record is None:
            raise FormatError(f"the pickle refers to storage {brief(key)}, but the archive has "
                              f"no record {brief(prefix + 'data/' + key)}")
        if record.size != storage.nbytes:
            raise FormatError(f"storage {brief(key)} declares {storage.nbytes} bytes, but its "
                              f"record holds {record.size}")
        storage.reader = archive.range_reader(record)
    return tree, {"format": "pytorch zip", "archive": prefix[:-1], "byteorder": byteorder}
