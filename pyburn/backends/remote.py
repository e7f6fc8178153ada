"""remote: a device served by another process (`pyburn serve`), reached over WebSocket:
``pyburn.device("remote+ws://127.0.0.1:3000")``.

The client is a backend like the others. Its handles are ids it picks itself, so an op costs
no round trip: queued ops form graphs (`_Batch`), each registered on the server the first
time it is seen and run by id from then on, and sent as soon as it ends (a training loop's
ops recur, and so do its graphs). Tensors stay on the server until read; a handle the client
drops is forgotten there with the next frame. Autodiff runs on the client, as for any device
(``.autodiff()``). Errors of queued ops, and the range checks of index tensors, surface at
the next read. Protocol: ``pyburn/remote/protocol.py`` and docs/remote.md. Needs the
`websockets` library (``pip install 'pyburn[remote]'``).
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from ..dtypes import DType, as_dtype
from ..errors import DeviceError, IndexOutOfRange, ReadbackError, RemoteError
from ..remote.connection import Connection, PageConnection, SocketConnection
from ..remote.protocol import TASKS, VERSION
from ..remote.wire import HandleId, LocalRef, ParamRef, ValueRef, pack, unpack
from ..runtime import IN_BROWSER, run_sync
from .base import Backend, Registration, Shape

#: where a graph ends: once it holds MIN_TASKS tasks, where the signatures of its last WINDOW
#: tasks are those of the WINDOW tasks before it began (the op stream has come round: a
#: training loop's ops recur every step, and so do its graphs, each a whole number of
#: steps); or, while those have not come round (it began outside the loop), where the last
#: WINDOW repeat any WINDOW it met (`RemoteBackend._queue`)
WINDOW = 8
MIN_TASKS = 32
#: the most tasks in one graph (a stream of ops that never recurs is cut here)
GRAPH_TASKS = 512
#: ... or once its values hold this many bytes (uploads)
GRAPH_BYTES = 8 << 20
#: a frame is sent once the runs of graphs it holds have this many tasks (or at a read)
FRAME_TASKS = 32
#: every SYNC_FRAMES frames of runs the client waits until the server has run those before
SYNC_FRAMES = 8
#: how long the client waits for the server to answer (seconds)
TIMEOUT = 60.0
#: the most graphs a client registers (the server allows 4096 per session)
MAX_GRAPHS = 1024


class RemoteHandle:
    """A tensor on the server, by id; when the client lets go of it, the server is told."""

    __slots__ = ("id", "client", "__weakref__")

    def __init__(self, ident: int, client: RemoteBackend):
        self.id = ident
        self.client = client

    def __del__(self) -> None:
        self.client.dropped.append(self.id)  # a list append: safe from any thread

    def __repr__(self) -> str:
        return f"<remote tensor {self.id}>"


def _wire_args(args: tuple) -> tuple:
    """Arguments as a "call" carries them: handles as their ids, sequences as tuples."""
    out: list[Any] = []
    for a in args:
        if isinstance(a, RemoteHandle):
            out.append(HandleId(a.id))
        elif isinstance(a, (list, tuple)):
            out.append(_wire_args(tuple(a)))
        else:
            out.append(a)
    return tuple(out)


def _runs(ids: list[int]) -> tuple[tuple[int, int], ...]:
    """`ids` as (first, count) runs of consecutive ids: one step's intermediates are a few."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1][1] += 1
        else:
            runs.append([i, 1])
    return tuple((first, count) for first, count in runs)


# In a batch's graph, the references are (tag, index) pairs with these private tags, so that
# a graph is a tuple of plain values: hashed and compared in C when the client looks it up
# among those it registered (its `wire` form, with `LocalRef`s and so on, is made once).
# A float (as its hex form) or bool in a graph is a (tag, value) pair too: 1, 1.0 and True
# are equal keys, and so are 0.0 and -0.0.
_LOCAL, _PARAM, _VALUE, _PLAIN = object(), object(), object(), object()
_REF = {_LOCAL: LocalRef, _PARAM: ParamRef, _VALUE: ValueRef}


