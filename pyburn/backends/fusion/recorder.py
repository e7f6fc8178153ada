"""`LazyBackend`: the decorator that records elementwise ops instead of running them.

It wraps a backend and implements the same protocol. A computed tensor is its own handle
(the wrapped backend's tensor, so that an op that runs at once costs nothing more than on
the wrapped backend); a pending one is a `Handle` to a `LazyTensor`. Elementwise
primitives (unary, binary, where, cast) and the views that compose with them (expand;
reshape of a pending tensor) only record a step, except those that `eager_below` runs at
once; every other primitive runs on the wrapped backend with computed inputs, and so does
any method of the wrapped backend that the protocol does not name (its capabilities: conv,
pooling, ...).
A pending tensor is computed (`materialize`, the subclass's code generator) when its value
is needed: a read, another primitive, a permute, slice or flip of it (views whose index maps
do not compose with a kernel's iteration space), or a graph grown past `max_steps` steps or
`max_reads` inputs. A pending tensor dropped before anything reads it is never computed.

Subclasses: wgpu's ``FusionBackend`` (which also records anchors: reductions, matmul and
the forward convolution, into whose kernels the steps around them fuse) and wasm's
``WasmFusion``.
"""

from __future__ import annotations

import itertools
import math
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from ...dtypes import DType
from ..base import Backend, ReadHook, Shape
from .lazy import ANCHORS, CONSTANTS, VIEWS, Handle, LazyTensor, Node, unit_strides, view_strides

#: tags the reads under each anchor: they are in its input's space, not the graph's
_ANCHOR_IDS = itertools.count()


