"""`Follower`: a run folder's ``events.jsonl`` read into a `RunState` as it grows, so that a
view of a live run and of a finished one are the same view. Each `poll` takes the complete
lines written since the last; a log that got shorter (a resumed run cuts it back to its
checkpoint) is read again from the start into a fresh state.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...errors import ArgumentError
from ..runlog import EVENTS
from .state import RunState


class Follower:
    """The events of the run in `folder`, into `state` (a new one unless given)."""

    def __init__(self, folder: str | os.PathLike[str], state: RunState | None = None):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise ArgumentError(f"{self.folder} is not a folder: pyburn dash takes the run_dir "
                                "of a Learner (the folder that holds events.jsonl)")
        self.state = RunState() if state is None else state
        self._offset = 0

    @property
    def path(self) -> Path:
        """The run's ``events.jsonl`` (it may not exist yet: a run about to start)."""
        return self.folder / EVENTS

    def poll(self) -> int:
        """Take in the events written since the last call; returns how many."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return 0
        if size < self._offset:  # cut back by a resume: start again
            self.state.clear()
            self._offset = 0
        if size == self._offset:
            return 0
        with open(self.path, "rb") as file:
            file.seek(self._offset)
            data = file.read(size - self._offset)
        complete = data[:data.rfind(b"\n") + 1]  # a line still being written waits
        self._offset += len(complete)
        lines = complete.decode("utf-8").splitlines()
        for line in lines:
            self.state.apply(json.loads(line))
        return len(lines)
