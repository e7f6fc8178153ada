"""Fusion: the decorator that turns chains of elementwise ops into one generated kernel.

`FusionBackend` wraps a `WgpuBackend` and implements the same protocol. Its handles are
`LazyTensor`s. Elementwise primitives (unary, binary, where, cast) and the expand views that
feed them only record a step; the graph is compiled into one ``map.wgsl`` kernel
(`codegen.materialize`) when its value is needed:

- a read (`to_bytes`), or any other primitive (reductions, matmul, gather, sort, copies...):
  those run on the wrapped backend with ready inputs;
- a reshape, permute, slice or flip of a pending tensor (views whose index maps do not
  compose with the kernel's iteration space; an expand does, and stays lazy);
- a graph grown past `MAX_STEPS` steps or `max_storage_buffers_per_shader_stage` inputs.

A pending tensor dropped before anything reads it is never computed. Each kernel stores
only its root; a step shared with another pending tensor is computed again by that
tensor's kernel (elementwise work is cheap next to a dispatch and a buffer).

On by default for wgpu devices; ``PYBURN_FUSION=0`` gives the plain backend. See
docs/fusion.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....dtypes import DType, bool_
from ...base import Backend, Shape
from ..backend import WgpuBackend
from ..capabilities import Capabilities
from ..handle import GpuTensor
from . import codegen
from .codegen import STATS, FusionStats
from .lazy import LazyTensor, Node

#: most steps one fused kernel computes; a longer chain is cut into several kernels
MAX_STEPS = 64


class FusionBackend(Capabilities, Backend):
    """The wgpu backend with lazy elementwise ops fused into generated kernels."""

    name = "wgpu"

    def __init__(self, inner: WgpuBackend):
        self.inner = inner
        self.dtypes = inner.dtypes
        # "fusion": results may differ from an unfused run in the last bit (a fused kernel
        # lets the shader compiler contract a * b + c into one rounding)
        self.caps = inner.caps | {"fusion"}
        # binding 0 is the metadata and binding 1 the output
        self.max_reads = inner.runtime.limits.max_storage_buffers_per_shader_stage - 2

    def __repr__(self) -> str:
        return f"FusionBackend({self.inner!r})"

    @property
    def gpu(self):
        """The wrapped backend's `Gpu` (pool and caches)."""
        return self.inner.gpu

    @property
    def runtime(self):
        """The wrapped backend's `GpuRuntime`."""
        return self.inner.runtime

    # ---- lazy <-> ready ----------------------------------------------------------------
    def ready(self, x: LazyTensor) -> GpuTensor:
        """The value of `x`, computing it (one kernel) if it is pending."""
        return x.value if x.value is not None else codegen.materialize(self.inner.gpu, x)

    def _record(self, kind: str, op: str, args: tuple[LazyTensor, ...], shape: Shape,
                dtype: DType) -> LazyTensor:
        """A pending tensor computed by one more step over `args`; arguments whose graphs
        would make the kernel too large are computed first."""
        while True:
            reads = frozenset().union(*(a.reads for a in args))
            steps = 1 + sum(a.steps for a in args)
            if steps <= MAX_STEPS and len(reads) <= self.max_reads:
                break
            self.ready(max((a for a in args if a.pending), key=lambda a: a.steps))
        if kind == "expand":  # the reads below see the broadcast dims with stride 0
            reads = frozenset(key[:3] + (tuple(0 if old == 1 and new != 1 else st for old, new, st
                                               in zip(args[0].shape, shape, key[3])),)
                              for key in reads)
        return LazyTensor(shape, dtype, node=Node(kind, op, args, steps, reads))

    def _wrap(self, value: GpuTensor) -> LazyTensor:
        return LazyTensor.ready(value)

    # ---- transfer --------------------------------------------------------------------
    def from_bytes(self, data: bytes | memoryview, shape: Shape, dtype: DType) -> LazyTensor:
        """A ready tensor holding `data`."""
        return self._wrap(self.inner.from_bytes(data, shape, dtype))

    def to_bytes(self, x: LazyTensor, shape: Shape, dtype: DType) -> bytes:
        """The elements as bytes (computing them first)."""
        return self.inner.to_bytes(self.ready(x), shape, dtype)

    async def to_bytes_async(self, x: LazyTensor, shape: Shape, dtype: DType) -> bytes:
        """Awaitable `to_bytes`."""
        return await self.inner.to_bytes_async(self.ready(x), shape, dtype)

    # ---- creation --------------------------------------------------------------------
    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> LazyTensor:
        """`value` everywhere (one cached element, read through zero strides)."""
        return self._wrap(self.inner.full(shape, value, dtype))

    def arange(self, start: float | int, step: float | int, n: int, dtype: DType) -> LazyTensor:
        """``start + i * step``."""
        return self._wrap(self.inner.arange(start, step, n, dtype))

    def random_bits(self, shape: Shape, seed: int, offset: int) -> LazyTensor:
        """Philox-4x32-10 words as int32."""
        return self._wrap(self.inner.random_bits(shape, seed, offset))

    # ---- elementwise (recorded) --------------------------------------------------------
    def unary(self, op: str, x: LazyTensor, out: DType) -> LazyTensor:
        """Record ``UNARY[op]``."""
        if op == "bitwise_not" and x.dtype is bool_:
            op = "logical_not"  # ~ on bool is logical not, as in the plain backend
        return self._record("unary", op, (x,), x.shape, out)

    def binary(self, op: str, a: LazyTensor, b: LazyTensor, out: DType) -> LazyTensor:
        """Record ``BINARY[op]``."""
        return self._record("binary", op, (a, b), a.shape, out)

    def where(self, cond: LazyTensor, a: LazyTensor, b: LazyTensor) -> LazyTensor:
        """Record ``a if cond else b``."""
        return self._record("where", "", (cond, a, b), a.shape, a.dtype)

    def cast(self, x: LazyTensor, dtype: DType) -> LazyTensor:
        """Record a conversion to `dtype`."""
        if dtype is x.dtype:
            return x
        return self._record("cast", "", (x,), x.shape, dtype)

    # ---- reductions and scans ----------------------------------------------------------
    def reduce(self, op: str, x: LazyTensor, axes: tuple[int, ...]) -> LazyTensor:
        """Reduce over `axes` (x computed first)."""
        return self._wrap(self.inner.reduce(op, self.ready(x), axes))

    def arg_reduce(self, op: str, x: LazyTensor, axis: int) -> LazyTensor:
        """int32 index of the first max or min along `axis`."""
        return self._wrap(self.inner.arg_reduce(op, self.ready(x), axis))

    def scan(self, op: str, x: LazyTensor, axis: int) -> LazyTensor:
        """Inclusive cumulative sum or product along `axis`."""
        return self._wrap(self.inner.scan(op, self.ready(x), axis))

    # ---- movement ----------------------------------------------------------------------
    def reshape(self, x: LazyTensor, shape: Shape) -> LazyTensor:
        """A view of a contiguous tensor, else a copy (x computed first)."""
        return self._wrap(self.inner.reshape(self.ready(x), shape))

    def permute(self, x: LazyTensor, axes: tuple[int, ...]) -> LazyTensor:
        """A view with reordered dims."""
        return self._wrap(self.inner.permute(self.ready(x), axes))

    def expand(self, x: LazyTensor, shape: Shape) -> LazyTensor:
        """A broadcast view; of a pending tensor, a step that reads its inputs with zero
        strides along the broadcast dims."""
        if not x.pending:
            return self._wrap(self.inner.expand(x.value, shape))
        if shape == x.shape:
            return x
        return self._record("expand", "", (x,), shape, x.dtype)

    def slice(self, x: LazyTensor, starts: Sequence[int], stops: Sequence[int],
              steps: Sequence[int]) -> LazyTensor:
        """A strided view."""
        return self._wrap(self.inner.slice(self.ready(x), starts, stops, steps))

    def flip(self, x: LazyTensor, axes: tuple[int, ...]) -> LazyTensor:
        """A view with negative strides."""
        return self._wrap(self.inner.flip(self.ready(x), axes))

    def pad(self, x: LazyTensor, pads: Sequence[tuple[int, int]],
            value: float | int | bool) -> LazyTensor:
        """Constant padding."""
        return self._wrap(self.inner.pad(self.ready(x), pads, value))

    def cat(self, xs: Sequence[LazyTensor], axis: int) -> LazyTensor:
        """Join along `axis`."""
        return self._wrap(self.inner.cat([self.ready(x) for x in xs], axis))

    # ---- indexing ----------------------------------------------------------------------
    def gather(self, x: LazyTensor, axis: int, index: LazyTensor) -> LazyTensor:
        """Values of x at `index` along `axis`."""
        return self._wrap(self.inner.gather(self.ready(x), axis, self.ready(index)))

    def scatter(self, x: LazyTensor, axis: int, index: LazyTensor, src: LazyTensor,
                reduce: str) -> LazyTensor:
        """A copy of x with src written or added at `index` along `axis`."""
        return self._wrap(self.inner.scatter(self.ready(x), axis, self.ready(index),
                                             self.ready(src), reduce))

    def index_select(self, x: LazyTensor, axis: int, index: LazyTensor) -> LazyTensor:
        """Entries `index` (1-d) along `axis`."""
        return self._wrap(self.inner.index_select(self.ready(x), axis, self.ready(index)))

    def nonzero(self, x: LazyTensor) -> tuple[LazyTensor, Shape]:
        """int32 coordinates of the nonzero elements."""
        found, shape = self.inner.nonzero(self.ready(x))
        return self._wrap(found), shape

    def sort(self, x: LazyTensor, axis: int, descending: bool) -> tuple[LazyTensor, LazyTensor]:
        """Stable sort along `axis`: (values, int32 indices)."""
        values, indices = self.inner.sort(self.ready(x), axis, descending)
        return self._wrap(values), self._wrap(indices)

    # ---- linear algebra ----------------------------------------------------------------
    def matmul(self, a: LazyTensor, b: LazyTensor) -> LazyTensor:
        """Batched matrix product."""
        return self._wrap(self.inner.matmul(self.ready(a), self.ready(b)))


__all__ = ["MAX_STEPS", "STATS", "FusionBackend", "FusionStats", "LazyTensor"]
