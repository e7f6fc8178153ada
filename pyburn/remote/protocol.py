"""The remote device's protocol: the messages, and the one table of tasks a server runs.

Every frame is one MessagePack array (`wire`) whose first item names its kind. A client
sends, in order:

``("hello", VERSION, device, token)``
    once, first (`device` is the served device's index: 0, the one a server serves); the
    server answers ``("welcome", VERSION, backend name, dtypes, caps)`` or ``("error", kind,
    message)`` and closes.
``("register", graph_id, tasks)``
    a graph: tasks ``(task, args)``, each the `Backend` method `task` (a key of `TASKS`)
    called with `args`, in which a `LocalRef` stands for the k-th handle the graph's own
    tasks make, a `ParamRef` for the j-th handle a run passes in, a `ValueRef` for the j-th
    value a run passes in, and a `DType` for a dtype. No answer. Registering an id again
    replaces its graph.
``("run", graph_id, params, values, first, drops)``
    run a registered graph on the handles `params` and the `values`; the handles its tasks
    make are kept under the ids ``first, first + 1, ...`` in order (the client chose them);
    then the handles in `drops` (``(first id, count)`` runs) are forgotten. No answer: a
    failure is kept, and answers the session's next request.
``("read", id, shape, dtype)``
    the bytes of a tensor: ``("data", bytes)``.
``("call", task, args, outs)``
    a task whose result includes a value the client needs at once (`nonzero`'s count), with
    `HandleId`s for handles: ``("result", value)``.
``("drop", drops)``
    forget these handles (no answer).

A request that fails is answered ``("error", kind, message)``: "auth", "limit" (a session
limit), "protocol" (a malformed frame, an unknown kind or task), "index" (a range check of an
index failed) or "task" (the backend raised). The session goes on; a malformed frame never
reaches the backend.
"""

from __future__ import annotations

from dataclasses import dataclass

#: bumped on any change a peer of the previous version would misread
VERSION = 2


@dataclass(frozen=True)
class Task:
    """One method a client may run remotely: how many handles it returns (`outputs`),
    whether it returns a value besides them (`value`: then it is sent as a "call", whose
    answer carries that value), the positions of the arguments that change from one run of
    a graph to the next (`values`: fill values, random offsets; they travel with each run,
    not in the graph), and whether the server's session runs it itself (`session`) rather
    than its backend."""

    outputs: int = 1
    value: bool = False
    values: tuple[int, ...] = ()
    session: bool = False
    #: (output, argument) pairs: that output is a handle only where that argument is true
    #: (a handle, or True); else it is None
    optional: tuple[tuple[int, int], ...] = ()


#: every task a server runs, by the `Backend` method it calls; nothing else is callable
TASKS: dict[str, Task] = {
    **{name: Task() for name in (
        "unary", "binary", "where", "cast", "reduce", "arg_reduce", "scan", "reshape",
        "permute", "expand", "slice", "flip", "cat", "gather", "scatter", "index_select",
        "matmul")},
    "from_bytes": Task(values=(0,)),
    "full": Task(values=(1,)),
    "arange": Task(values=(0, 1)),
    "random_bits": Task(values=(1, 2)),
    "pad": Task(values=(2,)),
    "sort": Task(outputs=2),
    "nonzero": Task(outputs=1, value=True),
    # (index, ndim, dtype, floor, size, what, caller, ignore): IndexOutOfRange unless every
    # entry of the index but those equal to `ignore` lies in [floor, size)
    # (`Backend.queue_range_check`)
    "check_range": Task(outputs=0, session=True),
    # the methods of the optional capabilities (pyburn.ops.capability), offered where the
    # served backend lists them; nll_loss's answer of a bad target becomes an "index" error
    **{name: Task() for name in ("conv", "conv_transpose", "conv_weight", "softmax",
                                 "layer_norm", "linear", "avg_pool", "nll_loss_grad",
                                 "activation", "batch_norm_eval")},
    "nll_loss": Task(session=True),
    "max_pool": Task(outputs=2, optional=((1, 5),)),
    "batch_norm": Task(outputs=4),
    "adam": Task(outputs=4, values=(7, 8), optional=((3, 4),)),  # step size, bias2_sqrt
}
