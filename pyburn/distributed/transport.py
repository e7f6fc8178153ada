"""How the data of a collective moves between ranks: Ray's object store, met at a rendezvous.

``ray.util.collective`` has no CPU backend that works without pygloo or torch, so every
collective goes through the object store: each rank puts its payload there (``ray.put``) and
hands the reference to the group's rendezvous actor, a named actor with one entry per
collective (its key: the group's sequence number, or a gradient bucket's key). Once every
rank's reference is in, the rendezvous hands each rank the whole list, in rank order; each
rank fetches the payloads and combines them itself, in rank order, so that every rank
computes exactly the same result. Small payloads (under `INLINE_BYTES`: barriers, shared
values, small tensors) travel inside the calls to the rendezvous instead, which saves the
object store's round trips. Every wait is bounded by the group's timeout and ends in
`CollectiveTimeout`, which names the operation, its key and the ranks that did not arrive.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable
from typing import Any, NoReturn

from ..errors import CollectiveTimeout, MissingExtraError, WorkerFailed

#: what the rendezvous answers once the group is aborted (a strategy restarting it)
ABORTED = "aborted"
#: payloads up to this size travel inside the rendezvous calls, larger ones in the store
INLINE_BYTES = 64 * 1024


def require_ray() -> Any:
    """The ray module, or a MissingExtraError that says how to install it."""
    try:
        import ray  # optional: ray (pyburn[distributed])
    except ImportError:
        raise MissingExtraError("pyburn.distributed needs Ray, which is not installed: pip "
                                "install 'pyburn[distributed]'") from None
    return ray


class _Round:
    """One collective at the rendezvous: the references in so far, and who has the list."""

    def __init__(self) -> None:
        self.refs: dict[int, Any] = {}
        self.complete = asyncio.Event()
        self.handed = 0


class Rendezvous:
    """The body of a group's rendezvous actor (an async Ray actor: `rendezvous`)."""

    def __init__(self, world_size: int):
        self.world_size = world_size
        self.rounds: dict[Hashable, _Round] = {}
        self.aborted = False

    async def exchange(self, key: Hashable, rank: int, entry: list[Any]) -> list[Any] | str:
        """Rank `rank`'s entry for collective `key`: ``[reference]`` or ``[payload, None]``
        (a list, so that Ray passes a reference as it is); returns every rank's, in rank
        order, once all are in (or `ABORTED`)."""
        if self.aborted:
            return ABORTED
        found = self.rounds.get(key)
        if found is None:
            found = self.rounds[key] = _Round()
        found.refs[rank] = entry
        if len(found.refs) == self.world_size:
            found.complete.set()
        await found.complete.wait()
        if self.aborted:
            return ABORTED
        found.handed += 1
        if found.handed == self.world_size:  # everyone has the list: forget the round
            del self.rounds[key]
        return [found.refs[r] for r in range(self.world_size)]

    def arrived(self, key: Hashable) -> list[int]:
        """The ranks whose reference for `key` is in."""
        found = self.rounds.get(key)
        return [] if found is None else sorted(found.refs)

    def abort(self) -> None:
        """Answer `ABORTED` to every collective waiting now or asked for later."""
        self.aborted = True
        for found in self.rounds.values():
            found.complete.set()


def rendezvous(group_name: str, world_size: int) -> Any:
    """The handle of group `group_name`'s rendezvous actor, made by the first caller (Ray
    makes a named actor once, atomically; later callers get the same one)."""
    ray = require_ray()
    actor = ray.remote(num_cpus=0, max_concurrency=1000)(Rendezvous)
    return actor.options(name=group_name, get_if_exists=True).remote(world_size)


class Exchange:
    """One rank's part in one collective under way: `wait` gives every rank's payload."""

    def __init__(self, transport: Transport, op: str, key: Hashable, payload: Any,
                 nbytes: int):
        ray = require_ray()
        self.transport, self.op, self.key = transport, op, key
        self.started = time.monotonic()
        # a stored payload's reference is held until the wait ends: the others fetch it
        self._ref = ray.put(payload) if nbytes > INLINE_BYTES else None
        entry = [payload, None] if self._ref is None else [self._ref]
        self._reply = transport.actor.exchange.remote(key, transport.rank, entry)

    def wait(self) -> list[Any]:
        """Every rank's payload, in rank order; `CollectiveTimeout` when the group's
        timeout runs out first, `WorkerFailed` when the group was aborted."""
        ray, t = require_ray(), self.transport
        deadline = self.started + t.timeout
        ready, _ = ray.wait([self._reply], timeout=max(0.0, deadline - time.monotonic()))
        if not ready:
            arrived = ray.get(t.actor.arrived.remote(self.key), timeout=min(t.timeout, 10.0))
            missing = [r for r in range(t.world_size) if r not in arrived and r != t.rank]
            self._timed_out(missing, "did not join")
        entries = ray.get(self._reply)
        if isinstance(entries, str):
            raise WorkerFailed(f"{self.op} #{self.key}: the group was aborted (a strategy "
                               "stopped it after another worker failed)")
        stored = [entry[0] for entry in entries if len(entry) == 1]
        try:
            fetched = iter(ray.get(stored, timeout=max(0.0, deadline - time.monotonic())))
        except ray.exceptions.GetTimeoutError:
            self._timed_out([r for r in range(t.world_size) if r != t.rank],
                            "did not deliver their data")
        self._ref = self._reply = None
        return [next(fetched) if len(entry) == 1 else entry[0] for entry in entries]

    def _timed_out(self, missing: list[int], what: str) -> NoReturn:
        t = self.transport
        raise CollectiveTimeout(
            f"{self.op} #{self.key} timed out after {t.timeout:g} s on rank {t.rank}: "
            f"rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} of "
            f"{t.world_size} {what} (a rank that died, hangs or skipped the call)")


class Alone:
    """The collective of a group of one: its own payload back, with no round trip."""

    def __init__(self, payload: Any):
        self.payload = payload

    def wait(self) -> list[Any]:
        """``[payload]``, the whole group's payloads."""
        return [self.payload]


#: the rendezvous this process joined, by group name: Ray ends an actor once its creator
#: holds no handle on it, and a rank that leaves its group (``destroy``) must not end the
#: rendezvous under ranks still waiting on it; it lives as long as its creator's process
_joined: dict[str, Any] = {}


class Transport:
    """A rank's end of its group's rendezvous: `start` a collective, then wait on it."""

    def __init__(self, group_name: str, rank: int, world_size: int, timeout: float):
        self.rank, self.world_size, self.timeout = rank, world_size, timeout
        self.actor = _joined[group_name] = rendezvous(group_name, world_size)

    def start(self, op: str, key: Hashable, payload: Any, nbytes: int = 0) -> Exchange | Alone:
        """Put this rank's `payload` (about `nbytes` large) for collective `key` (named `op`
        in errors) in; a group of one keeps it."""
        if self.world_size == 1:
            return Alone(payload)
        return Exchange(self, op, key, payload, nbytes)
