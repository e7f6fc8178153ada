"""Captured runs: a function of tensors run once with its backend's calls recorded, then
replayed from that record, without the tensor layer, the ops or the caller's Python around
them (CUDA graphs' idea, on every backend).

The tensor layer makes one backend call per primitive after all its checks, shape
inference and choices; for a given signature (the inputs' shapes, dtypes and device) a
function such as a model's forward makes the same calls every time, with the same
arguments but for the handles that come from its inputs. Backend handles are immutable and
a tensor's values never change under the same handle (`pyburn.backends.base`), so those
calls, replayed in order on new input handles, compute what the function would. For a
small network on cpu that removes most of the Python per layer: the whole run becomes a
generated function of plain backend calls (`Capture.source`).

A record is refused (the function then simply runs) where a replay could not repeat the
run: it read a value back (``tolist()``, ``nonzero``), drew random numbers, launched a
`pyburn.kernel` kernel (which computes outside the backend's methods), met a backend that
queues index checks of its own (a remote server), called a backend method that is not part
of the protocol,
or returned something other than tensors. A decision taken from values may stand behind a
`guard`, which the replay checks first (an index check's bounds: `aside` reads them without
recording); a change the run makes outside the backend is an `effect`, made again by each
replay (a GPU's pending index checks). What a run computes from anything else (Python
values, a clock) is replayed as the values it had when captured, as in any trace.

`Captured` wraps a function: each new signature runs plainly once (so that what the
function keeps between calls, a model's folded weights, is made), is captured on its second
call and replayed from the third, for as long as the `state` tensors (a module's parameters
and buffers) keep the handles they had. ``$PYBURN_CAPTURE=0`` switches capturing off.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter, is_
from typing import Any

from . import _tensor
from ._tensor import Tensor, wrap
from .backends.base import Backend
from .devices import Device
from .dtypes import DType
from .tape import is_grad_enabled

#: the environment variable that switches capturing off when set to "0"
ENV = "PYBURN_CAPTURE"

#: backend methods whose result is host data, random, or a report on the device rather
#: than a handle computed from the arguments: a run that calls one is not captured
#: (nll_loss also returns the first bad target, which the tensor layer raises for)
UNREPEATABLE = frozenset({
    "to_bytes", "to_bytes_async", "host_array", "footprint", "memory_in_use", "random_bits",
    "nonzero", "nll_loss"})

#: questions about how the backend checks indices, not recorded: where the tensor layer
#: checks (read_hooks None: its checks add guards, `guard`) or the GPU does (a list of
#: hooks: its checks add `effect`s), a run is captured; not where the backend queues the
#: checks itself (queue_range_check True: a remote server's), which a replay would not ask
QUERIES = frozenset({"read_hooks", "queue_range_check"})


#: the backend methods a capture records and replays: the protocol's, and those the
#: optional capabilities add (`replayable`), less the unrepeatable ones and the queries
REPLAYED: set[str] = {name for name in vars(Backend) if not name.startswith("_")
                      and callable(getattr(Backend, name))} - UNREPEATABLE - QUERIES


def replayable(methods: Iterable[str]) -> None:
    """Let captures record and replay these backend methods beyond the protocol's:
    `pyburn.ops.capability` names each capability's when it is imported, before any of them
    can be called."""
    REPLAYED.update(set(methods) - UNREPEATABLE - QUERIES)

# values written into the generated code as literals (repr gives them back exactly)
_LITERALS = (int, str, bool, type(None))
# values that are never handles: not looked up among the recorded ones
_PLAIN = (int, float, complex, str, bytes, bool, type(None), DType)

_handle_of = attrgetter("_h")


class _Refused(Exception):
    """Raised inside the recorder when a run cannot be replayed (its message says why)."""


@dataclass
class Capture:
    """One recorded run: `replay` computes the function's output handles from its input
    handles with the backend calls the run made; `source` is that function's code."""

    #: the generated code of ``replay(r0, r1, ...)``
    source: str
    #: the compiled replay: input handles in, a tuple of output handles out
    replay: Callable[..., tuple]
    #: (shape, dtype) of each output, in order
    outputs: list[tuple[tuple[int, ...], DType]]
    #: whether the function returned one tensor (else a tuple of them)
    single: bool
    #: the number of backend calls a replay makes
    calls: int


