"""wasm: tensors in a WebAssembly memory, primitives as pyburn's own WebAssembly SIMD kernels
(`backend`), run by the JavaScript engine under Pyodide (`browser`) and by wasmtime on the
desktop (`native`, the ``wasm`` extra).

Registered by `REGISTRATION`: in a browser (and Pyodide under Node) after a hardware
WebGPU adapter and before a fallback one (SwiftShader runs slower than these kernels); on
the desktop after cpu (numpy) and before a software wgpu adapter (llvmpipe).
"""

from __future__ import annotations

from ...runtime import IN_BROWSER
from ..base import Registration
from ..fusion import enabled as fusion_enabled
from . import browser, native
from .backend import WasmBackend
from .fusion import WasmFusion

#: the default-device ranks (lower first): wgpu's hardware adapters are 10, cpu 20, flex 40
BROWSER_RANK, DESKTOP_RANK = 15, 25


def rank() -> int:
    """Where wasm goes in the default-device order here."""
    return BROWSER_RANK if IN_BROWSER else DESKTOP_RANK


def unavailable_reason() -> str | None:
    """None where an engine runs here (Pyodide's JavaScript engine, else wasmtime)."""
    if browser.unavailable_reason() is None:
        return None
    return native.unavailable_reason()


def create(index: int) -> WasmBackend | WasmFusion:
    """A wasm backend on its own memory (every index is an independent CPU device), with
    elementwise fusion unless $PYBURN_FUSION is "0" (`pyburn.backends.fusion.enabled`)."""
    engine = browser.BrowserEngine() if browser.unavailable_reason() is None else \
        native.NativeEngine()
    backend = WasmBackend(engine)
    return WasmFusion(backend) if fusion_enabled() else backend


REGISTRATION = Registration("wasm", unavailable_reason, create, rank)

__all__ = ["REGISTRATION", "WasmBackend", "WasmFusion", "create", "unavailable_reason"]
