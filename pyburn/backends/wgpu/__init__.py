"""wgpu: the GPU backend, WGSL kernels on WebGPU (wgpu-py on the desktop, the browser's
WebGPU under Pyodide).

Registered by `REGISTRATION`: ``pyburn.device("wgpu")`` (or ``"wgpu:1"`` for the second
adapter, in the order `adapters` lists them: discrete GPUs first, software adapters last)
calls `unavailable_reason` and `create`. `priority` places it in the default device order: a
hardware adapter before every CPU backend, a software one (llvmpipe) after numpy.

This module imports without wgpu installed: wgpu is imported when an adapter is first
looked for. In a browser, `browser` stands in for `native`: it finds the adapter that
``browser.connect()`` got from ``navigator.gpu``.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ...errors import DeviceError
from ...runtime import IN_BROWSER
from ..base import Registration
from ..fusion import enabled as _fusion_switch

if TYPE_CHECKING:
    from .backend import WgpuBackend
    from .fusion import FusionBackend
    from .runtime import AdapterInfo, Limits

#: default-device ranks (lower is preferred; cpu is 20, wasm 15 in a browser and 25 on the
#: desktop, flex 40)
HARDWARE_PRIORITY = 10
SOFTWARE_PRIORITY = 30
BROWSER_FALLBACK_PRIORITY = 17


def _platform() -> ModuleType:
    """The module that finds adapters and makes runtimes here (`native` or `browser`)."""
    if IN_BROWSER:
        from . import browser  # import time: only this platform's half loads

        return browser
    from . import native  # import time: only this platform's half loads (native: 30 ms)

    return native


def _switched_on(variable: str) -> bool:
    """Whether environment `variable` leaves its feature on: anything but "0", "false",
    "off" or "no" (unset counts as on)."""
    return os.environ.get(variable, "1").strip().lower() not in ("0", "false", "off", "no")


def _adapters() -> tuple[Any, ...] | str:
    """The adapters, best first, or why there are none (a sentence with the fix).
    $PYBURN_WGPU=0 hides them all, as if the machine had none."""
    if not _switched_on("PYBURN_WGPU"):
        return "wgpu is switched off ($PYBURN_WGPU=0)"
    if IN_BROWSER:  # what browser.connect() found so far (two module globals)
        browser = _platform()
        return browser.adapters() or browser.unavailable_reason()
    return _native_adapters()


@functools.cache
def _native_adapters() -> tuple[Any, ...] | str:
    """wgpu-py's adapters, or why there are none; looked for once (a driver's enumeration
    takes tens of milliseconds)."""
    try:
        import wgpu  # noqa: F401  (an optional extra: this module imports without it)
    except ImportError:
        return "wgpu is not installed (pip install 'pyburn[wgpu]')"
    from . import native  # import time: asyncio and threading (30 ms), on the desktop only

    try:
        found = native.adapters()
    except Exception as exc:  # the native library or the driver failed to load
        return f"wgpu could not look for adapters ({exc})"
    if not found:
        return ("wgpu found no GPU adapter; on a machine without a GPU install Mesa's CPU "
                "driver (apt-get install mesa-vulkan-drivers)")
    return found


def unavailable_reason() -> str | None:
    """None when wgpu finds an adapter, else a sentence saying how to get one."""
    found = _adapters()
    return found if isinstance(found, str) else None


def adapters() -> list[tuple[AdapterInfo, Limits]]:
    """(info, limits) of every adapter, in device-index order (empty when unavailable)."""
    found = _adapters()
    if isinstance(found, str):
        return []
    found_by = _platform()
    return [(found_by.adapter_info(a), found_by.limits_of(a)) for a in found]


def priority() -> int:
    """Where wgpu goes in the default device order: before cpu with a hardware adapter,
    after it with only a software one. In a browser a fallback adapter (SwiftShader) comes
    after the wasm device's kernels but before cpu, numpy there being WebAssembly without
    threads."""
    found = adapters()
    hardware = bool(found) and not found[0][0].is_software
    if hardware:
        return HARDWARE_PRIORITY
    return BROWSER_FALLBACK_PRIORITY if IN_BROWSER else SOFTWARE_PRIORITY


#: the runtimes of the backends `create` made, for `stats`
_runtimes: list[Any] = []


def fusion_enabled() -> bool:
    """Whether `create` wraps the backend in the fusion decorator: yes unless
    $PYBURN_FUSION is "0" (or "false", "off", "no")."""
    return _fusion_switch()


def create(index: int, fusion: bool | None = None) -> WgpuBackend | FusionBackend:
    """The backend on adapter `index` (see `adapters`), with elementwise fusion unless
    `fusion` is False (None: see `fusion_enabled`)."""
    from .backend import WgpuBackend  # import time: the kernels (45 ms) load with a device

    count = len(adapters())
    if not 0 <= index < count:
        raise DeviceError(f"there is no wgpu adapter {index}: this machine has {count} "
                          f"(see `pyburn info`)")
    runtime = _platform().runtime(index)
    if runtime not in _runtimes:
        _runtimes.append(runtime)
    backend = WgpuBackend(runtime)
    if fusion_enabled() if fusion is None else fusion:
        from .fusion import FusionBackend  # import time: 60 ms with the kernels

        return FusionBackend(backend)
    return backend


@dataclass(frozen=True)
class Stats:
    """What the wgpu devices of this process did since the last `reset_stats`."""

    #: kernel dispatches, fused or not
    dispatches: int
    #: submits of batched dispatches to the GPU queue
    submits: int
    #: reads back to the host
    reads: int
    #: pipelines compiled (distinct kernel texts)
    pipelines_compiled: int
    #: pipelines a web page compiled while Python started (pyburn/web/kernels.py)
    pipelines_precompiled: int
    #: fused kernels launched, and the elementwise steps they computed
    fused_kernels: int
    fused_steps: int
    #: fused kernels whose code came from the signature cache, and those generated
    cache_hits: int
    cache_misses: int


_baseline: dict[str, int] = {}


def _totals() -> dict[str, int]:
    from .fusion import STATS  # import time: 60 ms with the kernels, needless before a device

    totals = {name: sum(getattr(r.stats, name) for r in _runtimes)
              for name in ("dispatches", "submits", "reads", "pipelines_compiled",
                           "pipelines_precompiled")}
    totals.update(fused_kernels=STATS.fused_kernels, fused_steps=STATS.fused_steps,
                  cache_hits=STATS.cache_hits, cache_misses=STATS.cache_misses)
    return totals


def stats() -> Stats:
    """Counters of every wgpu device since the last `reset_stats` (or the start).

    >>> stats().dispatches >= 0
    True
    """
    return Stats(**{k: v - _baseline.get(k, 0) for k, v in _totals().items()})


def reset_stats() -> None:
    """Start `stats` counting from zero."""
    _baseline.clear()
    _baseline.update(_totals())


REGISTRATION = Registration("wgpu", unavailable_reason, create, priority)

__all__ = ["REGISTRATION", "Stats", "adapters", "create", "fusion_enabled", "priority",
           "reset_stats", "stats", "unavailable_reason"]
