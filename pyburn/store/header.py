"""The safetensors header: reading it with every check the format implies, and writing it.

A file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the data
section. The JSON object maps each tensor's name to its element type, shape and
``data_offsets`` (begin and end, relative to the data section), plus an optional
``__metadata__`` object of strings. The tensors must cover the data section exactly: no gaps,
no overlaps, nothing after the last one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..dtypes import DType
from ..errors import FormatError
from . import safejson
from .elements import ELEMENTS, NAMES, Element

#: the reference implementation's limit on N: a larger length is corruption, not a header
MAX_HEADER_SIZE = 100_000_000
METADATA_KEY = "__metadata__"
_FIELDS = ("dtype", "shape", "data_offsets")
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number",
               float: "a number", bool: "a boolean", type(None): "null"}


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's entry in a header."""

    name: str
    #: the safetensors element type ("F32", "BF16", ...)
    dtype: str
    shape: tuple[int, ...]
    #: where its bytes start and end, relative to the data section
    begin: int
    end: int

    @property
    def label(self) -> str:
        """How error messages name this tensor."""
        return f"tensor {brief(self.name)}"

    @property
    def element(self) -> Element:
        """The element type's description (size, the pyburn dtype it loads as)."""
        return ELEMENTS[self.dtype]


@dataclass(frozen=True)
class Header:
    """A parsed and validated header."""

    #: the tensors in the order the header lists them
    tensors: dict[str, TensorInfo]
    #: the ``__metadata__`` strings (empty when the file has none)
    metadata: dict[str, str]
    #: file offset of the data section: 8 + the header's length
    data_start: int


def parse_length(prefix: bytes, file_size: int) -> int:
    """The header length N from the file's first 8 bytes, checked against the file's size."""
    if file_size < 8:
        raise FormatError(f"truncated file: {file_size} bytes, but a safetensors file starts "
                          f"with an 8-byte header length")
    n = int.from_bytes(prefix, "little")
    if n > MAX_HEADER_SIZE:
        raise FormatError(f"header length {n} (file bytes 0-7) is over the format's limit of "
                          f"{MAX_HEADER_SIZE} bytes: not a safetensors file, or a corrupt one")
    if 8 + n > file_size:
        raise FormatError(f"header length {n} runs past the end of the file ({file_size} "
                          f"bytes): the file is truncated or corrupt")
    return n


