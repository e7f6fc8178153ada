"""The process group: this process's rank among the group's, and collectives on tensors.

``init(rank, world_size, group_name)`` joins a group (in each Ray actor, or any Ray process);
then `all_reduce`, `broadcast`, `all_gather` and `barrier` take pyburn tensors of any device
and return new tensors on the same device, in the same dtype (not recorded by autodiff).
Every rank must call the same collectives in the same order, as with PyTorch's
``torch.distributed``. Reductions combine the ranks' values in rank order on every rank, so
every rank gets bit-identical results. A collective that some rank does not join within the
group's timeout raises `CollectiveTimeout`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from .._tensor import Tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from ..numpy_support import require_numpy
from ..ops.creation import tensor
from .transport import Alone, Exchange, Transport

T = TypeVar("T")

#: the reductions of `all_reduce`
OPS = ("sum", "mean", "max", "min")


class Work(Generic[T]):
    """A collective under way (`ProcessGroup.all_reduce_async`): `wait` gives its result."""

    def __init__(self, exchange: Exchange | Alone, finish: Callable[[list[Any]], T]):
        self._exchange, self._finish = exchange, finish

    def wait(self) -> T:
        """Block until every rank has joined (at most the group's timeout); the result."""
        return self._finish(self._exchange.wait())


def _payload(t: Tensor, what: str) -> tuple[tuple[int, ...], str, bytes]:
    if not isinstance(t, Tensor):
        raise ArgumentError(f"{what} takes a pyburn Tensor, got {type(t).__name__}")
    return tuple(t.shape), t.dtype.name, t.to_bytes()


def _nbytes(t: Tensor) -> int:
    return t.numel() * t.dtype.itemsize


def _check_alike(payloads: list[Any], like: Tensor, what: str) -> None:
    """Every rank's tensor must have `like`'s shape and dtype."""
    for rank, (shape, dtype, _) in enumerate(payloads):
        if shape != tuple(like.shape):
            raise ShapeError(f"{what}: rank {rank} sent shape {shape}, this rank {like.shape}")
        if dtype != like.dtype.name:
            raise DTypeError(f"{what}: rank {rank} sent {dtype}, this rank {like.dtype.name}")


def _rebuild(data: bytes | Any, shape: tuple[int, ...], like: Tensor) -> Tensor:
    return tensor(bytes(data), dtype=like.dtype, device=like.device, shape=shape)


def _reduce(payloads: list[Any], like: Tensor, op: str) -> Tensor:
    """The ranks' tensors combined by `op`, in rank order."""
    np = require_numpy()
    _check_alike(payloads, like, f"all_reduce({op!r})")
    kind = np.dtype(like.dtype.name)
    total = np.frombuffer(payloads[0][2], dtype=kind).copy()
    fold = np.add if op in ("sum", "mean") else np.maximum if op == "max" else np.minimum
    for _, _, data in payloads[1:]:
        fold(total, np.frombuffer(data, dtype=kind), out=total)
    if op == "mean":
        np.divide(total, kind.type(len(payloads)), out=total)
    return _rebuild(total.tobytes(), tuple(like.shape), like)


class ProcessGroup:
    """This process's membership of a group: its `rank` among `world_size` ranks, and the
    collectives (the module's functions call those of the group `init` made)."""

    def __init__(self, rank: int, world_size: int, group_name: str = "pyburn",
                 timeout: float = 300.0):
        if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
            raise ArgumentError(f"world_size must be a positive int, got {world_size!r}")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world_size:
            raise ArgumentError(f"rank must be an int in [0, {world_size}), got {rank!r}")
        if not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ArgumentError(f"timeout must be a positive number of seconds, got "
                                f"{timeout!r}")
        if not isinstance(group_name, str) or not group_name:
            raise ArgumentError(f"group_name must be a non-empty str, got {group_name!r}")
        self.rank, self.world_size, self.name = rank, world_size, group_name
        self.timeout = float(timeout)
        self.transport = Transport(group_name, rank, world_size, self.timeout)
        self._sequence = 0

    def start(self, op: str, payload: Any, key: Hashable | None = None,
              nbytes: int = 0) -> Exchange | Alone:
        """Put this rank's `payload` (of about `nbytes`) in for the next collective (or the
        one of `key`, for collectives that may start in a different order on each rank)."""
        if key is None:
            key, self._sequence = self._sequence, self._sequence + 1
        return self.transport.start(op, key, payload, nbytes)

    def all_reduce_async(self, t: Tensor, op: str = "sum",
                         key: Hashable | None = None) -> Work[Tensor]:
        """Start `all_reduce`; ``.wait()`` on the result gives the tensor."""
        if op not in OPS:
            raise ArgumentError(f"all_reduce op is one of {', '.join(OPS)}, got {op!r}")
        if op == "mean" and not t.dtype.is_floating_point:
            raise DTypeError(f"all_reduce('mean') needs a float tensor, got {t.dtype.name}")
        if op in ("sum", "mean") and t.dtype.is_bool:
            raise DTypeError(f"all_reduce({op!r}) of a bool tensor: use 'max' (any) or "
                             "'min' (all)")
        exchange = self.start(f"all_reduce({op!r})", _payload(t, "all_reduce"), key, _nbytes(t))
        return Work(exchange, functools.partial(_reduce, like=t, op=op))

    def all_reduce(self, t: Tensor, op: str = "sum") -> Tensor:
        """Every rank's `t` combined by `op` ("sum", "mean", "max" or "min")."""
        return self.all_reduce_async(t, op).wait()

    def broadcast(self, t: Tensor, src: int = 0) -> Tensor:
        """Rank `src`'s `t`, on every rank (each rank's `t` gives the device and dtype)."""
        self._check_src(src)
        payload, nbytes = (_payload(t, "broadcast"), _nbytes(t)) if self.rank == src else (None, 0)
        sent = self.start(f"broadcast(src={src})", payload, nbytes=nbytes).wait()[src]
        _check_alike([sent], t, f"broadcast(src={src})")
        return _rebuild(sent[2], sent[0], t)

    def all_gather(self, t: Tensor) -> list[Tensor]:
        """Every rank's `t`, in rank order (the shapes may differ; the dtype may not)."""
        payloads = self.start("all_gather", _payload(t, "all_gather"), nbytes=_nbytes(t)).wait()
        for rank, (_, dtype, _) in enumerate(payloads):
            if dtype != t.dtype.name:
                raise DTypeError(f"all_gather: rank {rank} sent {dtype}, this rank "
                                 f"{t.dtype.name}")
        return [_rebuild(data, shape, t) for shape, _, data in payloads]

    def broadcast_object(self, obj: Any, src: int = 0) -> Any:
        """Rank `src`'s `obj` (any picklable object), on every rank."""
        self._check_src(src)
        return self.start(f"broadcast_object(src={src})",
                          obj if self.rank == src else None).wait()[src]

    def barrier(self) -> None:
        """Return once every rank has called `barrier`."""
        self.start("barrier", None).wait()

    def _check_src(self, src: int) -> None:
        if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < self.world_size:
            raise ArgumentError(f"src must be a rank in [0, {self.world_size}), got {src!r}")

    def __repr__(self) -> str:
        return (f"ProcessGroup({self.name!r}, rank={self.rank}, world_size={self.world_size}, "
                f"timeout={self.timeout:g})")


_group: ProcessGroup | None = None


def init(rank: int, world_size: int, group_name: str = "pyburn",
         timeout: float = 300.0) -> ProcessGroup:
    """Join group `group_name` as rank `rank` of `world_size` (in a Ray actor, or any
    process connected to Ray), replacing the group this process was in; returns once every
    rank has joined (a barrier: the group's start-up is then not in its first collective).
    Collectives not joined by every rank within `timeout` seconds raise
    `CollectiveTimeout`."""
    global _group
    _group = ProcessGroup(rank, world_size, group_name, timeout)
    _group.barrier()
    return _group


def destroy() -> None:
    """Leave the group (collectives then need a new `init`)."""
    global _group
    _group = None


def is_initialized() -> bool:
    """Whether this process is in a group."""
    return _group is not None


def current() -> ProcessGroup:
    """The group `init` made."""
    if _group is None:
        raise ArgumentError("no process group: call pyburn.distributed.init(rank, world_size, "
                            "group_name) first")
    return _group


def rank() -> int:
    """This process's rank in its group (0 to world_size - 1)."""
    return current().rank


def world_size() -> int:
    """The number of ranks in this process's group."""
    return current().world_size


def all_reduce(t: Tensor, op: str = "sum") -> Tensor:
    """Every rank's `t` combined by `op` ("sum", "mean", "max" or "min"), on every rank."""
    return current().all_reduce(t, op)


def broadcast(t: Tensor, src: int = 0) -> Tensor:
    """Rank `src`'s `t`, on every rank."""
    return current().broadcast(t, src)


def all_gather(t: Tensor) -> list[Tensor]:
    """Every rank's `t`, in rank order, on every rank."""
    return current().all_gather(t)


def broadcast_object(obj: Any, src: int = 0) -> Any:
    """Rank `src`'s picklable `obj`, on every rank."""
    return current().broadcast_object(obj, src)


def barrier() -> None:
    """Wait until every rank has called `barrier`."""
    current().barrier()
