"""The remote device's protocol: the messages, and the one table of tasks a server runs.

Every frame is one MessagePack array (`wire`) whose first item names its kind. A client
sends, in order:

``("hello", VERSION, device, token)``
    once, first; the server answers ``("welcome", VERSION, backend name, dtypes, caps)`` or
    ``("error", kind, message)`` and closes.
``("run", tasks)``
    a batch of tasks, each ``(task, args, outs)``: the `Backend` method `task` (a key of
    `TASKS`) called with `args`, in which a `HandleId` stands for a tensor the session holds
    and a `DType` for a dtype; its result handles are kept under the ids `outs`, which the
    client chose. No answer: a failure is kept, and answers the session's next request.
``("read", id, shape, dtype)``
    the bytes of a tensor: ``("data", bytes)``.
``("call", task, args, outs)``
    a task whose result includes values the client needs at once (`nonzero`'s count):
    ``("result", value)``.
``("drop", ids)``
    forget these handles (no answer).

A request that fails is answered ``("error", kind, message)``: "limit" (a session limit),
"protocol" (a malformed frame, an unknown kind or task) or "task" (the backend raised). The
session goes on; a malformed frame never reaches the backend.
"""

from __future__ import annotations

from dataclasses import dataclass

#: bumped on any change a peer of the previous version would misread
VERSION = 1


@dataclass(frozen=True)
class Task:
    """One backend method a client may run remotely: how many handles it returns
    (`outputs`), and whether it returns a value besides them (`value`: then it is sent as a
    "call", whose answer carries that value)."""

    outputs: int = 1
    value: bool = False


#: every task a server runs, by the `Backend` method it calls; nothing else is callable
TASKS: dict[str, Task] = {
    **{name: Task() for name in (
        "from_bytes", "full", "arange", "random_bits", "unary", "binary", "where", "cast",
        "reduce", "arg_reduce", "scan", "reshape", "permute", "expand", "slice", "flip", "pad",
        "cat", "gather", "scatter", "index_select", "matmul")},
    "sort": Task(outputs=2),
    "nonzero": Task(outputs=1, value=True),
}
#: the message kinds a client sends
REQUESTS = ("hello", "run", "read", "call", "drop")
