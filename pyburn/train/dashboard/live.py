"""A fit with the dashboard open: the textual app owns the terminal on the main thread, the
training loop runs on another and reaches the app only through a `RunState`, and the
`Learner`'s `Control` takes the app's keys. Where the dashboard cannot run (stdout is not a
terminal, textual is not installed) the fit shows plain lines instead, and says why once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..render import Progress, Renderer
from .state import RunState

if TYPE_CHECKING:
    from ..learner import Learner


class StateRenderer(Renderer):
    """A `Renderer` that keeps a `RunState` up to date (the dashboard draws from it)."""

    def __init__(self, state: RunState):
        self.state = state
        state.describe_status = False  # the Learner's messages say each change

    def start(self, epochs: int, epoch: int, resumed_from: str | None) -> None:
        self.state.message(f"training epoch {epoch} of {epochs}" +
                           (f", resumed from {resumed_from}" if resumed_from else ""))

    def epoch_end(self, epoch: int, epochs: int, results: dict[str, dict[str, str]],
                  seconds: float) -> None:
        shown = "  ".join(f"{split} {name} {value}" for split, values in results.items()
                          for name, value in values.items())
        self.state.message(f"epoch {epoch}/{epochs} in {seconds:.1f} s: {shown}")

    def progress(self, progress: Progress) -> None:
        self.state.progress(progress, progress.epochs - progress.epoch)

    def message(self, text: str) -> None:
        self.state.message(text)

    def event(self, record: dict[str, Any]) -> None:
        self.state.apply(record)


def unavailable_reason() -> str | None:
    """Why the terminal dashboard cannot open here, or None."""
    if not sys.stdout.isatty():
        return "stdout is not a terminal"
    try:
        import textual  # noqa: F401  (optional: pyburn[tui])
    except ImportError:
        return "textual is not installed (pip install 'pyburn[tui]')"
    return None


def fit_in_dashboard(learner: Learner, fit: Callable[[], list[dict[str, Any]]],
                     title: str) -> list[dict[str, Any]]:
    """`fit()` with the dashboard open around it (plain lines where it cannot open); a
    loss that stops being finite pauses the run while the dashboard watches."""
    reason = unavailable_reason()
    if reason is not None:
        print(f"pyburn: no dashboard ({reason}): plain progress lines instead",
              file=sys.stderr)
        return fit()
    from .tui import Dashboard  # import time: textual, for the dashboard only

    state = RunState()
    renderer, watching = learner.renderer, learner.control.pause_on_nan
    learner.renderer, learner.control.pause_on_nan = StateRenderer(state), True
    app = Dashboard(state, learner.control, fit, title, device=learner.device)
    try:
        app.run()
    finally:
        if app.trainer is not None and app.trainer.is_alive():  # the app failed: stop cleanly
            learner.control.stop()
            app.trainer.join()
        learner.renderer, learner.control.pause_on_nan = renderer, watching
    if app.error is not None:
        raise app.error
    for line in list(state.messages)[-5:]:  # the end of the story, on the restored terminal
        print(line)
    return app.result if app.result is not None else learner.history
