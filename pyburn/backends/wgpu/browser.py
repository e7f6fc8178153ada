"""`BrowserRuntime`: `GpuRuntime` on the browser's WebGPU (``navigator.gpu``), from Pyodide.

Python drives WebGPU through Pyodide's foreign function interface: buffers and pipelines are
JavaScript objects held by proxies, and the calls made many times per training step
(a dispatch, a submit, a write, a read) each cross into JavaScript once, into the few
functions of `bridge.js` (shipped next to this file and evaluated on first use, so any
Pyodide page gets WebGPU from the wheel alone). The kernels, the buffer pool and everything
above them are the ones the desktop runs on wgpu-py; only these two files know they are in a
browser.

Getting an adapter and a device are promises, so they happen once, in `connect` (awaited by
the web loader before any user code runs, see ``pyburn/web/runtime/session.js``); after it,
``pyburn.device("wgpu")`` is this runtime. Uploads hand WebGPU a view of Python's own memory
(``PyProxy.getBuffer``: no copy before WebGPU's own). Reads copy into a
mappable staging buffer and await ``mapAsync``: `read_async` works everywhere, and `read`
blocks through JSPI (``pyodide.ffi.run_sync``) where the engine has it and JavaScript entered
Python through a promising call, else it raises `ReadbackError` naming the ``_async`` form.

Dispatches are recorded into one open compute pass and submitted together, before a write or
a read (the ordering contract of `GpuRuntime`) or every `BATCH` dispatches. A lost device or
a WebGPU validation error (a bug) is reported by the next read, as a `DeviceError`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources
from typing import Any

from ...errors import DeviceError
from ...runtime import run_sync
from .runtime import AdapterInfo, Binding, GpuRuntime, Limits, RuntimeStats

#: dispatches recorded before a submit even when nobody waits
BATCH = 64
#: the device pyburn asks for: the optional features the adapter has, and these limits at
#: the adapter's values (WebGPU would give the lower defaults); web builds write it into
#: pyburn-web.json for the loader's ``gpu.js``, which asks before Python starts
REQUEST: dict[str, list[str]] = {
    "features": ["shader-f16", "subgroups"],
    "limits": ["maxStorageBufferBindingSize", "maxBufferSize",
               "maxComputeWorkgroupsPerDimension", "maxComputeInvocationsPerWorkgroup",
               "maxComputeWorkgroupSizeX", "maxComputeWorkgroupSizeY",
               "maxComputeWorkgroupSizeZ", "maxComputeWorkgroupStorageSize",
               "maxStorageBuffersPerShaderStage"],
}

# What `connect` found: the runtime, or why there is none.
_runtime: BrowserRuntime | None = None
_reason = ("WebGPU is not connected yet: `await pyburn.backends.wgpu.browser.connect()` "
           "first (the web loader in web/ does it at start-up)")


@functools.cache
def _bridge() -> Any:
    """The JavaScript helpers of `bridge.js` (shipped next to this file), evaluated once."""
    # optional: pyodide, in the browser only (this module imports on the desktop too)
    from pyodide.code import run_js  # type: ignore[import-not-found]

    return run_js(resources.files(__package__).joinpath("bridge.js").read_text())


def _object(value: Any) -> Any:
    """`value` (dicts and lists, nested) as JavaScript objects and arrays, as WebGPU wants
    descriptors (Pyodide's default would turn dicts into Maps)."""
    # optional: pyodide, in the browser only
    import js  # type: ignore[import-not-found]
    from pyodide.ffi import to_js  # type: ignore[import-not-found]

    return to_js(value, dict_converter=js.Object.fromEntries)


def adapter_info(adapter: Any) -> AdapterInfo:
    """The `AdapterInfo` of a WebGPU adapter. Browsers do not say whether a GPU is discrete
    or integrated; a fallback adapter (SwiftShader, WARP) is a software one."""
    info = adapter.info
    software = bool(getattr(adapter, "isFallbackAdapter", False)
                    or getattr(info, "isFallbackAdapter", False)
                    or info.architecture == "swiftshader")
    name = " ".join(part for part in (info.vendor, info.architecture, info.device) if part)
    return AdapterInfo(name=name or "unknown", backend="WebGPU",
                       adapter_type="CPU" if software else "Unknown",
                       description=info.description or "")


def limits_of(adapter: Any) -> Limits:
    """The limits pyburn uses, read from a WebGPU adapter (or device)."""
    got = adapter.limits
    return Limits(
        max_storage_buffer_binding_size=int(got.maxStorageBufferBindingSize),
        max_buffer_size=int(got.maxBufferSize),
        max_workgroups_per_dimension=int(got.maxComputeWorkgroupsPerDimension),
        max_invocations_per_workgroup=int(got.maxComputeInvocationsPerWorkgroup),
        max_workgroup_storage_size=int(got.maxComputeWorkgroupStorageSize),
        min_storage_buffer_offset_alignment=int(got.minStorageBufferOffsetAlignment),
        max_storage_buffers_per_shader_stage=int(got.maxStorageBuffersPerShaderStage),
    )


async def connect(on_lost: Callable[[str], Any] | None = None,
                  early: Any = None) -> dict[str, Any]:
    """Ask the browser for a WebGPU adapter and device, once. Returns what the page shows:
    ``{"available": True, "adapter": {...}}`` or ``{"available": False, "reason": "..."}``.
    `on_lost(message)` is called if the device is lost later (a driver reset, a tab in the
    background for long on some systems); tensors on it are gone, other devices still work.
    `early` is what the web loader's ``gpu.js`` got before Python started (an adapter, a
    device requested as `REQUEST` says, and the pipelines it compiled), or None: then
    WebGPU is asked here."""
    global _runtime, _reason
    if _runtime is None:
        found = await _request(on_lost) if early is None else _adopt(early, on_lost)
        if isinstance(found, str):
            _reason = found
        else:
            _runtime = found
    if _runtime is None:
        return {"available": False, "reason": _reason}
    info = _runtime.info
    return {"available": True, "adapter": {
        "name": info.name, "description": info.description, "software": info.is_software,
        "features": sorted(_runtime.features),
        "max_storage_buffer_binding_size": _runtime.limits.max_storage_buffer_binding_size}}


def _adopt(early: Any, on_lost: Callable[[str], Any] | None) -> BrowserRuntime:
    """A runtime on the device ``gpu.js`` started, its precompiled pipelines in its cache."""
    runtime = BrowserRuntime(early.adapter, early.device, frozenset(early.features), on_lost)
    for source, entry, pipeline in early.pipelines:
        runtime.adopt_pipeline(source, entry, pipeline)
    return runtime


async def _request(on_lost: Callable[[str], Any] | None) -> BrowserRuntime | str:
    """A runtime on the browser's adapter, or why there can be none."""
    # optional: pyodide, in the browser only
    import js  # type: ignore[import-not-found]
    from pyodide.ffi import JsException  # type: ignore[import-not-found]

    gpu = getattr(js.navigator, "gpu", None)
    if not gpu:
        return ("this browser has no WebGPU (navigator.gpu is missing: an older browser, a "
                "page not served over https or from localhost, or WebGPU switched off)")
    try:
        adapter = await gpu.requestAdapter()
        if not adapter:  # JavaScript's null
            return ("the browser offers WebGPU but no adapter (navigator.gpu.requestAdapter() "
                    "gave null: the GPU is blocklisted or WebGPU is disabled)")
        wanted = [f for f in REQUEST["features"] if adapter.features.has(f)]
        limits = {name: getattr(adapter.limits, name) for name in REQUEST["limits"]}
        device = await adapter.requestDevice(
            _object({"requiredFeatures": wanted, "requiredLimits": limits}))
    except JsException as exc:
        return f"the browser refused a WebGPU device ({exc})"
    return BrowserRuntime(adapter, device, frozenset(wanted), on_lost)


def unavailable_reason() -> str | None:
    """None once `connect` got a device, else why WebGPU cannot be used."""
    return None if _runtime is not None else _reason


def adapters() -> tuple[Any, ...]:
    """The connected adapter (a browser offers one), or nothing."""
    return () if _runtime is None else (_runtime.adapter,)


def runtime(index: int) -> BrowserRuntime:
    """The runtime `connect` created (index 0: the only adapter)."""
    if _runtime is None or index != 0:
        raise DeviceError(_reason if _runtime is None else
                          f"there is no WebGPU adapter {index}: a browser offers one")
    return _runtime


class BrowserRuntime(GpuRuntime):
    """A WebGPU device of the browser, driven from Python through `bridge.js`."""

    def __init__(self, adapter: Any, device: Any, features: frozenset[str],
                 on_lost: Callable[[str], Any] | None = None):
        # optional: pyodide, in the browser only
        from pyodide.ffi import create_once_callable, create_proxy  # type: ignore[import]

        self.adapter = adapter
        self.device = device
        self.info = adapter_info(adapter)
        self.limits = limits_of(device)
        self.features = features
        self.stats = RuntimeStats()
        self._bridge = _bridge()
        self._pipelines: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._encoder: Any = None
        self._pass: Any = None
        self._recorded = 0
        # ids of the buffers the open batch binds: a write to another one need not wait
        self._bound: set[int] = set()
        # Buffers whose destruction waits for the batch that may still use them.
        self._doomed: list[Any] = []
        #: why the device cannot be used any more (lost, or a validation error), or None
        self.broken: str | None = None

        def lost(info: Any) -> None:
            self._break(f"the WebGPU device was lost ({info.reason}: {info.message})")
            if on_lost is not None:
                on_lost(self.broken)

        def failed(event: Any) -> None:
            self._break(f"WebGPU reported an error: {event.error.message}")

        device.lost.then(create_once_callable(lost))
        # Kept by the runtime: the device calls it for as long as it lives.
        self._failed = create_proxy(failed)
        device.addEventListener("uncapturederror", self._failed)

    def _break(self, message: str) -> None:
        if self.broken is None:
            self.broken = message

    def _check(self) -> None:
        if self.broken is not None:
            raise DeviceError(f"{self.broken}; tensors on device('wgpu') are gone, other "
                              "devices (flex) still work")

    # ---- buffers --------------------------------------------------------------------
    def create_buffer(self, size: int, data: bytes | None = None) -> Any:
        """A storage/copy buffer of `size` bytes (filled with `data` when given)."""
        buffer = self._bridge.buffer(self.device, size)
        if data is not None:
            self._bridge.write(self.device, buffer, 0, memoryview(data).cast("B"))
        return buffer

    def free_buffer(self, buffer: Any) -> None:
        """Destroy `buffer` once the batched work that may use it has been submitted."""
        if self._recorded:
            self._doomed.append(buffer)
        else:
            buffer.destroy()

    def write(self, buffer: Any, offset: int, data: bytes | memoryview) -> None:
        """Queue a copy of `data` into `buffer`, after the batched work that binds it;
        WebGPU reads it straight from Python's memory. (WebGPU runs a queued write before
        the next submitted work: a buffer the batch does not bind can take it at once, and a
        training step writes a few new constants per step.)"""
        if id(buffer) in self._bound:
            self._submit()
        self.stats.writes += 1
        self._bridge.write(self.device, buffer, offset, memoryview(data).cast("B"))

    # ---- kernels --------------------------------------------------------------------
    def adopt_pipeline(self, source: str, entry: str, pipeline: Any) -> None:
        """Cache `pipeline`, compiled elsewhere (by ``gpu.js``) from `entry` of `source`."""
        self._pipelines[(source, entry)] = (pipeline, pipeline.getBindGroupLayout(0))
        self.stats.pipelines_precompiled += 1

    def _compile(self, source: str, entry: str) -> tuple[Any, Any]:
        pipeline, layout = self._bridge.pipeline(self.device, source, entry)
        return pipeline, layout

    def dispatch(self, source: str, entry: str, bindings: dict[int, Binding],
                 grid: tuple[int, int, int]) -> None:
        """Record one dispatch into the open compute pass."""
        pipeline, layout = self._pipeline(source, entry)
        if self._pass is None:
            self._encoder = self.device.createCommandEncoder()
            self._pass = self._encoder.beginComputePass()
        flat = [v for k, (b, o, n) in sorted(bindings.items()) for v in (k, b, o, n)]
        self._bound.update(id(b) for b, _, _ in bindings.values())
        self._bridge.dispatch(self.device, self._pass, pipeline, layout, *grid, *flat)
        self.stats.dispatches += 1
        self._recorded += 1
        if self._recorded >= BATCH:
            self._submit()

    def _submit(self) -> None:
        if self._pass is None:
            return
        self._bridge.submit(self.device, self._encoder, self._pass)
        self.stats.submits += 1
        self._pass = self._encoder = None
        self._recorded = 0
        self._bound.clear()
        doomed, self._doomed = self._doomed, []
        for buffer in doomed:
            buffer.destroy()

    def flush(self) -> None:
        """Submit the batched dispatches."""
        self._submit()

    # ---- reads ----------------------------------------------------------------------
    def read(self, buffer: Any, offset: int, size: int) -> bytes:
        """`read_async`, waited for through JSPI where the page's call allows it."""
        return run_sync(self.read_async(buffer, offset, size))

    async def read_async(self, buffer: Any, offset: int, size: int) -> bytes:
        """Wait for the work issued so far, then copy `size` bytes out of `buffer` (through
        a mappable staging buffer)."""
        self._check()
        self._submit()
        self.stats.reads += 1
        try:
            data = await self._bridge.read(self.device, buffer, offset, size)
        except Exception as exc:  # a JsException: the device went away meanwhile
            self._break(f"reading a WebGPU buffer failed ({exc})")
        self._check()
        return data.to_bytes()
