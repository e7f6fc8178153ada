"""`NativeRuntime`: `GpuRuntime` on wgpu-py (wgpu-native: Vulkan, Metal, D3D12 or OpenGL).

Adapters are ordered best first: discrete GPUs, then integrated, virtual, and software ones
(llvmpipe), and within one kind the modern APIs before OpenGL. The device is created with the
adapter's own limits (wgpu would otherwise give the lower WebGPU defaults) and with
``shader-f16`` and subgroups where the adapter has them.

Dispatches are recorded into one open compute pass and submitted together: before a write
or a read (the ordering contract of `GpuRuntime`), or every `BATCH` dispatches. Waiting is
done by reading back, because ``queue.on_submitted_work_done_sync()`` fails in wgpu 0.32.

Bind groups are cached by pipeline and bound ranges: creating one costs about 80 µs in
wgpu-py, more than the rest of a dispatch, and a training loop binds the same pooled buffers
step after step. Destroying a buffer empties the cache (cached groups hold their buffers).
"""

from __future__ import annotations

import asyncio
import functools
import os
import tempfile
import threading
from collections import OrderedDict
from typing import Any

from .runtime import AdapterInfo, Binding, GpuRuntime, Limits, RuntimeStats

#: dispatches recorded before a submit even when nobody waits
BATCH = 64
#: bind groups kept for reuse
BIND_GROUPS = 8192
_TYPE_ORDER = ("DiscreteGPU", "IntegratedGPU", "VirtualGPU", "Unknown", "CPU")
#: the optional features a device is created with where the adapter has them: WebGPU's name
#: (what `GpuRuntime.features` holds) and wgpu-native's
_OPTIONAL_FEATURES = {"shader-f16": "shader-f16", "subgroups": "subgroup"}
#: the directive WGSL asks of a shader that uses subgroups, which Naga (wgpu-native 29)
#: rejects; it takes their built-ins without it
_SUBGROUPS_DIRECTIVE = "enable subgroups;\n"


def _wgpu() -> Any:
    # Mesa's drivers print an error on every adapter query when XDG_RUNTIME_DIR is unset
    # (harmless: it is only used by window systems); give them a directory.
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    import wgpu  # optional: wgpu (this module imports without it)

    return wgpu


def _rank(adapter: Any) -> tuple[int, int]:
    info = adapter.info
    kind = info.get("adapter_type", "Unknown")
    kind_rank = _TYPE_ORDER.index(kind) if kind in _TYPE_ORDER else len(_TYPE_ORDER)
    return kind_rank, int(info.get("backend_type", "") == "OpenGL")


@functools.cache
def adapters() -> tuple[Any, ...]:
    """wgpu adapters on this machine, best first (may be empty)."""
    found = _wgpu().gpu.enumerate_adapters_sync()
    return tuple(sorted(found, key=_rank))


def adapter_info(adapter: Any) -> AdapterInfo:
    """The `AdapterInfo` of a wgpu adapter."""
    info = adapter.info
    return AdapterInfo(name=info.get("device") or info.get("description") or "unknown",
                       backend=info.get("backend_type", "unknown"),
                       adapter_type=info.get("adapter_type", "Unknown"),
                       description=info.get("description", ""))


def limits_of(adapter: Any) -> Limits:
    """The limits pyburn uses, read from a wgpu adapter."""
    got = adapter.limits
    return Limits(
        max_storage_buffer_binding_size=got["max-storage-buffer-binding-size"],
        max_buffer_size=got["max-buffer-size"],
        max_workgroups_per_dimension=got["max-compute-workgroups-per-dimension"],
        max_invocations_per_workgroup=got["max-compute-invocations-per-workgroup"],
        max_workgroup_storage_size=got["max-compute-workgroup-storage-size"],
        min_storage_buffer_offset_alignment=got["min-storage-buffer-offset-alignment"],
        max_storage_buffers_per_shader_stage=got["max-storage-buffers-per-shader-stage"],
    )


