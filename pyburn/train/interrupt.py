"""Stopping a training loop cleanly on Ctrl-C (SIGINT) or SIGTERM.

While `StopSignals` is active, the first such signal only sets `requested`: the loop
finishes the batch it is in, writes a checkpoint and returns. A second signal raises
KeyboardInterrupt at once, for a user who does not want to wait. Handlers can only be
installed from the main thread of a platform with signals; elsewhere (another thread,
Pyodide) nothing is installed and a KeyboardInterrupt propagates as usual, leaving the last
checkpoint as the place to resume from.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

#: the signals that ask for a clean stop: Ctrl-C, and what schedulers send before a kill
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM")
                     if hasattr(signal, name))


class StopSignals:
    """A context manager: inside it, SIGINT and SIGTERM request a stop instead of
    interrupting (the previous handlers come back on exit)."""

    def __init__(self) -> None:
        #: the signal that asked for a stop, or None
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        """Whether a stop was asked for."""
        return self.received is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:  # the second signal: stop now
            self._restore()
            raise KeyboardInterrupt
        self.received = signum

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in STOP_SIGNALS:
            try:
                self._previous[signum] = signal.signal(signum, self._handle)
            except (ValueError, OSError, RuntimeError):  # no signals on this platform
                continue
        return self

    def __exit__(self, *exc: object) -> None:
        self._restore()

    def _restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()
