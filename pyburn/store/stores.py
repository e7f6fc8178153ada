"""Stores by file format: `SafetensorsStore` (lazy safetensors), and `open_store`, which
tells a safetensors file from a PyTorch one by its first bytes."""

from __future__ import annotations

from ..devices import Device
from .header import TensorInfo, parse_header, parse_length
from .lazy import LazyStateDict, LazyTensor
from .pytorch import PytorchStore
from .source import ByteSource, Source, open_source


class SafetensorsTensor(LazyTensor):
    """A tensor of a safetensors file, read with one range read when used."""

    def __init__(self, source: ByteSource, start: int, info: TensorInfo):
        self.source = source
        self.start = start
        self.info = info
        self.shape = info.shape
        self.element = info.element
        self.name = info.name

    def read(self) -> bytes:
        """The tensor's bytes, as the file holds them."""
        return self.source.read_at(self.start, self.info.end - self.info.begin, self.info.label)


class SafetensorsStore(LazyStateDict):
    """The tensors of a safetensors file, by name, read when used; the header (validated in
    full, as `pyburn.store.load` does) is read at once, and its ``__metadata__`` strings
    become `metadata`."""

    def __init__(self, source: Source, *, device: Device | str | None = None):
        src = open_source(source)
        n = parse_length(src.read_at(0, min(8, src.size), "the header length"), src.size)
        header = parse_header(src.read_at(8, n, "the header"), src.size - 8 - n)
        tensors = {name: SafetensorsTensor(src, header.data_start + info.begin, info)
                   for name, info in header.tensors.items()}
        super().__init__(tensors, metadata=header.metadata, device=device)


def open_store(source: Source | LazyStateDict, *, top_level_key: str | None = None,
               device: Device | str | None = None) -> LazyStateDict:
    """A lazy store for a PyTorch file (zip or legacy pickle) or a safetensors file, told
    apart by their first bytes; a store is returned as it is. `top_level_key` picks the
    tensors under one key (see `LazyStateDict.with_top_level_key`; PyTorch checkpoints
    find theirs by name when it is None)."""
    if isinstance(source, LazyStateDict):
        return source if top_level_key is None else source.with_top_level_key(top_level_key)
    src = open_source(source)
    head = src.read_at(0, min(src.size, 262), "the file's first bytes")
    if head.startswith((b"PK", b"\x80")) or head[257:262] == b"ustar":
        return PytorchStore(src, top_level_key=top_level_key, device=device)
    store = SafetensorsStore(src, device=device)
    return store if top_level_key is None else store.with_top_level_key(top_level_key)
