"""Range checks of index tensors: `checked_index` raises `IndexOutOfRange` for an index
outside its dim, at once where reading the index's bounds returns at once (cpu, flex), at the
next read from a backend whose reads wait for queued work (wgpu: `Backend.read_hooks`) and
from a backend that checks where its ops run (remote: `Backend.queue_range_check`)."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .. import buffer, capture
from .._tensor import Tensor
from ..backends.base import Backend, ReadHook
from ..dtypes import bool_, int32
from ..errors import IndexOutOfRange
from .math_ops import binary, where


def checked_index(index: Tensor, size: int, what: str, allow_negative: bool = True) -> Tensor:
    """`index` with negative entries wrapped (if allowed), once every entry is known to lie
    in ``[-size, size)`` (``[0, size)`` without negatives); raises IndexOutOfRange otherwise.

    Where the values are at hand (cpu, flex) the check reads the index's bounds and raises
    here, before anything runs. A remote device checks on its server, in order with the ops,
    and raises at the next read (`Backend.queue_range_check`). On a GPU (wgpu) reading them
    would wait for all the work queued so far, so the bounds are computed there and read
    with the next read from that GPU, which raises instead (`_GpuChecks`; docs/api.md,
    "Indexing")."""
    if index.numel() == 0:
        return index
    floor = -size if allow_negative else 0
    backend = index.device.backend
    hooks = backend.read_hooks()
    if backend.queue_range_check(index._h, index.ndim, index.dtype, floor, size,
                                 what, call_site):
        wrap_negatives = allow_negative and index.dtype.kind == "i"  # signed
    elif hooks is None:  # reading the bounds returns at once
        with capture.aside():  # a captured run repeats the check (the guard below)
            low, high = _bounds(index)
        if low < floor or high >= size:
            raise IndexOutOfRange.at(what, low if low < floor else high, size)
        wrap_negatives = low < 0
        capture.guard(_InRange(floor, size, wrap_negatives), index)
    else:
        _GpuChecks.of(backend, hooks).add(index, floor, size, what)
        wrap_negatives = allow_negative and index.dtype.kind == "i"  # signed
    if wrap_negatives:
        return where(binary("lt", index, 0), binary("add", index, size), index)
    return index


def _bounds(index: Tensor) -> tuple[int, int]:
    """The smallest and the largest entry of `index` (read back)."""
    return index.amin().item(), index.amax().item()


@dataclass(frozen=True)
class _InRange:
    """The guard of a captured index check (`pyburn.capture.guard`): the replayed index lies
    in ``[floor, size)`` and has negative entries exactly when the captured one had, so the
    captured run neither raises nor wraps differently."""

    floor: int
    size: int
    negatives: bool

    def __call__(self, index: Tensor) -> bool:
        low, high = _bounds(index)
        return self.floor <= low and high < self.size and (low < 0) == self.negatives


@dataclass(frozen=True)
class _Check:
    """What the message of a failed deferred range check names, but the bad index."""

    what: str
    size: int
    caller: str


def call_site() -> str:
    """The outermost pyburn function on the stack and the line of user code that called it:
    where a deferred error was caused (`cross_entropy() at train.py:93`)."""
    frame, name = sys._getframe(1), "?"
    while frame is not None and frame.f_globals.get("__name__", "").startswith("pyburn."):
        name, frame = frame.f_code.co_name, frame.f_back
    return f"{name}()" if frame is None else \
        f"{name}() at {frame.f_code.co_filename}:{frame.f_lineno}"


class _GpuChecks:
    """The pending range checks of index tensors on one GPU: a `ReadHook` of its `Gpu`
    (`pyburn.backends.base.ReadHook`), settled by the GPU's next read.

    Reading an index's bounds at once would make every gather wait for the GPU to finish
    the work queued before it: four waits per training step with cross_entropy (its gather
    and backward's scatter_add), 182 ms a step instead of 69 in Chromium. Here a check
    queues the index's min and max and folds its verdict into two one-element tensors on
    the GPU, the first failed check's number and its bad index (-1 while none failed); the
    next read reads them and raises. A loop that never reads holds those two and no more.
    By then the op has run with indices out of range: WebGPU keeps every access within the
    buffers bound to the kernel (it clamps or drops the others), and the tensors computed
    from the op hold unspecified values.
    """

    def __init__(self, backend: Backend):
        self.backend = backend
        self.state: tuple[Any, Any] | None = None  # (number of the check, bad index)
        # every check met so far, numbered: as many as the program has call sites and sizes
        self.numbers: dict[_Check, int] = {}
        self.checks: list[_Check] = []
        # (index handle, floor, size) of the latest checks: backward's scatter_add checks
        # the index that forward's gather checked (another tensor over the same handle;
        # handles are immutable)
        self.recent: deque[tuple[Any, int, int]] = deque(maxlen=8)

    @classmethod
    def of(cls, backend: Backend, hooks: list[ReadHook]) -> _GpuChecks:
        """The checks of `backend` (wgpu's, fused or not: their handles differ) among the
        `hooks` it settles before each read (`Backend.read_hooks`), added there on first
        use."""
        for hook in hooks:
            if isinstance(hook, cls) and hook.backend is backend:
                return hook
        hook = cls(backend)
        hooks.append(hook)
        return hook

    def add(self, index: Tensor, floor: int, size: int, what: str) -> None:
        """Queue the check that every entry of `index` lies in ``[floor, size)``."""
        if any(h is index._h and (low, n) == (floor, size) for h, low, n in self.recent):
            return
        self.recent.append((index._h, floor, size))
        check = _Check(what, size, call_site())
        if check not in self.numbers:
            self.numbers[check] = len(self.checks)
            self.checks.append(check)
        be, one = self.backend, self._one
        h = index._h if index.dtype is int32 else be.cast(index._h, int32)
        low, high = (be.reshape(be.reduce(op, h, tuple(range(index.ndim))), (1,))
                     for op in ("min", "max"))
        below = be.binary("lt", low, one(floor), bool_)
        failed = be.binary("logical_or", below, be.binary("ge", high, one(size), bool_), bool_)
        # a captured run (pyburn.capture) takes in each replay's verdict the same way
        capture.effect(self._take_in, be.where(failed, one(self.numbers[check]), one(-1)),
                       be.where(below, low, high))

    def _take_in(self, number: Any, bad: Any) -> None:
        """Chain the verdict of one check (the check's number or -1, and its bad index)
        onto the pending one."""
        verdict = (number, bad)
        self.state = verdict if self.state is None else self._first(self.state, verdict)
        # Each verdict is chained onto the previous one: left pending on a backend that
        # defers work (fusion), the chain would grow until the next read, with a new
        # kernel to compile at each size. Computing it now queues it without waiting.
        for h in self.state:
            self.backend.ready(h)

    def _one(self, value: int) -> Any:
        return self.backend.full((1,), value, int32)

    def _first(self, earlier: tuple[Any, Any], later: tuple[Any, Any]) -> tuple[Any, Any]:
        """The verdict of two runs of checks: the earlier one's failure, if any."""
        be = self.backend
        failed = be.binary("ne", earlier[0], self._one(-1), bool_)
        return be.where(failed, earlier[0], later[0]), be.where(failed, earlier[1], later[1])

    def settle(self) -> None:
        """Read the pending verdict (blocking); raise if a check failed."""
        if self.state is not None:
            state = self._take()
            with self._kept_on_failure(state):
                data = self.backend.to_bytes(self.backend.cat(state, 0), (2,), int32)
            self._judge(data)

    async def settle_async(self) -> None:
        """Awaitable `settle`."""
        if self.state is not None:
            state = self._take()
            with self._kept_on_failure(state):
                data = await self.backend.to_bytes_async(self.backend.cat(state, 0), (2,),
                                                         int32)
            self._judge(data)

    def _take(self) -> tuple[Any, Any]:
        """The pending verdict; checks queued from now on start a new one (the read of
        this one runs the read hooks too, and may await)."""
        state, self.state = self.state, None
        self.recent.clear()
        return state

    @contextmanager
    def _kept_on_failure(self, state: tuple[Any, Any]) -> Iterator[None]:
        """Keep the verdict if its read fails (a ReadbackError where a synchronous read
        cannot wait): the next read settles it."""
        try:
            yield
        except BaseException:
            self.state = state if self.state is None else self._first(state, self.state)
            raise

    def _judge(self, data: bytes) -> None:
        number, bad = buffer.unpack(data, int32)
        if number >= 0:
            check = self.checks[number]
            raise IndexOutOfRange.at(check.what, bad, check.size, f"in {check.caller}; checked "
                                     "on the GPU, reported at the next read")
