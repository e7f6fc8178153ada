"""The training dashboard: `RunState` (a run's curves, position and status, folded from its
events), text charts (`chart`), and the terminal app (`tui`, on textual: ``pip install
'pyburn[tui]'``), which `Learner(..., dashboard="tui")` opens around a fit (`live`)."""

from .state import RunState, Where

__all__ = ["RunState", "Where"]
