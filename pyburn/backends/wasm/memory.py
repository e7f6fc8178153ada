"""The wasm backend's memory as the source of its buffers (`pool.BufferSource`): a buffer is
an address in the engine's linear memory, 16-byte aligned (a v128's), and `pool.BufferPool`
reuses the ones tensors give back. New ones are cut from the top, growing the memory as
needed; ranges that the pool trims are kept, by size, for the next buffer of that size.
The first `RESERVED` bytes are never handed out (address 0 stays unused: a kernel given a
buffer never gets a null pointer)."""

from __future__ import annotations

from .engine import PAGE, Engine

#: bytes at the bottom of the memory that no buffer takes
RESERVED = 1024
ALIGN = 16


class Memory:
    """Buffers (addresses) in `engine`'s memory."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.top = RESERVED
        self.sizes: dict[int, int] = {}  # address -> size, of every buffer handed out
        self.free: dict[int, list[int]] = {}  # size -> addresses given back

    def create_buffer(self, size: int, data: bytes | None = None) -> int:
        """The address of a new buffer of `size` bytes, holding `data` when given."""
        size = max(ALIGN, -(-size // ALIGN) * ALIGN)
        with self.engine.lock:  # (the pool creates buffers outside its own lock)
            kept = self.free.get(size)
            if kept:
                address = kept.pop()
            else:
                address, self.top = self.top, self.top + size
                missing = self.top - self.engine.size()
                if missing > 0:
                    self.engine.grow(-(-missing // PAGE))
            self.sizes[address] = size
        if data:
            self.engine.write(address, data)
        return address

    def free_buffer(self, buffer: int) -> None:
        """Keep `buffer`'s range for the next buffer of its size."""
        with self.engine.lock:
            self.free.setdefault(self.sizes.pop(buffer), []).append(buffer)

    def write(self, buffer: int, offset: int, data: bytes | memoryview) -> None:
        """Copy `data` into `buffer` at byte `offset`."""
        self.engine.write(buffer + offset, data)