class NativeRuntime(GpuRuntime):
    """A wgpu-py device on one adapter."""

    def __init__(self, adapter: Any):
        wgpu = _wgpu()
        self.info = adapter_info(adapter)
        self.limits = limits_of(adapter)
        wanted = {name: native for name, native in _OPTIONAL_FEATURES.items()
                  if native in adapter.features}
        self.device = adapter.request_device_sync(required_features=list(wanted.values()),
                                                  required_limits=dict(adapter.limits))
        self.features = frozenset(wanted)
        self.stats = RuntimeStats()
        self._usage = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                       | wgpu.BufferUsage.COPY_DST)
        self._staging_usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        self._map_read = wgpu.MapMode.READ
        self._pipelines: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._groups: OrderedDict[tuple, tuple[Any, tuple]] = OrderedDict()
        self._encoder: Any = None
        self._pass: Any = None
        self._recorded = 0
        # Buffers whose free waits for the batch that may still use them.
        self._doomed: list[Any] = []
        self._lock = threading.RLock()

    # ---- buffers --------------------------------------------------------------------
    def create_buffer(self, size: int, data: bytes | None = None) -> Any:
        """A storage/copy buffer of `size` bytes (filled with `data` when given)."""
        if data is not None:
            return self.device.create_buffer_with_data(data=data, usage=self._usage)
        return self.device.create_buffer(size=size, usage=self._usage)

    def free_buffer(self, buffer: Any) -> None:
        """Destroy `buffer` once the batched work that may use it has been submitted."""
        with self._lock:
            self._groups.clear()
            if self._recorded:
                self._doomed.append(buffer)
            else:
                buffer.destroy()

    def write(self, buffer: Any, offset: int, data: bytes | memoryview) -> None:
        """Queue a copy of `data` into `buffer` (after the batched work)."""
        with self._lock:
            self._submit()
            self.stats.writes += 1
            self.device.queue.write_buffer(buffer, offset, data)

    # ---- kernels --------------------------------------------------------------------
    def _compile(self, source: str, entry: str) -> tuple[Any, Any]:
        module = self.device.create_shader_module(
            code=source.replace(_SUBGROUPS_DIRECTIVE, "", 1))
        pipeline = self.device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": entry})
        return pipeline, pipeline.get_bind_group_layout(0)

    def dispatch(self, source: str, entry: str, bindings: dict[int, Binding],
                 grid: tuple[int, int, int]) -> None:
        """Record one dispatch into the open compute pass."""
        with self._lock:
            pipeline, layout = self._pipeline(source, entry)
            group = self._bind_group(layout, bindings)
            if self._pass is None:
                self._encoder = self.device.create_command_encoder()
                self._pass = self._encoder.begin_compute_pass()
            self._pass.set_pipeline(pipeline)
            self._pass.set_bind_group(0, group)
            self._pass.dispatch_workgroups(*grid)
            self.stats.dispatches += 1
            self._recorded += 1
            if self._recorded >= BATCH:
                self._submit()

    def _bind_group(self, layout: Any, bindings: dict[int, Binding]) -> Any:
        # Keyed by object ids; the entry keeps the buffers themselves alive, so an id cannot be
        # reused by another buffer while its key is cached.
        key = (id(layout), *((k, id(b), o, s) for k, (b, o, s) in sorted(bindings.items())))
        found = self._groups.get(key)
        if found is not None:
            self._groups.move_to_end(key)
            return found[0]
        group = self.device.create_bind_group(layout=layout, entries=[
            {"binding": k, "resource": {"buffer": b, "offset": o, "size": s}}
            for k, (b, o, s) in sorted(bindings.items())])
        self._groups[key] = (group, (layout, *(b for b, _, _ in bindings.values())))
        if len(self._groups) > BIND_GROUPS:
            self._groups.popitem(last=False)
        return group

    def _submit(self) -> None:
        if self._pass is None:
            return
        self._pass.end()
        self.device.queue.submit([self._encoder.finish()])
        self.stats.submits += 1
        self._pass = self._encoder = None
        self._recorded = 0
        doomed, self._doomed = self._doomed, []
        for buffer in doomed:
            buffer.destroy()

    # ---- reads ----------------------------------------------------------------------
    def read(self, buffer: Any, offset: int, size: int) -> bytes:
        """Wait for the work issued so far, then copy `size` bytes out of `buffer`."""
        with self._lock:
            self._submit()
            self.stats.reads += 1
            return bytes(self.device.queue.read_buffer(buffer, offset, size))

    async def read_async(self, buffer: Any, offset: int, size: int) -> bytes:
        """Like `read`, awaiting the map of a staging buffer instead of blocking. Outside a
        running asyncio loop (``pyburn.runtime.run_sync`` steps an awaitable by hand before
        it needs one) there is nothing to yield to, so this reads synchronously."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self.read(buffer, offset, size)
        with self._lock:
            self._submit()
            self.stats.reads += 1
            staging = self.device.create_buffer(size=size, usage=self._staging_usage)
            encoder = self.device.create_command_encoder()
            encoder.copy_buffer_to_buffer(buffer, offset, staging, 0, size)
            self.device.queue.submit([encoder.finish()])
        try:
            await staging.map_async(self._map_read)
            data = bytes(staging.read_mapped())
            staging.unmap()
        finally:
            staging.destroy()
        return data


@functools.cache
def runtime(index: int) -> NativeRuntime:
    """The runtime of adapter `index` (in `adapters()` order), created once per process."""
    return NativeRuntime(adapters()[index])
