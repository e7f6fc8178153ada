"""`BrowserEngine`: the wasm backend's kernels on the JavaScript engine that runs Pyodide (a
browser's, or Node's): the memory is a ``WebAssembly.Memory`` of the backend's own, modules
are compiled with ``WebAssembly.Module``, and Python calls their exports through Pyodide's
proxies (about 10 us a call). Reads and writes are one ``Uint8Array`` copy each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .engine import Engine, Export, Step, simd_probe

#: the JavaScript of a replay: the inputs copied in, the steps of a recording run and the
#: results copied out, in one call from Python (see `Engine.replayer`)
_REPLAY = """
return (...addresses) => {
  const bytes = () => new Uint8Array(memory.buffer);
  slots.forEach(([slot, n], k) => bytes().copyWithin(slot, addresses[k], addresses[k] + n));
  for (const [what, value] of steps) {
    if (typeof what === "number") new Uint8Array(memory.buffer, what, value.length).set(value);
    else what(...value);
  }
  const targets = addresses.slice(slots.length);
  results.forEach(([at, n], k) => bytes().copyWithin(targets[k], at, at + n));
};"""


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

    def _instantiate(self, binary: bytes) -> dict[str, Export]:
        wasm = self._js.WebAssembly
        module = wasm.Module.new(_bytes(binary))
        instance = wasm.Instance.new(module, self._imports)
        return {entry.name: getattr(instance.exports, entry.name)
                for entry in wasm.Module.exports(module)}

    def replayer(self, steps: Sequence[Step], slots: Sequence[tuple[int, int]],
                 results: Sequence[tuple[int, int]]) -> Callable[..., None]:
        """One JavaScript function: a replay crosses from Python once."""
        from pyodide.ffi import to_js  # type: ignore[import-not-found]  # optional: Pyodide only

        listed = to_js([[first, _bytes(second) if isinstance(second, bytes)
                         else to_js(list(second))] for first, second in steps])
        run = self._js.Function.new("steps", "slots", "results", "memory", _REPLAY)(
            listed, to_js([list(s) for s in slots]), to_js([list(r) for r in results]),
            self._memory)

        def replay(*addresses: int) -> None:
            with self.lock:
                run(*addresses)
        return replay

    def size(self) -> int:
        return int(self._memory.buffer.byteLength)

    def grow(self, pages: int) -> None:
        self._memory.grow(pages)

    def _read(self, address: int, nbytes: int) -> bytes:
        view = self._js.Uint8Array.new(self._memory.buffer, address, nbytes)
        return bytes(view.to_bytes())

    def _write(self, address: int, data: bytes | bytearray | memoryview) -> None:
        view = self._js.Uint8Array.new(self._memory.buffer, address, len(data))
        view.assign(data)
