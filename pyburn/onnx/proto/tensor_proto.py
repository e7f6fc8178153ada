"""TensorProto and SparseTensorProto (as `codec` dicts) to `ir.TensorData` and back.

Whatever field a file stores a tensor's elements in (raw_data, or one of the typed fields:
float_data, int32_data holding the bit patterns of the 8- and 16-bit types, int64_data,
double_data, uint64_data), reading gives ``TensorData.raw`` as little-endian bytes in the
dtype's own layout (sub-byte types packed lowest bits first), so everything downstream reads
one form; strings give a list of bytes. raw_data read from memory is a zero-copy slice of the
input. Data in an external file (``data_location: EXTERNAL``) and, for models loaded from a
path, large raw_data stay in their file until first used: ``TensorData.load`` then reads just
that tensor's bytes. Writing always uses raw_data (string_data for strings).
"""

from __future__ import annotations

import os
import sys
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import ArgumentError, FormatError
from ...store.source import open_source
from ..ir import DTYPE_CODES, DTYPE_NAMES, TensorData
from .codec import Window
from .wire import Deferred

_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL


@dataclass(frozen=True)
class _Layout:
    """How one dtype's elements are stored: `bits` per element in raw form, and the typed
    field with the array typecode that one of its values takes in raw form (values in the
    unsigned codes B, H, I are bit patterns, masked to that width as numpy's astype does)."""

    bits: int
    field: str
    code: str


_INT32_HELD = {"uint8": (8, "B"), "int8": (8, "B"), "bool": (8, "B"), "uint16": (16, "H"),
               "int16": (16, "H"), "float16": (16, "H"), "bfloat16": (16, "H"),
               "float8e4m3fn": (8, "B"), "float8e4m3fnuz": (8, "B"), "float8e5m2": (8, "B"),
               "float8e5m2fnuz": (8, "B"), "float8e8m0": (8, "B"), "uint4": (4, "B"),
               "int4": (4, "B"), "float4e2m1": (4, "B"), "uint2": (2, "B"), "int2": (2, "B")}
LAYOUTS: dict[str, _Layout] = {
    "float32": _Layout(32, "float_data", "f"), "int32": _Layout(32, "int32_data", "i"),
    "int64": _Layout(64, "int64_data", "q"), "float64": _Layout(64, "double_data", "d"),
    "uint32": _Layout(32, "uint64_data", "I"), "uint64": _Layout(64, "uint64_data", "Q"),
    "complex64": _Layout(64, "float_data", "f"), "complex128": _Layout(128, "double_data", "d"),
    "string": _Layout(0, "string_data", ""),
    **{name: _Layout(bits, "int32_data", code) for name, (bits, code) in _INT32_HELD.items()},
}


def dtype_name(code: int) -> str | None:
    """The name of ONNX data type `code`, or None for codes ONNX does not define."""
    return DTYPE_NAMES.get(code)


def dtype_code(name: str, what: str) -> int:
    """The ONNX code of the dtype `name`; `what` names the value in the error raised for
    names ONNX does not have."""
    code = DTYPE_CODES.get(name)
    if code is None:
        raise ArgumentError(f"{what} has dtype {name!r}, which is not an ONNX data type; "
                            f"ONNX has {', '.join(DTYPE_CODES)}")
    return code


