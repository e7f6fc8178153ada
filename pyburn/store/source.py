"""Random access to the bytes of one file, wherever it is: a path, bytes in memory (what a
browser's ``fetch`` gives), or a binary file object.

Lazy stores read a tensor's bytes long after they listed its name, so they keep a
`ByteSource` rather than an open stream. A path is opened anew for each read: no file handle
stays open between reads (an open handle would stop an atomic save over the same path on
Windows), and each read costs one ``open`` (microseconds) next to reading megabytes.
"""

from __future__ import annotations

import os
from typing import IO

from ..errors import ArgumentError, FormatError

#: a path, the file's contents, or a binary file object open for reading (read from the
#: position it had when the store was opened)
Source = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]


class ByteSource:
    """The bytes of one file, read by range; every range is checked against the size."""

    #: the file's size in bytes
    size: int

    def read_at(self, offset: int, n: int, what: str) -> bytes:
        """`n` bytes from file offset `offset`; `what` names them in the error raised when
        they run past the end of the file."""
        if offset < 0 or n < 0 or offset + n > self.size:
            raise FormatError(f"{what} (file bytes {offset} to {offset + n}) runs past the end "
                              f"of the file ({self.size} bytes): it is truncated or corrupt")
        data = self._read(offset, n)
        if len(data) != n:
            raise FormatError(f"the file ended while reading {what}: it changed or was "
                              f"truncated while being read")
        return data

    def _read(self, offset: int, n: int) -> bytes:
        raise NotImplementedError


class _Memory(ByteSource):
    def __init__(self, data: bytes | bytearray | memoryview):
        self._view = memoryview(data).cast("B")
        self.size = self._view.nbytes

    def _read(self, offset: int, n: int) -> bytes:
        return bytes(self._view[offset:offset + n])


class _Path(ByteSource):
    def __init__(self, path: str | os.PathLike[str]):
        self._path = os.fspath(path)
        self.size = os.stat(self._path).st_size

    def _read(self, offset: int, n: int) -> bytes:
        with open(self._path, "rb") as file:
            file.seek(offset)
            return _read_fully(file, n)


class _FileObject(ByteSource):
    def __init__(self, file: IO[bytes]):
        self._file = file
        self._start = file.tell()
        self.size = file.seek(0, os.SEEK_END) - self._start
        file.seek(self._start)

    def _read(self, offset: int, n: int) -> bytes:
        self._file.seek(self._start + offset)
        return _read_fully(self._file, n)


def _read_fully(file: IO[bytes], n: int) -> bytes:
    """Up to `n` bytes: raw streams may return fewer than asked before the end."""
    data = file.read(n)
    while len(data) < n:
        more = file.read(n - len(data))
        if not more:
            break
        data += more
    return data


def open_source(source: Source) -> ByteSource:
    """A `ByteSource` for a path, bytes, or a binary file object (which must be seekable);
    a `ByteSource` is returned as it is."""
    if isinstance(source, ByteSource):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _Memory(source)
    if isinstance(source, (str, os.PathLike)):
        return _Path(source)
    if callable(getattr(source, "read", None)) and callable(getattr(source, "seek", None)):
        return _FileObject(source)
    raise ArgumentError(f"expected a path, bytes or a binary file object, got "
                        f"{type(source).__name__}")
