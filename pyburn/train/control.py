"""Steering a training run while it runs: pause and resume, a checkpoint now, a clean stop,
an abort. A dashboard (or any other thread) calls `Control`'s methods; the `Learner` obeys
them between two steps, so a pause never splits a step and the optimizer's state is the
one an uninterrupted run has at that step: a paused and resumed run ends with the same
weights, bit for bit.

>>> control = Control()
>>> control.toggle_pause(); control.paused
True
>>> control.toggle_pause(); control.paused
False
"""

from __future__ import annotations

import threading

from ..errors import PyburnError

#: seconds a paused loop sleeps between two looks at its signals (Ctrl-C stays prompt)
POLL_SECONDS = 0.1


class TrainingAborted(PyburnError, RuntimeError):
    """The run was aborted (``Control.abort``, the dashboard's ``k``): it left the loop at
    once, with no checkpoint written; the last one is where ``fit(resume=True)`` goes on
    from."""


class Control:
    """What the training loop is asked to do at its next step boundary. Every method may be
    called from any thread.

    `pause_on_nan`: a loss that turns NaN or infinite pauses the run (and says so) instead
    of training on; for runs someone watches, which can resume or stop it (the dashboard
    turns it on). Unwatched runs keep going, as they always did."""

    def __init__(self, pause_on_nan: bool = False):
        self.pause_on_nan = pause_on_nan
        self._changed = threading.Condition()
        self._paused = False
        self._checkpoint = False
        self._stop = False
        self._abort = False

    @property
    def paused(self) -> bool:
        """Whether the loop is asked to wait."""
        return self._paused

    @property
    def stopping(self) -> bool:
        """Whether a stop (after a checkpoint) was asked for."""
        return self._stop

    @property
    def aborting(self) -> bool:
        """Whether an abort was asked for."""
        return self._abort

    def pause(self) -> None:
        """Wait at the next step boundary, until `resume`."""
        self._set(paused=True)

    def resume(self) -> None:
        """Go on from a pause."""
        self._set(paused=False)

    def toggle_pause(self) -> None:
        """Pause a running loop, resume a paused one."""
        with self._changed:
            self._paused = not self._paused
            self._changed.notify_all()

    def checkpoint(self) -> None:
        """Write a checkpoint at the next step boundary (a paused loop writes it at once)."""
        self._set(checkpoint=True)

    def stop(self) -> None:
        """Leave the loop at the next step boundary, after a checkpoint."""
        self._set(stop=True)

    def abort(self) -> None:
        """Leave the loop at the next step boundary with no checkpoint: `fit` raises
        `TrainingAborted`."""
        self._set(abort=True)

    def reset(self) -> None:
        """Forget every request (`Learner.fit` starts so: a stopped run can be resumed)."""
        self._set(paused=False, checkpoint=False, stop=False, abort=False)

    def take_checkpoint(self) -> bool:
        """Whether a checkpoint was asked for since the last call (the loop writes it)."""
        with self._changed:
            wanted, self._checkpoint = self._checkpoint, False
            return wanted

    def wait(self, seconds: float = POLL_SECONDS) -> None:
        """Block until something changes, or `seconds` pass."""
        with self._changed:
            self._changed.wait(seconds)

    def _set(self, **flags: bool) -> None:
        with self._changed:
            for name, value in flags.items():
                setattr(self, f"_{name}", value)
            self._changed.notify_all()