def nbytes(dtype: str, dims: tuple[int, ...]) -> int:
    """Bytes that elements of `dtype` and shape `dims` take in raw form (sub-byte types
    round up to a whole byte)."""
    count = 1
    for d in dims:
        count *= d
    return -(-count * LAYOUTS[dtype].bits // 8)


@dataclass
class Origin:
    """Where a model's bytes came from, for the tensors it leaves to be read later."""

    #: the folder external data files are named relative to (None: read from bytes)
    base_dir: str | None = None
    #: the file that `codec.Window` offsets point into (a model loaded from a path)
    path: str | None = None


@dataclass
class SparseTensorData(TensorData):
    """A sparse constant (SparseTensorProto): `values` at `indices` of an otherwise zero
    tensor of shape `dims`. It reads as the dense tensor (``data()`` builds it on first use),
    so everything downstream treats it like any `TensorData`; writing keeps it sparse."""

    #: the nonzero values, a 1-d tensor of `dtype`
    values: TensorData = field(default_factory=lambda: TensorData("", "float32", (0,), b""))
    #: int64 positions of the values: shape (n,) linear, or (n, rank) coordinates
    indices: TensorData = field(default_factory=lambda: TensorData("", "int64", (0,), b""))

    def __post_init__(self) -> None:
        if self.raw is None and self.load is None:
            self.load = self.dense

    def dense(self) -> bytes | bytearray | list[bytes]:
        """The dense tensor's elements, in `TensorData.raw`'s form."""
        label = f"sparse tensor {self.name!r}"
        count, n = self.numel, self.values.numel
        positions = _positions(self.indices, n, self.dims, label)
        values = self.values.data()
        if isinstance(values, list):
            strings = [b""] * count
            for k, p in enumerate(positions):
                strings[p] = values[k]
            return strings
        size = LAYOUTS[self.dtype].bits // 8
        if size == 0:
            raise FormatError(f"{label}: sparse {self.dtype} tensors are not supported")
        out = bytearray(count * size)
        view = memoryview(values)
        for k, p in enumerate(positions):
            out[p * size:(p + 1) * size] = view[k * size:(k + 1) * size]
        return out


def _positions(indices: TensorData, n: int, dims: tuple[int, ...], label: str) -> list[int]:
    """The linear position of each of a sparse tensor's `n` values, checked."""
    if indices.dtype != "int64":
        raise FormatError(f"{label}: indices are {indices.dtype}, not int64")
    flat = array("q")
    flat.frombytes(indices.data())
    rank = len(dims)
    if indices.dims == (n,):
        positions = list(flat)
    elif indices.dims == (n, rank):
        positions = []
        for k in range(n):
            p = 0
            for axis, size in enumerate(dims):
                i = flat[k * rank + axis]
                if not 0 <= i < size:
                    raise FormatError(f"{label}: index {i} is out of range for dimension "
                                      f"{axis} of size {size}")
                p = p * size + i
            positions.append(p)
    else:
        raise FormatError(f"{label}: indices of shape {list(indices.dims)} do not fit {n} "
                          f"values in {rank} dimensions")
    count = 1
    for d in dims:
        count *= d
    for p in positions:
        if not 0 <= p < count:
            raise FormatError(f"{label}: position {p} is outside the {count} elements")
    return positions


def read_tensor(t: dict[str, Any], origin: Origin, where: str = "") -> TensorData:
    """The TensorProto `t` as `TensorData`; `where` names it in errors (default: by its
    name)."""
    name = t.get("name", "")
    where = where or f"tensor {name!r}"
    code = t.get("data_type", 0)
    dtype = dtype_name(code)
    if dtype is None:
        raise FormatError(f"{where} has data type {code}, which ONNX does not define"
                          if code else f"{where} has no data type")
    dims = tuple(t.get("dims", ()))
    if any(d < 0 for d in dims):
        raise FormatError(f"{where} has negative dimensions {list(dims)}")
    if "segment" in t:
        raise FormatError(f"{where} is one segment of a split tensor (TensorProto.segment), "
                          f"which is not supported")
    doc = t.get("doc_string", "")
    size = nbytes(dtype, dims)
    if t.get("data_location", 0) == _EXTERNAL:
        if dtype == "string":
            raise FormatError(f"{where}: strings cannot be stored in an external file")
        return TensorData(name, dtype, dims, load=_external(t, origin, size, where), doc=doc)
    raw = t.get("raw_data")
    if raw is not None:
        return TensorData(name, dtype, dims, *_raw(raw, dtype, size, origin, where), doc=doc)
    return TensorData(name, dtype, dims, _typed(t, dtype, dims, size, where), doc=doc)


def _raw(raw: Any, dtype: str, size: int, origin: Origin, where: str
         ) -> tuple[Any, Callable[[], bytes] | None]:
    """``(raw, load)`` for a tensor's raw_data, checked to hold `size` bytes."""
    n = raw.length if isinstance(raw, Window) else raw.nbytes if isinstance(raw, memoryview) \
        else len(raw)
    if dtype == "string":
        raise FormatError(f"{where}: string tensors keep their data in string_data, not "
                          f"raw_data")
    if n != size:
        raise FormatError(f"{where}: raw_data holds {n} bytes, but {dtype} of that shape "
                          f"takes {size}")
    if not isinstance(raw, Window):
        return raw, None
    path = origin.path
    assert path is not None, "a Window comes only from a file"
    return None, lambda: open_source(path).read_at(raw.offset, raw.length,
                                                   f"the data of {where}")


def _typed(t: dict[str, Any], dtype: str, dims: tuple[int, ...], size: int, where: str
           ) -> bytes | list[bytes]:
    """A tensor's elements from its typed data field, in raw form."""
    layout = LAYOUTS[dtype]
    values = t.get(layout.field, ())
    count = 1
    for d in dims:
        count *= d
    if dtype == "string":
        if len(values) != count:
            raise FormatError(f"{where}: string_data holds {len(values)} strings, but the "
                              f"shape {list(dims)} has {count} elements")
        return [bytes(v) for v in values]
    want = size // array(layout.code).itemsize
    if len(values) != want:
        what = "no data" if not values else f"{len(values)} values in {layout.field}"
        raise FormatError(f"{where} holds {what}, but {dtype} of shape {list(dims)} needs "
                          f"{want} {layout.field} values")
    if layout.code in "BHI":
        mask = (1 << 8 * array(layout.code).itemsize) - 1
        values = [v & mask for v in values]
    # float_data and double_data arrive as array('f') / array('d') already
    packed = values if isinstance(values, array) else array(layout.code, values)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def _external(t: dict[str, Any], origin: Origin, size: int, where: str
              ) -> Callable[[], bytes]:
    """A function reading a tensor's bytes from its external file: the location is checked
    now, the file only when the data is first used."""
    info = {e.get("key", ""): e.get("value", "") for e in t.get("external_data", ())}
    location = info.get("location", "")
    if not location:
        raise FormatError(f"{where} is stored externally but names no location")
    _check_location(location, where)
    offset = _entry_int(info, "offset", 0, where)
    length = _entry_int(info, "length", size, where)
    if length != size:
        raise FormatError(f"{where}: its external data is {length} bytes long, but its "
                          f"type and shape take {size}")
    base_dir = origin.base_dir

    def load() -> bytes:
        if base_dir is None:
            raise FormatError(f"{where} keeps its data in the file {location!r}, but the "
                              f"model was read from bytes with no base_dir to find it in")
        path = _resolve(base_dir, location, where)
        try:
            source = open_source(path)
        except OSError as exc:
            raise FormatError(f"{where}: cannot open its external data file {location!r} "
                              f"in {base_dir!r}: {exc.strerror or exc}") from None
        return source.read_at(offset, size, f"the data of {where} in {location!r}")

    return load


def _entry_int(info: dict[str, str], key: str, default: int, where: str) -> int:
    text = info.get(key)
    if text is None:
        return default
    if not text.isascii() or not text.strip().isdigit():
        raise FormatError(f"{where}: external data {key} {text!r} is not a non-negative "
                          f"integer")
    return int(text)


def _check_location(location: str, where: str) -> None:
    """Refuse a location that is absolute or climbs out of the model's folder."""
    parts = location.replace("\\", "/").split("/")
    if os.path.isabs(location) or location.startswith(("/", "\\")) or ".." in parts \
            or (len(location) > 1 and location[1] == ":") or "\0" in location:
        raise FormatError(f"{where}: external data location {location!r} is outside the "
                          f"model's folder; only relative paths inside it are allowed")


def _resolve(base_dir: str, location: str, where: str) -> str:
    """The path of an external data file, refused if links lead it out of `base_dir`."""
    base = os.path.realpath(base_dir)
    path = os.path.realpath(os.path.join(base, location))
    try:
        inside = os.path.commonpath([base, path]) == base
    except ValueError:  # on different drives (Windows)
        inside = False
    if not inside:
        raise FormatError(f"{where}: external data location {location!r} leads outside "
                          f"the model's folder {base_dir!r}")
    return path


def read_sparse(s: dict[str, Any], origin: Origin, where: str = "") -> SparseTensorData:
    """The SparseTensorProto `s` as `SparseTensorData` (dense on first use)."""
    if "values" not in s or "indices" not in s:
        raise FormatError(f"{where or 'a sparse tensor'} lacks its values or indices")
    values = read_tensor(s["values"], origin, where and f"{where} values")
    indices = read_tensor(s["indices"], origin, where and f"{where} indices")
    dims = tuple(s.get("dims", ()))
    label = where or f"sparse tensor {values.name!r}"
    if len(values.dims) != 1:
        raise FormatError(f"{label}: values must be 1-d, not of shape {list(values.dims)}")
    if any(d < 0 for d in dims):
        raise FormatError(f"{label} has negative dimensions {list(dims)}")
    return SparseTensorData(values.name, values.dtype, dims, values=values, indices=indices,
                            doc=values.doc)


class ExternalSink:
    """Collects the data of the tensors that `write_tensor` puts in an external file named
    `location` (relative to the model): tensors of `threshold` bytes or more go there."""

    def __init__(self, location: str, threshold: int):
        _check_location(location, "the external data file")
        self.location = location
        self.threshold = threshold
        #: the file's contents, in order
        self.chunks: list[bytes | bytearray | memoryview | Deferred] = []
        self.size = 0

    def add(self, data: bytes | bytearray | memoryview | Deferred, n: int
            ) -> list[dict[str, str]]:
        """Append `data` (`n` bytes); the TensorProto.external_data entries pointing at
        it."""
        entries = [{"key": "location", "value": self.location},
                   {"key": "offset", "value": str(self.size)},
                   {"key": "length", "value": str(n)}]
        self.chunks.append(data)
        self.size += n
        return entries


def write_tensor(td: TensorData, sink: ExternalSink | None = None) -> dict[str, Any]:
    """`td` as a TensorProto dict (its data in raw_data, or in `sink`'s file when it is
    large enough); data still in a file is read only when the bytes are written."""
    label = f"tensor {td.name!r}"
    out: dict[str, Any] = {"dims": [int(d) for d in td.dims],
                           "data_type": dtype_code(td.dtype, label)}
    if td.name:
        out["name"] = td.name
    if td.doc:
        out["doc_string"] = td.doc
    if td.dtype == "string":
        data = td.data()
        if not isinstance(data, list) or len(data) != td.numel:
            raise ArgumentError(f"{label} is a string tensor of {td.numel} elements, but "
                                f"holds {type(data).__name__} data")
        out["string_data"] = [s.encode("utf-8", "surrogateescape") if isinstance(s, str)
                              else bytes(s) for s in data]
        return out
    size = nbytes(td.dtype, td.dims)
    if td.raw is None and td.load is not None and not isinstance(td, SparseTensorData):
        data: Any = Deferred(size, td.load)
    else:
        data = td.data()
        if isinstance(data, list) or memoryview(data).nbytes != size:
            held = "strings" if isinstance(data, list) else f"{memoryview(data).nbytes} bytes"
            raise ArgumentError(f"{label}: {td.dtype} of shape {list(td.dims)} takes {size} "
                                f"bytes, but it holds {held}")
    if sink is not None and size >= sink.threshold:
        out["data_location"] = _EXTERNAL
        out["external_data"] = sink.add(data, size)
    else:
        out["raw_data"] = data
    return out


def write_sparse(td: SparseTensorData, sink: ExternalSink | None = None) -> dict[str, Any]:
    """`td` as a SparseTensorProto dict."""
    return {"values": write_tensor(td.values, sink), "indices": write_tensor(td.indices, sink),
            "dims": [int(d) for d in td.dims]}
