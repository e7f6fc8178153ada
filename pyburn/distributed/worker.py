"""What runs in each Ray worker of `Ray`: the replica of the Learner, its resharded data,
and the pieces that connect rank 0 to the driver.

Each `Worker.fit` call unpickles the driver's Learner afresh (so a restarted group starts
from the same objects), joins the group, moves the model to the worker's device, reshards
the train loader with `DistributedSampler`, gives the Learner a `RayReplica` and runs its
training loop. Only rank 0 renders (through `RelayRenderer`, whose calls the driver replays
into the user's renderer), logs and checkpoints.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

from ..data import DataLoader
from ..data.sampler import DistributedSampler, RandomSampler, SequentialSampler
from ..devices import device as as_device
from ..errors import ArgumentError
from ..random import manual_seed
from ..train.render import Progress, Renderer
from ..train.replica import Replica
from .buckets import GradBuckets
from .group import ProcessGroup, destroy, init

T = TypeVar("T")

#: the fewest seconds between two progress reports rank 0 sends the driver
PROGRESS_INTERVAL = 0.1


def shard(loader: Any, rank: int, world_size: int) -> DataLoader:
    """Rank `rank`'s share of `loader`: a DataLoader with the same settings (batch size per
    rank, collate, workers, device, drop_last) over a `DistributedSampler` that keeps its
    order (shuffled with its seed, or not)."""
    if not isinstance(loader, DataLoader):
        raise ArgumentError(f"a distributed run reshards its train loader, which must be a "
                            f"pyburn.data.DataLoader, got {type(loader).__name__}")
    sampler = loader.sampler
    plain = isinstance(sampler, SequentialSampler) or (
        isinstance(sampler, RandomSampler) and not sampler.replacement
        and sampler.num_samples == sampler.n)
    if not plain:
        raise ArgumentError(f"a distributed run cannot reshard a DataLoader with "
                            f"{sampler!r}: use shuffle=True/False without a sampler")
    shared = DistributedSampler(len(loader.dataset), world_size, rank,
                                shuffle=isinstance(sampler, RandomSampler),
                                seed=loader.seed if loader.seed is not None else 0)
    return DataLoader(loader.dataset, batch_size=loader.batch_size, drop_last=loader.drop_last,
                      collate=loader.collate, num_workers=loader.num_workers,
                      device=loader.device, prefetch_factor=loader.prefetch_factor,
                      sampler=shared)


class RayReplica(Replica):
    """A Learner's replica in rank `group.rank` of a Ray group: gradients all-reduced by
    `buckets`, files written by rank 0 only, epoch values shared from rank 0."""

    def __init__(self, group: ProcessGroup, buckets: GradBuckets, config: dict[str, Any]):
        self.group, self.buckets, self._config = group, buckets, config
        self.is_main = group.rank == 0

    def no_sync(self) -> AbstractContextManager[Any]:
        """Backward passes inside keep their gradients local."""
        return self.buckets.no_sync()

    def synchronize(self) -> None:
        """Make every ``.grad`` the mean over the ranks."""
        self.buckets.synchronize()

    def share(self, compute: Callable[[], T]) -> T:
        """Rank 0's ``compute()``, on every rank."""
        result = self.group.broadcast_object(compute() if self.is_main else None, src=0)
        return result  # type: ignore[no-any-return]

    def can_save(self, pending: int) -> bool:
        """Rank 0 writes, between updates only."""
        return self.is_main and pending == 0

    def config(self) -> dict[str, Any]:
        """The group, the device and the seed, for ``run.json``."""
        return self._config


