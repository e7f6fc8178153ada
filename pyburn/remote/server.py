"""`pyburn serve`: a local device served over WebSocket to `remote+ws://` clients.

Each connection is a session with tensors of its own, served on a thread of its own;
closing or dropping the connection frees them all. One session at a time runs backend work
(a lock), each in the order its frames came. Uses the `websockets` library (``pip install
'pyburn[remote]'``).
"""

from __future__ import annotations

import hmac
import ipaddress
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import buffer
from ..devices import Device
from ..devices import device as as_device
from ..dtypes import DType, bool_
from ..errors import ArgumentError, IndexOutOfRange, MissingExtraError
from ..ops.capability import CAPABILITIES
from .protocol import TASKS, VERSION
from .wire import HandleId, LocalRef, ParamRef, ValueRef, WireError, pack, unpack


@dataclass(frozen=True)
class Limits:
    """What one session may use: the bytes of tensor memory it holds, the largest frame
    (bytes), the most tensors it holds at once, the most graphs it registers and tasks in
    one graph, the most frames received and not yet run (with the tasks per graph, this
    bounds its pending ops), how long it may stay silent (seconds) before the server
    closes it, and how long (seconds) the opening handshake (TLS, the HTTP upgrade) and
    then the client's hello may take."""

    memory_bytes: int = 4 << 30
    frame_bytes: int = 256 << 20
    handles: int = 1 << 20
    graphs: int = 4096
    graph_tasks: int = 4096
    queued_frames: int = 16
    idle_seconds: float = 600.0
    # (websockets' own default is 10 s; on a machine loaded by a test run on every core a
    # wss:// handshake once went unanswered, which a longer bound makes less likely)
    open_seconds: float = 30.0
    hello_seconds: float = 10.0


class SessionError(Exception):
    """A request this session cannot have: (kind, message) for its error answer."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class _Run:
    """What one run of a graph binds its references to: the ids its tasks' handles get (from
    `first` on), its input handles' ids (`params`) and its `values`."""

    __slots__ = ("handles", "first", "params", "values")

    def __init__(self, handles: dict[int, Any], first: int, params: tuple, values: tuple):
        self.handles, self.first, self.params, self.values = handles, first, params, values

    def handle(self, ident: int) -> Any:
        """The handle under `ident`."""
        found = self.handles.get(ident)
        if found is None:
            raise SessionError("task", f"no tensor {ident} in this session (a task that made it "
                                       "failed, or it was dropped)")
        return found

    def param(self, j: int) -> Any:
        """The handle of the `j`-th input."""
        if j >= len(self.params):
            raise SessionError("protocol", f"a graph's ParamRef {j}, of {len(self.params)}")
        return self.handle(self.params[j])

    def value(self, j: int) -> Any:
        """The `j`-th input value."""
        if j >= len(self.values):
            raise SessionError("protocol", f"a graph's ValueRef {j}, of {len(self.values)}")
        return self.values[j]


Binder = Callable[[_Run], Any]


def _binder(value: Any, graph_id: int) -> Binder | None:
    """What `value`, an argument in a registered graph, is in a run: a function of the run,
    or None for a value that stands for itself."""
    if isinstance(value, LocalRef):
        k = value.index
        return lambda run: run.handle(run.first + k)
    if isinstance(value, ParamRef):
        j = value.index
        return lambda run: run.param(j)
    if isinstance(value, ValueRef):
        j = value.index
        return lambda run: run.value(j)
    if isinstance(value, HandleId):
        raise SessionError("protocol", f"graph {graph_id} names a handle by id: a graph "
                                       "refers to handles by LocalRef and ParamRef")
    if isinstance(value, tuple):
        parts = [(_binder(v, graph_id), v) for v in value]
        if all(bind is None for bind, _ in parts):
            return None
        return lambda run: tuple(v if bind is None else bind(run) for bind, v in parts)
    return None


#: how a top-level argument of a task in a graph is bound in a run (`_Step.slots`)
_LOCAL, _PARAM, _VALUE, _NESTED = range(4)


