"""Lazy tensors: the fusion backends' graph, computed only when something needs a value.

A `LazyTensor` is either *ready* (it holds a backend's tensor: a `StridedView`) or *pending*
(it holds the `Node` that computes it from other lazy tensors). Elementwise primitives make
pending tensors, and so do the views that compose with an elementwise kernel's iteration
space (`expand`, and a `reshape` of a pending tensor), and the *anchors*: reductions,
arg-reductions, matmul and the forward convolution, kernels of their own into which
elementwise steps fuse (producers into a reduction's input, consumers into an anchor's
output), where the backend fuses them (wgpu does; wasm runs them unfused). A pending
tensor that is dropped before anything reads it costs nothing: its graph is garbage
collected with it, and the buffers its leaves hold go back to the pool.

The tensor layer never holds a `LazyTensor` itself but a `Handle` to it, and a lazy tensor
keeps only a weak reference back to its handle and to the pending tensors computed from it
(its *users*). Together they tell, when a kernel is generated, whether an intermediate
value may still be asked for by anything outside that kernel (`needed_outside`): a tensor
of the user's, a tensor autodiff saved, another pending graph. That decides what a fused
kernel must store besides its result.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from ...dtypes import DType
from ..strided import Shape

#: elementwise steps: the op table's primitives, plus cast and where
ELEMENTWISE = ("unary", "binary", "where", "cast")
#: views of a pending tensor, read in another iteration space
VIEWS = ("expand", "reshape")
#: a leaf with no buffer: a number the host knows, everywhere in its shape (`params[0]`), on
#: backends that record `full` (wasm: its kernels take it as an argument)
FULL = "full"
#: kernels of their own that elementwise steps fuse into
ANCHORS = ("reduce", "arg_reduce", "matmul", "conv")


@dataclass(frozen=True, eq=False)
class Node:
    """One step: `kind` (of `ELEMENTWISE`, `VIEWS`, `ANCHORS` or `FULL`) with its `op` name ("" for
    where, cast, the views, matmul and conv) applied to `args`; `axes` are a reduction's,
    `params` a convolution's (stride, padding, dilation, groups) or a full's value."""

    kind: str
    op: str
    args: tuple[LazyTensor, ...]
    #: an upper bound of the number of steps in the graph that ends here (shared steps
    #: counted once per use): what the size limit checks
    steps: int
    #: the distinct reads the fused kernel would make (see `read_key`)
    reads: frozenset[tuple]
    axes: tuple[int, ...] = ()
    params: tuple = ()


#: the read key of every constant (`constants`): a kernel reads them all from one table
CONSTANTS = ("constants",)


def read_key(value: Any, strides: Shape | None = None) -> tuple:
    """What makes two reads of a kernel the same operand: the buffer, dtype, offset and the
    strides it is read with (its own unless given)."""
    return (id(value.storage), value.dtype.name, value.offset,
            value.strides if strides is None else strides)


class LazyTensor:
    """A vertex of the fusion graph: `shape`, `dtype`, and either `value` (ready) or `node`
    (pending)."""

    __slots__ = ("shape", "dtype", "value", "node", "_leaf", "handle", "users", "__weakref__")

    def __init__(self, shape: Shape, dtype: DType, value: Any = None, node: Node | None = None,
                 constant: bool = False):
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.node = node
        self._leaf = CONSTANTS if constant else None
        #: the `Handle` the tensor layer got for this tensor, weakly (None: none yet)
        self.handle: weakref.ref[Handle] | None = None
        #: pending tensors computed from this one while it was pending, weakly
        self.users: list[weakref.ref[LazyTensor]] = []

    @classmethod
    def ready(cls, value: Any, constant: bool = False) -> LazyTensor:
        """A ready tensor holding `value`; `constant` when it is a number the host knows,
        which kernels read from their table of constants, not as an input."""
        return cls(value.shape, value.dtype, value=value, constant=constant)

    @property
    def leaf(self) -> tuple:
        """A ready tensor's read key (`reads`), worked out when a kernel first reads it."""
        if self._leaf is None:
            self._leaf = read_key(self.value, unit_strides(self.shape, self.value.strides))
        return self._leaf

    @property
    def computed_by(self) -> Node:
        """The step that computes this pending tensor."""
        assert self.node is not None, "a ready tensor has no step"
        return self.node

    @property
    def pending(self) -> bool:
        """Whether the value still has to be computed."""
        return self.value is None

    @property
    def steps(self) -> int:
        """Steps of the graph that computes this tensor (0 when ready)."""
        return self.node.steps if self.node is not None else 0

    @property
    def reads(self) -> frozenset[tuple]:
        """The distinct reads of a kernel computing this tensor (itself when ready: one of
        the kernel's constants, or an input)."""
        return self.node.reads if self.node is not None else frozenset((self.leaf,))

    @property
    def numel(self) -> int:
        """Number of elements."""
        count = 1
        for size in self.shape:
            count *= size
        return count

    def resolve(self, value: Any) -> None:
        """Make this tensor ready with `value`, a computed tensor (its graph is released)."""
        self.value, self.node, self._leaf = value, None, None
        self.users.clear()

    def needed_outside(self, inside: set[int]) -> bool:
        """Whether anything but the pending tensors whose ids are in `inside` may still ask
        for this tensor's value: a live handle, or a live user outside `inside`."""
        if self.handle is not None and self.handle() is not None:
            return True
        return any(u() is not None and id(u()) not in inside for u in self.users)

    def __repr__(self) -> str:
        state = "pending " + self.node.kind if self.node is not None else "ready"
        return f"LazyTensor({self.dtype.name}, shape={self.shape}, {state})"