def parse_header(text: bytes, data_size: int) -> Header:
    """Parse and validate the header `text` of a file whose data section has `data_size`
    bytes; raises FormatError naming the first problem found."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"header is not valid UTF-8 (file offset {8 + exc.start})") from None
    if not decoded.startswith("{"):
        raise FormatError("header does not start with '{' (file offset 8): not a safetensors "
                          "file, or a corrupt one")
    raw = safejson.loads(decoded, "header", object_pairs_hook=_unique_keys,
                         parse_constant=_no_constant)
    metadata = _metadata(raw.pop(METADATA_KEY, None))
    tensors = {name: _tensor_info(name, entry, data_size) for name, entry in raw.items()}
    _check_coverage(tensors.values(), data_size)
    return Header(tensors, metadata, 8 + len(text))


def encode_header(tensors: Sequence[TensorInfo], metadata: dict[str, str]) -> bytes:
    """The 8-byte length and the JSON header for `tensors` (in that order) and `metadata`,
    padded with spaces to a multiple of 8 bytes so the data section starts 8-aligned."""
    header: dict[str, object] = {METADATA_KEY: metadata} if metadata else {}
    for t in tensors:
        header[t.name] = {"dtype": t.dtype, "shape": list(t.shape),
                          "data_offsets": [t.begin, t.end]}
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text


def lay_out(specs: Sequence[tuple[str, DType, tuple[int, ...]]]) -> list[TensorInfo]:
    """Header entries for tensors given as (name, dtype, shape), in that order.

    Their data goes widest element type first: the data section starts at a multiple of 8,
    so every tensor then starts at a multiple of its element size, and a reader can view
    the bytes in place without copying them to align them."""
    begins: dict[int, int] = {}
    position = 0
    for i in sorted(range(len(specs)), key=lambda i: -specs[i][1].itemsize):
        begins[i] = position
        position += _numel(specs[i][2]) * specs[i][1].itemsize
    return [TensorInfo(name, NAMES[dtype], tuple(shape), begins[i],
                       begins[i] + _numel(shape) * dtype.itemsize)
            for i, (name, dtype, shape) in enumerate(specs)]


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise FormatError(f"header repeats the key {brief(key)}")
        out[key] = value
    return out


def _no_constant(name: str) -> object:
    raise FormatError(f"header contains {name}, which JSON does not allow")


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _metadata(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FormatError(f"{METADATA_KEY} is {_json_type(value)}, not an object of strings")
    for key, item in value.items():
        if not isinstance(item, str):
            raise FormatError(f"{METADATA_KEY} maps strings to strings, but {brief(key)} holds "
                              f"{_json_type(item)}")
    return value


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0  # bool is not a count, nor 2.0


def _tensor_info(name: str, entry: object, data_size: int) -> TensorInfo:
    where = f"tensor {brief(name)}"
    if not isinstance(entry, dict):
        raise FormatError(f"{where}: its header entry is {_json_type(entry)}, not an object")
    missing = [f for f in _FIELDS if f not in entry]
    if missing:
        raise FormatError(f"{where}: its header entry lacks {', '.join(missing)}")
    dtype, shape, offsets = (entry[f] for f in _FIELDS)
    if not isinstance(dtype, str) or dtype not in ELEMENTS:
        raise FormatError(f"{where}: unknown dtype {brief(dtype)}; the format defines "
                          f"{', '.join(ELEMENTS)}")
    if not isinstance(shape, list) or not all(map(_is_count, shape)):
        raise FormatError(f"{where}: shape {brief(shape)} is not a list of non-negative integers")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))):
        raise FormatError(f"{where}: data_offsets {brief(offsets)} is not a pair of non-negative "
                          f"integers")
    begin, end = offsets
    if begin > end:
        raise FormatError(f"{where}: data_offsets {offsets} end before they begin")
    if end > data_size:
        raise FormatError(f"{where}: data_offsets {offsets} run past the end of the data "
                          f"section ({data_size} bytes): the file is truncated or corrupt")
    element = ELEMENTS[dtype]
    count = _bounded_numel(shape, data_size * 8 // element.bits)
    if count is None:
        raise FormatError(f"{where}: shape {brief(shape)} of {dtype} needs more bytes than "
                          f"the data section holds ({data_size})")
    nbytes = element.nbytes(count)
    if nbytes is None:
        raise FormatError(f"{where}: shape {brief(shape)} of {dtype} does not fill whole bytes")
    if nbytes != end - begin:
        raise FormatError(f"{where}: shape {brief(shape)} of {dtype} takes {nbytes} bytes, but "
                          f"data_offsets {offsets} hold {end - begin}")
    return TensorInfo(name, dtype, tuple(shape), begin, end)


def _bounded_numel(shape: list[int], limit: int) -> int | None:
    """The number of elements, or None once the product passes `limit`: a corrupt shape of
    huge sizes must not turn into a product with millions of digits."""
    if 0 in shape:
        return 0
    n = 1
    for s in shape:
        n *= s
        if n > limit:
            return None
    return n


def brief(value: object, limit: int = 200) -> str:
    """`value`'s repr, cut short: a corrupt header can hold a shape of a million entries."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _check_coverage(tensors: Iterable[TensorInfo], data_size: int) -> None:
    """The tensors must cover the data section exactly: the format forbids holes, which
    would let a file be two formats at once."""
    position, previous = 0, ""
    for info in sorted(tensors, key=lambda t: (t.begin, t.end)):
        if info.begin > position:
            raise FormatError(f"data bytes {position} to {info.begin} belong to no tensor "
                              f"(before {brief(info.name)}); the format allows no gaps")
        if info.begin < position:
            raise FormatError(f"tensors {brief(previous)} and {brief(info.name)} overlap in the "
                              f"data section (at data offset {info.begin})")
        position, previous = info.end, info.name
    if position != data_size:
        raise FormatError(f"data bytes {position} to {data_size} belong to no tensor; the "
                          f"format allows nothing after the last tensor")