class _Batch:
    """Queued tasks as a graph: the handles they make (ids from `first` on, in order) become
    local references, the handles they are given the run's `params`, and the arguments that
    change from run to run (`Task.values`: fill values, random offsets, uploaded bytes, an
    optimizer's step size) the run's `values`. A training step queues the same graphs
    every step, with new handles and values. `start` holds the signatures of the WINDOW
    tasks just before it, `recurred` whether they came round since, and `seen` the windows
    of signatures it met (see `WINDOW`)."""

    __slots__ = ("first", "start", "recurred", "seen", "tasks", "params", "values", "bytes")

    def __init__(self, first: int, start: tuple[int, ...]):
        self.first = first
        self.start = start if len(start) == WINDOW else None
        self.recurred = False
        self.seen: set[tuple[int, ...]] = set()
        self.tasks: list[tuple] = []
        self.params: dict[int, int] = {}
        self.values: list[Any] = []
        self.bytes = 0

    def add(self, name: str, args: tuple, values: tuple[int, ...]) -> int:
        """Queue `name(*args)`, whose arguments at positions `values` travel as values;
        returns the task's signature (its name and plain arguments, hashed)."""
        self.tasks.append((name, tuple(self._value(a) if i in values else self._ref(a)
                                       for i, a in enumerate(args))))
        return hash((name, *(a for i, a in enumerate(args)
                             if (type(a) is str or type(a) is int) and i not in values)))

    def ends_at(self, window: tuple[int, ...]) -> bool:
        """Whether the graph ends after its latest task, `window` the signatures of the
        latest WINDOW tasks (see `WINDOW`)."""
        if window == self.start:
            self.recurred = True
            return len(self.tasks) >= MIN_TASKS
        if self.recurred or len(window) < WINDOW:
            return False
        if len(self.tasks) >= MIN_TASKS and window in self.seen:
            return True
        self.seen.add(window)
        return False

    def _value(self, value: Any) -> tuple:
        self.values.append(value)
        return (_VALUE, len(self.values) - 1)

    def _ref(self, value: Any) -> Any:
        kind = type(value)
        if kind is RemoteHandle:
            local = value.id - self.first
            if local >= 0:  # made by this batch
                return (_LOCAL, local)
            return (_PARAM, self.params.setdefault(value.id, len(self.params)))
        if kind is tuple or kind is list:
            return tuple(self._ref(v) for v in value)
        if kind is float:  # exact, -0.0 apart from 0.0
            return (_PLAIN, value.hex())
        if kind is bool:
            return (_PLAIN, value)
        return value

    def wire(self) -> tuple:
        """The graph as the protocol sends it: references as `LocalRef`s, `ParamRef`s and
        `ValueRef`s."""
        def convert(value: Any) -> Any:
            if type(value) is tuple:
                if len(value) == 2 and value[0] is _PLAIN:
                    return float.fromhex(value[1]) if type(value[1]) is str else value[1]
                if len(value) == 2 and value[0] in _REF:
                    return _REF[value[0]](value[1])
                return tuple(convert(v) for v in value)
            return value
        return tuple((name, convert(args)) for name, args in self.tasks)


