"""`Follower`: a run folder's ``events.jsonl`` read into a `RunState` as it grows, so that a
view of a live run and of a finished one are the same view. Each `poll` takes the complete
lines written since the last; a log that got shorter (a resumed run cuts it back to its
checkpoint) is read again from the start into a fresh state.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
        events, self._offset, again = read_since(self.path, self._offset)
        if again:
            self.state.clear()
        for event in events:
            self.state.apply(event)
        return len(events)


def read_since(path: Path, offset: int) -> tuple[list[dict[str, Any]], int, bool]:
    """The complete events of the log at `path` from byte `offset` on, the offset to read
    from next, and whether they start again from the beginning (the log got shorter: a
    resume cut it back). A log not written yet has none."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return [], 0, offset > 0
    again = size < offset
    if again:
        offset = 0
    with open(path, "rb") as file:
        file.seek(offset)
        data = file.read(size - offset)
    complete = data[:data.rfind(b"\n") + 1]  # a line still being written waits
    return ([json.loads(line) for line in complete.decode("utf-8").splitlines()],
            offset + len(complete), again)
