"""Saving and loading named tensors as safetensors files.

Reading goes through the file once, front to back: the header (validated in full before any
tensor data is read), then each tensor with one ``read`` straight into a new ``bytes`` object
that the backend takes over (the cpu backend wraps it without another copy). A memory map
would save nothing here, since every backend keeps its own storage, and a map that a numpy
view keeps alive would hold the file open, which stops an atomic save over it on Windows.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator, Mapping
from typing import IO, Any

from .. import __version__
from .._tensor import Tensor, wrap
from ..devices import Device
from ..devices import device as as_device
from ..errors import ArgumentError, DTypeError, FormatError
from . import safejson
from .apply import adapted_state
from .atomic import atomic_write
from .header import (
    METADATA_KEY,
    Header,
    TensorInfo,
    encode_header,
    lay_out,
    parse_header,
    parse_length,
)

#: a path, the file's contents, or a binary file object open for reading (read from its
#: current position)
Source = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]
DeviceLike = Device | str | None

#: metadata keys pyburn writes: its version, and the user's metadata as JSON
VERSION_KEY = "pyburn.version"
USER_KEY = "pyburn.user"


def save(obj: Any, path: str | os.PathLike[str], metadata: Any = None, *,
         adapter: Any = None) -> None:
    """Write a module's parameters (anything with ``state_dict()``) or a dict of name ->
    Tensor to a safetensors file at `path`, atomically.

    `metadata` is any JSON-serializable value; `load_metadata` gives it back. The file also
    records the pyburn version that wrote it, and any safetensors reader can open it.
    `adapter` (a `pyburn.store.Adapter` or a list of them, for a module) changes the
    tensors on their way out, e.g. ``HalfPrecision()`` writes float16.

    >>> import os, tempfile, pyburn
    >>> path = os.path.join(tempfile.mkdtemp(), "weights.safetensors")
    >>> pyburn.store.save({"w": pyburn.ones(2, 3, device="flex")}, path, {"epochs": 3})
    >>> pyburn.store.load(path, device="flex")["w"].shape
    (2, 3)
    >>> pyburn.store.load_metadata(path)
    {'epochs': 3}
    """
    fields = {} if metadata is None else {USER_KEY: to_json(metadata, "metadata")}
    if adapter is not None:
        if not callable(getattr(obj, "named_modules", None)):
            raise ArgumentError(f"save(adapter=...) takes a module (adapters look at the "
                                f"layers), got {type(obj).__name__}")
        obj = adapted_state(obj, adapter)
    write(path, named_tensors(obj, "save()"), fields)


def load(source: Source, device: DeviceLike = None) -> dict[str, Tensor]:
    """The tensors of a safetensors file, by name in the file's order, on `device` (the
    default device when None).

    `source` is a path, the file's contents as bytes (e.g. fetched in a browser), or a
    binary file object. Element types pyburn lacks are converted where that is exact
    (BF16 -> float32, I16 -> int32, ...; see docs/store.md); a corrupt file raises
    `pyburn.FormatError` saying what is wrong and where."""
    return read(source, device)[0]


def load_metadata(source: Source) -> Any:
    """The metadata given to `save` (None when the file has none); reads only the header."""
    text = read_header(source).metadata.get(USER_KEY)
    return None if text is None else safejson.loads(text, f"metadata {USER_KEY!r}")


def read_header(source: Source) -> Header:
    """The file's validated header: each tensor's element type, shape and offsets, and the
    ``__metadata__`` strings, without reading any tensor data."""
    with _opened(source) as (file, size):
        return _read_header(file, size)


def write(path: str | os.PathLike[str], tensors: Mapping[str, Tensor],
          fields: dict[str, str]) -> None:
    """Write `tensors` (as checked by `named_tensors`) atomically, with `fields` and the
    pyburn version in the header's ``__metadata__``."""
    infos = lay_out([(name, t.dtype, t.shape) for name, t in tensors.items()])
    head = encode_header(infos, {VERSION_KEY: __version__, **fields})

    def chunks() -> Iterator[bytes]:
        yield head
        for info in sorted(infos, key=lambda t: t.begin):
            data = tensors[info.name].to_bytes()
            if len(data) != info.end - info.begin:  # a backend bug must not make a bad file
                raise FormatError(f"{info.label}: the device returned {len(data)} "
                                  f"bytes for {info.end - info.begin} bytes of data")
            yield data

    atomic_write(path, chunks())