class RemoteBackend(Backend):
    """The client side of a `pyburn serve` session at `url` (ws:// or wss://)."""

    name = "remote"

    def __init__(self, url: str, token: str | None = None):
        self.url = url
        self.dropped: list[int] = []
        #: bytes sent to the server so far (frames as written)
        self.bytes_sent = 0
        # uploads by content: the same bytes, shape and dtype again give the same handle
        # (handles are immutable), so identical weights travel once
        self._uploads: weakref.WeakValueDictionary[tuple, RemoteHandle] = (
            weakref.WeakValueDictionary())
        self._next_id = 1  # the id of the next handle made
        self._graphs: dict[tuple, int] = {}  # registered graphs (`_Batch.tasks`) by id
        self._recent: deque[int] = deque(maxlen=WINDOW)  # the latest tasks' signatures
        self._batch = _Batch(self._next_id, ())
        self._runs: list[tuple] = []  # graphs' runs for the next frame, and their tasks
        self._run_tasks = 0
        self._frames = 0  # frames of runs sent
        self._lock = threading.RLock()  # one thread at a time queues and sends
        self._connection: Connection = (run_sync(PageConnection.open(url, TIMEOUT))
                                        if IN_BROWSER else SocketConnection(url, TIMEOUT))
        welcome = self._request(("hello", VERSION, 0, token))
        if welcome[0] != "welcome":
            raise RemoteError(f"unexpected answer to hello from {url}: {welcome[0]!r}")
        _, _, served, dtypes, flags = welcome
        self.served = served
        self.dtypes = frozenset(as_dtype(d) for d in dtypes)
        self.caps = frozenset(flags)

    # ---- the connection ------------------------------------------------------------------
    def _send(self, message: Any) -> None:
        frame = pack(message)
        self.bytes_sent += len(frame)
        self._connection.send(frame)

    async def _request_async(self, message: Any) -> tuple:
        """Send `message` and await its answer; an error answer raises RemoteError (or
        IndexOutOfRange, for a range check the server ran for the tensor layer)."""
        frame = pack(message)
        self.bytes_sent += len(frame)
        answer = unpack(await self._connection.request(frame, TIMEOUT))
        if answer[0] == "error":
            if answer[1] == "index":
                raise IndexOutOfRange(answer[2])
            raise RemoteError(f"{self.url}: {answer[2]} ({answer[1]})")
        return answer

    def _request(self, message: Any) -> tuple:
        """`_request_async`, waited for (at once on the desktop, through JSPI in a page)."""
        return run_sync(self._request_async(message))

    def flush(self) -> None:
        """Send the queued tasks (their graphs' runs) with the handles dropped since the last
        frame (as runs of consecutive ids)."""
        with self._lock:
            self._cut()
            self._send_runs()

    def _send_runs(self, drops: bool = True) -> None:
        """Send the runs waiting for a frame, and (with `drops`) the handles dropped so far:
        only when no task waits outside those runs, which may use them."""
        runs, self._runs, self._run_tasks = self._runs, [], 0
        dropped = [self.dropped.pop() for _ in range(len(self.dropped))] if drops else []
        if runs or dropped:
            self._send(("run", tuple(runs), _runs(dropped)))
            self._pace()

    def _pace(self) -> None:
        """Every `SYNC_FRAMES` frames, ask for a sign that the server has come this far, and
        wait for the previous one: a loop that never reads stays within two such spans of
        the server (and a client killed leaves it no long backlog)."""
        self._frames += 1
        if self._frames % SYNC_FRAMES:
            return
        self._connection.send(pack(("sync",)), answered=True)
        try:
            run_sync(self._connection.settle(1, TIMEOUT))
        except ReadbackError:  # a page that cannot wait here: its next read waits
            pass

    def _cut(self) -> None:
        """End the graph being queued; its run joins the next frame, which is sent once it
        holds `FRAME_TASKS` tasks (the server starts on them while the client queues more).
        A graph is registered the first time it is seen (from then on only its input
        handles, values and first id travel); past `MAX_GRAPHS`, graph 0 is registered anew
        each time."""
        batch = self._batch
        if not batch.tasks:
            return
        self._batch = _Batch(self._next_id, tuple(self._recent))
        key = tuple(batch.tasks)
        graph_id = self._graphs.get(key)
        if graph_id is None:
            if len(self._graphs) < MAX_GRAPHS:
                graph_id = self._graphs[key] = len(self._graphs) + 1
            else:  # graph 0 is replaced: the runs of its previous graph go first (the
                # drops wait: this graph's tasks may use them)
                graph_id = 0
                self._send_runs(drops=False)
            self._send(("register", graph_id, batch.wire()))
        self._runs.append((graph_id, tuple(batch.params), tuple(batch.values), batch.first))
        self._run_tasks += len(batch.tasks)
        if self._run_tasks >= FRAME_TASKS:
            self._send_runs()

    def _queue(self, task: str, args: tuple, size: int = 0) -> tuple[RemoteHandle, ...]:
        spec = TASKS[task]
        with self._lock:
            first = self._next_id
            self._next_id += spec.outputs
            outs = tuple(RemoteHandle(i, self) for i in range(first, first + spec.outputs))
            batch = self._batch
            self._recent.append(batch.add(task, args, spec.values))
            batch.bytes += size
            if batch.ends_at(tuple(self._recent)) or len(batch.tasks) >= GRAPH_TASKS or \
                    batch.bytes >= GRAPH_BYTES:
                self._cut()
        return outs

    def close(self) -> None:
        """End the session: the server frees every tensor it holds."""
        self._connection.close()

    # ---- the protocol --------------------------------------------------------------------
    def from_bytes(self, data: bytes | memoryview, shape: Shape, dtype: DType) -> RemoteHandle:
        """Upload: the bytes travel with the next batch, unless a live handle holds the same
        (then it is that handle)."""
        data = bytes(data)
        key = (hashlib.blake2b(data, digest_size=16).digest(), tuple(shape), dtype)
        found = self._uploads.get(key)
        if found is None:
            found = self._uploads[key] = self._queue("from_bytes", (data, key[1], dtype),
                                                     len(data))[0]
        return found

    def footprint(self, x: RemoteHandle) -> tuple[object, int]:
        """The handle itself and 0 bytes: a remote tensor's memory is its server's, which
        counts it."""
        return x, 0

    async def to_bytes_async(self, x: RemoteHandle, shape: Shape, dtype: DType) -> bytes:
        """Flush, then read the tensor's bytes back (`to_bytes` waits for this: at once on
        the desktop, through JSPI in a page)."""
        self.flush()
        return (await self._request_async(("read", x.id, tuple(shape), dtype)))[1]

    def nonzero(self, x: RemoteHandle) -> tuple[RemoteHandle, Shape]:
        """A round trip: the count of nonzero elements is the result's shape."""
        with self._lock:
            self.flush()
            out = RemoteHandle(self._next_id, self)
            self._next_id += 1
            self._batch = _Batch(self._next_id, tuple(self._recent))
            shape = self._request(("call", "nonzero", _wire_args((x,)), (out.id,)))[1]
        return out, tuple(shape)

    def queue_range_check(self, x: RemoteHandle, ndim: int, dtype: DType, floor: int,
                          size: int, what: str, caller: Callable[[], str],
                          ignore: int | None = None) -> bool:
        """Checked on the server, in order with the ops: an index out of range answers the
        next read, as IndexOutOfRange (no round trip now)."""
        self._queue("check_range", (x, ndim, dtype, floor, size, what, caller(), ignore))
        return True

    def nll_loss(self, *args: Any) -> tuple[RemoteHandle, None]:
        """``nll_loss`` on the server (queued): a bad target is reported at the next read
        (the tensor layer queued the targets' range check before)."""
        return self._queue("nll_loss", args)[0], None


