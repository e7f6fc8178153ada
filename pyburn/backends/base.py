"""The backend protocol: the small set of primitives every backend implements.

The tensor layer (``pyburn.tensor``) does all argument checking, shape and dtype inference,
broadcasting, dtype promotion and index normalisation, then makes one call per primitive.
A backend trusts its inputs and never re-derives what the tensor layer already knows.

Handles
    A handle is whatever object the backend uses for a tensor's data (a numpy array, an
    ``array.array`` with strides, a GPU buffer). The tensor layer never looks inside one.
    Handles are immutable: no primitive modifies an input, so a backend may return views
    that share storage (reshape, permute, expand and slice are free where it can). Every
    shape argument is a tuple of ints; every axis argument is already normalised to
    ``0 <= axis < rank``.

Dtypes
    Inputs to elementwise and matmul primitives already have the dtypes the result needs:
    the tensor layer casts before the call. ``out`` arguments name the result dtype where
    it differs from the inputs' (comparisons give bool).

Optional capabilities
    A backend may also offer faster versions of composites, announced by name in `caps`
    ("conv", "max_pool"): each one's methods and their contract are its record in
    ``pyburn.ops.capability.CAPABILITIES``, whose `offered` is the one place that chooses
    between a capability and the composite. A backend without them loses nothing but speed.

Reading
    Reads are asynchronous at heart. A backend implements ``to_bytes`` (blocking) or
    ``to_bytes_async`` (awaitable) or both; each default falls back on the other.

Registering
    A backend module in ``pyburn/backends/`` defines ``REGISTRATION``, a `Registration`
    (its name, availability check, constructor and rank); ``pyburn.device`` finds every
    module there that has one, so adding a backend edits no list elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..dtypes import DType
from ..runtime import run_sync

Handle = Any
Shape = tuple[int, ...]


class ReadHook(Protocol):
    """Something to settle before any value leaves a backend whose reads wait for queued
    work (see `Backend.read_hooks`): checks whose verdict was computed there without waiting
    (pyburn.ops.indexing's range checks of index tensors) read it and raise if it failed. A hook
    takes what is pending before reading it, so the hooks its own read runs find nothing."""

    def settle(self) -> None:
        """Read what is pending and raise for a failed check (blocking)."""

    async def settle_async(self) -> None:
        """Awaitable `settle`."""


@dataclass(frozen=True)
class Registration:
    """How a backend introduces itself to ``pyburn.device``: the module that defines it as
    ``REGISTRATION`` is the device kind `name` (``pyburn.backends.<name>``)."""

    #: the device kind, as device strings spell it ("cpu", "wgpu")
    name: str
    #: why the backend cannot run here (a sentence with the fix), or None; cheap to call
    unavailable_reason: Callable[[], str | None]
    #: the backend of device index `index` ("wgpu:1" is index 1)
    create: Callable[[int], Backend]
    #: its place in the default-device order, lower first: a number, or a function where
    #: that depends on the machine; None for a kind chosen only by name (never the default,
    #: not listed by `pyburn info`)
    rank: int | Callable[[], int] | None
    #: for a kind whose devices are named by an address rather than an index
    #: ("remote+ws://host:3000"), the backend connected to `address`; `create` is then not
    #: called
    connect: Callable[[str], Backend] | None = None

    def place(self) -> int | None:
        """The rank, computed where it depends on the machine."""
        return self.rank() if callable(self.rank) else self.rank


class Backend:
    """Base class of the backends. Subclasses implement every method below that raises."""

    #: short name used in device strings ("flex", "cpu", ...)
    name: str = "base"
    #: dtypes the backend stores
    dtypes: frozenset[DType] = frozenset()
    #: optional capabilities, e.g. {"float64", "int64", "float16"}; tests skip by these
    caps: frozenset[str] = frozenset()
    #: the methods whose default here is right for most backends (every other one raises
    #: until the backend implements it; `to_bytes` falls back on `to_bytes_async`, which a
    #: backend that can block need not write)
    DEFAULTED = frozenset({"to_bytes_async", "read_hooks", "ready", "queue_range_check",
                           "memory_in_use", "host_array", "from_host_array"})

    # ---- transfer -------------------------------------------------------------------
    def from_bytes(self, data: bytes | memoryview, shape: Shape, dtype: DType) -> Handle:
        """A tensor from C-ordered little-endian bytes (bool is one byte, 0 or 1)."""
        raise NotImplementedError

    def to_bytes(self, x: Handle, shape: Shape, dtype: DType) -> bytes:
        """The tensor's elements as C-ordered little-endian bytes; blocks until ready."""
        return run_sync(self.to_bytes_async(x, shape, dtype))

    async def to_bytes_async(self, x: Handle, shape: Shape, dtype: DType) -> bytes:
        """Awaitable form of `to_bytes`; works where blocking is impossible (browsers)."""
        return self.to_bytes(x, shape, dtype)

    def footprint(self, x: Handle) -> tuple[object, int]:
        """The object holding `x`'s elements (views of one buffer give the same one) and its
        size in bytes: what a server counts against a session's memory limit."""
        raise NotImplementedError

    def host_array(self, x: Handle) -> Any:
        """`x` itself where it is a numpy array in this process's memory (the cpu backend's
        handles), so that DLPack can share it; None (the default) where the elements live
        elsewhere (a GPU, WebAssembly memory, a server) or in storage numpy cannot view
        (flex), and an export copies them through `to_bytes`."""
        return None

    def from_host_array(self, array: Any, dtype: DType) -> Handle:
        """A handle on a C-ordered or strided numpy array of `dtype`'s numpy type, native
        byte order: the array itself where the backend's handles are numpy arrays (cpu; it
        then shares the array's memory), else (the default) a copy through `from_bytes`."""
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
        return self.from_bytes(data, tuple(array.shape), dtype)

    def memory_in_use(self) -> int | None:
        """Bytes of the device's own memory its tensors hold now (a GPU's buffers, the wasm
        memory's), or None where the tensors live in the process's memory (cpu, flex)."""
        return None

    # ---- queued work (a GPU) ------------------------------------------------------------
    def read_hooks(self) -> list[ReadHook] | None:
        """None (the default) where a read returns at once, so the tensor layer may read a
        value to check it (an index's bounds). A backend whose reads wait for the work queued
        before them (wgpu) returns the list of hooks it settles before every read: the
        tensor layer adds its checks there, to be read with the next read, not now."""
        return None

    def queue_range_check(self, x: Handle, ndim: int, dtype: DType, floor: int, size: int,
                          what: str, caller: Callable[[], str],
                          ignore: int | None = None) -> bool:
        """Queue the check that every entry of the index tensor `x` lies in ``[floor, size)``
        (entries equal to `ignore` aside), to raise IndexOutOfRange naming `what` and
        ``caller()`` (where the user called it: asked only by a backend that queues) at the
        next read, and return True. A backend whose ops run elsewhere checks there (remote: on
        the server, in order with the ops).
        False (the default): the tensor layer checks (reading the bounds, or `read_hooks`),
        or the backend's op does (nll_loss)."""
        return False

    def ready(self, x: Handle) -> Handle:
        """`x` computed: the handle itself on a backend that computes at once; a backend that
        defers work (wgpu's fusion) computes it now and returns the value it stood for, so
        that a chain built on it stops growing."""
        return x

    # ---- creation -------------------------------------------------------------------
    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Handle:
        """A tensor of `shape` with every element `value` (already valid for `dtype`)."""
        raise NotImplementedError

    def arange(self, start: float | int, step: float | int, n: int, dtype: DType) -> Handle:
        """The 1-d tensor ``start + i * step`` for ``i in range(n)``, in `dtype`.
        Integer dtypes get exact integer arithmetic; floats compute in float64 then round."""
        raise NotImplementedError

    def random_bits(self, shape: Shape, seed: int, offset: int) -> Handle:
        """int32 tensor of random bits from the Philox-4x32-10 generator (see
        ``pyburn.random``): element ``i`` (row-major) is word ``(offset + i) % 4`` of the
        block computed for counter ``(offset + i) // 4`` with key `seed` (64 bits). The
        uint32 word is reinterpreted as int32."""
        raise NotImplementedError

    # ---- elementwise ----------------------------------------------------------------
    def unary(self, op: str, x: Handle, out: DType) -> Handle:
        """Apply the unary op named `op` (a key of ``pyburn.ops.elementwise.UNARY``); an op with an
        ``on_bool`` entry never comes with a bool `x` (the tensor layer calls that op)."""
        raise NotImplementedError

    def binary(self, op: str, a: Handle, b: Handle, out: DType) -> Handle:
        """Apply the binary op `op` (a key of ``BINARY``) to two tensors of the same shape
        and dtype (the tensor layer has broadcast them with `expand`)."""
        raise NotImplementedError

    def where(self, cond: Handle, a: Handle, b: Handle) -> Handle:
        """Elementwise ``a if cond else b``; cond is bool; all three have the same shape,
        a and b the same dtype."""
        raise NotImplementedError

    def cast(self, x: Handle, dtype: DType) -> Handle:
        """Convert to `dtype`: floats to ints truncate toward zero; to bool is ``!= 0``;
        ints to narrower ints wrap around."""
        raise NotImplementedError

    # ---- reductions and scans --------------------------------------------------------
    def reduce(self, op: str, x: Handle, axes: tuple[int, ...]) -> Handle:
        """Reduce over `axes` (sorted, distinct, possibly empty tuple meaning none), keeping
        them as size-1 dims. `op` is one of sum, prod, max, min, any, all. max and min
        propagate NaN; any and all return bool; sum and prod keep the input dtype. A
        reduction over zero elements gives the identity (max/min never get one)."""
        raise NotImplementedError

    def arg_reduce(self, op: str, x: Handle, axis: int) -> Handle:
        """int32 index of the first max (`op` "argmax") or min ("argmin") along `axis`,
        which is kept as a size-1 dim. NaN counts as the largest and the smallest value."""
        raise NotImplementedError

    def scan(self, op: str, x: Handle, axis: int) -> Handle:
        """Inclusive scan along `axis`: `op` is "sum" (cumsum) or "prod" (cumprod)."""
        raise NotImplementedError

    # ---- movement (views where the backend can) ----------------------------------------
    def reshape(self, x: Handle, shape: Shape) -> Handle:
        """The same elements in row-major order with a new shape of the same size."""
        raise NotImplementedError

    def permute(self, x: Handle, axes: tuple[int, ...]) -> Handle:
        """Reorder dimensions: result dim i is input dim ``axes[i]``."""
        raise NotImplementedError

    def expand(self, x: Handle, shape: Shape) -> Handle:
        """Broadcast size-1 dims to `shape` (same rank as x)."""
        raise NotImplementedError

    def slice(self, x: Handle, starts: Sequence[int], stops: Sequence[int],
              steps: Sequence[int]) -> Handle:
        """Basic slicing on every axis with ``0 <= start <= stop <= size`` and step >= 1."""
        raise NotImplementedError

    def flip(self, x: Handle, axes: tuple[int, ...]) -> Handle:
        """Reverse the order of elements along `axes`."""
        raise NotImplementedError

    def pad(self, x: Handle, pads: Sequence[tuple[int, int]], value: float | int | bool) -> Handle:
        """Constant padding: `pads[i]` = (before, after) elements on axis i, both >= 0."""
        raise NotImplementedError

    def cat(self, xs: Sequence[Handle], axis: int) -> Handle:
        """Join tensors of one dtype, equal in every dim but `axis`, along `axis`."""
        raise NotImplementedError

    # ---- indexing ----------------------------------------------------------------------
    def gather(self, x: Handle, axis: int, index: Handle) -> Handle:
        """``out[i][j][k] = x[i][index[i][j][k]][k]`` for axis 1 (and likewise for any
        axis); index has x's rank, every other dim no larger than x's, values in range."""
        raise NotImplementedError

    def scatter(self, x: Handle, axis: int, index: Handle, src: Handle, reduce: str) -> Handle:
        """A copy of x with ``out[i][index[i][j][k]][k] = src[i][j][k]`` (axis 1 shown);
        `reduce` is "assign" (the last write wins) or "add" (values accumulate). index and
        src have the same shape."""
        raise NotImplementedError

    def index_select(self, x: Handle, axis: int, index: Handle) -> Handle:
        """Pick the entries ``index`` (1-d, int, in range) along `axis`."""
        raise NotImplementedError

    def nonzero(self, x: Handle) -> tuple[Handle, Shape]:
        """int32 coordinates of the nonzero elements, shape (count, rank), row-major order.
        Returns the handle and its shape, since only the data decides it."""
        raise NotImplementedError

    def sort(self, x: Handle, axis: int, descending: bool) -> tuple[Handle, Handle]:
        """Stable sort along `axis`: (values, int32 indices). NaN sorts as the largest."""
        raise NotImplementedError

    # ---- linear algebra ----------------------------------------------------------------
    def matmul(self, a: Handle, b: Handle) -> Handle:
        """Batched matrix product of (*B, M, K) and (*B, K, N) with the same batch dims."""
        raise NotImplementedError