class Relay:
    """The body of the driver's relay actor: rank 0's renderer calls, kept until taken."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def push(self, name: str, args: tuple[Any, ...]) -> None:
        """Keep one call."""
        self.calls.append((name, args))

    def take(self) -> list[tuple[str, tuple[Any, ...]]]:
        """The calls kept so far, oldest first (and forget them)."""
        calls, self.calls = self.calls, []
        return calls


class RelayRenderer(Renderer):
    """Rank 0's renderer: each call goes to the relay actor without waiting (Ray keeps the
    order of one caller's calls); progress at most every `PROGRESS_INTERVAL` seconds."""

    def __init__(self, relay: Any):
        self.relay = relay
        self._last = 0.0

    def _send(self, name: str, *args: Any) -> None:
        self.relay.push.remote(name, args)

    def start(self, epochs: int, epoch: int, resumed_from: str | None) -> None:
        """Sent on."""
        self._send("start", epochs, epoch, resumed_from)

    def progress(self, progress: Progress) -> None:
        """Sent on when logged, at an epoch's end, or `PROGRESS_INTERVAL` after the last."""
        now = time.monotonic()
        if progress.logged or progress.batch == progress.batches or \
                now - self._last >= PROGRESS_INTERVAL:
            self._last = now
            self._send("progress", progress)

    def epoch_end(self, epoch: int, epochs: int, results: dict[str, dict[str, str]],
                  seconds: float) -> None:
        """Sent on."""
        self._send("epoch_end", epoch, epochs, results, seconds)

    def message(self, text: str) -> None:
        """Sent on."""
        self._send("message", text)

    def event(self, record: dict[str, Any]) -> None:
        """Sent on."""
        self._send("event", record)


def replay(calls: list[tuple[str, tuple[Any, ...]]], renderer: Renderer) -> None:
    """Make `renderer` show what rank 0's renderer was told (its ``end`` is the driver's)."""
    for name, args in calls:
        getattr(renderer, name)(*args)


@dataclass(frozen=True)
class Job:
    """What one worker is asked to do: its rank, the group, and the run's settings."""

    rank: int
    world_size: int
    group_name: str
    timeout: float
    bucket_mb: float
    device: str
    seed: int
    epochs: int
    resume: bool
    relay: Any


class Worker:
    """The body of a Ray worker actor: one replica per `fit` call."""

    def ping(self) -> int:
        """The worker's process id (the driver's check that it is up)."""
        return os.getpid()

    def fit(self, shipped: tuple[Any, Any, Any], job: Job) -> dict[str, Any]:
        """Train rank `job.rank`'s replica of the shipped (learner, train loader, valid
        loader); returns its statistics, and from rank 0 the trained state."""
        learner, train_loader, valid_loader = shipped
        manual_seed(job.seed)
        group = init(job.rank, job.world_size, job.group_name, job.timeout)
        learner.device = as_device(job.device).autodiff()
        if callable(getattr(learner.model, "to", None)):
            learner.model.to(learner.device)
        params = [p for g in learner.optimizer.param_groups for p in g["params"]]
        buckets = GradBuckets(params, group, job.bucket_mb)
        learner.replica = RayReplica(group, buckets, {
            "strategy": "ray", "world_size": job.world_size, "device": job.device,
            "seed": job.seed, "bucket_mb": job.bucket_mb, "timeout": job.timeout})
        learner.dashboard = None
        if job.rank == 0:
            learner.renderer = RelayRenderer(job.relay)
        else:
            learner.runlog = None
        loader = shard(train_loader, job.rank, job.world_size)
        first_step, started = learner.step, time.perf_counter()
        try:
            learner.fit(loader, valid_loader, job.epochs, job.resume)
        finally:
            buckets.remove()
            destroy()
        stats = {"rank": job.rank, "seconds": time.perf_counter() - started,
                 "comm_seconds": buckets.comm_seconds, "steps": learner.step - first_step,
                 "batch_size": loader.batch_size}
        if job.rank != 0:
            return {"stats": stats}
        return {"stats": stats, "state": trained_state(learner)}


def trained_state(learner: Any) -> dict[str, Any]:
    """What the driver's Learner takes from rank 0's after the run."""
    return {
        "model": learner.model.state_dict() if hasattr(learner.model, "state_dict") else None,
        "parameters": None if hasattr(learner.model, "state_dict") else [
            p.detach() for p in learner.model.parameters()],
        "optimizer": learner.optimizer.state_dict(),
        "scheduler": None if learner.scheduler is None else learner.scheduler.state_dict(),
        "best": None if learner.best is None else learner.best.state_dict(),
        "early_stopping": (None if learner.early_stopping is None
                           else learner.early_stopping.state_dict()),
        "history": learner.history, "epoch": learner.epoch, "step": learner.step,
        "updates": learner.updates, "stopped_early": learner.stopped_early,
        "interrupted": learner.interrupted,
    }
