"""The flex backend: every primitive of the protocol in pure Python over ``array.array``."""

from __future__ import annotations

from ...dtypes import ALL_DTYPES, DType
from ..base import Backend, Shape
from . import creation, elementwise, indexing, movement, storage
from . import matmul as linalg
from . import reduce as reductions
from . import sort as sorting


class FlexBackend(Backend):
    """Pure-Python backend (standard library only): runs wherever Python runs, Pyodide
    included. Handles are `storage.Buf` views; see the modules of this package per op group.

    >>> from pyburn.backends.flex import create
    >>> from pyburn.dtypes import int32
    >>> flex = create(0)
    >>> list(flex.arange(0, 2, 3, int32).flat())
    [0, 2, 4]
    """

    name = "flex"
    dtypes = frozenset(ALL_DTYPES)
    caps = frozenset({"float64", "int64", "float16"})

    def footprint(self, x: storage.Buf) -> tuple[object, int]:
        """The array the view reads, and its size."""
        return x.data, len(x.data) * x.data.itemsize

    def from_bytes(self, data: bytes | memoryview, shape: Shape, dtype: DType) -> storage.Buf:
        """A tensor from C-ordered little-endian bytes."""
        return storage.from_bytes(data, shape, dtype)

    def to_bytes(self, x: storage.Buf, shape: Shape, dtype: DType) -> bytes:
        """The elements as C-ordered little-endian bytes (flex computes eagerly: no wait)."""
        return storage.to_bytes(x)

    full = staticmethod(creation.full)
    arange = staticmethod(creation.arange)
    random_bits = staticmethod(creation.random_bits)

    unary = staticmethod(elementwise.unary)
    binary = staticmethod(elementwise.binary)
    where = staticmethod(elementwise.where)
    cast = staticmethod(elementwise.cast)

    reduce = staticmethod(reductions.reduce)
    arg_reduce = staticmethod(reductions.arg_reduce)
    scan = staticmethod(reductions.scan)

    reshape = staticmethod(movement.reshape)
    permute = staticmethod(movement.permute)
    expand = staticmethod(movement.expand)
    slice = staticmethod(movement.slice_)
    flip = staticmethod(movement.flip)
    pad = staticmethod(movement.pad)
    cat = staticmethod(movement.cat)

    gather = staticmethod(indexing.gather)
    scatter = staticmethod(indexing.scatter)
    index_select = staticmethod(indexing.index_select)
    nonzero = staticmethod(indexing.nonzero)
    sort = staticmethod(sorting.sort)

    matmul = staticmethod(linalg.matmul)