class _Recorder:
    """Records the outermost backend calls of one thread as lines of the replay's code."""

    def __init__(self, inputs: Sequence[Any]) -> None:
        self.thread = threading.get_ident()
        self.depth = 0  # > 0 inside a recorded call: a backend calling itself is not recorded
        self.refused: str | None = None
        self.registers: dict[int, int] = {}  # id of a handle -> its register
        self.alive: list[Any] = []  # every handle seen, so that no id is reused
        # the replay's lines: (code, registers it reads, registers it defines)
        self.lines: list[tuple[str, list[int], list[int]]] = []
        self.names: dict[str, Any] = {}  # the replay's constants and methods, by name
        for handle in inputs:
            if id(handle) in self.registers:
                raise _Refused("one handle is given as two inputs")
            self.define(handle)
        self.count = len(inputs)

    def refuse(self, reason: str) -> None:
        """Mark the run as one a replay cannot repeat (the first reason stays)."""
        if self.refused is None:
            self.refused = reason

    def guard(self, holds: Callable[[Tensor], bool], t: Tensor) -> None:
        """Add the line that checks ``holds`` of `t`'s replayed value (none where `t` is a
        constant: the decision is the same every time)."""
        reads: list[int] = []
        value = self.expression(t._h, reads)
        if reads:
            shape, dtype, device = t.shape, t.dtype, t.device
            check = self.constant(lambda h: holds(wrap(h, shape, dtype, device)),
                                  f"guard{len(self.names)}")
            self.lines.append((f"if not {check}({value}): raise Diverged", reads, []))

    def effect(self, change: Callable[..., None], handles: Sequence[Any]) -> None:
        """Add the line that calls `change` with the replayed `handles`."""
        reads: list[int] = []
        values = [self.expression(h, reads) for h in handles]
        name = self.constant(change, f"effect{len(self.names)}")
        self.lines.append((f"{name}({', '.join(values)})", reads, []))

    def define(self, handle: Any) -> int:
        register = len(self.alive)
        self.registers[id(handle)] = register
        self.alive.append(handle)
        return register

    def constant(self, value: Any, name: str = "") -> str:
        """The name of `value` in the replay's code: `name` where given, else a new one."""
        name = name or f"c{len(self.names)}"
        self.names[name] = value
        return name

    def expression(self, value: Any, reads: list[int]) -> str:
        """`value` as the replay's code writes it: a register, a literal or a constant."""
        if isinstance(value, tuple):
            inner = ", ".join(self.expression(v, reads) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if isinstance(value, list):
            return "[" + ", ".join(self.expression(v, reads) for v in value) + "]"
        if not isinstance(value, _PLAIN):
            register = self.registers.get(id(value))
            if register is not None:
                reads.append(register)
                return f"r{register}"
        if type(value) in _LITERALS or type(value) is float and math.isfinite(value):
            return repr(value)
        if isinstance(value, DType):
            return self.constant(value, value.name)
        return self.constant(value)

    def target(self, out: Any, made: list[int]) -> str:
        """The left-hand side that takes a call's result `out`: a new register for each
        handle in it (added to `made`)."""
        if isinstance(out, tuple):
            return "(" + "".join(self.target(v, made) + ", " for v in out) + ")"
        if out is None:
            return "_"
        if isinstance(out, _PLAIN):
            raise _Refused("a backend call returned a host value")
        made.append(self.define(out))
        return f"r{made[-1]}"

    def record(self, name: str, method: Callable[..., Any], args: tuple,
               kwargs: dict[str, Any], out: Any) -> None:
        """Add the line of the call ``method(*args, **kwargs)`` (the backend's `name`), which
        gave `out`."""
        reads: list[int] = []
        parts = [self.expression(a, reads) for a in args]
        parts += [f"{key}={self.expression(v, reads)}" for key, v in kwargs.items()]
        if not reads:  # computed from constants alone: its result is one too
            if isinstance(out, _PLAIN) or isinstance(out, tuple) and any(
                    isinstance(v, _PLAIN) and v is not None for v in out):
                raise _Refused("a backend call returned a host value")
            return
        code = self.constant(method, name)
        made: list[int] = []
        target = self.target(out, made)
        self.lines.append((f"{target} = {code}({', '.join(parts)})", reads, made))

    def finish(self, results: Sequence[Tensor], single: bool) -> Capture:
        """The capture of the recorded run, whose results are `results` (`single`: the
        function returned the one tensor, not a tuple)."""
        reads: list[int] = []
        returned = [self.expression(t._h, reads) for t in results]
        if any(not r.startswith("r") for r in returned):
            raise _Refused("an output is not computed from the inputs by the backend")
        # each register not returned is deleted after the line that reads it last (or,
        # never read, the line that made it): memory goes back as soon as the run would
        # have let it go
        after: dict[int, int] = {}
        for k, (_, used, made) in enumerate(self.lines):
            after.update((r, k) for r in (*made, *used))
        gone: list[list[int]] = [[] for _ in self.lines]
        for r, k in after.items():
            if r not in reads:
                gone[k].append(r)
        body = []
        for (code, _, _), dead in zip(self.lines, gone):
            body.append("    " + code)
            if dead:
                body.append("    del " + ", ".join(f"r{r}" for r in sorted(dead)))
        params = ", ".join(f"r{r}" for r in range(self.count))
        source = (f"def replay({params}):\n" + "\n".join(body) +
                  f"\n    return ({''.join(r + ', ' for r in returned)})\n")
        scope = dict(self.names, Diverged=Diverged)
        exec(compile(source, "<pyburn capture>", "exec"), scope)  # noqa: S102 (our own code)
        return Capture(source, scope["replay"], [(t.shape, t.dtype) for t in results],
                       single, len(self.lines))


#: one capture at a time in the process (the backend's methods are swapped for its
#: recording ones while it runs)
_lock = threading.Lock()
#: the recorder of the capture running now, or None
_active: _Recorder | None = None


def refuse(reason: str) -> None:
    """Tell a capture in progress on this thread that the run did something a replay cannot
    repeat (`reason`), so that it is not captured; nothing otherwise. Code that computes on
    handles outside the backend's methods (a `pyburn.kernel` launch) calls it."""
    recorder = _recorder()
    if recorder is not None:
        recorder.refuse(reason)


def _recorder() -> _Recorder | None:
    """The recorder of the capture running on this thread, or None."""
    recorder = _active
    return recorder if recorder is not None and recorder.thread == threading.get_ident() \
        else None


class Diverged(Exception):
    """Raised by a replay whose guard (`guard`) fails: the function runs plainly instead."""


@contextmanager
def aside() -> Iterator[None]:
    """A block whose backend calls a capture in progress on this thread neither records
    nor refuses (a check's reads, which a `guard` repeats); nothing otherwise."""
    recorder = _recorder()
    if recorder is None:
        yield
        return
    recorder.depth += 1
    try:
        yield
    finally:
        recorder.depth -= 1


def effect(change: Callable[..., None], *handles: Any) -> None:
    """Call ``change(*handles)`` (backend handles) now and, where a capture is in progress on
    this thread, on every replay with the replayed handles: a change the run makes outside
    the backend that each run must make again (a GPU's pending index checks take in each
    run's verdict). Its own backend calls are not recorded."""
    recorder = _recorder()
    if recorder is None:
        change(*handles)
        return
    with aside():
        change(*handles)
    if recorder.refused is None:
        recorder.effect(change, handles)


def guard(holds: Callable[[Tensor], bool], t: Tensor) -> None:
    """Where a capture is in progress on this thread and `t` is computed from the inputs:
    make a replay first check ``holds(t)`` on the replayed value and run the function
    plainly where it does not hold. A decision the caller took from `t`'s values (its reads
    inside `aside`) stands in the capture only while the values would take it again: an
    index check's bounds, say."""
    recorder = _recorder()
    if recorder is not None and recorder.refused is None:
        recorder.guard(holds, t)


def record(fn: Callable[..., Any], args: Sequence[Tensor]) -> tuple[Any, Capture | str]:
    """Run ``fn(*args)`` with its backend calls recorded: its result, and the `Capture` of
    the run or why there is none."""
    global _active
    backend = args[0].device.backend
    if not _lock.acquire(blocking=False):
        return fn(*args), "another capture is running"
    saved: dict[str, Any] = {}
    try:
        try:
            recorder = _Recorder([t._h for t in args])
        except _Refused as why:
            return fn(*args), str(why)
        for name in _instrumented(backend):
            saved[name] = backend.__dict__.get(name, _MISSING)
            setattr(backend, name, _recording(recorder, name, getattr(backend, name)))
        _active = recorder
        out = fn(*args)
    finally:
        _active = None
        for name, value in saved.items():
            if value is _MISSING:
                delattr(backend, name)
            else:
                setattr(backend, name, value)
        _lock.release()
    results = [out] if isinstance(out, Tensor) else list(out) if isinstance(out, tuple) \
        else None
    reason = recorder.refused
    if reason is None and (results is None or not all(isinstance(t, Tensor) for t in results)):
        reason = "the function returned something other than tensors"
    if reason is not None:
        return out, reason
    assert results is not None
    try:
        return out, recorder.finish(results, isinstance(out, Tensor))
    except _Refused as why:
        return out, str(why)


_MISSING = object()


def _instrumented(backend: Backend) -> list[str]:
    """The backend's methods a recorder replaces: every public one it has."""
    names = REPLAYED | UNREPEATABLE | QUERIES
    names.update(n for n in dir(type(backend)) if not n.startswith("_"))
    return sorted(n for n in names if not isinstance(getattr(type(backend), n, None), property)
                  and callable(getattr(backend, n, None)))


def _recording(recorder: _Recorder, name: str, method: Callable[..., Any]
               ) -> Callable[..., Any]:
    """`method` recording its outermost calls on the recorder's thread (other threads' calls
    and a backend's calls of its own methods run as they are)."""
    query, replayed = name in QUERIES, name in REPLAYED

    def call(*args: Any, **kwargs: Any) -> Any:
        if recorder.depth or threading.get_ident() != recorder.thread:
            return method(*args, **kwargs)
        if query:
            answer = method(*args, **kwargs)
            if name == "queue_range_check" and answer:
                recorder.refuse(f"the backend's {name} says it checks indices itself")
            return answer
        if not replayed:
            recorder.refuse(f"it called the backend's {name}")
        recorder.depth += 1
        try:
            out = method(*args, **kwargs)
        finally:
            recorder.depth -= 1
        if recorder.refused is None:
            try:
                recorder.record(name, method, args, kwargs, out)
            except _Refused as why:
                recorder.refuse(str(why))
        return out

    return call


def enabled() -> bool:
    """Whether capturing is on (``$PYBURN_CAPTURE`` is not "0", "false", "off" or "no")."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "off", "no")


def _no_key() -> None:
    """`Captured`'s default key: nothing but the signature decides a run."""


@dataclass
class _Entry:
    """What `Captured` knows about one signature."""

    runs: int = 0
    capture: Capture | None = None
    #: the state's handles when `capture` was made
    state: list[Any] = field(default_factory=list)
    refused: str | None = None


class Captured:
    """`fn` (tensors in, a tensor or a tuple of tensors out) captured per signature and
    replayed (see the module docstring). `state` gives the tensors whose values the function
    reads besides its arguments (a module's parameters and buffers): a capture is replayed
    only while each of them holds the handle it had then. `key` gives whatever else decides
    what the function does (a module's training flag), compared as part of the signature.
    Calls that record gradients, run under an ONNX export's trace or pass anything but
    tensors of one device run `fn` as it is. The `limit` signatures used last are kept (a
    text model called with every sequence length would otherwise keep a capture of each).

    >>> import pyburn
    >>> w = pyburn.ones(3, 2, device="flex")
    >>> f = Captured(lambda x: (x @ w).relu(), state=lambda: (w,))
    >>> [f(pyburn.full((1, 3), float(k), device="flex")).tolist() for k in range(3)]
    [[[0.0, 0.0]], [[3.0, 3.0]], [[6.0, 6.0]]]
    >>> print(f.entries[((((1, 3), pyburn.float32),), w.device, None)].capture.source)
    def replay(r0):
        r1 = matmul(r0, c0)
        del r0
        r2 = unary('relu', r1, float32)
        del r1
        return (r2, )
    <BLANKLINE>
    """

    def __init__(self, fn: Callable[..., Any],
                 state: Callable[[], Iterable[Tensor]] = tuple,
                 key: Callable[[], Any] = _no_key, limit: int = 16) -> None:
        self.fn = fn
        self.state = state
        self.key = key
        self.limit = limit
        #: what is known of each signature, the one used last at the end
        self.entries: OrderedDict[Any, _Entry] = OrderedDict()

    def __call__(self, *args: Any) -> Any:
        if not args or not all(isinstance(t, Tensor) for t in args) or not enabled() \
                or _tensor._tracer is not None or _active is not None:
            return self.fn(*args)
        device: Device = args[0].device
        if any(t.device is not device for t in args):
            return self.fn(*args)
        state = list(self.state())
        if device.is_autodiff and is_grad_enabled() and any(
                t.requires_grad for t in (*args, *state)):
            return self.fn(*args)
        signature = (tuple((t.shape, t.dtype) for t in args), device, self.key())
        entry = self.entries.get(signature)
        if entry is None:
            entry = self.entries[signature] = _Entry()
            if len(self.entries) > self.limit:
                self.entries.popitem(last=False)
        else:
            self.entries.move_to_end(signature)
        capture = entry.capture
        if capture is not None:
            if len(state) == len(entry.state) and all(
                    map(is_, map(_handle_of, state), entry.state)):
                try:
                    handles = capture.replay(*[t._h for t in args])
                except Diverged:  # values that decide otherwise: run it as it is
                    return self.fn(*args)
                out = [wrap(h, shape, dtype, device)
                       for h, (shape, dtype) in zip(handles, capture.outputs)]
                return out[0] if capture.single else tuple(out)
            entry.capture, entry.runs = None, 0  # new weights: run, then capture again
        if entry.refused is not None or entry.runs == 0:
            entry.runs += 1
            return self.fn(*args)
        out, made = record(self.fn, args)
        if isinstance(made, str):
            entry.refused = made
        else:
            entry.capture, entry.state = made, [t._h for t in state]
        return out

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and copied without the captures (their code is made at run time, and
        their handles are the original's)."""
        return {"fn": self.fn, "state": self.state, "key": self.key, "limit": self.limit}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, entries=OrderedDict())

    def reasons(self) -> dict[Any, str]:
        """Why each refused signature is not captured."""
        return {sig: e.refused for sig, e in self.entries.items() if e.refused is not None}