def read(source: Source, device: DeviceLike) -> tuple[dict[str, Tensor], Header]:
    """The tensors of a file (on `device`) and its header."""
    dev = as_device(device)
    with _opened(source) as (file, size):
        header = _read_header(file, size)
        for info in header.tensors.values():  # refuse before reading any data
            _check_loadable(info, dev)
        mapped = _mapped(file, size) if isinstance(source, (str, os.PathLike)) else None
        start = file.tell()
        loaded: dict[str, Tensor] = {}
        for info in sorted(header.tensors.values(), key=lambda t: (t.begin, t.end)):
            if mapped is not None:
                data = mapped[start + info.begin:start + info.end]
            else:
                data = _read_exact(file, info.end - info.begin, info.label)
            loaded[info.name] = _to_tensor(info, data, dev)
    return {name: loaded[name] for name in header.tensors}, header


def _mapped(file: IO[bytes], size: int) -> memoryview | None:
    """A read-only view of the whole file through mmap, on platforms that have it: backends
    that can (cpu) then wrap the file's pages without copying them; the mapping lives as
    long as a tensor uses it. None where mmap is unavailable (Pyodide) or the file is empty."""
    if size == 0 or sys.platform == "emscripten":
        return None
    try:
        import mmap  # optional: not every platform has mmap

        return memoryview(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
    except (ImportError, OSError, ValueError):
        return None


def named_tensors(obj: Any, what: str) -> dict[str, Tensor]:
    """``obj.state_dict()`` (or `obj`, a mapping), checked to map string names to Tensors."""
    state = obj.state_dict() if callable(getattr(obj, "state_dict", None)) else obj
    if not isinstance(state, Mapping):
        raise ArgumentError(f"{what} takes a module (anything with state_dict()) or a dict of "
                            f"name -> Tensor, got {type(obj).__name__}")
    for name, value in state.items():
        if not isinstance(name, str):
            raise ArgumentError(f"{what}: tensor names are strings, got {name!r}")
        if name == METADATA_KEY:
            raise ArgumentError(f"{what}: {METADATA_KEY!r} is reserved by the format")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ArgumentError(f"{what}: tensor name {name!r} is not valid Unicode") from None
        if not isinstance(value, Tensor):
            raise ArgumentError(f"{what}: {name!r} is a {type(value).__name__}, not a "
                                f"pyburn.Tensor")
    return dict(state)


def to_json(value: Any, what: str) -> str:
    """`value` as strict JSON text (no NaN), or an ArgumentError naming `what`."""
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ArgumentError(f"{what} must be JSON-serializable: {exc}") from None
    if safejson.depth(text) > safejson.MAX_DEPTH:  # it could not be read back
        raise ArgumentError(f"{what} nests deeper than {safejson.MAX_DEPTH} levels")
    return text


@contextlib.contextmanager
def _opened(source: Source) -> Iterator[tuple[IO[bytes], int]]:
    """A binary stream positioned at the file's start, and the file's size."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source)
        yield io.BytesIO(view), view.nbytes
    elif isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as file:
            yield file, os.fstat(file.fileno()).st_size
    elif callable(getattr(source, "read", None)) and callable(getattr(source, "seek", None)):
        start = source.tell()
        size = source.seek(0, os.SEEK_END) - start
        source.seek(start)
        yield source, size
    else:
        raise ArgumentError(f"expected a path, bytes or a binary file object, got "
                            f"{type(source).__name__}")


def _read_header(file: IO[bytes], size: int) -> Header:
    n = parse_length(_read_exact(file, min(8, size), "the header length"), size)
    return parse_header(_read_exact(file, n, "the header"), size - 8 - n)


def _read_exact(file: IO[bytes], n: int, what: str) -> bytes:
    data = file.read(n)
    while len(data) < n:  # raw streams may return less than asked
        more = file.read(n - len(data))
        if not more:
            raise FormatError(f"the file ended while reading {what}: it changed or was "
                              f"truncated while being read")
        data += more
    return data


def _check_loadable(info: TensorInfo, device: Device) -> None:
    dtype = info.element.target(info.label)
    if dtype not in device.backend.dtypes:
        raise DTypeError(f"{info.label} loads as {dtype.name}, which device "
                         f"{device.name!r} does not support; load it on another device")


def _to_tensor(info: TensorInfo, data: bytes | memoryview, device: Device) -> Tensor:
    dtype = info.element.target(info.label)
    handle = device.backend.from_bytes(info.element.decode(data, info.label), info.shape, dtype)
    return wrap(handle, info.shape, dtype, device)