def _forwarding(task: str) -> Any:
    """The method that queues `task` on the server."""
    spec = TASKS[task]

    def method(self: RemoteBackend, *args: Any) -> Any:
        outs: tuple = self._queue(task, args)
        if spec.optional:  # an output the arguments do not ask for is None
            absent = {k for k, j in spec.optional if args[j] is None or args[j] is False}
            outs = tuple(None if k in absent else h for k, h in enumerate(outs))
        return outs[0] if spec.outputs == 1 else outs

    method.__name__ = task
    method.__doc__ = f"``{task}`` on the server (queued)."
    return method


for _task, _spec in TASKS.items():
    if _task not in RemoteBackend.__dict__ and not _spec.session:  # written above, or the
        # server's own (check_range)
        setattr(RemoteBackend, _task, _forwarding(_task))


def _unavailable() -> str | None:
    if IN_BROWSER:
        import js  # type: ignore[import-not-found]  # Pyodide: the page's WebSocket

        return None if hasattr(js, "WebSocket") else "no WebSocket in this JavaScript runtime"
    try:
        import websockets  # noqa: F401  (optional: pyburn[remote])
    except ImportError:
        return "the remote device needs websockets (pip install 'pyburn[remote]')"
    return None


def _connect(address: str) -> RemoteBackend:
    """The session at `address` (ws://host:port, or wss:// for TLS), with the token in
    $PYBURN_REMOTE_TOKEN if the server wants one."""
    return RemoteBackend(address, os.environ.get("PYBURN_REMOTE_TOKEN"))


def _no_index(index: int) -> Backend:
    raise DeviceError("a remote device is named by its address: 'remote+ws://host:3000'")


REGISTRATION = Registration("remote", _unavailable, _no_index, None, connect=_connect)
