"""Launching kernels within the adapter's limits.

Every kernel is described the same way: an *iteration space* (a shape) and its *operands*,
each an affine map from a point of the space to an element of a buffer (an offset plus one
stride per space dim; 0 where the operand does not vary along a dim). A tensor view is
exactly such a map, so views need no copies; a kernel's own loops (a reduction's reduced
dims, a matmul's K) are dims of the space too.

That description is what makes the limits easy to respect:

- Bindings. A buffer range bound to a kernel must be at most
  ``max_storage_buffer_binding_size`` (128 MiB on llvmpipe and many browsers) and start at a
  multiple of ``min_storage_buffer_offset_alignment``. `boxes` binds, per operand, only the
  range the space touches, and when a range is too large it halves the space along the dim
  that contributes most to it (among the dims the kernel allows splitting) until every
  range fits: each box is one dispatch, with offsets relative to its bound ranges.
- Loops. Mesa's llvmpipe silently stops an invocation's loops after 65,535 iterations in
  all (`MAX_LOOP`; GPU watchdogs punish long loops too), so a kernel whose invocations loop
  over some dims asks `boxes` to cut those dims until each invocation's share stays within
  `loop_budget`.
- Grids. At most ``max_workgroups_per_dimension`` (65,535) workgroups per dimension: `grid`
  spreads a workgroup count over x, y and z, and kernels recover the linear workgroup index
  (``pb_group`` in functions.wgsl).

Kernel metadata (shapes, strides, offsets) goes in a small read-only storage buffer at
binding 0; buffers of identical contents are created once and reused (`MetaCache`), so a
training loop that repeats its shapes uploads no metadata after the first step.
"""

from __future__ import annotations

import math
import threading
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ...dtypes import DType
from ...errors import ArgumentError
from ...shape import contiguous_strides
from ..pool import BufferPool, Storage
from .handle import GpuTensor, Shape
from .kinds import kind_of
from .runtime import Binding, GpuRuntime

if TYPE_CHECKING:
    from ..base import ReadHook

#: llvmpipe stops an invocation's loops after 65,535 iterations, silently; the count runs over
#: every loop the invocation enters, and an iteration of a loop that runs an inner loop of k
#: iterations costs k + 2 of them
MAX_LOOP = 65535


def loop_budget(cost: int) -> int:
    """How many iterations a kernel's main loop may run when each costs `cost` (see
    `MAX_LOOP`), leaving room for the kernel's short loops (index arithmetic, trees)."""
    return (MAX_LOOP - 1024) // cost


@dataclass(frozen=True)
class Operand:
    """A buffer seen from the iteration space: point c is element ``offset + sum(c*strides)``.

    `storage` None makes a virtual operand: nothing is bound, but kernels still get its
    offset and strides (used to number the points of the space). `tail` counts elements
    read past the point's own element (a kernel reading a small neighbourhood)."""

    storage: Storage | None
    offset: int
    strides: Shape
    itemsize: int = 4
    tail: int = 0

    @classmethod
    def of(cls, t: GpuTensor, strides: Shape | None = None) -> Operand:
        """Tensor `t` as an operand, with its own strides unless others are given."""
        return cls(t.storage, t.offset, t.strides if strides is None else strides,
                   t.kind.itemsize)


@dataclass(frozen=True)
class Placed:
    """An operand within one box: its bound range and its offset relative to that range."""

    binding: Binding | None
    offset: int
    strides: Shape

    def meta(self) -> list[int]:
        """``[offset, *strides]``, the layout every kernel reads an operand's map in."""
        return [self.offset, *self.strides]


@dataclass(frozen=True)
class Box:
    """A sub-box of the iteration space: what one dispatch covers."""

    starts: Shape
    extents: Shape
    operands: dict[int, Placed]

    @property
    def size(self) -> int:
        """Number of points in the box."""
        return math.prod(self.extents)


