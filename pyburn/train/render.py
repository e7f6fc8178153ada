"""What a training run shows while it runs.

`Renderer` is the interface `Learner` calls (and, as it is, shows nothing);
`TerminalRenderer` draws a live progress bar with the ETA, the speed in items per second
and the latest metric values when its stream is a terminal, and prints plain lines
otherwise (a log file, a CI job, a notebook's captured output).
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO


@dataclass(frozen=True)
class Progress:
    """Where an epoch stands, after each batch."""

    #: the epoch, counted from 1, and how many the run has
    epoch: int
    epochs: int
    #: batches of this epoch done, and how many it has (None when the loader has no len)
    batch: int
    batches: int | None
    #: batches and items done and seconds spent since this process started the epoch
    #: (a resumed epoch starts counting at the batch it resumed from)
    session_batches: int
    session_items: int
    elapsed: float
    #: the latest metric values, formatted (they change only at log intervals)
    metrics: dict[str, str]
    #: whether `metrics` were computed at this batch
    logged: bool
    #: batches done over the whole run (every epoch, every session)
    step: int = 0


class Renderer:
    """The interface between `Learner` and what the user sees; this base shows nothing
    (pass ``renderer=Renderer()`` for a silent run)."""

    def start(self, epochs: int, epoch: int, resumed_from: str | None) -> None:
        """Training starts (or resumes, from the checkpoint `resumed_from`) at epoch
        `epoch` (counted from 1) of `epochs`."""

    def progress(self, progress: Progress) -> None:
        """A batch was done."""

    def epoch_end(self, epoch: int, epochs: int, results: dict[str, dict[str, str]],
                  seconds: float) -> None:
        """Epoch `epoch` ended; `results` maps a split to its formatted metrics."""

    def message(self, text: str) -> None:
        """A one-line notice (a checkpoint, early stopping, an interrupt)."""

    def event(self, record: dict[str, Any]) -> None:
        """An event of the run's record, as ``events.jsonl`` has it (see
        `pyburn.train.runlog`), with or without a run folder."""

    def end(self) -> None:
        """Training is over."""


def _clock(seconds: float) -> str:
    hours, rest = divmod(int(seconds), 3600)
    minutes = f"{rest // 60:02d}:{rest % 60:02d}"
    return f"{hours}:{minutes}" if hours else minutes


def _pairs(metrics: dict[str, str]) -> str:
    return "  ".join(f"{name} {text}" for name, text in metrics.items())


class TerminalRenderer(Renderer):
    """Progress on `stream` (default: ``sys.stdout`` when used): a bar redrawn in place at
    most every `refresh` seconds when the stream is a terminal (`tty` None asks the stream),
    one line per log interval otherwise; a summary line per epoch either way."""

    #: characters of the bar
    BAR_WIDTH = 24

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None,
                 refresh: float = 0.1):
        self._stream = stream
        self._tty = tty
        self.refresh = refresh
        self._drawn = 0.0  # when the bar was last drawn
        self._bar_shown = False

    @property
    def stream(self) -> TextIO:
        """Where the output goes."""
        return self._stream if self._stream is not None else sys.stdout

    @property
    def tty(self) -> bool:
        """Whether the bar is drawn in place."""
        if self._tty is not None:
            return self._tty
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def _line(self, text: str) -> None:
        self._clear()
        self.stream.write(text + "\n")
        self.stream.flush()

    def _clear(self) -> None:
        if self._bar_shown:
            self.stream.write("\r\x1b[K")
            self._bar_shown = False

    def start(self, epochs: int, epoch: int, resumed_from: str | None) -> None:
        """Say where training starts."""
        if resumed_from:
            self._line(f"resuming from {resumed_from} (epoch {epoch}/{epochs})")

    def progress(self, progress: Progress) -> None:
        """Redraw the bar (terminal) or print the logged values (otherwise)."""
        if not self.tty:
            if progress.logged:
                of = f"/{progress.batches}" if progress.batches else ""
                self._line(f"epoch {progress.epoch}/{progress.epochs}  batch "
                           f"{progress.batch}{of}  {_pairs(progress.metrics)}".rstrip())
            return
        now = time.monotonic()
        last = progress.batches is not None and progress.batch >= progress.batches
        if now - self._drawn < self.refresh and not (progress.logged or last):
            return
        self._drawn = now
        self.stream.write("\r" + self._bar(progress) + "\x1b[K")
        self.stream.flush()
        self._bar_shown = True

    def _bar(self, p: Progress) -> str:
        parts = [f"epoch {p.epoch}/{p.epochs}"]
        rate = p.session_items / p.elapsed if p.elapsed > 0 else 0.0
        if p.batches:
            done = min(p.batch / p.batches, 1.0)
            filled = int(done * self.BAR_WIDTH)
            parts.append("█" * filled + "░" * (self.BAR_WIDTH - filled))
            parts.append(f"{p.batch}/{p.batches}")
            left = "--:--"
            if p.session_batches:
                per_batch = p.elapsed / p.session_batches
                left = _clock(per_batch * (p.batches - p.batch))
            parts.append(f"{_clock(p.elapsed)}<{left}")
        else:
            parts.append(f"{p.batch} batches  {_clock(p.elapsed)}")
        parts.append(f"{rate:,.0f} items/s")
        if p.metrics:
            parts.append(_pairs(p.metrics))
        width = shutil.get_terminal_size((100, 20)).columns
        return "  ".join(parts)[:max(width - 1, 20)]

    def epoch_end(self, epoch: int, epochs: int, results: dict[str, dict[str, str]],
                  seconds: float) -> None:
        """One summary line."""
        splits = " | ".join(f"{split}: {_pairs(values)}" for split, values in results.items())
        self._line(f"epoch {epoch}/{epochs} done in {seconds:.1f} s  {splits}".rstrip())

    def message(self, text: str) -> None:
        """Print `text` on its own line."""
        self._line(text)

    def end(self) -> None:
        """Leave the terminal on a fresh line."""
        self._clear()
        self.stream.flush()
