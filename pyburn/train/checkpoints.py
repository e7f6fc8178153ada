"""The checkpoints of a run: ``step-00000120.ckpt`` files in one folder, the last few kept,
plus ``best.ckpt``, the one with the best value of the monitored metric.

Each file is a `pyburn.store` checkpoint (a safetensors file) written atomically, so a run
killed at any moment leaves every checkpoint either complete or absent; the temporary file
of an interrupted write is removed the next time the folder is used.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from typing import Any

from ..errors import ArgumentError, FormatError
from ..store import Checkpoint, load_checkpoint, save_checkpoint

_STEP_FILE = re.compile(r"step-(\d+)\.ckpt")
#: what `atomic_write` names its temporary files: ``.NAME.RANDOM.tmp``
_TEMP_FILE = re.compile(r"\.(step-\d+|best)\.ckpt\.[0-9a-f]+\.tmp")
BEST = "best.ckpt"


class CheckpointManager:
    """Writes, lists, rotates and reads the checkpoints in `folder`.

    `keep_last` is how many ``step-*.ckpt`` files to keep (None keeps all); ``best.ckpt``
    is kept apart and never rotated away.
    """

    def __init__(self, folder: str | os.PathLike[str], keep_last: int | None = 3):
        if keep_last is not None and (isinstance(keep_last, bool) or not isinstance(keep_last, int)
                                      or keep_last < 1):
            raise ArgumentError(f"keep_last must be a positive int or None, got {keep_last!r}")
        self.folder = os.fspath(folder)
        self.keep_last = keep_last

    def path(self, step: int) -> str:
        """The file name of the checkpoint taken after `step` batches."""
        return os.path.join(self.folder, f"step-{step:08d}.ckpt")

    @property
    def best_path(self) -> str:
        """Where the best checkpoint goes."""
        return os.path.join(self.folder, BEST)

    def steps(self) -> list[tuple[int, str]]:
        """(step, path) of every step checkpoint, oldest first."""
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            match = _STEP_FILE.fullmatch(name)
            if match:
                found.append((int(match.group(1)), os.path.join(self.folder, name)))
        return sorted(found)

    def latest(self) -> str | None:
        """The newest step checkpoint's path, or None."""
        found = self.steps()
        return found[-1][1] if found else None

    def save(self, step: int, **parts: Any) -> str:
        """Write the checkpoint of `step` (`parts` as `pyburn.store.save_checkpoint` takes
        them), then delete the step checkpoints beyond `keep_last`; returns its path."""
        os.makedirs(self.folder, exist_ok=True)
        self._remove_stale_temps()
        path = self.path(step)
        save_checkpoint(path, step=step, **parts)
        if self.keep_last is not None:
            for _, old in self.steps()[:-self.keep_last]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(old)
        return path

    def save_best(self, **parts: Any) -> str:
        """Write ``best.ckpt`` (`parts` as for `save`, the step included); returns its
        path."""
        os.makedirs(self.folder, exist_ok=True)
        save_checkpoint(self.best_path, **parts)
        return self.best_path

    def load_latest(self, device: Any = None) -> tuple[str, Checkpoint] | None:
        """The newest step checkpoint that reads back, with its path (None when there is
        none). A file that does not read (damaged after it was written: atomic writes never
        leave half a file) is skipped with a warning for the one before it."""
        for _, path in reversed(self.steps()):
            try:
                return path, load_checkpoint(path, device=device)
            except FormatError as exc:
                warnings.warn(f"skipping unreadable checkpoint {path}: {exc}", stacklevel=2)
        return None

    def _remove_stale_temps(self) -> None:
        """Delete what a write killed half-way left behind (only this run writes here)."""
        for name in os.listdir(self.folder):
            if _TEMP_FILE.fullmatch(name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.folder, name))
