"""`Ray`: the Learner strategy that trains data-parallel on Ray workers.

``Learner(..., strategy=Ray(num_workers=2)).fit(loader, epochs=3)`` runs on the driver
(this process) like this: start a local Ray if none is running (bound to 127.0.0.1, shut
down again at the end), ship the Learner and its loaders to `num_workers` actors, each of
which trains a replica (`pyburn.distributed.worker`), replay rank 0's progress into the
Learner's renderer, and at the end load rank 0's trained state into the driver's Learner.

Faults: when a worker dies, the others are stopped (the group's rendezvous is aborted) and,
where the Learner has a run_dir, the group starts again from the last checkpoint
(``resume=True``): Ray restarts the dead actor (`max_restarts`), or a fresh one replaces it.
After `max_restarts` such restarts, or without a run_dir, `WorkerFailed` is raised. Any
other error of a worker stops the others and is raised as it is. Every wait is bounded.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..data.shuffle import fresh_seed
from ..devices import device as as_device
from ..errors import ArgumentError, WorkerFailed
from ..tape import no_grad
from .buckets import DEFAULT_BUCKET_MB
from .transport import rendezvous, require_ray
from .worker import Job, Relay, Worker, replay, shard

#: seconds between two looks of the driver at its workers and at rank 0's progress
POLL_SECONDS = 0.1


def _positive(name: str, value: Any, kind: type = float) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float
                                                 else int) or not value > 0:
        raise ArgumentError(f"Ray {name} must be a positive {kind.__name__}, got {value!r}")
    return value


class _Died(Exception):
    """A worker of the group died (internal: the driver restarts the group)."""

    def __init__(self, rank: int, error: BaseException):
        super().__init__(f"worker {rank} died: {error}")
        self.rank, self.error = rank, error


class Ray:
    """Data-parallel training of a `pyburn.train.Learner` on `num_workers` Ray actors.

    Each worker holds a replica of the model on `device` ("cpu", "wgpu", "flex") and trains
    on its share of the train loader (a `DistributedSampler`: the loader's batch size is
    per worker); the gradients are averaged over the workers in buckets of about
    `bucket_mb` MB while the backward pass runs, so every replica makes the same update.
    A collective that some worker does not join within `timeout` seconds raises
    `CollectiveTimeout`; workers that do not start within `start_timeout` raise
    `WorkerFailed`. `max_restarts`: how often a group with a dead worker is restarted
    from the last checkpoint. `seed`: given to ``pyburn.manual_seed`` on every worker
    (None: drawn from pyburn's default generator). `num_cpus` per worker is what Ray
    reserves for it; a Ray started here gets ``max(num_workers * num_cpus, cpu count)``.

    After `fit`, `stats` holds each worker's seconds, communication seconds and steps.

    >>> from pyburn.distributed import Ray
    >>> Ray(num_workers=2)
    Ray(num_workers=2, device='cpu', bucket_mb=25.0, timeout=300.0, max_restarts=3)
    """

    def __init__(self, num_workers: int = 2, device: str = "cpu", *,
                 bucket_mb: float = DEFAULT_BUCKET_MB, timeout: float = 300.0,
                 max_restarts: int = 3, seed: int | None = None,
                 start_timeout: float = 120.0, num_cpus: float = 1):
        self.num_workers = _positive("num_workers", num_workers, int)
        self.device = as_device(device).plain().name
        self.bucket_mb = _positive("bucket_mb", bucket_mb)
        self.timeout = float(_positive("timeout", timeout))
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or \
                max_restarts < 0:
            raise ArgumentError(f"Ray max_restarts must be an int >= 0, got {max_restarts!r}")
        self.max_restarts = max_restarts
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ArgumentError(f"Ray seed must be an int or None, got {seed!r}")
        self.seed = seed
        self.start_timeout = float(_positive("start_timeout", start_timeout))
        self.num_cpus = _positive("num_cpus", num_cpus)
        #: per worker, from the last fit: rank, seconds, comm_seconds, steps, batch_size
        self.stats: list[dict[str, Any]] = []

    def __repr__(self) -> str:
        return (f"Ray(num_workers={self.num_workers}, device={self.device!r}, "
                f"bucket_mb={self.bucket_mb}, timeout={self.timeout}, "
                f"max_restarts={self.max_restarts})")

    # ---- the driver ------------------------------------------------------------------------
    def fit(self, learner: Any, train_loader: Any, valid_loader: Any, epochs: int,
            resume: bool) -> list[dict[str, Any]]:
        """Run `learner`'s training on the workers (what ``Learner.fit`` does with this
        strategy); returns the history, with the Learner left as rank 0's was."""
        ray = require_ray()
        shard(train_loader, 0, self.num_workers)  # a loader that cannot be resharded fails here
        seed = fresh_seed() & 0x7FFF_FFFF_FFFF_FFFF if self.seed is None else self.seed
        with self._cluster(ray):
            shipped = ray.put((learner, train_loader, valid_loader))
            relay = ray.remote(num_cpus=0)(Relay).remote()
            actors = self._start_workers(ray, [None] * self.num_workers)
            try:
                results = self._attempts(ray, learner, shipped, relay, actors, seed, epochs,
                                         resume)
            finally:
                for actor in [*actors, relay]:
                    ray.kill(actor, no_restart=True)
                learner.renderer.end()
        self.stats = [r["stats"] for r in results]
        _take_state(learner, results[0]["state"])
        return learner.history

    @contextmanager
    def _cluster(self, ray: Any) -> Iterator[None]:
        """A local Ray on 127.0.0.1 for the run, unless one is running already."""
        if ray.is_initialized():
            yield
            return
        # Ray replaces builtins.print for good once a worker's output reaches the driver
        # (its tqdm support), unless told not to: the user's print stays theirs
        os.environ.setdefault("RAY_TQDM_PATCH_PRINT", "0")
        ray.init(address="local", num_cpus=max(int(self.num_workers * self.num_cpus + 0.999),
                                               os.cpu_count() or 1),
                 include_dashboard=False, _node_ip_address="127.0.0.1",
                 configure_logging=False)
        try:
            yield
        finally:
            ray.shutdown()

    def _start_workers(self, ray: Any, actors: list[Any]) -> list[Any]:
        """`actors`, with each that is missing or does not answer replaced by a new one,
        once all of them answer (within `start_timeout`)."""
        make = ray.remote(num_cpus=self.num_cpus, max_restarts=self.max_restarts)(Worker)
        alive = []
        for actor in actors:
            if actor is not None:
                try:
                    ray.get(actor.ping.remote(), timeout=self.start_timeout)
                except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                    ray.kill(actor, no_restart=True)
                    actor = None
            alive.append(make.remote() if actor is None else actor)
        try:
            ray.get([a.ping.remote() for a in alive], timeout=self.start_timeout)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as error:
            for actor in alive:
                ray.kill(actor, no_restart=True)
            raise WorkerFailed(f"{self.num_workers} Ray workers did not start within "
                               f"{self.start_timeout:g} s ({type(error).__name__}): does the "
                               f"cluster have {self.num_workers * self.num_cpus:g} free CPUs?"
                               ) from error
        return alive

    def _attempts(self, ray: Any, learner: Any, shipped: Any, relay: Any, actors: list[Any],
                  seed: int, epochs: int, resume: bool) -> list[dict[str, Any]]:
        """Run the group until it finishes, restarting it after a worker's death."""
        restarts = 0
        while True:
            group = f"pyburn-{uuid.uuid4().hex[:12]}"
            meeting = rendezvous(group, self.num_workers)  # the driver's: it outlives workers
            jobs = [Job(rank, self.num_workers, group, self.timeout, self.bucket_mb,
                        self.device, seed, epochs, resume, relay)
                    for rank in range(self.num_workers)]
            try:
                return self._run_group(ray, learner, meeting, relay, actors, shipped, jobs)
            except _Died as died:
                restarts += 1
                if learner.run_dir is None:
                    raise WorkerFailed(f"{died}; the Learner has no run_dir, so there is no "
                                       "checkpoint to restart from") from died.error
                if restarts > self.max_restarts:
                    raise WorkerFailed(f"{died}; the group was restarted {self.max_restarts} "
                                       "times already (max_restarts)") from died.error
                learner.renderer.message(f"{died}: restarting the group from the last "
                                         f"checkpoint ({restarts} of {self.max_restarts})")
                actors[:] = self._start_workers(ray, actors)
                resume = True
            finally:
                ray.kill(meeting, no_restart=True)

    def _run_group(self, ray: Any, learner: Any, meeting: Any, relay: Any,
                   actors: list[Any], shipped: Any, jobs: list[Job]) -> list[dict[str, Any]]:
        """One attempt: every worker's result, in rank order; `_Died` when a worker died,
        a worker's own error when one failed."""
        ranks = {a.fit.remote(shipped, job): job.rank for a, job in zip(actors, jobs)}
        pending, results = list(ranks), {}
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1, timeout=POLL_SECONDS)
                replay(ray.get(relay.take.remote(), timeout=self.start_timeout),
                       learner.renderer)
                for ref in ready:
                    try:
                        results[ranks[ref]] = ray.get(ref)
                    except ray.exceptions.RayActorError as error:
                        raise _Died(ranks[ref], error) from error
        except BaseException as failure:
            self._stop_group(ray, meeting, actors, pending, ranks, failure)
            raise
        replay(ray.get(relay.take.remote(), timeout=self.start_timeout), learner.renderer)
        return [results[r] for r in range(len(jobs))]

    def _stop_group(self, ray: Any, meeting: Any, actors: list[Any], pending: list[Any],
                    ranks: dict[Any, int], failure: BaseException) -> None:
        """Stop the workers still running after `failure`: abort the rendezvous (their next
        collective fails at once), give them the group's timeout to return, kill the rest
        (Ray restarts them); none for an interrupt of the driver. A death among them turns
        `failure` into `_Died`."""
        ray.get(meeting.abort.remote(), timeout=self.start_timeout)
        grace = self.timeout if isinstance(failure, Exception) and pending else 0.0
        done, stuck = ray.wait(pending, num_returns=len(pending), timeout=grace)
        for ref in stuck:
            ray.kill(actors[ranks[ref]], no_restart=False)
        if isinstance(failure, _Died) or not isinstance(failure, Exception):
            return
        for ref in done:
            try:
                ray.get(ref)
            except ray.exceptions.RayActorError as error:
                raise _Died(ranks[ref], error) from failure
            except Exception:  # aborted with the group: the first failure is the one raised
                continue


def _take_state(learner: Any, state: dict[str, Any]) -> None:
    """Make the driver's Learner what rank 0's was at the end of the run."""
    if state["model"] is not None:
        learner.model.load_state_dict(state["model"])
    else:
        with no_grad():
            for p, value in zip(learner.model.parameters(), state["parameters"]):
                p.copy_(value)
    learner.optimizer.load_state_dict(state["optimizer"])
    if learner.scheduler is not None:
        learner.scheduler.load_state_dict(state["scheduler"])
    if learner.best is not None and state["best"] is not None:
        learner.best.load_state_dict(state["best"])
    if learner.early_stopping is not None and state["early_stopping"] is not None:
        learner.early_stopping.load_state_dict(state["early_stopping"])
    learner.history = list(state["history"])
    for name in ("epoch", "step", "updates", "stopped_early", "interrupted"):
        setattr(learner, name, state[name])
