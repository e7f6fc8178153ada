"""PyTorch's legacy format (``torch.save(..., _use_new_zipfile_serialization=False)``, and
every file before PyTorch 1.6): five pickles one after the other, then the storages.

```
pickle   the magic number 0x1950a86a20f9469cfc6c
pickle   the protocol version, 1001
pickle   system info: {"protocol_version", "little_endian", "type_sizes"}
pickle   the saved object; tensors refer to storages by key
pickle   the list of storage keys, in the order the storages follow
then, per key: an 8-byte little-endian element count, then the elements (little-endian)
```

Nothing says where a pickle ends but its STOP opcode, so each is read through a window
that grows (1 MB, then four times larger) until the pickle fits; the storages after them
are located by reading each one's 8-byte count and skipping its bytes, so listing a file's
tensors reads only the pickles and one count per storage.
"""

from __future__ import annotations

from typing import Any

from ...errors import FormatError
from ..header import brief
from ..source import ByteSource
from .allowlist import StorageTable, find_global
from .pickle_reader import PickleTruncated, Unpickler, describe

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
#: the first window a pickle is read through
WINDOW = 1 << 20


def _no_storages(pid: Any) -> Any:
    raise FormatError("the header pickles of a PyTorch file hold no storages")


def _pickle_at(source: ByteSource, pos: int, what: str,
               table: StorageTable | None = None) -> tuple[Any, int]:
    """The object of the pickle that starts at file offset `pos`, and where it ends."""
    window = WINDOW
    while True:
        n = min(window, source.size - pos)
        data = source.read_at(pos, n, what)
        if table is not None:
            table.storages.clear()  # a retry with a larger window declares them again
        unpickler = Unpickler(data, find_global=find_global, origin=what, base=pos,
                              persistent_load=table.persistent_load if table else _no_storages)
        try:
            obj, end = unpickler.load()
        except PickleTruncated:
            if pos + n >= source.size:
                raise
            window *= 4
            continue
        return obj, pos + end


def read_legacy(source: ByteSource) -> tuple[Any, dict[str, Any]]:
    """The object a legacy PyTorch file holds (tensors as lazy views) and what the file
    says about itself."""
    magic, pos = _pickle_at(source, 0, "the magic number")
    if magic != MAGIC_NUMBER:
        raise FormatError("wrong magic number: this pickle is not a PyTorch file (or a corrupt "
                          "one)")
    protocol, pos = _pickle_at(source, pos, "the protocol version")
    if protocol != PROTOCOL_VERSION:
        raise FormatError(f"unknown PyTorch protocol version {brief(protocol)} (file offset "
                          f"{pos}); pyburn reads version {PROTOCOL_VERSION}")
    sys_info, pos = _pickle_at(source, pos, "the system information")
    if not isinstance(sys_info, dict):
        raise FormatError(f"the system information is {describe(sys_info)}, not a dict")
    table = StorageTable(legacy=True)
    tree, pos = _pickle_at(source, pos, "the saved object", table)
    keys, pos = _pickle_at(source, pos, "the list of storage keys")
    if type(keys) is not list or not all(isinstance(k, str) for k in keys):
        raise FormatError(f"the list of storage keys is {describe(keys)}, not a list of strings")
    for key in keys:
        storage = table.storages.get(key)
        if storage is None or storage.parent is not None:
            raise FormatError(f"storage {brief(key)} is stored but the pickle never declares it")
        if storage.reader is not None:
            raise FormatError(f"storage {brief(key)} is listed twice")
        itemsize = 1 if storage.element is None else storage.element.bits // 8
        count = int.from_bytes(source.read_at(pos, 8, f"the size of storage {brief(key)}"),
                               "little")
        if count * itemsize != storage.nbytes:
            raise FormatError(f"storage {brief(key)} holds {count} elements (file offset "
                              f"{pos}), but the pickle declares {storage.nbytes // itemsize}")
        start = pos + 8
        pos = start + storage.nbytes
        if pos > source.size:
            raise FormatError(f"storage {brief(key)} (file bytes {start} to {pos}) runs past "
                              f"the end of the file ({source.size} bytes): it is truncated")
        storage.reader = _reader(source, start, storage.nbytes, key)
    for key, storage in table.storages.items():
        if storage.parent is None and storage.reader is None:
            raise FormatError(f"the pickle refers to storage {brief(key)}, which the file "
                              f"does not store")
    return tree, {"format": "pytorch legacy", "byteorder": "little"}


def _reader(source: ByteSource, start: int, size: int, key: str) -> Any:
    what = f"storage {brief(key)}"

    def read(begin: int, n: int) -> bytes:
        if begin + n > size:
            raise FormatError(f"{what}: bytes {begin} to {begin + n} are past its end")
        return source.read_at(start + begin, n, what)

    return read
