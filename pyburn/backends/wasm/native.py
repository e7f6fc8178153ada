"""`NativeEngine`: the wasm backend's kernels on wasmtime (the ``wasm`` extra), on the desktop.
SIMD is on in wasmtime by default; the memory may grow to 4 GiB."""

from __future__ import annotations

from typing import Any

from .engine import Engine, Export, signed


def unavailable_reason() -> str | None:
    """None where wasmtime imports, else how to get it."""
    try:
        import wasmtime  # noqa: F401  optional: the wasm extra
    except ImportError:
        return "the wasm device on the desktop needs wasmtime: pip install 'pyburn[wasm]'"
    return None


class NativeEngine(Engine):
    """A wasmtime store with one memory of `pages` pages to start with."""

    def __init__(self, pages: int = 16):
        import wasmtime  # optional: the wasm extra

        super().__init__()
        self._wasmtime = wasmtime
        self._engine = wasmtime.Engine()
        self._store = wasmtime.Store(self._engine)
        self._memory = wasmtime.Memory(self._store,
                                       wasmtime.MemoryType(wasmtime.Limits(pages, None)))

    def instantiate(self, binary: bytes) -> dict[str, Export]:
        with self.lock:
            module = self._wasmtime.Module(self._engine, binary)
            instance = self._wasmtime.Instance(self._store, module, [self._memory])
            exports = instance.exports(self._store)
            return {export.name: self._caller(exports[export.name])
                    for export in module.exports}

    def _caller(self, fn: Any) -> Export:
        store, lock = self._store, self.lock

        def call(*args: int | float) -> Any:
            with lock:  # (a store is one thread's at a time)
                return fn(store, *(signed(a) if isinstance(a, int) else a for a in args))
        return call

    def size(self) -> int:
        with self.lock:
            return self._memory.data_len(self._store)

    def grow(self, pages: int) -> None:
        with self.lock:
            self._memory.grow(self._store, pages)

    def read(self, address: int, nbytes: int) -> bytes:
        with self.lock:
            return bytes(self._memory.read(self._store, address, address + nbytes))

    def write(self, address: int, data: bytes | bytearray | memoryview) -> None:
        with self.lock:
            self._memory.write(self._store, bytes(data), address)

