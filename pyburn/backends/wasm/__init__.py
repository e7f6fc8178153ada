"""wasm: tensors in a WebAssembly memory, primitives as pyburn's own WebAssembly SIMD kernels
(`backend`), run by the JavaScript engine under Pyodide (`browser`) and by wasmtime on the
desktop (`native`, the ``wasm`` extra).

In progress (issue 17): registered by `REGISTRATION` for ``pyburn.device("wasm")`` only,
with no default-device rank, until every primitive has its kernel (so far: transfer,
creation, random bits, elementwise ops of the op table's wasm column, reductions,
movement, float32 matmul).
"""

from __future__ import annotations

from ..base import Registration
from . import browser, native
from .backend import WasmBackend


def unavailable_reason() -> str | None:
    """None where an engine runs here (Pyodide's JavaScript engine, else wasmtime)."""
    if browser.unavailable_reason() is None:
        return None
    return native.unavailable_reason()


def create(index: int) -> WasmBackend:
    """A wasm backend on its own memory (every index is an independent CPU device)."""
    if browser.unavailable_reason() is None:
        return WasmBackend(browser.BrowserEngine())
    return WasmBackend(native.NativeEngine())


REGISTRATION = Registration("wasm", unavailable_reason, create, None)

__all__ = ["REGISTRATION", "WasmBackend", "create", "unavailable_reason"]
