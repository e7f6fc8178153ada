"""Storages and the tensors that view them, as a PyTorch file lays them out, read lazily.

A PyTorch tensor is a view of a storage (a run of bytes): an element offset, a shape, and a
stride per dimension. Several tensors may view one storage (``a`` and ``a.t()``, a slice
``a[1]``, tied weights), so a file stores each storage once. Here a `Storage` knows where
its bytes are in the file; a `PytorchTensor` knows its view and reads, when asked, only the
bytes the view covers, in C order.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import FormatError
from ..elements import Element
from ..header import brief
from ..lazy import LazyTensor

#: a view may repeat its storage's bytes (stride 0, ``expand``) at most this many times:
#: the same bound deflate has, so that a .pt file is never a worse bomb than a zip file
MAX_EXPANSION = 1032


class Storage:
    """One storage: `nbytes` bytes in the file under `key`, saved from device `location`
    (CUDA storages load on the CPU like any other). `element` is the type of a typed
    storage (None for ``UntypedStorage``). The format reader binds `reader` once it knows
    where the bytes are; a legacy view of another storage reads through its `parent`."""

    def __init__(self, key: str, nbytes: int, element: Element | None, location: str,
                 big_endian: bool = False, parent: Storage | None = None, start: int = 0):
        self.key = key
        self.nbytes = nbytes
        self.element = element
        self.location = location
        #: whether the file's bytes are big-endian (a zip file's ``byteorder`` record)
        self.big_endian = big_endian
        self.parent = parent
        self.start = start
        #: reads ``n`` bytes from ``begin`` within the storage
        self.reader: Callable[[int, int], bytes] | None = None

    def read(self, begin: int, n: int) -> bytes:
        """`n` bytes of the storage from byte `begin`."""
        if self.parent is not None:
            return self.parent.read(self.start + begin, n)
        if self.reader is None:  # a format reader binds every storage before returning
            raise FormatError(f"storage {brief(self.key)} was never located in the file")
        return self.reader(begin, n)

    def __repr__(self) -> str:
        kind = self.element.name if self.element else "untyped"
        return f"Storage({self.key!r}, {self.nbytes} bytes, {kind}, {self.location!r})"


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


class PytorchTensor(LazyTensor):
    """A tensor of a PyTorch file: `element` values at element `offset` of `storage`, with
    `shape` and `strides` (in elements), checked against the storage's size when made."""

    def __init__(self, storage: Storage, offset: object, shape: object, strides: object,
                 element: Element, requires_grad: object = False):
        if not isinstance(storage, Storage):
            raise FormatError(f"a tensor's storage is a {type(storage).__name__}, not a storage")
        if not _count(offset):
            raise FormatError(f"tensor storage offset {brief(offset)} is not a non-negative "
                              f"integer")
        if type(shape) is not tuple or not all(map(_count, shape)):
            raise FormatError(f"tensor size {brief(shape)} is not a tuple of non-negative "
                              f"integers")
        if type(strides) is not tuple or not all(map(_count, strides)):
            raise FormatError(f"tensor stride {brief(strides)} is not a tuple of non-negative "
                              f"integers")
        if len(shape) != len(strides):
            raise FormatError(f"tensor size {brief(shape)} and stride {brief(strides)} differ "
                              f"in length")
        if storage.element is not None and storage.element is not element:
            raise FormatError(f"a {element.name} tensor views the {storage.element.name} "
                              f"storage {brief(storage.key)}")
        self.storage = storage
        self.offset = offset
        self.shape = shape
        self.strides = strides
        self.element = element
        self.requires_grad = requires_grad is True
        self.name = ""
        numel = self.numel
        if numel == 0:
            return
        itemsize = element.bits // 8
        #: how many elements from `offset` the view spans
        self.span = sum((n - 1) * s for n, s in zip(shape, strides)) + 1
        if (offset + self.span) * itemsize > storage.nbytes:
            raise FormatError(f"a tensor of size {brief(shape)}, stride {brief(strides)} at "
                              f"offset {offset} reaches byte {(offset + self.span) * itemsize} "
                              f"of storage {brief(storage.key)}, which holds {storage.nbytes}")
        if numel > self.span * MAX_EXPANSION:
            raise FormatError(f"a tensor of size {brief(shape)} repeats {self.span} stored "
                              f"elements more than {MAX_EXPANSION} times (stride 0): refused "
                              f"as a memory bomb")

    @property
    def location(self) -> str:
        """The device the tensor was saved from ("cpu", "cuda:0", ...)."""
        return self.storage.location

    def is_contiguous(self) -> bool:
        """Whether the view is C-ordered with no gaps (most saved tensors are)."""
        expected = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True

    def read(self) -> bytes | bytearray:
        """The view's elements in C order, little-endian, in the file's element type."""
        numel = self.numel
        if numel == 0:
            return b""
        k = self.element.bits // 8
        if self.is_contiguous():
            data: bytes | bytearray = self.storage.read(self.offset * k, numel * k)
        else:
            chunk = self.storage.read(self.offset * k, self.span * k)
            data = gather(chunk, self.shape, self.strides, k)
        if self.storage.big_endian and k > 1:
            # complex numbers are two floats, each swapped on its own
            data = byteswap(data, k // 2 if self.element.name.startswith("C") else k)
        return data


def gather(chunk: bytes, shape: tuple[int, ...], strides: tuple[int, ...],
           k: int) -> bytearray:
    """The elements (`k` bytes each) of a strided view of `chunk` (which starts at the
    view's first element) in C order.

    Dimensions that are contiguous relative to each other are merged first; the longest
    remaining one is copied with one extended-slice assignment per byte of the element (C
    speed), the others are looped over in Python, so a transposed matrix costs a few
    slice copies per row or column, whichever is fewer."""
    dims: list[tuple[int, int]] = []
    for n, s in zip(shape, strides):
        if n == 1:
            continue
        if dims and dims[-1][1] == s * n:
            dims[-1] = (dims[-1][0] * n, s)
        else:
            dims.append((n, s))
    total = 1
    for n, _ in dims:
        total *= n
    out = bytearray(total * k)
    if not dims:
        out[:] = chunk[:k]
        return out
    out_strides, step = [], 1
    for n, _ in reversed(dims):
        out_strides.append(step)
        step *= n
    out_strides.reverse()
    axis = max(range(len(dims)), key=lambda i: dims[i][0])
    n, s = dims[axis]
    o = out_strides[axis]
    starts = [(0, 0)]
    for i, (m, t) in enumerate(dims):
        if i != axis:
            starts = [(a + j * t, b + j * out_strides[i]) for a, b in starts for j in range(m)]
    for src, dst in starts:
        if s == 1 and o == 1:
            out[dst * k:(dst + n) * k] = chunk[src * k:(src + n) * k]
            continue
        for b in range(k):
            if s:
                plane = chunk[src * k + b:(src + (n - 1) * s) * k + b + 1:s * k]
            else:
                plane = chunk[src * k + b:src * k + b + 1] * n
            out[dst * k + b:(dst + (n - 1) * o) * k + b + 1:o * k] = plane
    return out


def byteswap(data: bytes | bytearray, unit: int) -> bytearray:
    """`data` with the bytes of each `unit`-byte value reversed (big- to little-endian)."""
    out = bytearray(len(data))
    for b in range(unit):
        out[b::unit] = data[unit - 1 - b::unit]
    return out

