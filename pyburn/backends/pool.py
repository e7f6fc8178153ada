"""The buffer pool: device memory that tensors give back is reused, not freed and
reallocated (wgpu's GPU buffers; the wasm backend's ranges of its WebAssembly memory).

Every allocation is a `Storage` (one buffer, shared by all the views of it). When the last
handle that uses a storage is garbage collected, a weakref finalizer puts its buffer back in
the pool, in a bucket of its rounded size, where the next allocation of that size takes it.
Rounding keeps the number of buckets small and reuse high: sizes go up to the next multiple
of an eighth of their power of two (at most 12.5% slack), and to at least 256 bytes.

A buffer returned while work that uses it is still queued may be handed out again at once:
the runtime's ordering contract runs the new user's work after the old one.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

MIN_BYTES = 256


class BufferSource(Protocol):
    """Where a pool's buffers come from (`GpuRuntime` on wgpu; the wasm backend's memory)."""

    def create_buffer(self, size: int, data: bytes | None = None) -> Any:
        """A new buffer of `size` bytes, holding `data` (len == size) when given."""

    def free_buffer(self, buffer: Any) -> None:
        """Release `buffer`'s memory."""

    def write(self, buffer: Any, offset: int, data: bytes | memoryview) -> None:
        """Copy `data` into `buffer` at byte `offset`."""


def bucket_size(nbytes: int) -> int:
    """The pool size class of an allocation of `nbytes`."""
    if nbytes <= MIN_BYTES:
        return MIN_BYTES
    step = max(MIN_BYTES, (1 << (nbytes - 1).bit_length()) // 8)
    return -(-nbytes // step) * step


class Storage:
    """One pooled buffer; views (handles) keep it alive."""

    __slots__ = ("buffer", "nbytes", "__weakref__")

    def __init__(self, buffer: Any, nbytes: int):
        self.buffer = buffer
        self.nbytes = nbytes

    def __repr__(self) -> str:
        return f"Storage({self.nbytes} bytes)"


@dataclass(frozen=True)
class PoolStats:
    """The pool's counters, in bytes (allocated = in use + pooled)."""

    allocated_bytes: int
    in_use_bytes: int
    pooled_bytes: int
    buffers: int


class BufferPool:
    """Hands out `Storage`s from a source's buffers, reusing returned ones."""

    def __init__(self, runtime: BufferSource):
        self.runtime = runtime
        self._free: dict[int, list[Any]] = {}
        self._lock = threading.Lock()
        self._allocated = 0
        self._in_use = 0
        self._buffers = 0
        #: while set (a wasm capture runs), every storage handed out is kept here too, and
        #: every buffer given back is kept here, as (buffer, size), instead of being reused:
        #: no buffer a recording wrote or read is handed to anyone else (`give_back` ends it)
        self.held: list[Any] | None = None

    def allocate(self, nbytes: int) -> Storage:
        """A storage of at least `nbytes` bytes (contents undefined)."""
        size = bucket_size(nbytes)
        buffer = self._take(size)
        if buffer is None:
            buffer = self._create(size)
        return self._track(Storage(buffer, size))

    def upload(self, data: bytes | memoryview) -> Storage:
        """A storage holding `data` (padded with zeros to a multiple of 4 bytes)."""
        size = bucket_size(len(data))
        buffer = self._take(size)
        if buffer is None:
            buffer = self._create(size, bytes(data) + bytes(size - len(data)))
        elif len(data):
            tail = -len(data) % 4
            self.runtime.write(buffer, 0, bytes(data) + bytes(tail) if tail else data)
        return self._track(Storage(buffer, size))

    def _take(self, size: int) -> Any:
        """A pooled buffer of `size` bytes, or None."""
        with self._lock:
            free = self._free.get(size)
            return free.pop() if free else None

    def _create(self, size: int, data: bytes | None = None) -> Any:
        try:
            buffer = self.runtime.create_buffer(size, data)
        except Exception:  # out of memory, most likely: give the pooled buffers back, retry
            self.trim()
            buffer = self.runtime.create_buffer(size, data)
        with self._lock:
            self._allocated += size
            self._buffers += 1
        return buffer

    def _track(self, storage: Storage) -> Storage:
        with self._lock:
            self._in_use += storage.nbytes
            if self.held is not None:
                self.held.append(storage)
        done = weakref.finalize(storage, self._release, storage.buffer, storage.nbytes)
        done.atexit = False  # at exit the device goes away anyway
        return storage

    def _release(self, buffer: Any, size: int) -> None:
        with self._lock:
            self._in_use -= size
            if self.held is not None:
                self.held.append((buffer, size))
                return
            self._free.setdefault(size, []).append(buffer)

    def give_back(self, held: list[Any]) -> None:
        """Return to the pool the buffers that `held` (a list `held` filled) kept out of it
        (its storages go back as they are dropped)."""
        with self._lock:
            for item in held:
                if isinstance(item, tuple):
                    buffer, size = item
                    self._free.setdefault(size, []).append(buffer)

    def trim(self) -> int:
        """Free every pooled buffer; returns the bytes freed."""
        with self._lock:
            free, self._free = self._free, {}
            freed = sum(size * len(buffers) for size, buffers in free.items())
            self._allocated -= freed
            self._buffers -= sum(len(buffers) for buffers in free.values())
        for buffers in free.values():
            for buffer in buffers:
                self.runtime.free_buffer(buffer)
        return freed

    def stats(self) -> PoolStats:
        """The current counters."""
        with self._lock:
            return PoolStats(self._allocated, self._in_use, self._allocated - self._in_use,
                             self._buffers)