def _place(op: Operand, starts: Shape, extents: Shape, align: int, limit: int) -> Placed | None:
    """`op` placed for a box, or None when the range it touches is larger than `limit`."""
    base = op.offset + sum(s * st for s, st in zip(starts, op.strides))
    if op.storage is None:
        return Placed(None, base, op.strides)
    low = base + sum(min(0, st * (e - 1)) for st, e in zip(op.strides, extents))
    high = base + sum(max(0, st * (e - 1)) for st, e in zip(op.strides, extents)) + op.tail
    start = low * op.itemsize // align * align
    # Rounded up to whole words, never past the buffer (a `tail` may reach beyond it).
    end = min(-(-(high + 1) * op.itemsize // 4) * 4, op.storage.nbytes)
    if end - start > limit:
        return None
    return Placed((op.storage.buffer, start, end - start), base - start // op.itemsize, op.strides)


def _halves(starts: Shape, extents: Shape, d: int) -> list[tuple[Shape, Shape]]:
    """The box cut in two along dim d, the second half first (for a stack)."""
    half = extents[d] // 2
    return [(starts[:d] + (starts[d] + half,) + starts[d + 1:],
             extents[:d] + (extents[d] - half,) + extents[d + 1:]),
            (starts, extents[:d] + (half,) + extents[d + 1:])]


def boxes(space: Shape, operands: dict[int, Operand], splittable: Sequence[int], limit: int,
          align: int, looped: Sequence[int] = (), loop_limit: int = 0) -> list[Box]:
    """The boxes that cover `space` with every operand's bound range within `limit` bytes
    (see the module docstring), and with at most `loop_limit` points over the `looped` dims
    (those a kernel's invocations loop over, split among `splittable` ones). Raises
    ArgumentError when no split of the `splittable` dims gets an operand under the limit."""
    if 0 in space:
        return []
    found: list[Box] = []
    # Depth first, first halves first (an explicit stack: a recursive closure would make a
    # reference cycle that keeps the operands' buffers alive until the garbage collector ran).
    pending = [((0,) * len(space), space)]
    while pending:
        starts, extents = pending.pop()
        if looped and math.prod(extents[d] for d in looped) > loop_limit:
            longest = max(looped, key=lambda d: extents[d])
            pending.extend(_halves(starts, extents, longest))
            continue
        placed: dict[int, Placed] = {}
        for k, op in operands.items():
            where = _place(op, starts, extents, align, limit)
            if where is not None:
                placed[k] = where
                continue
            weights = [(abs(op.strides[d]) * (extents[d] - 1), -d) for d in splittable
                       if extents[d] > 1]
            weight, neg_dim = max(weights, default=(0, 0))
            if weight == 0:
                raise ArgumentError(
                    f"a kernel operand spans more than the adapter's "
                    f"max_storage_buffer_binding_size ({limit} bytes) along dims that "
                    f"cannot be processed in pieces (space {space})")
            pending.extend(_halves(starts, extents, -neg_dim))
            break
        else:
            found.append(Box(starts, extents, placed))
    return found


def grid(groups: int, per_dimension: int) -> tuple[int, int, int]:
    """`groups` workgroups spread over (x, y, z) with at most `per_dimension` in each; the
    grid may hold a few more, which kernels skip by their linear index."""
    x = min(groups, per_dimension)
    y = min(-(-groups // x), per_dimension)
    z = -(-groups // (x * y))
    if z > per_dimension:
        raise ArgumentError(f"{groups} workgroups exceed the adapter's grid of "
                            f"{per_dimension}**3")
    return x, y, z


class MetaCache:
    """Small read-only buffers by content (kernel metadata, fused kernels' tables of
    constants), least recently used dropped past `capacity`."""

    def __init__(self, pool: BufferPool, capacity: int = 4096):
        self.pool = pool
        self.capacity = capacity
        self._buffers: OrderedDict[bytes, Storage] = OrderedDict()
        self._lock = threading.Lock()

    def storage(self, data: bytes) -> Storage:
        """A storage holding `data` (a multiple of 4 bytes)."""
        with self._lock:
            found = self._buffers.get(data)
            if found is None:
                found = self._buffers[data] = self.pool.upload(data)
                if len(self._buffers) > self.capacity:
                    self._buffers.popitem(last=False)
            else:
                self._buffers.move_to_end(data)
        return found

    def binding(self, values: Sequence[int]) -> Binding:
        """A binding of a buffer holding `values` as int32."""
        data = array("i", values).tobytes()
        return self.storage(data).buffer, 0, len(data)


#: the element each `ScalarCache` storage holds, as (dtype, stored bytes), for as long as the
#: storage lives (weakly: the cache may have dropped it while tensors still read it)
_SCALARS: weakref.WeakKeyDictionary[Storage, tuple[DType, bytes]] = weakref.WeakKeyDictionary()


def scalar_of(t: GpuTensor) -> bytes | None:
    """The stored element (one word: `creation.scalar_bytes`) that `t` reads at every point,
    when it is a view of a `ScalarCache` storage (a `full`, a Python number in a tensor
    expression): a value known here without reading the GPU. None otherwise."""
    found = _SCALARS.get(t.storage)
    return found[1] if found is not None and found[0] is t.dtype else None


class ScalarCache:
    """One-element buffers by (dtype, stored bytes), least recently used dropped past
    `capacity`: every `full` of one value shares one."""

    def __init__(self, pool: BufferPool, capacity: int = 256):
        self.pool = pool
        self.capacity = capacity
        self._stored: OrderedDict[tuple[str, bytes], Storage] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, dtype: DType, data: bytes) -> Storage:
        """The storage holding `data`, one element of `dtype`."""
        key = (dtype.name, data)
        with self._lock:
            found = self._stored.get(key)
            if found is None:
                found = self._stored[key] = self.pool.upload(data)
                _SCALARS[found] = (dtype, data)
                if len(self._stored) > self.capacity:
                    self._stored.popitem(last=False)
            else:
                self._stored.move_to_end(key)
        return found


#: the most invocations that share one group's work (a reduction's group, a softmax's row)
#: on a CPU driver: llvmpipe runs a workgroup's invocations as 8-wide SIMD lanes, and the
#: barriers of a wider tree cost more than they share (measured on llvmpipe: sum(1) of a
#: 2048² float32 matrix 40 ms with 256 per row, 7.6 ms with 64, 4.7 ms with 8; a softmax of
#: 4096 rows of 1000 59 ms with 64, 46 ms with 8)
SOFTWARE_GROUP_THREADS = 8


class Gpu:
    """One device's runtime, buffer pool and caches, and `run`, which launches a kernel
    over an iteration space in as many boxes and grid dims as the limits need."""

    def __init__(self, runtime: GpuRuntime):
        self.runtime = runtime
        self.pool = BufferPool(runtime)
        self.meta = MetaCache(self.pool)
        self.scalars = ScalarCache(self.pool)
        #: checks that computed their verdict on this GPU and raise, if it failed, at the
        #: next read (see `base.ReadHook`), so that checking never waits for the GPU
        self.read_hooks: list[ReadHook] = []

    def group_threads(self, wanted: int) -> int:
        """How many invocations share one group's work when a kernel would like `wanted`:
        as many on a GPU, at most `SOFTWARE_GROUP_THREADS` on a CPU driver."""
        return min(wanted, SOFTWARE_GROUP_THREADS) if self.runtime.info.is_software else wanted

    def empty(self, shape: Shape, dtype: DType) -> GpuTensor:
        """A new contiguous tensor with undefined contents."""
        kind = kind_of(dtype)
        nbytes = max(4, math.prod(shape) * kind.itemsize)
        if nbytes > self.runtime.limits.max_buffer_size:
            raise ArgumentError(f"a {dtype.name} tensor of shape {shape} needs {nbytes} bytes, "
                                f"more than the adapter's max_buffer_size of "
                                f"{self.runtime.limits.max_buffer_size}")
        return GpuTensor(self.pool.allocate(nbytes), shape, dtype, contiguous_strides(shape))

    def launches(self, space: Shape, operands: dict[int, Operand],
                 splittable: Sequence[int] | None = None, looped: Sequence[int] = (),
                 loop_limit: int = 0) -> list[Box]:
        """The boxes of `space` that fit the binding limit (see `boxes`); by default every
        dim may be split."""
        limits = self.runtime.limits
        cut = range(len(space)) if splittable is None else splittable
        return boxes(space, operands, cut, limits.max_storage_buffer_binding_size,
                     limits.min_storage_buffer_offset_alignment, looped, loop_limit)

    def launches_within(self, box: Box, operands: dict[int, Operand],
                        splittable: Sequence[int]) -> list[Box]:
        """`launches` over `box` only, cutting it further along `splittable` dims where
        `operands` (over the whole space) do not fit it."""
        shifted = {k: replace(op, offset=op.offset + sum(s * st for s, st in
                                                          zip(box.starts, op.strides)))
                   for k, op in operands.items()}
        return [replace(sub, starts=tuple(a + b for a, b in zip(box.starts, sub.starts)))
                for sub in self.launches(box.extents, shifted, splittable)]

    def dispatch(self, source: str, box: Box, meta: Sequence[int], groups: int,
                 entry: str = "main") -> None:
        """One dispatch for `box`: binding 0 gets `meta`, binding k the bound range of the
        box's operand k, and the grid `groups` workgroups."""
        bindings = {0: self.meta.binding(meta)}
        bindings.update((k, p.binding) for k, p in box.operands.items()
                        if p.binding is not None)
        limits = self.runtime.limits
        self.runtime.dispatch(source, entry, bindings,
                              grid(groups, limits.max_workgroups_per_dimension))

    def run(self, source: str, space: Shape, operands: dict[int, Operand],
            meta: Callable[[Box], Sequence[int]], groups: Callable[[Box], int],
            splittable: Sequence[int] | None = None) -> None:
        """Dispatch `source` once per box of `space`, with ``meta(box)`` and
        ``groups(box)``."""
        for box in self.launches(space, operands, splittable):
            self.dispatch(source, box, meta(box), groups(box))
