"""`GpuRuntime`: the one seam between pyburn's GPU kernels and a platform's WebGPU.

Everything above this interface (kernels, buffer pooling, chunking, fusion) is shared by
every platform; an implementation only moves bytes and launches compiled WGSL:
``native.NativeRuntime`` on wgpu-py (desktop), and later a browser runtime on the JavaScript
bridge in ``web/``.

Ordering contract
    Work runs in the order it was issued: a dispatch sees the results of every earlier
    dispatch and write, and a read sees every earlier dispatch. An implementation may batch
    dispatches before submitting them, but must submit what it holds before a `write`
    (a queued write would otherwise overtake batched dispatches that read the old contents)
    and before a read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

#: (buffer, byte offset, byte size): a range of a buffer bound to one kernel binding
Binding = tuple[Any, int, int]


@dataclass(frozen=True)
class Limits:
    """The adapter limits pyburn's kernels respect."""

    max_storage_buffer_binding_size: int
    max_buffer_size: int
    max_workgroups_per_dimension: int
    max_invocations_per_workgroup: int
    max_workgroup_storage_size: int
    min_storage_buffer_offset_alignment: int
    max_storage_buffers_per_shader_stage: int


@dataclass(frozen=True)
class AdapterInfo:
    """What `pyburn info` says about an adapter."""

    name: str
    #: graphics API underneath: "Vulkan", "Metal", "D3D12", "OpenGL", "WebGPU"
    backend: str
    #: "DiscreteGPU", "IntegratedGPU", "VirtualGPU", "CPU" or "Unknown"
    adapter_type: str
    description: str = ""

    @property
    def is_software(self) -> bool:
        """True for adapters that run on the CPU (llvmpipe, SwiftShader, WARP)."""
        return self.adapter_type == "CPU"


@dataclass
class RuntimeStats:
    """Counters a runtime keeps, for tests and `pyburn.backends.wgpu.stats()`."""

    dispatches: int = 0
    submits: int = 0
    pipelines_compiled: int = 0
    #: pipelines compiled before the runtime existed (a web page's, while Python started)
    pipelines_precompiled: int = 0
    pipeline_cache_hits: int = 0
    reads: int = 0
    writes: int = 0


class GpuRuntime(ABC):
    """Buffers, writes, dispatches and reads on one GPU device (see the module docstring
    for the ordering contract). Buffers are usable as storage, copy source and copy
    destination; sizes and offsets are multiples of 4 bytes."""

    info: AdapterInfo
    limits: Limits
    #: WebGPU feature names the device was created with, e.g. {"shader-f16"}
    features: frozenset[str]
    stats: RuntimeStats
    #: compiled pipelines by (source, entry); see `_pipeline`
    _pipelines: dict[tuple[str, str], tuple[Any, Any]]

    @abstractmethod
    def create_buffer(self, size: int, data: bytes | None = None) -> Any:
        """A new buffer of `size` bytes, holding `data` (len == size) when given."""

    @abstractmethod
    def free_buffer(self, buffer: Any) -> None:
        """Release `buffer`'s memory (after the work already issued that uses it)."""

    @abstractmethod
    def write(self, buffer: Any, offset: int, data: bytes | memoryview) -> None:
        """Copy `data` into `buffer` at byte `offset`."""

    @abstractmethod
    def dispatch(self, source: str, entry: str, bindings: dict[int, Binding],
                 grid: tuple[int, int, int]) -> None:
        """Run entry point `entry` of the WGSL module `source` on a `grid` of workgroups,
        with group 0's binding k set to ``bindings[k]``. Pipelines are compiled once per
        (source, entry) and cached."""

    def kernels(self) -> list[tuple[str, str]]:
        """The (source, entry) of every pipeline compiled so far, in order: what a web build
        records to compile while a page starts (pyburn/web/kernels.py)."""
        return list(self._pipelines)

    def _pipeline(self, source: str, entry: str) -> tuple[Any, Any]:
        """The compute pipeline of `entry` in `source` and its bind group layout, compiled
        on first use and cached by (source, entry) in ``self._pipelines``."""
        key = (source, entry)
        found = self._pipelines.get(key)
        if found is not None:
            self.stats.pipeline_cache_hits += 1
            return found
        found = self._pipelines[key] = self._compile(source, entry)
        self.stats.pipelines_compiled += 1
        return found

    @abstractmethod
    def _compile(self, source: str, entry: str) -> tuple[Any, Any]:
        """A new compute pipeline for `entry` of the WGSL module `source`, and its bind group
        0 layout."""

    @abstractmethod
    def read(self, buffer: Any, offset: int, size: int) -> bytes:
        """`size` bytes of `buffer` from `offset`, once the work issued so far is done;
        blocks."""

    @abstractmethod
    async def read_async(self, buffer: Any, offset: int, size: int) -> bytes:
        """Awaitable `read`."""
