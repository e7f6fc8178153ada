"""Episode bookkeeping for an agent trained on a vector of environments: `EpisodeStats` keeps
each environment's running return and length and the episodes that ended; `EpisodeLog`
writes them into a run folder as `pyburn.train.Learner` writes its run (``events.jsonl``,
see `pyburn.train.runlog`), so that ``pyburn dash`` and ``pyburn plot`` show an RL run as
they show a Learner's.

The log's events: "status" "started" (one epoch: an RL run is one long epoch) and "ended"
(or "stopped" by its caller, or "failed", with the error); a "metrics" event per finished
episode, in split "train", epoch 1, whose batch and step are the environment steps taken
when it ended (every environment's steps counted) and whose batches are the run's total
steps, with the metrics ``episode_return`` and ``episode_length`` and whatever the agent adds
(``epsilon``, ``loss``).

>>> stats = EpisodeStats(2)
>>> stats.update([1.0, 1.0], [False, True], [False, False])
[Episode(return_=1.0, length=1, step=2)]
>>> stats.update([1.0, 1.0], [True, False], [False, False])
[Episode(return_=2.0, length=2, step=4)]
>>> stats.mean_return()
1.5
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, NamedTuple, Protocol

from ..errors import ArgumentError
from ..train.runlog import RunLog, event_record

#: what an agent adds to a finished episode's metrics, asked only when an episode ends
Extra = Callable[[], Mapping[str, float]]


class Episode(NamedTuple):
    """A finished episode: the sum of its rewards, its steps, and the run's environment
    steps (all environments together) when it ended."""

    return_: float
    length: int
    step: int


class EventSink(Protocol):
    """Where a run's records go: `RunLog` (a run folder), or anything with its three methods
    (a web page's, which sends each record to the page)."""

    def write_config(self, config: dict[str, Any]) -> None: ...

    def append(self, record: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class EpisodeLog:
    """Writes a run's configuration (``run.json``) and its episodes (``events.jsonl``) into
    `target`: a run folder, or an `EventSink`; `total_steps` is the run's length in
    environment steps."""

    def __init__(self, target: str | os.PathLike[str] | EventSink, total_steps: int,
                 config: Mapping[str, Any]):
        self.runlog = RunLog(target) if isinstance(target, str | os.PathLike) else target
        self.total_steps = total_steps
        self.config = dict(config)

    def started(self) -> None:
        """Write ``run.json`` and the "started" status."""
        self.runlog.write_config(self.config)
        self.runlog.append(event_record("status", state="started", step=0, epoch=0, epochs=1,
                                        resumed_from=None))

    def episode(self, episode: Episode, metrics: Mapping[str, float]) -> None:
        """A finished episode's "metrics" event, with the agent's `metrics`."""
        values = {"episode_return": episode.return_, "episode_length": episode.length,
                  **metrics}
        self.runlog.append(event_record("metrics", split="train", epoch=1, batch=episode.step,
                                        batches=self.total_steps, step=episode.step, end=False,
                                        metrics=values))

    def ended(self, step: int, error: BaseException | None = None) -> None:
        """The "ended" status at `step` (or "stopped" where the caller closed the run's
        generator, or "failed", with the `error` that ended the run), and close the log."""
        fields: dict[str, Any] = {"state": "ended", "step": step, "epoch": 1}
        if isinstance(error, GeneratorExit):
            fields.update(state="stopped", by="caller")
        elif error is not None:
            fields.update(state="failed", epoch=0, error=f"{type(error).__name__}: {error}")
        self.runlog.append(event_record("status", **fields))
        self.runlog.close()


class EpisodeStats:
    """The episodes of `num_envs` environments stepped together: `update` takes each vector
    step's rewards and ends. With a `log`, it is also a context manager that starts the log
    on entry and ends it on exit (as "failed" when an exception leaves the block)."""

    def __init__(self, num_envs: int, log: EpisodeLog | None = None):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ArgumentError(f"EpisodeStats counts a positive number of environments, got "
                                f"{num_envs!r}")
        self.num_envs = num_envs
        self.log = log
        #: each environment's return and length so far in its current episode
        self.returns = [0.0] * num_envs
        self.lengths = [0] * num_envs
        #: the finished episodes, in the order they ended
        self.episodes: list[Episode] = []
        #: environment steps taken, all environments together
        self.step = 0

    def update(self, rewards: Sequence[float], terminated: Sequence[bool],
               truncated: Sequence[bool], extra: Extra | None = None) -> list[Episode]:
        """Count one step of every environment; returns the episodes it ended (an
        environment whose episode ended starts a new one, as `SyncVectorEnv` resets it).
        `extra` gives the agent's metrics for the log, called once if an episode ended."""
        if not len(rewards) == len(terminated) == len(truncated) == self.num_envs:
            raise ArgumentError(f"{self.num_envs} environments, got {len(rewards)} rewards, "
                                f"{len(terminated)} terminated and {len(truncated)} truncated")
        self.step += self.num_envs
        finished = []
        for k, (reward, ended, cut) in enumerate(zip(rewards, terminated, truncated)):
            self.returns[k] += float(reward)
            self.lengths[k] += 1
            if ended or cut:
                finished.append(Episode(self.returns[k], self.lengths[k], self.step))
                self.returns[k], self.lengths[k] = 0.0, 0
        self.episodes.extend(finished)
        if finished and self.log is not None:
            metrics = {} if extra is None else dict(extra())
            for episode in finished:
                self.log.episode(episode, metrics)
        return finished

    def mean_return(self, last: int = 100) -> float:
        """The mean return of the `last` finished episodes (fewer when fewer ended; NaN
        when none has, so that a comparison with a goal is false)."""
        if not isinstance(last, int) or last < 1:
            raise ArgumentError(f"mean_return takes a positive number of episodes, got {last!r}")
        recent = self.episodes[-last:]
        return sum(e.return_ for e in recent) / len(recent) if recent else math.nan

    def __enter__(self) -> EpisodeStats:
        if self.log is not None:
            self.log.started()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self.log is not None:
            self.log.ended(self.step, error)
