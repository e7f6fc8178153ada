"""Fusion: the decorator that turns chains of elementwise ops into generated kernels.

`FusionBackend` wraps a `WgpuBackend` and implements the same protocol: the recording is
`pyburn.backends.fusion`'s (`LazyBackend`, shared with the wasm device), the kernels are
WGSL (`codegen`). Its handles are `Handle`s to `LazyTensor`s. Elementwise primitives (unary,
binary, where, cast), the views that compose with them (expand; reshape of a pending tensor)
and the anchors (reductions, arg-reductions, matmul, the forward convolution) only record a
step; a graph is compiled into one kernel (`codegen.materialize`) when its value is needed:

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

from collections.abc import Sequence
from typing import Any

from ....dtypes import int32
from ...fusion.lazy import Handle, LazyTensor
from ...fusion.recorder import LazyBackend
from ..backend import WgpuBackend
from ..capabilities import Capabilities
from ..conv import output_sizes
from ..handle import GpuTensor
from ..launch import scalar_of
from ..reduce import result_dtype
from . import codegen
from .codegen import STATS, FusionStats

#: most steps one fused kernel computes; a longer chain is cut into several kernels
MAX_STEPS = LazyBackend.max_steps


class FusionBackend(Capabilities, LazyBackend):
    """The wgpu backend with lazy elementwise ops fused into generated kernels."""

    inner: WgpuBackend

    def __init__(self, inner: WgpuBackend):
        super().__init__(inner)

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

    def materialize(self, t: LazyTensor) -> GpuTensor:
        """Compute pending `t` with one kernel (`codegen.materialize`)."""
        return codegen.materialize(self.inner.gpu, t)

    def is_constant(self, value: GpuTensor) -> bool:
        """A view of a `ScalarCache` storage (a `full`, a Python number in an expression)."""
        return scalar_of(value) is not None

    def ready(self, x: Handle) -> GpuTensor:
        """The value behind handle `x`, computing it (one kernel) if it is pending."""
        return LazyBackend.ready(self, x)

    # ---- reductions (anchors) and scans ------------------------------------------------
    def reduce(self, op: str, x: Any, axes: tuple[int, ...]) -> Any:
        """Record a reduction over `axes`: its pending input is computed as it is read."""
        t = self._lazy(x)
        if not axes or 0 in t.shape:  # a cast, or nothing to read: no kernel to fuse into
            return self.inner.reduce(op, self.ready(x), axes)
        shape = tuple(1 if d in axes else n for d, n in enumerate(t.shape))
        return self._record("reduce", op, (t,), shape, result_dtype(op, t.dtype), axes)

    def arg_reduce(self, op: str, x: Any, axis: int) -> Any:
        """Record the int32 index of the first max or min along `axis`."""
        t = self._lazy(x)
        if 0 in t.shape:
            return self.inner.arg_reduce(op, self.ready(x), axis)
        if t.node is not None and t.node.kind == "reshape" and len(t.shape) == 1:
            # over a flattened pending tensor (``argmax()``): over all its dims instead, the
            # index the same (row-major), where the flat view may not be readable in place
            whole = t.node.args[0]
            dims = tuple(range(len(whole.shape)))
            found = self._record("arg_reduce", op, (whole,), (1,) * len(dims), int32, dims)
            return self.reshape(found, (1,))
        shape = tuple(1 if d == axis else n for d, n in enumerate(t.shape))
        return self._record("arg_reduce", op, (t,), shape, result_dtype(op, t.dtype), (axis,))

    # ---- linear algebra (an anchor) ----------------------------------------------------
    def matmul(self, a: Any, b: Any) -> Any:
        """Record a batched matrix product (its inputs computed now): the elementwise steps
        that follow it run in its kernel, before its result is stored."""
        av, bv = self.ready(a), self.ready(b)
        shape = (*av.shape[:-1], bv.shape[-1])
        if 0 in av.shape or 0 in bv.shape:
            return self.inner.matmul(av, bv)
        return self._record("matmul", "", (self._lazy(av), self._lazy(bv)), shape, av.dtype)

    def conv(self, x: Any, w: Any, stride: Sequence[int],
             padding: Sequence[tuple[int, int]], dilation: Sequence[int],
             groups: int) -> Any:
        """Record a convolution (its inputs computed now), an anchor like `matmul`: the
        elementwise steps that follow it (a bias, a per-channel scale, an activation) run in
        its kernel, before its result is stored."""
        xv, wv = self.ready(x), self.ready(w)
        shape = (xv.shape[0], wv.shape[0]) + output_sizes(xv.shape[2:], wv.shape[2:], stride,
                                                          padding, dilation)
        if 0 in shape:
            return super().conv(x, w, stride, padding, dilation, groups)
        params = (tuple(stride), tuple(padding), tuple(dilation), groups)
        return self._record("conv", "", (self._lazy(xv), self._lazy(wv)), shape, xv.dtype,
                            params=params)


__all__ = ["MAX_STEPS", "STATS", "FusionBackend", "FusionStats", "Handle", "LazyTensor"]
