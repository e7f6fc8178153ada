"""A run's folder on disk besides its checkpoints: ``run.json`` (the configuration) and
``events.jsonl``, the run's one record: every view (the progress on the terminal, the
dashboard, `pyburn dash`, the SVG curves) reads it, and a live run and a finished one look
the same to them.

It is append-only, a JSON object per line, each written by one ``write`` to a file opened
for appending, so a reader never sees half an event but the last line of a killed run (which
`read_events` leaves out). Every line has an ``event`` and the wall ``time``; the kinds:

- ``"metrics"``: metric values::

    {"event": "metrics", "split": "train", "epoch": 1, "batch": 50, "batches": 938,
     "step": 50, "end": false, "time": 1764500000.0, "metrics": {"loss": 0.41}}

  `split` is "train" or "valid"; `epoch` counts from 1; `end` marks the values of a whole
  epoch (train) or evaluation (valid); the training values in between are running means
  since the epoch's start (written every ``log_every`` batches).
- ``"status"``: what the run is doing, with the ``step`` and ``epoch`` it is at: ``state``
  is "started" (with ``epochs`` and ``resumed_from``), "paused" (with a ``reason``: "asked"
  or "nan"), "resumed", "checkpoint" (with its ``path``), "stopped" (with ``by``), "aborted"
  "ended" (every epoch done, or early stopping: a stopped run has not ended) or "failed"
  (with the ``error`` that ended it).

A checkpoint records the log's length, and a resumed run cuts the log back to it, so the
events of re-executed batches appear once.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ..store import atomic_write

EVENTS = "events.jsonl"
CONFIG = "run.json"


class RunLog:
    """Appends events to ``events.jsonl`` in `folder` and writes ``run.json``."""

    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = os.fspath(folder)
        self._fd: int | None = None

    @property
    def path(self) -> str:
        """The path of ``events.jsonl``."""
        return os.path.join(self.folder, EVENTS)

    def write_config(self, config: dict[str, Any]) -> None:
        """Write ``run.json`` (atomically, replacing an older one)."""
        os.makedirs(self.folder, exist_ok=True)
        text = json.dumps(config, indent=2, sort_keys=True, default=repr) + "\n"
        atomic_write(os.path.join(self.folder, CONFIG), [text.encode()])

    def append(self, record: dict[str, Any]) -> None:
        """Add one event (`event_record`'s), its line written whole at once, so that a
        reader following the run live never sees part of it."""
        if self._fd is None:
            os.makedirs(self.folder, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        data = (json.dumps(record, allow_nan=True) + "\n").encode()
        while data:  # a regular file takes it in one write; the loop is for the odd one
            data = data[os.write(self._fd, data):]

    def sync(self) -> int:
        """Make the lines so far durable (fsync) and return the log's length in bytes: a
        checkpoint taken next refers to exactly these lines."""
        if self._fd is not None:
            os.fsync(self._fd)
        try:
            return os.path.getsize(self.path)
        except FileNotFoundError:
            return 0

    def truncate(self, size: int) -> None:
        """Cut the log back to `size` bytes: what it held when a checkpoint was taken. A log
        already shorter (lost with an unsynced disk) is left alone."""
        self.close()
        try:
            if os.path.getsize(self.path) > size:
                os.truncate(self.path, size)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        """Close the log file (the next `append` opens it again)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def event_record(event: str, **fields: Any) -> dict[str, Any]:
    """An event of kind `event` ("metrics", "status") with `fields`, stamped now."""
    return {"event": event, "time": time.time(), **fields}


def read_events(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every event of a run's ``events.jsonl``, in order; a last line cut short by a kill
    is left out."""
    path = os.path.join(os.fspath(folder), EVENTS)
    events = []
    with open(path, encoding="utf-8") as file:
        for line in file:
            if not line.endswith("\n"):
                break
            events.append(json.loads(line))
    return events


def read_metrics(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The ``"metrics"`` events of a run, in order."""
    return [e for e in read_events(folder) if e["event"] == "metrics"]
