"""Fusion: the decorator that turns chains of elementwise ops into generated kernels.

`FusionBackend` wraps a `WgpuBackend` and implements the same protocol. Its handles are
`Handle`s to `LazyTensor`s. Elementwise primitives (unary, binary, where, cast), the views
that compose with them (expand; reshape of a pending tensor) and the anchors (reductions,
arg-reductions, matmul, the forward convolution) only record a step; a graph is compiled
into one kernel (`codegen.materialize`) when its value is needed:

- a read (`to_bytes`), or any other primitive (scans, gather, sort, copies, capabilities...):
  those run on the wrapped backend with ready inputs; matmul and conv compute their inputs
  first;
- a permute, slice or flip of a pending tensor (views whose index maps do not compose
  with the kernel's iteration space);
- a graph grown past `MAX_STEPS` steps or the inputs a kernel can bind.

A reduction computes its pending input's steps as it reads it (producers), and a reduction,
matmul or convolution applies the elementwise steps that follow it before it stores its
result (epilogue): ``(x * y + 1).exp().sum(1)``, ``relu(a @ b + bias)`` and
``relu(conv2d(x, w) + b.reshape(1, -1, 1, 1))`` are one kernel each.
A pending tensor dropped before anything reads it is never computed. See docs/fusion.md.

On by default for wgpu devices; ``PYBURN_FUSION=0`` gives the plain backend.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Sequence

from ....dtypes import DType, int32
from ...base import Backend, ReadHook, Shape
from ..backend import WgpuBackend
from ..capabilities import Capabilities
from ..conv import output_sizes
from ..handle import GpuTensor
from ..reduce import result_dtype
from . import codegen
from .codegen import STATS, FusionStats
from .lazy import (
    ANCHORS,
    CONSTANTS,
    VIEWS,
    Handle,
    LazyTensor,
    Node,
    unit_strides,
    view_strides,
)

#: most steps one fused kernel computes; a longer chain is cut into several kernels
MAX_STEPS = 64

#: tags the reads under each anchor: they are in its input's space, not the graph's
_ANCHOR_IDS = itertools.count()


class FusionBackend(Capabilities, Backend):
    """The wgpu backend with lazy elementwise ops fused into generated kernels."""

    name = "wgpu"

    def __init__(self, inner: WgpuBackend):
        self.inner = inner
        self.dtypes = inner.dtypes
        # "fusion": results may differ from an unfused run in the last bit (a fused kernel
        # lets the shader compiler contract a * b + c into one rounding)
        self.caps = inner.caps | {"fusion"}

    def __repr__(self) -> str:
        return f"FusionBackend({self.inner!r})"

    @property
    def max_reads(self) -> int:
        """The most distinct reads a recorded graph may make (`Node.reads`: an input each,
        one for all the constants): binding 0 is the metadata, binding 1 the output, and one
        more may keep a value that something else needs (see codegen)."""
        return self.runtime.limits.max_storage_buffers_per_shader_stage - 3

    @property
    def gpu(self):
        """The wrapped backend's `Gpu` (pool and caches)."""
        return self.inner.gpu

    @property
    def runtime(self):
        """The wrapped backend's `GpuRuntime`."""
        return self.inner.runtime

    def read_hooks(self) -> list[ReadHook]:
        """The wrapped backend's: one GPU, one set of hooks."""
        return self.inner.read_hooks()

    # ---- lazy <-> ready ----------------------------------------------------------------
    def ready(self, x: Handle) -> GpuTensor:
        """The value behind handle `x`, computing it (one kernel) if it is pending."""
        return self._ready(x.tensor)

    def _ready(self, t: LazyTensor) -> GpuTensor:
        return t.value if t.value is not None else codegen.materialize(self.inner.gpu, t)

    def _wrap(self, value: GpuTensor) -> Handle:
        """The handle of a ready tensor."""
        return self._handle(LazyTensor.ready(value))

    @staticmethod
    def _handle(t: LazyTensor) -> Handle:
        """The one handle of `t` (made now unless one is alive)."""
        found = t.handle() if t.handle is not None else None
        if found is None:
            found = Handle(t)
            t.handle = weakref.ref(found)
        return found

    def _record(self, kind: str, op: str, args: tuple[LazyTensor, ...], shape: Shape,
                dtype: DType, axes: tuple[int, ...] = (), params: tuple = ()) -> Handle:
        """A pending tensor computed by one more step over `args`; arguments whose graphs
        would make the kernel too large are computed first."""
        while True:
            reads = frozenset().union(*(a.reads for a in args))
            steps = 1 + sum(a.steps for a in args)
            if steps <= MAX_STEPS and len(reads) <= self.max_reads:
                break
            self._ready(max((a for a in args if a.pending), key=lambda a: a.steps))
        if kind in VIEWS:
            reads = frozenset(_view_key(key, kind, args[0].shape, shape) for key in reads)
        elif kind in ANCHORS:  # what the anchor reads is in its own space
            # (but a reduction's producers read their constants from the kernel's one table;
            # a product's operands are bound, constants or not)
            tag = next(_ANCHOR_IDS)
            shared = CONSTANTS if kind in ("reduce", "arg_reduce") else None
            reads = frozenset(key if key == shared else (tag, key) for key in reads)
        t = LazyTensor(shape, dtype, node=Node(kind, op, args, steps, reads, axes, params))
        for a in set(args):
            if a.pending:
                a.users.append(weakref.ref(t))
        return self._handle(t)

    # ---- transfer --------------------------------------------------------------------
    def footprint(self, x: Handle) -> tuple[object, int]:
        """The buffer of a ready tensor; a pending one counts the bytes it will hold."""
        t = x.tensor
        if t.value is not None:
            return self.inner.footprint(t.value)
        return t, t.numel * t.dtype.itemsize

    def from_bytes(self, data: bytes | memoryview, shape: Shape, dtype: DType) -> Handle:
        """A ready tensor holding `data`."""
        return self._wrap(self.inner.from_bytes(data, shape, dtype))

    def to_bytes(self, x: Handle, shape: Shape, dtype: DType) -> bytes:
        """The elements as bytes (computing them first)."""
        return self.inner.to_bytes(self.ready(x), shape, dtype)

    async def to_bytes_async(self, x: Handle, shape: Shape, dtype: DType) -> bytes:
        """Awaitable `to_bytes`."""
        return await self.inner.to_bytes_async(self.ready(x), shape, dtype)

    # ---- creation --------------------------------------------------------------------
    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Handle:
        """`value` everywhere (one cached element, read through zero strides)."""
        return self._wrap(self.inner.full(shape, value, dtype))

    def arange(self, start: float | int, step: float | int, n: int, dtype: DType) -> Handle:
        """``start + i * step``."""
        return self._wrap(self.inner.arange(start, step, n, dtype))

    def random_bits(self, shape: Shape, seed: int, offset: int) -> Handle:
        """Philox-4x32-10 words as int32."""
        return self._wrap(self.inner.random_bits(shape, seed, offset))

    # ---- elementwise (recorded) --------------------------------------------------------
    def unary(self, op: str, x: Handle, out: DType) -> Handle:
        """Record ``UNARY[op]``."""
        return self._record("unary", op, (x.tensor,), x.tensor.shape, out)

    def binary(self, op: str, a: Handle, b: Handle, out: DType) -> Handle:
        """Record ``BINARY[op]``."""
        return self._record("binary", op, (a.tensor, b.tensor), a.tensor.shape, out)

    def where(self, cond: Handle, a: Handle, b: Handle) -> Handle:
        """Record ``a if cond else b``."""
        return self._record("where", "", (cond.tensor, a.tensor, b.tensor), a.tensor.shape,
                            a.tensor.dtype)

    def cast(self, x: Handle, dtype: DType) -> Handle:
        """Record a conversion to `dtype`."""
        if dtype is x.tensor.dtype:
            return x
        return self._record("cast", "", (x.tensor,), x.tensor.shape, dtype)

    # ---- reductions (anchors) and scans ------------------------------------------------
    def reduce(self, op: str, x: Handle, axes: tuple[int, ...]) -> Handle:
        """Record a reduction over `axes`: its pending input is computed as it is read."""
        t = x.tensor
        if not axes or 0 in t.shape:  # a cast, or nothing to read: no kernel to fuse into
            return self._wrap(self.inner.reduce(op, self.ready(x), axes))
        shape = tuple(1 if d in axes else n for d, n in enumerate(t.shape))
        return self._record("reduce", op, (t,), shape, result_dtype(op, t.dtype), axes)

    def arg_reduce(self, op: str, x: Handle, axis: int) -> Handle:
        """Record the int32 index of the first max or min along `axis`."""
        t = x.tensor
        if 0 in t.shape:
            return self._wrap(self.inner.arg_reduce(op, self.ready(x), axis))
        if t.node is not None and t.node.kind == "reshape" and len(t.shape) == 1:
            # over a flattened pending tensor (``argmax()``): over all its dims instead, the
            # index the same (row-major), where the flat view may not be readable in place
            whole = t.node.args[0]
            dims = tuple(range(len(whole.shape)))
            found = self._record("arg_reduce", op, (whole,), (1,) * len(dims), int32, dims)
            return self.reshape(found, (1,))
        shape = tuple(1 if d == axis else n for d, n in enumerate(t.shape))
        return self._record("arg_reduce", op, (t,), shape, result_dtype(op, t.dtype), (axis,))

    def scan(self, op: str, x: Handle, axis: int) -> Handle:
        """Inclusive cumulative sum or product along `axis`."""
        return self._wrap(self.inner.scan(op, self.ready(x), axis))

    # ---- movement ----------------------------------------------------------------------
    def reshape(self, x: Handle, shape: Shape) -> Handle:
        """Of a pending tensor, a step that reads its inputs in the new shape; of a ready
        one, a view of a contiguous tensor, else a copy."""
        t = x.tensor
        if t.pending and t.numel:
            return x if shape == t.shape else self._record("reshape", "", (t,), shape, t.dtype)
        return self._wrap(self.inner.reshape(self.ready(x), shape))

    def permute(self, x: Handle, axes: tuple[int, ...]) -> Handle:
        """A view with reordered dims."""
        return self._wrap(self.inner.permute(self.ready(x), axes))

    def expand(self, x: Handle, shape: Shape) -> Handle:
        """A broadcast view; of a pending tensor, a step that reads its inputs with zero
        strides along the broadcast dims."""
        t = x.tensor
        if not t.pending:
            return self._wrap(self.inner.expand(t.value, shape))
        return x if shape == t.shape else self._record("expand", "", (t,), shape, t.dtype)

    def slice(self, x: Handle, starts: Sequence[int], stops: Sequence[int],
              steps: Sequence[int]) -> Handle:
        """A strided view."""
        return self._wrap(self.inner.slice(self.ready(x), starts, stops, steps))

    def flip(self, x: Handle, axes: tuple[int, ...]) -> Handle:
        """A view with negative strides."""
        return self._wrap(self.inner.flip(self.ready(x), axes))

    def pad(self, x: Handle, pads: Sequence[tuple[int, int]],
            value: float | int | bool) -> Handle:
        """Constant padding."""
        return self._wrap(self.inner.pad(self.ready(x), pads, value))

    def cat(self, xs: Sequence[Handle], axis: int) -> Handle:
        """Join along `axis`."""
        return self._wrap(self.inner.cat([self.ready(x) for x in xs], axis))

    # ---- indexing ----------------------------------------------------------------------
    def gather(self, x: Handle, axis: int, index: Handle) -> Handle:
        """Values of x at `index` along `axis`."""
        return self._wrap(self.inner.gather(self.ready(x), axis, self.ready(index)))

    def scatter(self, x: Handle, axis: int, index: Handle, src: Handle,
                reduce: str) -> Handle:
        """A copy of x with src written or added at `index` along `axis`."""
        return self._wrap(self.inner.scatter(self.ready(x), axis, self.ready(index),
                                             self.ready(src), reduce))

    def index_select(self, x: Handle, axis: int, index: Handle) -> Handle:
        """Entries `index` (1-d) along `axis`."""
        return self._wrap(self.inner.index_select(self.ready(x), axis, self.ready(index)))

    def nonzero(self, x: Handle) -> tuple[Handle, Shape]:
        """int32 coordinates of the nonzero elements."""
        found, shape = self.inner.nonzero(self.ready(x))
        return self._wrap(found), shape

    def sort(self, x: Handle, axis: int, descending: bool) -> tuple[Handle, Handle]:
        """Stable sort along `axis`: (values, int32 indices)."""
        values, indices = self.inner.sort(self.ready(x), axis, descending)
        return self._wrap(values), self._wrap(indices)

    # ---- linear algebra (an anchor) ----------------------------------------------------
    def matmul(self, a: Handle, b: Handle) -> Handle:
        """Record a batched matrix product (its inputs computed now): the elementwise steps
        that follow it run in its kernel, before its result is stored."""
        av, bv = self.ready(a), self.ready(b)
        shape = (*av.shape[:-1], bv.shape[-1])
        if 0 in av.shape or 0 in bv.shape:
            return self._wrap(self.inner.matmul(av, bv))
        return self._record("matmul", "", (a.tensor, b.tensor), shape, av.dtype)

    def conv(self, x: Handle, w: Handle, stride: Sequence[int],
             padding: Sequence[tuple[int, int]], dilation: Sequence[int],
             groups: int) -> Handle:
        """Record a convolution (its inputs computed now), an anchor like `matmul`: the
        elementwise steps that follow it (a bias, a per-channel scale, an activation) run in
        its kernel, before its result is stored."""
        xv, wv = self.ready(x), self.ready(w)
        shape = (xv.shape[0], wv.shape[0]) + output_sizes(xv.shape[2:], wv.shape[2:], stride,
                                                          padding, dilation)
        if 0 in shape:
            return super().conv(x, w, stride, padding, dilation, groups)
        params = (tuple(stride), tuple(padding), tuple(dilation), groups)
        return self._record("conv", "", (x.tensor, w.tensor), shape, xv.dtype, params=params)


def _view_key(key: tuple, kind: str, below: Shape, above: Shape) -> tuple:
    """A read's key (see `lazy.read_key`) as the view reads it; a read under an anchor
    (tagged) is in another space and stays as it is, and one the view cannot read stands
    for itself."""
    if len(key) != 4:
        return key
    strides = view_strides(kind, below, above, key[3])
    if strides is None:
        return (next(_ANCHOR_IDS), key)
    return key[:3] + (unit_strides(above, strides),)


__all__ = ["MAX_STEPS", "STATS", "FusionBackend", "FusionStats", "Handle", "LazyTensor"]
