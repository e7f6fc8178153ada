"""`BrowserEngine`: the wasm backend's kernels on the JavaScript engine that runs Pyodide (a
browser's, or Node's): the memory is a ``WebAssembly.Memory`` of the backend's own, modules
are compiled with ``WebAssembly.Module``, and Python calls their exports through Pyodide's
proxies (about 10 us a call). Reads and writes are one ``Uint8Array`` copy each."""

from __future__ import annotations

from typing import Any

from .engine import Engine, Export, simd_probe


def unavailable_reason() -> str | None:
    """None where this Python runs in a JavaScript engine with WebAssembly SIMD, else why
    not (flex is then the CPU device)."""
    try:
        import js  # type: ignore[import-not-found]  # optional: Pyodide only
    except ImportError:
        return "not running in Pyodide (a browser or Node)"
    wasm = getattr(js, "WebAssembly", None)
    if wasm is None:
        return "this JavaScript engine has no WebAssembly"
    if not wasm.validate(_bytes(simd_probe())):
        return "this JavaScript engine's WebAssembly has no SIMD (fixed-width, 128-bit)"
    return None


def _bytes(data: bytes) -> Any:
    """`data` as a JavaScript Uint8Array (one copy)."""
    from pyodide.ffi import to_js  # type: ignore[import-not-found]  # optional: Pyodide only

    return to_js(data)


class BrowserEngine(Engine):
    """A ``WebAssembly.Memory`` of `pages` pages to start with, and modules over it."""

    def __init__(self, pages: int = 16):
        import js  # type: ignore[import-not-found]  # optional: Pyodide only
        from pyodide.ffi import to_js  # type: ignore[import-not-found]  # optional: Pyodide only

        super().__init__()
        self._js = js
        self._memory = js.WebAssembly.Memory.new(to_js({"initial": pages},
                                                       dict_converter=js.Object.fromEntries))
        self._imports = to_js({"env": {"mem": self._memory}},
                              dict_converter=js.Object.fromEntries)

    def instantiate(self, binary: bytes) -> dict[str, Export]:
        wasm = self._js.WebAssembly
        module = wasm.Module.new(_bytes(binary))
        instance = wasm.Instance.new(module, self._imports)
        return {entry.name: getattr(instance.exports, entry.name)
                for entry in wasm.Module.exports(module)}

    def size(self) -> int:
        return int(self._memory.buffer.byteLength)

    def grow(self, pages: int) -> None:
        self._memory.grow(pages)

    def read(self, address: int, nbytes: int) -> bytes:
        view = self._js.Uint8Array.new(self._memory.buffer, address, nbytes)
        return bytes(view.to_bytes())

    def write(self, address: int, data: bytes | bytearray | memoryview) -> None:
        view = self._js.Uint8Array.new(self._memory.buffer, address, len(data))
        view.assign(data)
