"""remote: a device served by another process (`pyburn serve`), reached over WebSocket:
``pyburn.device("remote+ws://127.0.0.1:3000")``.

The client is a backend like the others. Its handles are ids it picks itself, so an op costs
no round trip: ops are queued and sent in batches, flushed when a read (or a task whose
result the tensor layer needs at once) comes, or when the batch reaches `BATCH_TASKS` tasks or
`BATCH_BYTES` bytes. Tensors stay on the server until read; a handle the client drops is
forgotten there with the next batch. Autodiff runs on the client, as for any device
(``.autodiff()``). Errors of queued ops surface, as `RemoteError`, at the next read.
Protocol: ``pyburn/remote/protocol.py`` and docs/remote.md. Needs the `websockets` library
(``pip install 'pyburn[remote]'``).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import ssl
import threading
import weakref
from typing import Any

from ..dtypes import DType, as_dtype
from ..errors import DeviceError, MissingExtraError, RemoteError
from ..remote.protocol import TASKS, VERSION
from ..remote.wire import HandleId, LocalRef, ParamRef, ValueRef, pack, unpack
from .base import Backend, Registration, Shape

#: a batch is sent once it holds this many tasks or this many bytes of uploads
BATCH_TASKS = 512
BATCH_BYTES = 8 << 20
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
    """Arguments as the wire carries them: handles as their ids, sequences as tuples."""
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


def _as_graph(tasks: list[tuple]) -> tuple[tuple, tuple, tuple, int] | None:
    """A batch as (graph, input handles, input values, first output id): its handles become
    `LocalRef`s (made by the batch) and `ParamRef`s (passed in), and the fill value of each
    `full` a `ValueRef` (the tensor layer's scalars: an optimizer's step size changes every
    step, the graph does not); None for a batch that uploads bytes or whose outputs are not
    one run of ids (then it is sent as it is)."""
    first = next((outs[0] for _, _, outs in tasks if outs), None)
    if first is None:
        return None
    local: dict[int, int] = {}
    params: dict[int, int] = {}

    def ref(value: Any) -> Any:
        if isinstance(value, HandleId):
            if value.id in local:
                return LocalRef(local[value.id])
            return ParamRef(params.setdefault(value.id, len(params)))
        return tuple(ref(v) for v in value) if isinstance(value, tuple) else value

    graph = []
    values: list[Any] = []
    for name, args, outs in tasks:
        if name == "from_bytes":
            return None
        if name == "full" and len(args) == 3:  # (shape, value, dtype)
            values.append(args[1])
            args = (args[0], ValueRef(len(values) - 1), args[2])
        graph.append((name, ref(args)))
        for i in outs:
            if i != first + len(local):
                return None
            local[i] = len(local)
    return tuple(graph), tuple(params), tuple(values), first


class RemoteBackend(Backend):
    """The client side of a `pyburn serve` session at `url` (ws:// or wss://)."""

    name = "remote"

    def __init__(self, url: str, token: str | None = None):
        try:
            from websockets.sync.client import connect  # optional: pyburn[remote]
        except ImportError:
            raise MissingExtraError("the remote device needs websockets: pip install "
                                    "'pyburn[remote]'") from None
        self.url = url
        self.dropped: list[int] = []
        #: bytes sent to the server so far (frames as written)
        self.bytes_sent = 0
        # uploads by content: the same bytes, shape and dtype again give the same handle
        # (handles are immutable), so identical weights travel once
        self._uploads: weakref.WeakValueDictionary[tuple, RemoteHandle] = (
            weakref.WeakValueDictionary())
        self._ids = itertools.count(1)
        self._graphs: dict[bytes, int] = {}  # registered graphs by their digest
        self._tasks: list[tuple] = []
        self._bytes = 0
        self._lock = threading.Lock()
        tls = None
        if url.startswith("wss://"):  # the certificate is checked (against $PYBURN_REMOTE_CA
            # where set, else the system's authorities)
            tls = ssl.create_default_context(cafile=os.environ.get("PYBURN_REMOTE_CA"))
        self._open = contextlib.ExitStack()  # the connection, closed by `close`
        try:
            self._connection = self._open.enter_context(connect(
                url, open_timeout=TIMEOUT, close_timeout=5, max_size=None, compression=None,
                ssl=tls))
        except Exception as exc:
            raise RemoteError(f"cannot reach {url}: {exc}") from None
        welcome = self._request(("hello", VERSION, "", token))
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
        try:
            self._connection.send(frame)
        except Exception as exc:
            raise RemoteError(f"the connection to {self.url} is lost: {exc}") from None

    def _request(self, message: Any) -> tuple:
        """Send `message` and wait for its answer; an error answer raises RemoteError."""
        self._send(message)
        try:
            answer = unpack(self._connection.recv(timeout=TIMEOUT))
        except TimeoutError:
            raise RemoteError(f"{self.url} did not answer within {TIMEOUT:.0f} s") from None
        except RemoteError:
            raise
        except Exception as exc:
            raise RemoteError(f"the connection to {self.url} is lost: {exc}") from None
        if answer[0] == "error":
            raise RemoteError(f"{self.url}: {answer[2]} ({answer[1]})")
        return answer

    def flush(self) -> None:
        """Send the queued tasks (as a replay of a registered graph where this batch has
        been seen before) and the dropped handles (as runs of consecutive ids)."""
        with self._lock:
            tasks, self._tasks, self._bytes = self._tasks, [], 0
            dropped = [self.dropped.pop() for _ in range(len(self.dropped))]
        if tasks:
            self._send_batch(tasks)
        if dropped:
            self._send(("drop", _runs(dropped)))

    def _send_batch(self, tasks: list[tuple]) -> None:
        """A batch goes as a graph, registered the first time it is seen and replayed by id
        from then on, with only its inputs, fill values and first output id sent (a
        training step's batches recur every step); past `MAX_GRAPHS`, as a plain run."""
        graph = _as_graph(tasks)
        if graph is None:
            self._send(("run", tuple(tasks)))
            return
        template, params, values, first = graph
        key = hashlib.blake2b(pack(template), digest_size=16).digest()
        graph_id = self._graphs.get(key)
        if graph_id is None:
            if len(self._graphs) >= MAX_GRAPHS:
                self._send(("run", tuple(tasks)))
                return
            graph_id = self._graphs[key] = len(self._graphs) + 1
            self._send(("register", graph_id, template))
        self._send(("replay", graph_id, params, values, first))

    def _queue(self, task: str, args: tuple, size: int = 0) -> tuple[RemoteHandle, ...]:
        outs = tuple(RemoteHandle(next(self._ids), self) for _ in range(TASKS[task].outputs))
        with self._lock:
            self._tasks.append((task, _wire_args(args), tuple(h.id for h in outs)))
            self._bytes += size
            full = len(self._tasks) >= BATCH_TASKS or self._bytes >= BATCH_BYTES
        if full:
            self.flush()
        return outs

    def close(self) -> None:
        """End the session: the server frees every tensor it holds."""
        self._open.close()

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

    def to_bytes(self, x: RemoteHandle, shape: Shape, dtype: DType) -> bytes:
        """Flush, then read the tensor's bytes back."""
        self.flush()
        return self._request(("read", x.id, tuple(shape), dtype))[1]

    def nonzero(self, x: RemoteHandle) -> tuple[RemoteHandle, Shape]:
        """A round trip: the count of nonzero elements is the result's shape."""
        self.flush()
        out = RemoteHandle(next(self._ids), self)
        shape = self._request(("call", "nonzero", _wire_args((x,)), (out.id,)))[1]
        return out, tuple(shape)


def _forwarding(task: str) -> Any:
    """The method that queues `task` on the server."""
    one = TASKS[task].outputs == 1

    def method(self: RemoteBackend, *args: Any) -> Any:
        outs = self._queue(task, args)
        return outs[0] if one else outs

    method.__name__ = task
    method.__doc__ = f"``{task}`` on the server (queued)."
    return method


for _task in TASKS:
    if _task not in RemoteBackend.__dict__:  # from_bytes and nonzero are written above
        setattr(RemoteBackend, _task, _forwarding(_task))


def _unavailable() -> str | None:
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
