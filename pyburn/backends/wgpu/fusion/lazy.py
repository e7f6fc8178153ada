"""Lazy handles: the fusion backend's tensors, computed only when something needs them.

A `LazyTensor` is either *ready* (it holds a `GpuTensor`) or *pending* (it holds the `Node`
that computes it from other lazy tensors). Only elementwise primitives, and `expand` of a
pending tensor, make pending tensors; everything else works on ready ones. A pending tensor
that is dropped before anything reads it costs nothing: its graph is garbage collected with
it, and the buffers its leaves hold go back to the pool.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....dtypes import DType
from ..handle import GpuTensor, Shape

#: op kinds a node can have: the op table's primitives, plus cast, where and expand (a view
#: of a pending tensor, read in a larger iteration space)
NODE_KINDS = ("unary", "binary", "where", "cast", "expand")


@dataclass(frozen=True, eq=False)
class Node:
    """One elementwise step: `kind` (see `NODE_KINDS`) with its `op` name ("" for where,
    cast and expand) applied to `args`."""

    kind: str
    op: str
    args: tuple[LazyTensor, ...]
    #: an upper bound of the number of steps in the graph that ends here (shared steps
    #: counted once per use): what the size limit checks
    steps: int
    #: the distinct reads the fused kernel would make (see `read_key`)
    reads: frozenset[tuple]


def read_key(value: GpuTensor, strides: Shape | None = None) -> tuple:
    """What makes two reads of a kernel the same operand: the buffer, dtype, offset and the
    strides it is read with (its own unless given)."""
    return (id(value.storage), value.dtype.name, value.offset,
            value.strides if strides is None else strides)


class LazyTensor:
    """A fusion handle: `shape`, `dtype`, and either `value` (ready) or `node` (pending)."""

    __slots__ = ("shape", "dtype", "value", "node", "__weakref__")

    def __init__(self, shape: Shape, dtype: DType, value: GpuTensor | None = None,
                 node: Node | None = None):
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.node = node

    @classmethod
    def ready(cls, value: GpuTensor) -> LazyTensor:
        """A ready handle over `value`."""
        return cls(value.shape, value.dtype, value=value)

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
        """The distinct reads of a kernel computing this tensor (itself when ready)."""
        if self.node is not None:
            return self.node.reads
        return frozenset((read_key(self.value),))

    def __repr__(self) -> str:
        state = "pending " + self.node.kind if self.node is not None else "ready"
        return f"LazyTensor({self.dtype.name}, shape={self.shape}, {state})"
