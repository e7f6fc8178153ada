"""`RunState`: what a view of a run shows, folded from the run's events (``events.jsonl``, see
`pyburn.train.runlog`) as they come: the curves of each metric, where the run stands, what
it is doing, and its messages. The dashboard is fed the events of a live `Learner` (with its
per-batch progress), and a view of a folder reads the same events from the file: the two
look the same.

>>> state = RunState()
>>> state.apply({"event": "status", "time": 0.0, "state": "started", "step": 0, "epoch": 0,
...              "epochs": 2, "resumed_from": None})
>>> state.apply({"event": "metrics", "time": 1.0, "split": "train", "epoch": 1, "batch": 5,
...              "batches": 10, "step": 5, "end": False, "metrics": {"loss": 0.5}})
>>> state.status, state.metric_names(), state.series("loss")
('running', ['loss'], {'train': [(5, 0.5)]})
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..render import Progress

#: the messages a view keeps (the oldest are dropped)
MESSAGES = 500


@dataclass
class Where:
    """Where the run stands: the epoch (counted from 1) of `epochs`, the batch of the epoch
    and how many it has (None: unknown), the steps done over the run, items per second, and
    the seconds left in the epoch and in the run (None: unknown)."""

    epoch: int = 0
    epochs: int = 0
    batch: int = 0
    batches: int | None = None
    step: int = 0
    items_per_second: float | None = None
    epoch_left: float | None = None
    run_left: float | None = None


@dataclass
class RunState:
    """A run's curves, position, status and messages; `apply` an event, or `progress` a
    batch, from any thread (a lock keeps readers consistent: take `lock` while reading
    several parts)."""

    #: metric -> split ("train", "valid") -> [(step, value)]
    curves: dict[str, dict[str, list[tuple[int, float]]]] = field(default_factory=dict)
    where: Where = field(default_factory=Where)
    #: "waiting", "running", "paused", "stopped", "aborted", "ended", "failed"
    status: str = "waiting"
    #: why the run is paused ("asked", "nan"), when it is
    paused_for: str | None = None
    #: whether status events add a line to `messages` (a live Learner's renderer says
    #: them itself: its state turns this off)
    describe_status: bool = True
    messages: deque[str] = field(default_factory=lambda: deque(maxlen=MESSAGES))
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def clear(self) -> None:
        """Forget everything taken in (a log read again from its start)."""
        with self.lock:
            self.curves.clear()
            self.where = Where()
            self.status, self.paused_for = "waiting", None
            self.messages.clear()

    def apply(self, event: dict[str, Any]) -> None:
        """Take in one event of the run's record."""
        with self.lock:
            if event.get("event") == "metrics":
                self._metrics(event)
            elif event.get("event") == "status":
                self._status(event)

    def progress(self, progress: Progress, epochs_left: int) -> None:
        """Take in a batch's progress (a live run's, finer than its events); `epochs_left`:
        epochs after this one."""
        with self.lock:
            where = self.where
            where.epoch, where.epochs = progress.epoch, progress.epochs
            where.batch, where.batches = progress.batch, progress.batches
            where.step = progress.step
            if progress.elapsed > 0 and progress.session_batches:
                where.items_per_second = progress.session_items / progress.elapsed
                per_batch = progress.elapsed / progress.session_batches
                if progress.batches is not None:
                    where.epoch_left = (progress.batches - progress.batch) * per_batch
                    where.run_left = where.epoch_left + epochs_left * progress.batches * per_batch
            if self.status == "waiting":
                self.status = "running"

    def message(self, text: str, at: float | None = None) -> None:
        """A line for the log, stamped with the wall time `at` (None: now)."""
        with self.lock:
            self.messages.append(f"{time.strftime('%H:%M:%S', time.localtime(at))} {text}")

    def metric_names(self) -> list[str]:
        """The scalar metrics seen so far, the loss first, the rest by name."""
        with self.lock:
            return sorted(self.curves, key=lambda name: (name != "loss", name))

    def series(self, metric: str) -> dict[str, list[tuple[int, float]]]:
        """A copy of `metric`'s curves by split ({} for a metric not seen)."""
        with self.lock:
            return {split: list(points) for split, points in self.curves.get(metric, {}).items()}

    def _metrics(self, event: dict[str, Any]) -> None:
        split, step = event.get("split", "train"), int(event.get("step", 0))
        for name, value in (event.get("metrics") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.curves.setdefault(name, {}).setdefault(split, []).append(
                    (step, float(value)))
        where = self.where
        where.step = max(where.step, step)
        if split == "train" and event.get("batch") is not None:
            where.epoch, where.batch = int(event.get("epoch", 0)), int(event["batch"])
            where.batches = event.get("batches")
        if self.status == "waiting":
            self.status = "running"

    def _status(self, event: dict[str, Any]) -> None:
        state, step = event.get("state"), int(event.get("step", 0))
        self.where.step = max(self.where.step, step)
        line = f"{state} at step {step}"
        if state == "started":
            self.status, self.paused_for = "running", None
            self.where.epochs = int(event.get("epochs") or 0)
            self.where.epoch = int(event.get("epoch", 0)) + 1
            source = event.get("resumed_from")
            line += f", resumed from {source}" if source else ""
        elif state == "paused":
            self.status, self.paused_for = "paused", event.get("reason", "asked")
            line += ": the loss is not finite" if self.paused_for == "nan" else ""
        elif state == "resumed":
            self.status, self.paused_for = "running", None
        elif state == "checkpoint":
            line += f": {event.get('path')}"
        elif state in ("stopped", "aborted", "ended", "failed"):
            self.status, self.paused_for = str(state), None
            line = f"{state}{' by ' + event['by'] if event.get('by') else ''} at step {step}"
            line += f": {event['error']}" if event.get("error") else ""
        if self.describe_status:
            self.message(line, event.get("time"))
