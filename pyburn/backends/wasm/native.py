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

    def _instantiate(self, binary: bytes) -> dict[str, Export]:
        with self.lock:
            module = self._wasmtime.Module(self._engine, binary)
            instance = self._wasmtime.Instance(self._store, module, [self._memory])
            exports = instance.exports(self._store)
            return {export.name: self._caller(exports[export.name])
                    for export in module.exports}

    def _caller(self, fn: Any) -> Export:
        """`fn` as a Python function: numbers in, a number (or None) out, through wasmtime's
        unchecked call on raw values, its arguments' types known from `fn`'s signature
        (wasmtime-py's own call converts and checks each argument: about 0.5 ms a call)."""
        from ctypes import POINTER, byref  # import time: with wasmtime's own bindings

        ffi, wasmtime = self._wasmtime._ffi, self._wasmtime
        ty = fn.type(self._store)
        params = [str(kind) for kind in ty.params]
        results = [str(kind) for kind in ty.results]
        width = max(len(params), len(results), 1)
        raw, context, func = ffi.wasmtime_val_raw_t * width, self._store._context(), \
            byref(fn._func)
        call_unchecked, lock = ffi.wasmtime_func_call_unchecked, self.lock

        def call(*args: int | float) -> Any:
            values = raw()
            for k, (kind, value) in enumerate(zip(params, args)):
                setattr(values[k], kind, signed(int(value)) if kind == "i32" else value)
            trap = POINTER(ffi.wasm_trap_t)()
            with lock:  # (a store is one thread's at a time)
                error = call_unchecked(context, func, values, width, byref(trap))
            if error:
                raise wasmtime.WasmtimeError._from_ptr(error)
            if trap:
                raise wasmtime.Trap._from_ptr(trap)
            return getattr(values[0], results[0]) if results else None
        return call

    def size(self) -> int:
        with self.lock:
            return self._memory.data_len(self._store)

    def grow(self, pages: int) -> None:
        with self.lock:
            self._memory.grow(self._store, pages)

    def _read(self, address: int, nbytes: int) -> bytes:
        with self.lock:
            return bytes(self._memory.read(self._store, address, address + nbytes))

    def _write(self, address: int, data: bytes | bytearray | memoryview) -> None:
        with self.lock:
            self._memory.write(self._store, bytes(data), address)

