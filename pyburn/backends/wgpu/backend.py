"""The wgpu backend: every primitive of ``pyburn.backends.base`` as WGSL kernels.

Handles are `GpuTensor` views over pooled buffers (see `handle`); the modules of this package
hold the primitives by group, and `launch` keeps every kernel within the adapter's limits.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...dtypes import DType, bool_, float16, float32, int32, uint8
from ..base import Backend, ReadHook, Shape
from . import creation, elementwise, indexing, movement, reduce, sort, transfer
from . import matmul as linalg
from .capabilities import KERNEL_CAPS, Capabilities
from .handle import GpuTensor
from .launch import Gpu
from .runtime import GpuRuntime


class WgpuBackend(Capabilities, Backend):
    """The GPU backend: float32, int32, uint8 and bool everywhere, float16 where the adapter
    has ``shader-f16``; no float64 or int64 (WGSL has no 64-bit types)."""

    name = "wgpu"

    def __init__(self, runtime: GpuRuntime):
        self.runtime = runtime
        self.gpu = Gpu(runtime)
        has_f16 = "shader-f16" in runtime.features
        self.dtypes = frozenset({float32, int32, uint8, bool_} | ({float16} if has_f16 else set()))
        self.caps = frozenset({"float16"} if has_f16 else set()) | KERNEL_CAPS

    def __repr__(self) -> str:
        return f"WgpuBackend({self.runtime.info.name!r} via {self.runtime.info.backend})"

    # ---- transfer --------------------------------------------------------------------
    def footprint(self, x: GpuTensor) -> tuple[object, int]:
        """The buffer the view reads, and its size."""
        return x.storage, x.storage.nbytes

    def memory_in_use(self) -> int | None:
        """Bytes of the GPU buffers handed out (the pool's idle ones not counted)."""
        return self.gpu.pool.stats().in_use_bytes

    def from_bytes(self, data: bytes | memoryview, shape: Shape, dtype: DType) -> GpuTensor:
        """A tensor from C-ordered little-endian bytes."""
        return transfer.from_bytes(self.gpu, data, shape, dtype)

    def to_bytes(self, x: GpuTensor, shape: Shape, dtype: DType) -> bytes:
        """The elements as bytes, once the GPU has computed them (blocks)."""
        return transfer.to_bytes(self.gpu, x)

    async def to_bytes_async(self, x: GpuTensor, shape: Shape, dtype: DType) -> bytes:
        """Awaitable `to_bytes`."""
        return await transfer.to_bytes_async(self.gpu, x)

    def read_hooks(self) -> list[ReadHook]:
        """The hooks settled before every read from this GPU: reads wait for queued work."""
        return self.gpu.read_hooks

    # ---- creation --------------------------------------------------------------------
    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> GpuTensor:
        """`value` everywhere (one stored element, expanded)."""
        return creation.full(self.gpu, shape, value, dtype)

    def arange(self, start: float | int, step: float | int, n: int, dtype: DType) -> GpuTensor:
        """``start + i * step`` for ``i in range(n)``."""
        return creation.arange(self.gpu, start, step, n, dtype)

    def random_bits(self, shape: Shape, seed: int, offset: int) -> GpuTensor:
        """Philox-4x32-10 words as int32."""
        return creation.random_bits(self.gpu, shape, seed, offset)

    # ---- elementwise -----------------------------------------------------------------
    def unary(self, op: str, x: GpuTensor, out: DType) -> GpuTensor:
        """Apply ``UNARY[op]``."""
        return elementwise.unary(self.gpu, op, x, out)

    def binary(self, op: str, a: GpuTensor, b: GpuTensor, out: DType) -> GpuTensor:
        """Apply ``BINARY[op]``."""
        return elementwise.binary(self.gpu, op, a, b, out)

    def where(self, cond: GpuTensor, a: GpuTensor, b: GpuTensor) -> GpuTensor:
        """``a`` where `cond`, else ``b``."""
        return elementwise.where(self.gpu, cond, a, b)

    def cast(self, x: GpuTensor, dtype: DType) -> GpuTensor:
        """Convert to `dtype`."""
        return elementwise.cast(self.gpu, x, dtype)

    # ---- reductions and scans ----------------------------------------------------------
    def reduce(self, op: str, x: GpuTensor, axes: tuple[int, ...]) -> GpuTensor:
        """Reduce over `axes`, keeping them as size-1 dims."""
        return reduce.reduce(self.gpu, op, x, axes)

    def arg_reduce(self, op: str, x: GpuTensor, axis: int) -> GpuTensor:
        """int32 index of the first max or min along `axis` (NaN wins)."""
        return reduce.arg_reduce(self.gpu, op, x, axis)

    def scan(self, op: str, x: GpuTensor, axis: int) -> GpuTensor:
        """Inclusive cumulative sum or product along `axis`."""
        return reduce.scan(self.gpu, op, x, axis)

    # ---- movement ----------------------------------------------------------------------
    def reshape(self, x: GpuTensor, shape: Shape) -> GpuTensor:
        """A view of a contiguous tensor, else a copy."""
        return movement.reshape(self.gpu, x, shape)

    def permute(self, x: GpuTensor, axes: tuple[int, ...]) -> GpuTensor:
        """A view with reordered dims."""
        return movement.permute(x, axes)

    def expand(self, x: GpuTensor, shape: Shape) -> GpuTensor:
        """A broadcast view (stride 0)."""
        return movement.expand(x, shape)

    def slice(self, x: GpuTensor, starts: Sequence[int], stops: Sequence[int],
              steps: Sequence[int]) -> GpuTensor:
        """A strided view."""
        return movement.slice_(x, starts, stops, steps)

    def flip(self, x: GpuTensor, axes: tuple[int, ...]) -> GpuTensor:
        """A view with negative strides."""
        return movement.flip(x, axes)

    def pad(self, x: GpuTensor, pads: Sequence[tuple[int, int]],
            value: float | int | bool) -> GpuTensor:
        """Constant padding."""
        return movement.pad(self.gpu, x, pads, value)

    def cat(self, xs: Sequence[GpuTensor], axis: int) -> GpuTensor:
        """Join along `axis`."""
        return movement.cat(self.gpu, xs, axis)

    # ---- indexing ----------------------------------------------------------------------
    def gather(self, x: GpuTensor, axis: int, index: GpuTensor) -> GpuTensor:
        """Values of x at `index` along `axis`."""
        return indexing.gather(self.gpu, x, axis, index)

    def scatter(self, x: GpuTensor, axis: int, index: GpuTensor, src: GpuTensor,
                reduce: str) -> GpuTensor:
        """A copy of x with src written ("assign", the last write wins) or added ("add")
        at `index` along `axis`."""
        return indexing.scatter(self.gpu, x, axis, index, src, reduce)

    def index_select(self, x: GpuTensor, axis: int, index: GpuTensor) -> GpuTensor:
        """Entries `index` (1-d) along `axis`."""
        return indexing.index_select(self.gpu, x, axis, index)

    def nonzero(self, x: GpuTensor) -> tuple[GpuTensor, Shape]:
        """int32 coordinates of the nonzero elements (reads back their count)."""
        return indexing.nonzero(self.gpu, x)

    def sort(self, x: GpuTensor, axis: int, descending: bool) -> tuple[GpuTensor, GpuTensor]:
        """Stable sort along `axis`: (values, int32 indices); NaN sorts as the largest."""
        return sort.sort(self.gpu, x, axis, descending)

    # ---- linear algebra ----------------------------------------------------------------
    def matmul(self, a: GpuTensor, b: GpuTensor) -> GpuTensor:
        """Batched matrix product (the kernel `matmul.pick_variant` picks for the adapter)."""
        return linalg.matmul(self.gpu, a, b)