class LazyBackend(Backend, ABC):
    """A backend whose elementwise ops are recorded and computed together, on demand."""

    #: most steps one generated kernel computes; a longer chain is cut into several kernels
    max_steps = 64
    #: elementwise results with fewer elements run at once on the wrapped backend: where a
    #: kernel call costs about what recording and planning a step does (wasm), fusing small
    #: tensors saves no time, and fusion pays only where a pass over memory is the cost
    eager_below = 0

    def __init__(self, inner: Backend):
        self.inner = inner
        self.name = inner.name
        self.dtypes = inner.dtypes
        # "fusion": results may differ from an unfused run in the last bit (a fused kernel
        # may contract a * b + c into one rounding)
        self.caps = inner.caps | {"fusion"}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """A method of the wrapped backend that the protocol does not name (a capability),
        run on computed inputs (kept as an attribute: found at once the next time)."""
        inner = self.__dict__.get("inner")
        method = None if inner is None or name.startswith("_") else getattr(inner, name, None)
        if not callable(method):
            raise AttributeError(name)
        ready_all = self._ready_all

        def forwarded(*args: Any) -> Any:
            return method(*[ready_all(a) for a in args])
        forwarded.__doc__ = method.__doc__
        setattr(self, name, forwarded)
        return forwarded

    # ---- what a subclass provides ---------------------------------------------------------
    @abstractmethod
    def materialize(self, t: LazyTensor) -> Any:
        """Compute pending `t` (one kernel, after what it needs computed first), make it
        ready, and return its value."""

    def is_constant(self, value: Any) -> bool:
        """Whether a computed tensor is a number the host knows (a kernel reads it from its
        constants, not as an input)."""
        return False

    @property
    @abstractmethod
    def max_reads(self) -> int:
        """The most distinct reads a recorded graph may make (`Node.reads`)."""

    def read_hooks(self) -> list[ReadHook] | None:
        """The wrapped backend's."""
        return self.inner.read_hooks()

    # ---- lazy <-> ready -------------------------------------------------------------------
    def ready(self, x: Any) -> Any:
        """The value behind handle `x`, computing it if it is pending."""
        return self._ready(x.tensor) if type(x) is Handle else x

    def _ready(self, t: LazyTensor) -> Any:
        return t.value if t.value is not None else self.materialize(t)

    def _ready_all(self, arg: Any) -> Any:
        """`arg` with every handle in it (a tuple's too) computed."""
        if type(arg) is Handle:
            return self.ready(arg)
        if isinstance(arg, (tuple, list)):
            return type(arg)(self._ready_all(a) for a in arg)
        return arg

    def _lazy(self, x: Any) -> LazyTensor:
        """The lazy tensor of handle `x` (a computed tensor's made now, to be read by a
        recorded step)."""
        return x.tensor if type(x) is Handle else LazyTensor.ready(x, self.is_constant(x))

    def _eager(self, x: Any) -> bool:
        """Whether an elementwise step over `x` (its result has `x`'s elements) runs at once
        (`eager_below`)."""
        return self._small(x.tensor.shape if type(x) is Handle else x.shape)

    def _small(self, shape: Shape) -> bool:
        """Whether a step making `shape` runs at once (never where `eager_below` is 0)."""
        return self.eager_below > 0 and math.prod(shape) < self.eager_below

    @staticmethod
    def _handle(t: LazyTensor) -> Any:
        """The one handle of `t` (made now unless one is alive)."""
        found = t.handle() if t.handle is not None else None
        if found is None:
            found = Handle(t)
            t.handle = weakref.ref(found)
        return found

    def _record(self, kind: str, op: str, args: tuple[LazyTensor, ...], shape: Shape,
                dtype: DType, axes: tuple[int, ...] = (), params: tuple = ()) -> Any:
        """A pending tensor computed by one more step over `args`; arguments whose graphs
        would make the kernel too large are computed first."""
        while True:
            reads = frozenset().union(*(a.reads for a in args))
            steps = 1 + sum(a.steps for a in args)
            if steps <= self.max_steps and len(reads) <= self.max_reads:
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

    # ---- transfer -------------------------------------------------------------------------
    def footprint(self, x: Any) -> tuple[object, int]:
        """The buffer of a ready tensor; a pending one counts the bytes it will hold."""
        if type(x) is not Handle or x.tensor.value is not None:
            return self.inner.footprint(self.ready(x))
        return x.tensor, x.tensor.numel * x.tensor.dtype.itemsize

    def memory_in_use(self) -> int | None:
        """The wrapped backend's."""
        return self.inner.memory_in_use()

    def from_bytes(self, data: bytes | memoryview, shape: Shape, dtype: DType) -> Any:
        """A ready tensor holding `data`."""
        return self.inner.from_bytes(data, shape, dtype)

    def to_bytes(self, x: Any, shape: Shape, dtype: DType) -> bytes:
        """The elements as bytes (computing them first)."""
        return self.inner.to_bytes(self.ready(x), shape, dtype)

    async def to_bytes_async(self, x: Any, shape: Shape, dtype: DType) -> bytes:
        """Awaitable `to_bytes`."""
        return await self.inner.to_bytes_async(self.ready(x), shape, dtype)

    # ---- creation -------------------------------------------------------------------------
    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Any:
        """`value` everywhere."""
        return self.inner.full(shape, value, dtype)

    def arange(self, start: float | int, step: float | int, n: int, dtype: DType) -> Any:
        """``start + i * step``."""
        return self.inner.arange(start, step, n, dtype)

    def random_bits(self, shape: Shape, seed: int, offset: int) -> Any:
        """Philox-4x32-10 words as int32."""
        return self.inner.random_bits(shape, seed, offset)

    # ---- elementwise (recorded) -----------------------------------------------------------
    def unary(self, op: str, x: Any, out: DType) -> Any:
        """Record ``UNARY[op]``."""
        if self._eager(x):
            return self.inner.unary(op, self.ready(x), out)
        t = self._lazy(x)
        return self._record("unary", op, (t,), t.shape, out)

    def binary(self, op: str, a: Any, b: Any, out: DType) -> Any:
        """Record ``BINARY[op]``."""
        if self._eager(a):
            return self.inner.binary(op, self.ready(a), self.ready(b), out)
        ta = self._lazy(a)
        return self._record("binary", op, (ta, self._lazy(b)), ta.shape, out)

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        """Record ``a if cond else b``."""
        if self._eager(a):
            return self.inner.where(self.ready(cond), self.ready(a), self.ready(b))
        ta = self._lazy(a)
        return self._record("where", "", (self._lazy(cond), ta, self._lazy(b)), ta.shape,
                            ta.dtype)

    def cast(self, x: Any, dtype: DType) -> Any:
        """Record a conversion to `dtype`."""
        if dtype is (x.tensor.dtype if type(x) is Handle else x.dtype):
            return x
        if self._eager(x):
            return self.inner.cast(self.ready(x), dtype)
        t = self._lazy(x)
        return self._record("cast", "", (t,), t.shape, dtype)

    # ---- run on the wrapped backend -------------------------------------------------------
    def reduce(self, op: str, x: Any, axes: tuple[int, ...]) -> Any:
        """`op` over `axes`."""
        return self.inner.reduce(op, self.ready(x), axes)

    def arg_reduce(self, op: str, x: Any, axis: int) -> Any:
        """The int32 index of the first max or min along `axis`."""
        return self.inner.arg_reduce(op, self.ready(x), axis)

    def scan(self, op: str, x: Any, axis: int) -> Any:
        """Inclusive cumulative sum or product along `axis`."""
        return self.inner.scan(op, self.ready(x), axis)

    def matmul(self, a: Any, b: Any) -> Any:
        """A batched matrix product."""
        return self.inner.matmul(self.ready(a), self.ready(b))

    # ---- movement -------------------------------------------------------------------------
    def reshape(self, x: Any, shape: Shape) -> Any:
        """Of a pending tensor, a step that reads its inputs in the new shape; of a ready
        one, the wrapped backend's reshape."""
        if type(x) is Handle and x.tensor.pending and x.tensor.numel:
            t = x.tensor
            return x if shape == t.shape else self._record("reshape", "", (t,), shape, t.dtype)
        return self.inner.reshape(self.ready(x), shape)

    def permute(self, x: Any, axes: tuple[int, ...]) -> Any:
        """A view with reordered dims."""
        return self.inner.permute(self.ready(x), axes)

    def expand(self, x: Any, shape: Shape) -> Any:
        """A broadcast view; of a pending tensor, a step that reads its inputs with zero
        strides along the broadcast dims (unless what it makes runs at once: the view of
        the tensor computed now)."""
        if type(x) is not Handle or not x.tensor.pending or self._small(shape):
            return self.inner.expand(self.ready(x), shape)
        t = x.tensor
        return x if shape == t.shape else self._record("expand", "", (t,), shape, t.dtype)

    def slice(self, x: Any, starts: Sequence[int], stops: Sequence[int],
              steps: Sequence[int]) -> Any:
        """A strided view."""
        return self.inner.slice(self.ready(x), starts, stops, steps)

    def flip(self, x: Any, axes: tuple[int, ...]) -> Any:
        """A view with negative strides."""
        return self.inner.flip(self.ready(x), axes)

    def pad(self, x: Any, pads: Sequence[tuple[int, int]],
            value: float | int | bool) -> Any:
        """Constant padding."""
        return self.inner.pad(self.ready(x), pads, value)

    def cat(self, xs: Sequence[Any], axis: int) -> Any:
        """Join along `axis`."""
        return self.inner.cat([self.ready(x) for x in xs], axis)

    # ---- indexing -------------------------------------------------------------------------
    def gather(self, x: Any, axis: int, index: Any) -> Any:
        """Values of x at `index` along `axis`."""
        return self.inner.gather(self.ready(x), axis, self.ready(index))

    def scatter(self, x: Any, axis: int, index: Any, src: Any, reduce: str) -> Any:
        """A copy of x with src written or added at `index` along `axis`."""
        return self.inner.scatter(self.ready(x), axis, self.ready(index), self.ready(src),
                                  reduce)

    def index_select(self, x: Any, axis: int, index: Any) -> Any:
        """Entries `index` (1-d) along `axis`."""
        return self.inner.index_select(self.ready(x), axis, self.ready(index))

    def nonzero(self, x: Any) -> tuple[Any, Shape]:
        """int32 coordinates of the nonzero elements."""
        return self.inner.nonzero(self.ready(x))

    def sort(self, x: Any, axis: int, descending: bool) -> tuple[Any, Any]:
        """Stable sort along `axis`: (values, int32 indices)."""
        return self.inner.sort(self.ready(x), axis, descending)


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