class Handle:
    """What the fusion backend gives the tensor layer for a `LazyTensor`: the one strong
    reference from outside the graph, so that its liveness says whether the value can still
    be asked for."""

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor: LazyTensor):
        self.tensor = tensor

    def __repr__(self) -> str:
        return f"Handle({self.tensor!r})"


def unit_strides(shape: Shape, strides: Shape) -> Shape:
    """`strides` with 0 for the size-1 dims, whose stride never matters: reads that differ
    only there are the same operand."""
    return tuple(0 if size == 1 else stride for size, stride in zip(shape, strides))


def reshape_strides(shape: Shape, strides: Shape, new: Shape) -> Shape | None:
    """Strides that read a view (`shape`, `strides`) as shape `new` (the same elements in
    row-major order), or None where no strides can (dims merged that are not laid out one
    after the other)."""
    old = [(size, stride) for size, stride in zip(shape, strides) if size != 1]
    dims = [d for d, size in enumerate(new) if size != 1]
    out = [0] * len(new)
    i = j = 0
    while i < len(old) and j < len(dims):
        # the smallest groups of old and new dims with the same number of elements
        have, want = old[i][0], new[dims[j]]
        i_end, j_end = i + 1, j + 1
        while have != want:
            if have < want:
                have *= old[i_end][0]
                i_end += 1
            else:
                want *= new[dims[j_end]]
                j_end += 1
        if any(old[k][1] != old[k + 1][1] * old[k + 1][0] for k in range(i, i_end - 1)):
            return None
        step = old[i_end - 1][1]
        for k in range(j_end - 1, j - 1, -1):
            out[dims[k]] = step
            step *= new[dims[k]]
        i, j = i_end, j_end
    return tuple(out)


def view_strides(kind: str, below: Shape, above: Shape, strides: Shape) -> Shape | None:
    """Strides, in the space of a view of kind `kind` (shape `above`), of an operand read
    with `strides` in the space of the view's argument (shape `below`); None where the view
    cannot be composed (a reshape merging dims that the operand does not lay out one after
    the other)."""
    if kind == "expand":
        return tuple(0 if old == 1 and new != 1 else st
                     for old, new, st in zip(below, above, strides))
    return reshape_strides(below, strides, above)