@dataclass(frozen=True)
class _Step:
    """One task of a registered graph: its name, the function that runs it, how many handles
    it makes, and its arguments: `args` as registered, with the references among them at
    `slots`, each (position, kind, index, or for a sequence holding references its
    binder)."""

    name: str
    method: Callable[..., Any]
    outputs: int
    args: tuple
    slots: tuple[tuple[int, int, Any], ...]

    @classmethod
    def compile(cls, name: str, method: Callable[..., Any], outputs: int, args: tuple,
                graph_id: int) -> _Step:
        """The step of task `name` with the registered `args`."""
        slots: list[tuple[int, int, Any]] = []
        for pos, arg in enumerate(args):
            for ref, kind in ((LocalRef, _LOCAL), (ParamRef, _PARAM), (ValueRef, _VALUE)):
                if isinstance(arg, ref):
                    slots.append((pos, kind, arg.index))
                    break
            else:
                bind = _binder(arg, graph_id)
                if bind is not None:
                    slots.append((pos, _NESTED, bind))
        return cls(name, method, outputs, args, tuple(slots))

    def bind(self, run: _Run) -> tuple | list:
        """The arguments in `run`; KeyError for a handle the session lacks, IndexError for a
        reference past what the run passes in."""
        if not self.slots:
            return self.args
        args = list(self.args)
        handles, first, params, values = run.handles, run.first, run.params, run.values
        for pos, kind, j in self.slots:
            if kind == _LOCAL:
                args[pos] = handles[first + j]
            elif kind == _PARAM:
                args[pos] = handles[params[j]]
            elif kind == _VALUE:
                args[pos] = values[j]
            else:
                args[pos] = j(run)
        return args


