"""A run's folder on disk besides its checkpoints: ``run.json`` (the configuration) and
``metrics.jsonl`` (one JSON object per logged line).

A line of ``metrics.jsonl``::

    {"split": "train", "epoch": 1, "batch": 50, "batches": 938, "step": 50,
     "end": false, "time": 1764500000.0, "metrics": {"loss": 0.41, "accuracy": 0.88}}

`split` is "train" or "valid"; `epoch` counts from 1; `end` marks the values of a whole
epoch (train) or evaluation (valid); the training values in between are running means since
the epoch's start. A checkpoint records the log's length, and a resumed run cuts the log back
to it, so lines of re-executed batches appear once.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

from ..store import atomic_write

METRICS = "metrics.jsonl"
CONFIG = "run.json"


class RunLog:
    """Appends lines to ``metrics.jsonl`` in `folder` and writes ``run.json``."""

    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = os.fspath(folder)
        self._file: IO[str] | None = None

    @property
    def metrics_path(self) -> str:
        """The path of ``metrics.jsonl``."""
        return os.path.join(self.folder, METRICS)

    def write_config(self, config: dict[str, Any]) -> None:
        """Write ``run.json`` (atomically, replacing an older one)."""
        os.makedirs(self.folder, exist_ok=True)
        text = json.dumps(config, indent=2, sort_keys=True, default=repr) + "\n"
        atomic_write(os.path.join(self.folder, CONFIG), [text.encode()])

    def append(self, record: dict[str, Any]) -> None:
        """Add one line (flushed at once, so that a reader follows the run live)."""
        if self._file is None:
            os.makedirs(self.folder, exist_ok=True)
            self._file = open(self.metrics_path, "a", encoding="utf-8")
        self._file.write(json.dumps(record, allow_nan=True) + "\n")
        self._file.flush()

    def sync(self) -> int:
        """Make the lines so far durable (fsync) and return the log's length in bytes: a
        checkpoint taken next refers to exactly these lines."""
        if self._file is not None:
            os.fsync(self._file.fileno())
        try:
            return os.path.getsize(self.metrics_path)
        except FileNotFoundError:
            return 0

    def truncate(self, size: int) -> None:
        """Cut the log back to `size` bytes: what it held when a checkpoint was taken. A log
        already shorter (lost with an unsynced disk) is left alone."""
        self.close()
        try:
            if os.path.getsize(self.metrics_path) > size:
                os.truncate(self.metrics_path, size)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        """Close the log file (the next `append` opens it again)."""
        if self._file is not None:
            self._file.close()
            self._file = None


def read_metrics(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every line of a run's ``metrics.jsonl`` as a dict; a last line cut short by a kill is
    left out."""
    path = os.path.join(os.fspath(folder), METRICS)
    records = []
    with open(path, encoding="utf-8") as file:
        for line in file:
            if not line.endswith("\n"):
                break
            records.append(json.loads(line))
    return records
