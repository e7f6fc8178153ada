"""`Engine`: the one seam between the wasm backend and the WebAssembly engine that runs its
kernels, as `GpuRuntime` is for wgpu. An engine owns one linear memory (where every tensor's
elements live, so that kernels address them directly) and instantiates modules over it.

Two implement it: `browser.BrowserEngine` on the JavaScript engine Pyodide runs in (a
browser's, or Node's), and `native.NativeEngine` on wasmtime, so that the same kernels run
and are tested on the desktop. Python talks to a kernel with plain numbers (addresses,
sizes); elements cross between Python and the memory only as one bulk copy each way.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import cast

from ...errors import PyburnError
from .assemble import Function, Module

#: a WebAssembly page: what memory grows by
PAGE = 1 << 16

Export = Callable[..., int | float | None]
#: one step of a recording: a kernel call (the engine's own export and its arguments), or
#: a write (an address and the bytes written there)
Step = tuple[Export, tuple] | tuple[int, bytes]


class CaptureError(PyburnError):
    """What a capture cannot record: a value read back while it runs (the kernels would
    then depend on data the host looked at), a device other than wasm."""


class Engine(ABC):
    """One WebAssembly memory, and modules instantiated over it (each imports it as
    ``env.mem``). `lock` is held by whatever must not interleave with another thread's use
    of the engine (a data loader's workers make tensors while the main thread computes): a
    wasmtime store is not to be used by two threads at once, and a kernel reads what was
    written for it into the reserved bottom of the memory."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        #: while a capture runs (``capture.capture``): every kernel call and write, in order
        self.recording: list[Step] | None = None

    def instantiate(self, binary: bytes) -> dict[str, Export]:
        """The exported functions of the module `binary`, compiled and instantiated over
        this engine's memory; each takes and returns Python numbers, and is recorded while
        a capture runs."""
        return {name: self._recorded(export) for name, export in self._instantiate(binary).items()}

    def _recorded(self, export: Export) -> Export:
        def call(*args: int | float) -> int | float | None:
            if self.recording is not None:
                self.recording.append((export, args))
            return export(*args)
        return call

    def read(self, address: int, nbytes: int) -> bytes:
        """A copy of `nbytes` bytes of the memory from `address` (none while a capture runs:
        `CaptureError`)."""
        if self.recording is not None:
            raise CaptureError("the captured function read a value back (.item(), .tolist(), "
                               "an index check...): what its kernels compute would then "
                               "depend on data, and a replay cannot; read its results after")
        return self._read(address, nbytes)

    def write(self, address: int, data: bytes | bytearray | memoryview) -> None:
        """Copy `data` into the memory at `address` (recorded while a capture runs)."""
        if self.recording is not None:
            self.recording.append((address, bytes(data)))
        self._write(address, data)

    def replayer(self, steps: Sequence[Step], slots: Sequence[tuple[int, int]],
                 results: Sequence[tuple[int, int]]) -> Callable[..., None]:
        """``replay(*sources, *targets)``: the bytes at each source address copied into its
        slot (address, bytes), the recorded `steps` run again in order, and each result
        (address, bytes) copied to its target address (engines with a cheaper way than a
        call from Python per step have their own)."""
        def replay(*addresses: int) -> None:
            sources, targets = addresses[:len(slots)], addresses[len(slots):]
            with self.lock:
                for (slot, nbytes), source in zip(slots, sources):
                    self._write(slot, self._read(source, nbytes))
                for first, second in steps:
                    if isinstance(second, bytes):
                        self._write(cast(int, first), second)
                    else:
                        cast(Export, first)(*second)
                for (result, nbytes), target in zip(results, targets):
                    self._write(target, self._read(result, nbytes))
        return replay

    @abstractmethod
    def _instantiate(self, binary: bytes) -> dict[str, Export]:
        """The module's exports, unrecorded."""

    @abstractmethod
    def size(self) -> int:
        """The memory's size in bytes."""

    @abstractmethod
    def grow(self, pages: int) -> None:
        """Make the memory `pages` pages (64 KiB) larger."""

    @abstractmethod
    def _read(self, address: int, nbytes: int) -> bytes:
        """A copy of `nbytes` bytes of the memory from `address`."""

    @abstractmethod
    def _write(self, address: int, data: bytes | bytearray | memoryview) -> None:
        """Copy `data` into the memory at `address`."""


def signed(value: int) -> int:
    """An address or size as the i32 that carries it (above 2 GiB, a negative one)."""
    return value - (1 << 32) if value >= 1 << 31 else value


def simd_probe() -> bytes:
    """A module that only an engine with fixed-width SIMD validates."""
    body = "v128.const i32x4 1 2 3 4 i32x4.extract_lane 1"
    return Module([Function("probe", (), body, results=("i32",))]).binary()