class Session:
    """One client's tensors on the served device, its registered graphs, and the first
    failure of its queued tasks not yet reported."""

    def __init__(self, backend: Any, limits: Limits):
        self.backend = backend
        self.limits = limits
        self.handles: dict[int, Any] = {}
        self.graphs: dict[int, tuple[_Step, ...]] = {}
        self.failure: SessionError | None = None
        #: bytes of the buffers the session's tensors hold (each buffer counted once)
        self.memory = 0
        self._storage_of: dict[int, int] = {}  # handle id -> id of its buffer
        self._buffers: dict[int, list[int]] = {}  # id of a buffer -> [bytes, handles on it]

    def keep(self, ident: int, handle: Any) -> None:
        """Hold `handle` under `ident`, counting its buffer; a "limit" error, and nothing
        kept, if that would take the session past its memory limit."""
        try:
            buffer_of, size = self.backend.footprint(handle)
        except Exception:  # a task of a hand-written frame that gave back no tensor
            raise SessionError("task", f"no tensor came of the task for id {ident}") from None
        self.forget(ident)  # an id used again replaces its tensor (before its buffer counts)
        key = id(buffer_of)
        entry = self._buffers.get(key)
        if entry is None:
            if self.memory + size > self.limits.memory_bytes:
                raise SessionError("limit", f"the session would hold {self.memory + size:,} "
                                            "bytes of tensor memory, past its limit of "
                                            f"{self.limits.memory_bytes:,}")
            entry = self._buffers[key] = [size, 0]
            self.memory += size
        entry[1] += 1
        self.handles[ident] = handle
        self._storage_of[ident] = key

    def forget(self, ident: int) -> None:
        """Let go of the handle under `ident` (if held), and of its buffer with the last."""
        if self.handles.pop(ident, None) is None:
            return
        key = self._storage_of.pop(ident)
        entry = self._buffers[key]
        entry[1] -= 1
        if entry[1] == 0:
            del self._buffers[key]
            self.memory -= entry[0]

    def close(self) -> None:
        """Let go of every tensor."""
        self.handles.clear()
        self._storage_of.clear()
        self._buffers.clear()
        self.memory = 0

    def register(self, graph_id: Any, tasks: Any) -> None:
        """Keep the graph `tasks` (``(task, args)`` pairs whose handles are `LocalRef`s and
        `ParamRef`s) under `graph_id`, compiled for its runs."""
        if not (isinstance(graph_id, int) and isinstance(tasks, tuple) and all(
                isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str)
                and isinstance(t[1], tuple) for t in tasks)):
            raise SessionError("protocol", "register takes (id, ((task, args), ...))")
        if graph_id not in self.graphs and len(self.graphs) >= self.limits.graphs:
            raise SessionError("limit", f"the session registered {self.limits.graphs} graphs, "
                                        "the most a session may")
        if len(tasks) > self.limits.graph_tasks:
            raise SessionError("limit", f"a graph of {len(tasks)} tasks; a session's graphs hold "
                                        f"at most {self.limits.graph_tasks}")
        steps = []
        for name, args in tasks:
            task = TASKS.get(name)
            method = None if task is None else getattr(self if task.session else self.backend,
                                                       name, None)
            if task is None or method is None:
                raise SessionError("protocol", f"unknown task {name!r} in graph {graph_id}, or "
                                               "one the served backend lacks")
            steps.append(_Step.compile(name, method, task.outputs, args, graph_id))
        self.graphs[graph_id] = tuple(steps)

    def run(self, graph_id: Any, params: Any, values: Any, first: Any) -> None:
        """Run registered graph `graph_id` on the handles `params` and the `values`, its
        handles kept under the ids from `first` on; the first failure is kept for the next
        request (later tasks fail on the handles it did not make)."""
        steps = self.graphs.get(graph_id) if isinstance(graph_id, int) else None
        if steps is None or not (isinstance(params, tuple) and isinstance(values, tuple)
                                 and isinstance(first, int)):
            raise SessionError("protocol", f"run of graph {graph_id!r}, which is not registered "
                                           "(or malformed arguments)")
        run = _Run(self.handles, first, params, values)
        handles, most = self.handles, self.limits.handles
        ident = first
        for step in steps:
            try:
                args = step.bind(run)
            except KeyError as exc:  # a task that made it failed, or it was dropped
                self.failure = self.failure or SessionError(
                    "task", f"{step.name}: no tensor {exc.args[0]} in this session (a task "
                            "that made it failed, or it was dropped)")
            except (IndexError, TypeError):
                self.failure = self.failure or SessionError(
                    "protocol", f"run of graph {graph_id}: {step.name} refers past the "
                                f"{len(params)} handles and {len(values)} values it was given")
            except SessionError as exc:
                self.failure = self.failure or exc
            else:
                try:
                    if len(handles) + step.outputs > most:
                        raise SessionError("limit", f"the session holds {len(handles)} "
                                                    f"tensors, the most a session may ({most})")
                    produced = step.method(*args)
                    if step.outputs == 1:
                        self.keep(ident, produced)
                    elif step.outputs:
                        for offset, handle in enumerate(produced):
                            if handle is not None:  # an optional output not asked for
                                self.keep(ident + offset, handle)
                except SessionError as exc:
                    self.failure = self.failure or exc
                except Exception as exc:  # the backend refused the arguments: report, go on
                    self.failure = self.failure or _task_error(step.name, exc)
            ident += step.outputs

    def drop(self, drops: Any) -> None:
        """Forget the handles of ``(first id, count)`` runs."""
        if not isinstance(drops, tuple):
            raise SessionError("protocol", "drop takes ((first id, count), ...)")
        for span in drops:
            if not (isinstance(span, tuple) and len(span) == 2
                    and all(isinstance(v, int) for v in span)):
                raise SessionError("protocol", "drop takes ((first id, count), ...)")
            start, count = span
            # a long run is walked over what the session holds, never over the count
            ids = (range(start, start + count) if count <= len(self.handles) else
                   [i for i in self.handles if start <= i < start + count])
            for i in ids:
                self.forget(i)

    def check_range(self, index: Any, ndim: Any, dtype: Any, floor: Any, size: Any, what: Any,
                    caller: Any, ignore: Any) -> None:
        """Raise an "index" error unless every entry of `index` but those equal to `ignore`
        (None: all) lies in ``[floor, size)`` (the client's `Backend.queue_range_check`, run
        here in order with the ops)."""
        if not (isinstance(ndim, int) and isinstance(dtype, DType) and isinstance(floor, int)
                and isinstance(size, int) and isinstance(what, str) and isinstance(caller, str)
                and (ignore is None or isinstance(ignore, int))):
            raise SessionError("protocol", "check_range takes (index, ndim, dtype, floor, size, "
                                           "what, caller, ignore)")
        be, axes = self.backend, tuple(range(ndim))
        if ignore is not None:  # the ignored entries count as `floor`
            kept = be.binary("ne", index, be.full((), ignore, dtype), bool_)
            index = be.where(kept, index, be.full((), floor, dtype))
        low, high = (buffer.unpack(be.to_bytes(be.reduce(op, index, axes), (), dtype), dtype)[0]
                     for op in ("min", "max"))
        if low < floor or high >= size:
            error = IndexOutOfRange.at(what, low if low < floor else high, size,
                                       f"in {caller}; checked on the server, reported at the "
                                       "next read")
            raise SessionError("index", str(error))

    def nll_loss(self, *args: Any) -> Any:
        """The backend's nll_loss; a target out of range is an "index" error (the client
        checked the targets before, so that check's error comes first)."""
        handle, bad = self.backend.nll_loss(*args)
        if bad is not None:
            raise SessionError("index", f"nll_loss: a target is out of range (target {bad})")
        return handle

    def execute(self, entry: Any) -> Any:
        """Run one ``(task, args, outs)`` whose args hold `HandleId`s; returns the task's
        value, where it has one."""
        if not (isinstance(entry, tuple) and len(entry) == 3 and isinstance(entry[0], str)
                and isinstance(entry[1], tuple) and isinstance(entry[2], tuple)):
            raise SessionError("protocol", "a task is (name, args, outs)")
        name, args, outs = entry
        task = TASKS.get(name)
        if task is None or task.session:
            raise SessionError("protocol", f"unknown task {name!r}")
        if len(outs) != task.outputs or not all(isinstance(i, int) for i in outs):
            raise SessionError("protocol", f"{name} gives {task.outputs} handles, got ids {outs}")
        if len(self.handles) + len(outs) > self.limits.handles:
            raise SessionError("limit", f"the session holds {len(self.handles)} tensors, the "
                                        f"most a session may ({self.limits.handles})")
        try:
            produced = getattr(self.backend, name)(*self._resolve(args))
            handles = produced if task.outputs > 1 else (produced,)
            value = None
            if task.value:
                handles, value = (produced[0],), produced[1]
            for i, handle in zip(outs, handles):
                self.keep(i, handle)
        except SessionError:
            raise
        except Exception as exc:  # the backend refused the arguments: report, keep serving
            raise _task_error(name, exc) from None
        return value

    def _resolve(self, value: Any) -> Any:
        if isinstance(value, HandleId):
            if value.id not in self.handles:
                raise SessionError("task", f"no tensor {value.id} in this session (a task that "
                                           "made it failed, or it was dropped)")
            return self.handles[value.id]
        if isinstance(value, tuple):
            return tuple(self._resolve(v) for v in value)
        return value

    def _unanswered(self, kind: str, body: tuple) -> None:
        """Carry out a message that has no answer."""
        if kind == "run" and len(body) == 2 and isinstance(body[0], tuple):
            for run in body[0]:
                if not (isinstance(run, tuple) and len(run) == 4):
                    raise SessionError("protocol", "a run is (graph, params, values, first)")
                self.run(*run)
            self.drop(body[1])
        elif kind == "register" and len(body) == 2:
            self.register(*body)
        elif kind == "drop" and len(body) == 1:
            self.drop(body[0])
        else:
            raise SessionError("protocol", f"{kind} with {len(body)} items")

    def answer(self, message: Any) -> bytes | None:
        """The answer to one request after the hello, or None for those that have none."""
        if not isinstance(message, tuple) or not message or not isinstance(message[0], str):
            raise SessionError("protocol", "a message is a list whose first item is its kind")
        kind, body = message[0], message[1:]
        if kind in ("run", "register", "drop"):  # no answer: a failure answers the next request
            try:
                self._unanswered(kind, body)
            except SessionError as exc:
                self.failure = self.failure or exc
            except Exception as exc:  # a malformed message nothing above caught
                self.failure = self.failure or SessionError(
                    "protocol", f"{kind}: {type(exc).__name__}: {exc}")
            return None
        if kind == "sync" and not body:  # the client's flow control: answered at once,
            return pack(("synced",))  # failures left for its next request
        if self.failure is not None:  # a queued task failed: this request answers for it
            failure, self.failure = self.failure, None
            raise failure
        if kind == "read" and len(body) == 3:
            ident, shape, dtype = body
            if not isinstance(ident, int) or not isinstance(shape, tuple):
                raise SessionError("protocol", "read takes (id, shape, dtype)")
            handle = self._resolve(HandleId(ident))
            try:
                return pack(("data", self.backend.to_bytes(handle, shape, dtype)))
            except Exception as exc:
                raise _task_error("read", exc) from None
        if kind == "call" and len(body) == 3:
            return pack(("result", self.execute(tuple(body))))
        raise SessionError("protocol", f"unknown request {kind!r} with {len(body)} items")


def _task_error(name: str, exc: Exception) -> SessionError:
    return SessionError("task", f"{name}: {type(exc).__name__}: {exc}")


def _error(kind: str, message: str) -> bytes:
    return pack(("error", kind, message))


class Server:
    """A device served to remote clients: `serve` runs it, each connection a session on its
    own thread, the backend's work done by one session at a time; `sessions` counts the open
    ones, `tensors` the tensors they hold and `memory` their bytes (the counters the tests
    watch). A browser's page connects only from one of `origins` (no page may by default,
    so that a site the user visits cannot use a server of their machine)."""

    def __init__(self, device: Device, *, token: str | None = None, max_sessions: int = 64,
                 limits: Limits = Limits(), origins: tuple[str, ...] = ()):
        self.device = device.plain()
        self.token = token
        #: the web pages (their Origin header) whose scripts may connect; clients that are
        #: not browsers send none, and are always served
        self.origins = origins
        self.max_sessions = max_sessions
        self.limits = limits
        self.open: set[Session] = set()
        self._opening = threading.Lock()  # sessions open and close one at a time
        self._backend = threading.Lock()  # one session at a time runs backend work

    @property
    def sessions(self) -> int:
        """How many sessions are open."""
        return len(self.open)

    @property
    def tensors(self) -> int:
        """How many tensors the open sessions hold."""
        return sum(len(s.handles) for s in list(self.open))

    @property
    def memory(self) -> int:
        """Bytes of tensor memory the open sessions hold."""
        return sum(s.memory for s in list(self.open))

    def welcome(self) -> bytes:
        """The answer to a good hello: what the client's backend announces (the served
        backend's dtypes, optional dtypes and the capabilities whose methods are tasks)."""
        backend = self.device.backend
        dtypes = tuple(sorted(d.name for d in backend.dtypes))
        flags = tuple(sorted(c for c in backend.caps if c in ("float16", "float64", "int64")
                             or c in CAPABILITIES and all(m in TASKS
                                                          for m in CAPABILITIES[c].methods)))
        return pack(("welcome", VERSION, backend.name, dtypes, flags))

    def check_hello(self, message: Any) -> None:
        """Raise SessionError unless `message` is a hello this server accepts."""
        if not (isinstance(message, tuple) and len(message) == 4 and message[0] == "hello"):
            raise SessionError("protocol", "the first message is (hello, version, device, token)")
        _, version, index, token = message
        if version != VERSION:
            raise SessionError("protocol", f"protocol version {version!r}; this server speaks "
                                           f"{VERSION}")
        if index != 0:
            raise SessionError("protocol", f"device {index!r}: this server serves one device, "
                                           "index 0")
        if self.token is not None and not (isinstance(token, str) and hmac.compare_digest(
                token.encode(), self.token.encode())):
            raise SessionError("auth", "wrong token")
        if len(self.open) >= self.max_sessions:
            raise SessionError("limit", f"the server has {self.max_sessions} sessions open, its "
                                        "most")

    def handle(self, connection: Any) -> None:
        """One client's session, from its hello to its close (on the connection's thread)."""
        session = Session(self.device.backend, self.limits)
        try:
            first = connection.recv(timeout=self.limits.hello_seconds)
            with self._opening:
                self.check_hello(unpack(first))
                self.open.add(session)
        except (SessionError, WireError) as exc:
            connection.send(_error(getattr(exc, "kind", "protocol"), str(exc)))
            return
        except Exception:  # silent past the hello's time, or gone
            return
        try:
            connection.send(self.welcome())
            while True:
                frame = connection.recv(timeout=self.limits.idle_seconds)
                try:
                    message = unpack(frame)
                    with self._backend:
                        reply = session.answer(message)
                except (SessionError, WireError) as exc:
                    reply = _error(getattr(exc, "kind", "protocol"), str(exc))
                except Exception as exc:  # a request malformed in a way nothing above caught
                    reply = _error("protocol", f"{type(exc).__name__}: {exc}")
                if reply is not None:
                    connection.send(reply)
        except Exception:  # closed, idle too long, or gone: the session ends
            pass
        finally:
            with self._opening:
                self.open.discard(session)
            with self._backend:
                session.close()

    def serve(self, host: str, port: int, ready: Callable[[int], None] | None = None,
              stop: threading.Event | None = None, tls: ssl.SSLContext | None = None) -> None:
        """Serve until `stop` is set (forever without one), over TLS with `tls`; `ready(port)`
        is called once listening (port 0 picks a free one). Stopping closes every session."""
        try:
            from websockets.sync.server import serve  # optional: pyburn[remote]
        except ImportError:
            raise MissingExtraError("pyburn serve needs websockets: pip install "
                                    "'pyburn[remote]'") from None
        with serve(self.handle, host, port, max_size=self.limits.frame_bytes,
                   max_queue=self.limits.queued_frames, compression=None, ssl=tls,
                   open_timeout=self.limits.open_seconds,
                   origins=[None, *self.origins]) as server:  # type: ignore[list-item]
            if ready is not None:
                ready(server.socket.getsockname()[1])
            if stop is None:
                server.serve_forever()
                return
            accepting = threading.Thread(target=server.serve_forever, daemon=True,
                                         name="pyburn-serve")
            accepting.start()
            stop.wait()
            server.shutdown()  # closes every connection, and waits for their sessions' ends
            accepting.join(30)


def check_binding(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token."""
    try:
        local = ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = host == "localhost"
    if not local and token is None:
        raise ArgumentError(f"serving on {host} (beyond this machine) needs a token: "
                            "--token-file FILE")


class Background:
    """A server on a thread of this process, for tests and notebooks: ``with
    Background("cpu") as served: pyburn.device(served.address)``."""

    def __init__(self, device: str | Device = "cpu", **options: Any):
        self.server = Server(as_device(device), **options)
        self.port = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        """The device string clients connect with."""
        return f"remote+ws://127.0.0.1:{self.port}"

    def __enter__(self) -> Background:
        started = threading.Event()

        def ready(port: int) -> None:
            self.port = port
            started.set()

        self._thread = threading.Thread(
            target=self.server.serve, args=("127.0.0.1", 0, ready, self._stop), daemon=True,
            name="pyburn-serve-main")
        self._thread.start()
        if not started.wait(30):
            raise TimeoutError("the server did not start within 30 s")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._thread is not None
        self._stop.set()
        self._thread.join(30)
